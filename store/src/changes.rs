//! Telling the desk's open pages that something they show changed, whoever changed it.
//!
//! On PostgreSQL, triggers (migration 0015) `NOTIFY r2r_changes` at commit when a bug, the
//! quarantine queue or what a crew role is doing changes — written by this server, another
//! server on the same database or a command-line tool — and [`ChangeListener`] hears it.
//! SQLite has no channel between processes: there the desk compares a fingerprint of the
//! same things instead (`server/src/workers/changes.rs`).

use crate::{Pool, Store, StoreError};

/// The channel the triggers notify.
const CHANNEL: &str = "r2r_changes";

/// A connection listening for change notices (PostgreSQL).
#[derive(Debug)]
pub struct ChangeListener {
    listener: sqlx::postgres::PgListener,
}

impl Store {
    /// A listener for change notices on PostgreSQL; `None` on SQLite, which has none.
    pub async fn change_listener(&self) -> Result<Option<ChangeListener>, StoreError> {
        match &self.pool {
            Pool::Sqlite(_) => Ok(None),
            Pool::Postgres(pool) => {
                let mut listener = sqlx::postgres::PgListener::connect_with(pool).await?;
                listener.listen(CHANNEL).await?;
                Ok(Some(ChangeListener { listener }))
            }
        }
    }
}

impl ChangeListener {
    /// Waits for the next notice: `true` for a change, `false` when the connection was lost
    /// (changes may have gone unheard meanwhile; the next call connects again).
    pub async fn next(&mut self) -> Result<bool, StoreError> {
        Ok(self.listener.try_recv().await?.is_some())
    }
}
