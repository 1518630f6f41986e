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
