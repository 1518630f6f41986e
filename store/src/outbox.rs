//! The transactional outbox. Jobs are written in the same transaction as the decision that
//! causes them; consumers claim a batch under a lease, acknowledge with the lease id, and
//! failed jobs come back after an exponential backoff. Delivery is at-least-once: a consumer
//! that dies after delivering but before acknowledging delivers again after the lease, so
//! receivers deduplicate by idempotency key.

use crate::{Pool, Store, StoreError};
use domain::workflow::{JobDraft, Millis};
use std::collections::BTreeMap;

/// How long a claim holds a job (60 s).
pub const LEASE_MS: Millis = 60_000;
/// First retry delay after a failure.
pub const FIRST_BACKOFF_MS: Millis = 5_000;
/// Longest retry delay (one hour).
pub const MAX_BACKOFF_MS: Millis = 3_600_000;

/// A job held under a lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedJob {
    /// Idempotency key (also the job's id).
    pub key: String,
    /// The bug that caused it, if any.
    pub bug_id: Option<String>,
    /// What to do.
    pub kind: String,
    /// Parameters.
    pub payload: BTreeMap<String, String>,
    /// Failed attempts so far.
    pub attempts: u32,
    /// The lease that must accompany the acknowledgement.
    pub lease_id: String,
    /// Until when the lease holds.
    pub leased_until: Millis,
}

/// The retry delay after `attempts` failures: 5 s, 10 s, 20 s … capped at one hour.
pub fn backoff_ms(attempts: u32) -> Millis {
    let factor = 1i64
        .checked_shl(attempts.saturating_sub(1).min(30))
        .unwrap_or(i64::MAX);
    FIRST_BACKOFF_MS.saturating_mul(factor).min(MAX_BACKOFF_MS)
}

fn new_lease_id() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

type JobRow = (String, Option<String>, String, String, i64, i64);

fn to_claimed(row: JobRow, lease_id: &str) -> Result<ClaimedJob, StoreError> {
    let (key, bug_id, kind, payload, attempts, leased_until) = row;
    let payload = serde_json::from_str(&payload)
        .map_err(|e| StoreError::Corrupt(format!("job {key} payload: {e}")))?;
    Ok(ClaimedJob {
        key,
        bug_id,
        kind,
        payload,
        attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        lease_id: lease_id.to_owned(),
        leased_until,
    })
}

impl Store {
    /// Enqueues a job outside any decision; a duplicate key is a no-op. Returns whether it
    /// was new.
    pub async fn enqueue_job(
        &self,
        job: &JobDraft,
        bug_id: Option<&str>,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let payload =
            serde_json::to_string(&job.payload).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let inserted = for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            let inserted = insert_job!(tx, job, bug_id, &payload, now);
            tx.commit().await?;
            inserted
        });
        if inserted == 1 {
            self.wake();
        }
        Ok(inserted == 1)
    }

    /// Claims up to `limit` ready jobs for `consumer` under one fresh lease. Two concurrent
    /// claimers never hold the same job (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite: one
    /// write transaction).
    pub async fn claim_jobs(
        &self,
        consumer: &str,
        limit: u32,
        now: Millis,
    ) -> Result<Vec<ClaimedJob>, StoreError> {
        let lease_id = new_lease_id();
        let leased_until = now + LEASE_MS;
        let ready = "consumer = $3 AND done_at IS NULL AND available_at <= $4 \
                     AND (leased_until IS NULL OR leased_until <= $4)";
        let returning = "RETURNING idempotency_key, bug_id, kind, payload, attempts, leased_until";
        let rows: Vec<JobRow> = match &self.pool {
            Pool::Sqlite(pool) => {
                let _writer = self.writer.lock().await;
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                let sql = format!(
                    "UPDATE outbox_jobs SET lease_id = $1, leased_until = $2 WHERE idempotency_key IN \
                     (SELECT idempotency_key FROM outbox_jobs WHERE {ready} ORDER BY available_at, created_at LIMIT $5) {returning}"
                );
                let rows = sqlx::query_as(&sql)
                    .bind(&lease_id)
                    .bind(leased_until)
                    .bind(consumer)
                    .bind(now)
                    .bind(i64::from(limit))
                    .fetch_all(&mut *tx)
                    .await?;
                tx.commit().await?;
                rows
            }
            Pool::Postgres(pool) => {
                let sql = format!(
                    "UPDATE outbox_jobs SET lease_id = $1, leased_until = $2 WHERE idempotency_key IN \
                     (SELECT idempotency_key FROM outbox_jobs WHERE {ready} ORDER BY available_at, created_at LIMIT $5 \
                      FOR UPDATE SKIP LOCKED) {returning}"
                );
                sqlx::query_as(&sql)
                    .bind(&lease_id)
                    .bind(leased_until)
                    .bind(consumer)
                    .bind(now)
                    .bind(i64::from(limit))
                    .fetch_all(pool)
                    .await?
            }
        };
        rows.into_iter()
            .map(|row| to_claimed(row, &lease_id))
            .collect()
    }

    /// Marks a job done. Refused (returns false) unless `lease_id` is the job's current lease:
    /// a worker whose lease expired and was taken over cannot acknowledge.
    pub async fn ack_job(
        &self,
        key: &str,
        lease_id: &str,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE outbox_jobs SET done_at = $1, leased_until = NULL \
                   WHERE idempotency_key = $2 AND lease_id = $3 AND done_at IS NULL";
        let rows = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query(sql)
                .bind(now)
                .bind(key)
                .bind(lease_id)
                .execute(pool)
                .await?
                .rows_affected(),
            Pool::Postgres(pool) => sqlx::query(sql)
                .bind(now)
                .bind(key)
                .bind(lease_id)
                .execute(pool)
                .await?
                .rows_affected(),
        };
        Ok(rows == 1)
    }

    /// Records a failed attempt: the job comes back after an exponential backoff.
    pub async fn fail_job(
        &self,
        key: &str,
        lease_id: &str,
        error: &str,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let current: Option<i64> = {
            let sql = "SELECT attempts FROM outbox_jobs WHERE idempotency_key = $1 AND lease_id = $2 AND done_at IS NULL";
            match &self.pool {
                Pool::Sqlite(pool) => {
                    sqlx::query_scalar(sql)
                        .bind(key)
                        .bind(lease_id)
                        .fetch_optional(pool)
                        .await?
                }
                Pool::Postgres(pool) => {
                    sqlx::query_scalar(sql)
                        .bind(key)
                        .bind(lease_id)
                        .fetch_optional(pool)
                        .await?
                }
            }
        };
        let Some(attempts) = current else {
            return Ok(false);
        };
        let attempts = attempts + 1;
        let available_at = now + backoff_ms(u32::try_from(attempts).unwrap_or(u32::MAX));
        let error: String = error.chars().take(2_000).collect();
        let sql = "UPDATE outbox_jobs SET attempts = $1, available_at = $2, last_error = $3, lease_id = NULL, \
                   leased_until = NULL WHERE idempotency_key = $4 AND lease_id = $5 AND done_at IS NULL";
        let rows = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query(sql)
                .bind(attempts)
                .bind(available_at)
                .bind(&error)
                .bind(key)
                .bind(lease_id)
                .execute(pool)
                .await?
                .rows_affected(),
            Pool::Postgres(pool) => sqlx::query(sql)
                .bind(attempts)
                .bind(available_at)
                .bind(&error)
                .bind(key)
                .bind(lease_id)
                .execute(pool)
                .await?
                .rows_affected(),
        };
        Ok(rows == 1)
    }

    /// A job's state, for tests and the desk: (attempts, available_at, last_error, done).
    pub async fn job_status(
        &self,
        key: &str,
    ) -> Result<Option<(u32, Millis, Option<String>, bool)>, StoreError> {
        let sql = "SELECT attempts, available_at, last_error, done_at FROM outbox_jobs WHERE idempotency_key = $1";
        let row: Option<(i64, i64, Option<String>, Option<i64>)> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).bind(key).fetch_optional(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).bind(key).fetch_optional(pool).await?,
        };
        Ok(row.map(|(attempts, available_at, error, done)| {
            (
                u32::try_from(attempts).unwrap_or(u32::MAX),
                available_at,
                error,
                done.is_some(),
            )
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_five_seconds_up_to_one_hour() {
        assert_eq!(backoff_ms(1), 5_000);
        assert_eq!(backoff_ms(2), 10_000);
        assert_eq!(backoff_ms(3), 20_000);
        assert_eq!(backoff_ms(10), 2_560_000);
        assert_eq!(backoff_ms(11), 3_600_000);
        assert_eq!(backoff_ms(500), 3_600_000);
    }
}
