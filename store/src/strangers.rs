//! When the crew starts on each new bug, by the (hashed) address that filed it and its
//! component: the stranger's budget (`domain::spend::stranger_start`) reads and writes it.

use crate::{Store, StoreError};
use domain::workflow::Millis;

/// PostgreSQL: one budget decision at a time ("r2rStr"), so that reports filed at the same
/// moment, through any server, are counted one after another.
const STARTS_LOCK: i64 = 0x7232_7253_7472;

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

    /// Decides when the crew starts on new bug `bug` of `client_hash` in `component` — now
    /// while fewer than `limit` starts fall in the `window` before it, else in turn
    /// ([`domain::spend::stranger_start`]) — and records it, in one serialised transaction:
    /// reports filed at the same moment are counted one after another. Drops starts older
    /// than the window. Answers the start.
    pub async fn claim_crew_start(
        &self,
        bug: &str,
        client_hash: &str,
        component: &str,
        limit: u32,
        window: Millis,
        now: Millis,
    ) -> Result<Millis, StoreError> {
        Ok(for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            if self.backend() == crate::Backend::Postgres {
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(STARTS_LOCK)
                    .execute(&mut *tx)
                    .await?;
            }
            sqlx::query("DELETE FROM crew_starts WHERE start_at < $1")
                .bind(now - window)
                .execute(&mut *tx)
                .await?;
            let starts: Vec<Millis> = sqlx::query_scalar(
                "SELECT start_at FROM crew_starts \
                 WHERE client_hash = $1 AND component = $2 AND start_at > $3 ORDER BY start_at",
            )
            .bind(client_hash)
            .bind(component)
            .bind(now - window)
            .fetch_all(&mut *tx)
            .await?;
            let start_at = domain::spend::stranger_start(&starts, limit, window, now);
            sqlx::query(
                "INSERT INTO crew_starts (bug_id, client_hash, component, start_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (bug_id) DO NOTHING",
            )
            .bind(bug)
            .bind(client_hash)
            .bind(component)
            .bind(start_at)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            start_at
        }))
    }

    /// Forgets the crew start claimed for `bug` (its report joined another bug instead).
    pub async fn forget_crew_start(&self, bug: &str) -> Result<(), StoreError> {
        for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query("DELETE FROM crew_starts WHERE bug_id = $1")
                .bind(bug)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// A report of `client_hash` joined bug `bug`, whose crew start a stranger's budget put
    /// off: when this client's own budget for the bug's component has room sooner, the start
    /// moves to this client's turn and is charged to it (and its triage wakes, when that turn
    /// is now) — a stranger's look-alike bug cannot hold a real reporter's report back.
    /// Serialised like [`Store::claim_crew_start`], and in the same transaction the start
    /// claimed for `reserved` (the new bug this report did not open) is forgotten. Answers
    /// the bug's start afterwards, if it has one.
    pub async fn join_crew_start(
        &self,
        reserved: &str,
        bug: &str,
        client_hash: &str,
        limit: u32,
        window: Millis,
        now: Millis,
    ) -> Result<Option<Millis>, StoreError> {
        Ok(for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            if self.backend() == crate::Backend::Postgres {
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(STARTS_LOCK)
                    .execute(&mut *tx)
                    .await?;
            }
            sqlx::query("DELETE FROM crew_starts WHERE bug_id = $1")
                .bind(reserved)
                .execute(&mut *tx)
                .await?;
            let row: Option<(String, Millis)> = sqlx::query_as(
                "SELECT component, start_at FROM crew_starts WHERE bug_id = $1",
            )
            .bind(bug)
            .fetch_optional(&mut *tx)
            .await?;
            let answer = match row {
                Some((component, start_at)) if start_at > now => {
                    let starts: Vec<Millis> = sqlx::query_scalar(
                        "SELECT start_at FROM crew_starts \
                         WHERE client_hash = $1 AND component = $2 AND start_at > $3 ORDER BY start_at",
                    )
                    .bind(client_hash)
                    .bind(&component)
                    .bind(now - window)
                    .fetch_all(&mut *tx)
                    .await?;
                    let mine = domain::spend::stranger_start(&starts, limit, window, now);
                    if mine < start_at {
                        sqlx::query(
                            "UPDATE crew_starts SET client_hash = $1, start_at = $2 WHERE bug_id = $3",
                        )
                        .bind(client_hash)
                        .bind(mine)
                        .bind(bug)
                        .execute(&mut *tx)
                        .await?;
                        sqlx::query(
                            "UPDATE outbox_jobs SET available_at = $1 \
                             WHERE idempotency_key = $2 AND done_at IS NULL AND available_at > $1",
                        )
                        .bind(mine)
                        .bind(format!("triage:{bug}"))
                        .execute(&mut *tx)
                        .await?;
                        Some(mine)
                    } else {
                        Some(start_at)
                    }
                }
                Some((_, start_at)) => Some(start_at),
                None => None,
            };
            tx.commit().await?;
            answer
        }))
    }
}
