//! Rate-limit buckets shared by every server on one database: one token bucket per key,
//! refilled evenly, taken by compare-and-swap so two servers never both spend the last token.

use crate::{Store, StoreError};
use domain::workflow::Millis;

/// Compare-and-swap tries before a take gives up as contended (each try is two statements).
const TRIES: usize = 8;
/// Buckets untouched this long are deleted now and then (a full bucket loses nothing).
const FORGET_AFTER_MS: i64 = 24 * 3_600_000;

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
    /// `Ok(Err(ms))` with how long until one refills.
    pub async fn rate_take(
        &self,
        key: &str,
        refill: Refill,
        now: Millis,
    ) -> Result<Result<(), u64>, StoreError> {
        if let crate::Pool::Postgres(pool) = &self.pool {
            // One transaction holding the bucket's row: takers of one key queue on its lock
            // instead of failing a compare-and-swap (32 at once from one address answered 503).
            let mut tx = pool.begin().await?;
            sqlx::query(
                "INSERT INTO rate_buckets (key, tokens, updated_ms) VALUES ($1, $2, $3) \
                 ON CONFLICT (key) DO NOTHING",
            )
            .bind(key)
            .bind(refill.capacity)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let (tokens, updated): (f64, i64) = sqlx::query_as(
                "SELECT tokens, updated_ms FROM rate_buckets WHERE key = $1 FOR UPDATE",
            )
            .bind(key)
            .fetch_one(&mut *tx)
            .await?;
            let (left, took) = refill_and_take(refill, tokens, now - updated);
            sqlx::query("UPDATE rate_buckets SET tokens = $1, updated_ms = $2 WHERE key = $3")
                .bind(left)
                .bind(now.max(updated))
                .bind(key)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            if rand_forget() {
                self.rate_forget(now - FORGET_AFTER_MS).await?;
            }
            return Ok(if took {
                Ok(())
            } else {
                Err(((1.0 - left) / refill.per_ms).ceil().max(1.0) as u64)
            });
        }
        for _ in 0..TRIES {
            let taken = for_each_backend!(self, pool, _begin => {
                sqlx::query(
                    "INSERT INTO rate_buckets (key, tokens, updated_ms) VALUES ($1, $2, $3) \
                     ON CONFLICT (key) DO NOTHING",
                )
                .bind(key)
                .bind(refill.capacity)
                .bind(now)
                .execute(pool)
                .await?;
                let (tokens, updated): (f64, i64) = sqlx::query_as(
                    "SELECT tokens, updated_ms FROM rate_buckets WHERE key = $1",
                )
                .bind(key)
                .fetch_one(pool)
                .await?;
                let (left, took) = refill_and_take(refill, tokens, now - updated);
                let swapped = sqlx::query(
                    "UPDATE rate_buckets SET tokens = $1, updated_ms = $2 \
                     WHERE key = $3 AND tokens = $4 AND updated_ms = $5",
                )
                .bind(left)
                .bind(now.max(updated))
                .bind(key)
                .bind(tokens)
                .bind(updated)
                .execute(pool)
                .await?
                .rows_affected()
                    == 1;
                swapped.then_some((left, took))
            });
            if let Some((left, took)) = taken {
                if rand_forget() {
                    self.rate_forget(now - FORGET_AFTER_MS).await?;
                }
                return Ok(if took {
                    Ok(())
                } else {
                    Err(((1.0 - left) / refill.per_ms).ceil().max(1.0) as u64)
                });
            }
        }
        Err(StoreError::Contended(format!(
            "rate bucket still contended after {TRIES} tries"
        )))
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
