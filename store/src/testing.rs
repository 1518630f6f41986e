//! Fresh, empty databases for tests of this crate and of the server.
//!
//! PostgreSQL tests need `R2R_TEST_POSTGRES_URL`: a URL whose role may `CREATE DATABASE`.
//! The README's test command starts PostgreSQL and sets it; without it these helpers fail
//! loudly rather than letting PostgreSQL coverage silently disappear.

use crate::DatabaseUrl;
use sqlx::Connection;
use std::sync::atomic::{AtomicU32, Ordering};

/// The variable naming the PostgreSQL server tests run against.
pub const POSTGRES_VARIABLE: &str = "R2R_TEST_POSTGRES_URL";

fn unique_suffix() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!(
        "{}_{}_{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A new SQLite file inside `dir`.
pub fn fresh_sqlite(dir: &std::path::Path) -> DatabaseUrl {
    DatabaseUrl::Sqlite {
        path: dir
            .join(format!("r2r_{}.db", unique_suffix()))
            .display()
            .to_string(),
    }
}

/// Creates a new, empty PostgreSQL database and returns its URL.
///
/// # Panics
/// When `R2R_TEST_POSTGRES_URL` is unset or the server refuses: a test without its database
/// must fail, not pass.
pub async fn fresh_postgres() -> DatabaseUrl {
    let Ok(admin) = std::env::var(POSTGRES_VARIABLE) else {
        panic!(
            "{POSTGRES_VARIABLE} is not set: run the README's test command (scripts/test.sh), \
             which starts PostgreSQL and sets it"
        );
    };
    let name = format!("r2r_test_{}", unique_suffix());
    let mut connection = match sqlx::PgConnection::connect(&admin).await {
        Ok(connection) => connection,
        Err(error) => panic!("cannot reach PostgreSQL at {POSTGRES_VARIABLE}: {error}"),
    };
    if let Err(error) = sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut connection)
        .await
    {
        panic!("cannot create test database {name}: {error}");
    }
    let _ = connection.close().await;
    // Replace the database path of the admin URL with the new database.
    let (base, query) = match admin.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (admin.as_str(), String::new()),
    };
    let prefix_end = base
        .rfind('/')
        .filter(|&i| i > "postgres://".len())
        .unwrap_or(base.len());
    DatabaseUrl::Postgres {
        url: format!("{}/{name}{query}", &base[..prefix_end]),
    }
}
