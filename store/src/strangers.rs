//! When the crew starts on each new bug, by the (hashed) address that filed it and its
//! component: the stranger's budget (`domain::spend::stranger_start`) reads and writes it.
//! A start is decided inside the intake's own serialised transaction
//! ([`Store::file_report`] with a [`crate::reports::StrangerBudget`]), so reports filed at the
//! same moment, through any server, are counted one after another.

use crate::{Store, StoreError};
use domain::workflow::Millis;

impl Store {
    /// When the crew starts on `bug`, if its start was put off past `now`.
    pub async fn crew_start_put_off(
        &self,
        bug: &str,
        now: Millis,
    ) -> Result<Option<Millis>, StoreError> {
        let sql = "SELECT start_at FROM crew_starts WHERE bug_id = $1 AND start_at > $2";
        Ok(for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query_scalar(sql).bind(bug).bind(now).fetch_optional(pool).await?
        }))
    }

    /// Every bug whose crew start is put off past `now`, with when it starts.
    pub async fn crew_starts_put_off(
        &self,
        now: Millis,
    ) -> Result<std::collections::HashMap<String, Millis>, StoreError> {
        let sql = "SELECT bug_id, start_at FROM crew_starts WHERE start_at > $1";
        let rows: Vec<(String, Millis)> = for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query_as(sql).bind(now).fetch_all(pool).await?
        });
        Ok(rows.into_iter().collect())
    }

    /// How many new bugs wait for a stranger's budget now.
    pub async fn crew_starts_waiting(&self, now: Millis) -> Result<i64, StoreError> {
        let sql = "SELECT COUNT(*) FROM crew_starts WHERE start_at > $1";
        Ok(for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query_scalar(sql).bind(now).fetch_one(pool).await?
        }))
    }

    /// An owner promoted `bug`: a crew start the stranger's budget put off is brought forward
    /// to `now` (its triage job becomes available, unless it already ran or runs), and the bug
    /// no longer counts against its address's budget. Idempotent.
    pub async fn start_crew_now(&self, bug: &str, now: Millis) -> Result<(), StoreError> {
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            sqlx::query(
                "UPDATE outbox_jobs SET available_at = $1 \
                 WHERE idempotency_key = $2 AND done_at IS NULL \
                 AND (leased_until IS NULL OR leased_until <= $1) AND available_at > $1",
            )
            .bind(now)
            .bind(format!("triage:{bug}"))
            .execute(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM crew_starts WHERE bug_id = $1")
                .bind(bug)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        });
        Ok(())
    }
}
