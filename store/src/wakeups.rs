//! Waking what waits for work. This process's own writes move [`Store::work_added`] at once
//! (a bug changed, a report filed, a crew task or a sandbox job queued); on PostgreSQL,
//! triggers (migration 0024) `NOTIFY r2r_work` at commit whoever wrote, and
//! [`WorkListener`] hears the other servers' and tools' writes too. Long-polling routes and
//! in-process consumers wait on it instead of polling.

use crate::{Pool, Store, StoreError};

/// The channel the triggers notify.
const CHANNEL: &str = "r2r_work";

/// A connection listening for work notices (PostgreSQL).
#[derive(Debug)]
pub struct WorkListener {
    listener: sqlx::postgres::PgListener,
}

impl Store {
    /// A receiver that sees every later addition of work.
    pub fn work_added(&self) -> tokio::sync::watch::Receiver<u64> {
        self.work.subscribe()
    }

    /// Work was added: wake whatever waits for it.
    pub fn wake(&self) {
        self.work.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A listener for the work notices of every writer on PostgreSQL; `None` on SQLite, whose
    /// writers are this process's own.
    pub async fn work_listener(&self) -> Result<Option<WorkListener>, StoreError> {
        match &self.pool {
            Pool::Sqlite(_) => Ok(None),
            Pool::Postgres(pool) => {
                let mut listener = sqlx::postgres::PgListener::connect_with(pool).await?;
                listener.listen(CHANNEL).await?;
                Ok(Some(WorkListener { listener }))
            }
        }
    }
}

impl WorkListener {
    /// Waits for the next notice: `true` for one, `false` when the connection was lost (the
    /// next call connects again; notices may have been missed meanwhile).
    pub async fn next(&mut self) -> Result<bool, StoreError> {
        Ok(self.listener.try_recv().await?.is_some())
    }
}
