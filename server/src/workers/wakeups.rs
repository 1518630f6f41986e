//! On PostgreSQL, work another server or a command-line tool added wakes this server's
//! waiters too: the database's `r2r_work` notices are passed to the store's wake-up
//! ([`store::Store::wake`]). SQLite has no other writer to hear: nothing to do there.

use std::time::Duration;
use store::Store;

/// Listens until the server stops.
pub async fn run(store: Store) {
    loop {
        match store.work_listener().await {
            Ok(None) => return,
            Ok(Some(mut listener)) => {
                tracing::info!("waiters for work are woken by the database's notices");
                loop {
                    match listener.next().await {
                        Ok(_) => store.wake(),
                        Err(error) => {
                            tracing::warn!(%error, "the database's work notices stopped; listening again in a second");
                            break;
                        }
                    }
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for the database's work notices; trying again in a second");
            }
        }
        // Work may have been added while nobody listened.
        store.wake();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
