//! Shared by the store's integration tests: run one async test body on both backends.

#![allow(unused_macros)]

/// Expands each named `async fn name(backend: &str)` into a `sqlite::name` and a
/// `postgres::name` test.
#[macro_export]
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { super::$name("sqlite").await })*
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { super::$name("postgres").await })*
        }
    };
}

/// A migrated, empty store on `backend` ("sqlite" or "postgres"), its URL, and the folder a
/// SQLite file lives in (keep it alive for the test).
pub async fn fresh(backend: &str) -> (store::Store, store::DatabaseUrl, Option<tempfile::TempDir>) {
    let (url, dir) = match backend {
        "sqlite" => {
            let dir = tempfile::tempdir().unwrap();
            (store::testing::fresh_sqlite(dir.path()), Some(dir))
        }
        _ => (store::testing::fresh_postgres().await, None),
    };
    let store = store::Store::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    (store, url, dir)
}

/// Runs raw SQL the application never runs: what someone with database access could do.
#[allow(dead_code)] // not every test file tampers
pub async fn raw(url: &store::DatabaseUrl, statements: &[&str]) {
    use sqlx::Connection;
    match url {
        store::DatabaseUrl::Sqlite { path } => {
            let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{path}"))
                .await
                .unwrap();
            for sql in statements {
                sqlx::query(sql).execute(&mut c).await.unwrap();
            }
        }
        store::DatabaseUrl::Postgres { url } => {
            let mut c = sqlx::PgConnection::connect(url).await.unwrap();
            for sql in statements {
                sqlx::query(sql).execute(&mut c).await.unwrap();
            }
        }
    }
}
