//! Rate-limit buckets shared by every server on one database: one token bucket per key,
//! refilled evenly, taken inside a transaction that holds the bucket so two servers never
//! both spend the last token. A report's intake takes its token in its own transaction
//! ([`Store::file_report`]): one durable write per report.

use crate::{Store, StoreError};
use domain::workflow::Millis;

/// Buckets untouched this long are deleted now and then (a full bucket loses nothing).
const FORGET_AFTER_MS: i64 = 24 * 3_600_000;

/// A client's bucket under one limit: its key (a hash of the limit's name and the client)
/// and how it refills.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    /// The stored key.
    pub key: String,
    /// The limit.
    pub refill: Refill,
}

/// How long until a bucket left at `left` tokens has one again.
pub fn retry_ms(refill: Refill, left: f64) -> u64 {
    ((1.0 - left) / refill.per_ms).ceil().max(1.0) as u64
}

/// One limit: `capacity` tokens, refilled at `per_ms` tokens a millisecond.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Refill {
    /// Most tokens (the burst).
    pub capacity: f64,
    /// Tokens added per millisecond.
    pub per_ms: f64,
}

/// The bucket after `elapsed_ms` at `tokens`, and whether one token is taken: pure, so both
/// the shared and the in-memory limiter spend alike.
pub fn refill_and_take(refill: Refill, tokens: f64, elapsed_ms: i64) -> (f64, bool) {
    let elapsed = elapsed_ms.max(0) as f64;
    let now = (tokens + elapsed * refill.per_ms).min(refill.capacity);
    if now >= 1.0 {
        (now - 1.0, true)
    } else {
        (now, false)
    }
}

impl Store {
    /// Takes one token of bucket `key` at `now`: `Ok(Ok(()))` when there was one, else
    /// `Ok(Err(ms))` with how long until one refills. One transaction holding the bucket
    /// (PostgreSQL: its row, locked by an upsert; SQLite: the write lock): takers of one key queue
    /// instead of failing (32 at once from one address once answered 503).
    pub async fn rate_take(
        &self,
        key: &str,
        refill: Refill,
        now: Millis,
    ) -> Result<Result<(), u64>, StoreError> {
        let bucket = Bucket {
            key: key.to_owned(),
            refill,
        };
        let taken = for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            let taken = take_bucket!(tx, &bucket, now);
            tx.commit().await?;
            taken
        });
        self.now_and_then_forget(now).await?;
        Ok(taken)
    }

    /// About one take in 512 also deletes the buckets untouched for a day (a full bucket
    /// loses nothing).
    pub(crate) async fn now_and_then_forget(&self, now: Millis) -> Result<(), StoreError> {
        if rand_forget() {
            self.rate_forget(now - FORGET_AFTER_MS).await?;
        }
        Ok(())
    }

    /// Deletes buckets untouched since `before`.
    async fn rate_forget(&self, before: Millis) -> Result<(), StoreError> {
        for_each_backend!(self, pool, _begin => {
            sqlx::query("DELETE FROM rate_buckets WHERE updated_ms < $1")
                .bind(before)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}

/// About one take in 512 also forgets old buckets.
fn rand_forget() -> bool {
    use std::sync::atomic::{AtomicU64, Ordering};
    static TAKES: AtomicU64 = AtomicU64::new(0);
    TAKES.fetch_add(1, Ordering::Relaxed) % 512 == 511
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_refills_evenly_up_to_its_capacity() {
        let refill = Refill {
            capacity: 3.0,
            per_ms: 3.0 / 60_000.0,
        };
        assert_eq!(refill_and_take(refill, 3.0, 0), (2.0, true));
        assert_eq!(refill_and_take(refill, 0.0, 0), (0.0, false));
        let (left, took) = refill_and_take(refill, 0.0, 20_000);
        assert!(took && left.abs() < 1e-9);
        assert_eq!(refill_and_take(refill, 2.5, 3_600_000), (2.0, true));
        // A clock that went backwards refills nothing.
        assert_eq!(refill_and_take(refill, 0.5, -5_000), (0.5, false));
    }
}
