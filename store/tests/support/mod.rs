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
