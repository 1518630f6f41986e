//! Per-client rate limits: a token bucket per client key. On PostgreSQL the buckets live in
//! the database, shared by every server on it (`store::rate`; keys stored as hashes); on the
//! embedded SQLite desk, which is one process, in memory, bounded in size. Both spend by the
//! same rule ([`store::rate::refill_and_take`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Buckets kept before idle (full) ones are pruned.
const MAX_BUCKETS: usize = 50_000;

/// `COUNT` requests per `PERIOD`, refilled evenly (a burst of `COUNT` is allowed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Requests per period.
    pub count: u32,
    /// The period.
    pub per: Duration,
}

impl RateLimit {
    /// Parses `COUNT/PERIOD` where the period is a number with `s`, `m` or `h`: `6/60s`,
    /// `30/1m`, `100/1h`.
    pub fn parse(text: &str) -> Result<RateLimit, String> {
        let expected =
            || format!("expected COUNT/PERIOD such as 6/60s, 30/1m or 100/1h, got {text:?}");
        let (count, period) = text.trim().split_once('/').ok_or_else(expected)?;
        let count: u32 = count.trim().parse().map_err(|_| expected())?;
        let period = period.trim();
        let (number, unit) = period.split_at(period.len().saturating_sub(1));
        let number: u64 = number.parse().map_err(|_| expected())?;
        let seconds = match unit {
            "s" => number,
            "m" => number.saturating_mul(60),
            "h" => number.saturating_mul(3600),
            _ => return Err(expected()),
        };
        if count == 0 || seconds == 0 {
            return Err(format!("{} (both numbers above zero)", expected()));
        }
        Ok(RateLimit {
            count,
            per: Duration::from_secs(seconds),
        })
    }

    fn per_second(self) -> f64 {
        f64::from(self.count) / self.per.as_secs_f64()
    }
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// One limit applied per client key.
#[derive(Debug)]
pub struct Limiter {
    name: &'static str,
    limit: RateLimit,
    buckets: Mutex<HashMap<String, Bucket>>,
    shared: Option<store::Store>,
}

impl Limiter {
    /// A limiter named `name` (its buckets' prefix in the database) with `limit` for every
    /// key, in memory until [`Limiter::shared_in`].
    pub fn new(name: &'static str, limit: RateLimit) -> Self {
        Limiter {
            name,
            limit,
            buckets: Mutex::new(HashMap::new()),
            shared: None,
        }
    }

    /// Keeps the buckets in `store` when it is PostgreSQL (several servers may share it);
    /// SQLite's desk is one process and keeps them in memory.
    pub fn shared_in(mut self, store: &store::Store) -> Self {
        if store.backend() == store::Backend::Postgres {
            self.shared = Some(store.clone());
        }
        self
    }

    fn refill(&self) -> store::rate::Refill {
        store::rate::Refill {
            capacity: f64::from(self.limit.count),
            per_ms: self.limit.per_second() / 1000.0,
        }
    }

    /// `key`'s bucket in the database when the buckets are shared (PostgreSQL), for a
    /// transaction that takes its token together with what it writes (a report's intake);
    /// `None` when they are kept in memory ([`Limiter::take`] then).
    pub fn shared_bucket(&self, key: &str) -> Option<store::rate::Bucket> {
        self.shared.as_ref()?;
        use sha2::Digest;
        let hashed = hex::encode(sha2::Sha256::digest(key.as_bytes()));
        Some(store::rate::Bucket {
            key: format!("{}:{hashed}", self.name),
            refill: self.refill(),
        })
    }

    /// Takes one request for `key` now (`now_ms`, the wall clock, for a shared bucket); when
    /// over the limit, how long until it may retry. A shared bucket the database cannot read
    /// is an error (the caller answers 503).
    pub async fn take(
        &self,
        key: &str,
        now_ms: i64,
    ) -> Result<Result<(), Duration>, store::StoreError> {
        let (Some(store), Some(bucket)) = (&self.shared, self.shared_bucket(key)) else {
            return Ok(self.check(key, Instant::now()));
        };
        Ok(store
            .rate_take(&bucket.key, bucket.refill, now_ms)
            .await?
            .map_err(Duration::from_millis))
    }

    /// Takes one request for `key` at `now`; when over the limit, how long until it may retry.
    pub fn check(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let capacity = f64::from(self.limit.count);
        let rate = self.limit.per_second();
        let mut buckets = match self.buckets.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(key) {
            // Forget clients whose bucket has refilled: they lose nothing.
            buckets.retain(|_, b| {
                b.tokens + now.saturating_duration_since(b.updated).as_secs_f64() * rate < capacity
            });
        }
        let bucket = buckets.entry(key.to_owned()).or_insert(Bucket {
            tokens: capacity,
            updated: now,
        });
        let elapsed = now.saturating_duration_since(bucket.updated).as_millis();
        let (left, took) = store::rate::refill_and_take(
            self.refill(),
            bucket.tokens,
            i64::try_from(elapsed).unwrap_or(i64::MAX),
        );
        bucket.tokens = left;
        bucket.updated = now;
        if took {
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - left) / rate))
        }
    }
}

/// The key a client is limited by: its address, with IPv6 grouped by /64 (one host usually
/// holds a whole /64).
pub fn client_key(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

/// Whole seconds for a `Retry-After` header (at least 1).
pub fn retry_after_seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse_with_units_and_bad_ones_say_the_form() {
        assert_eq!(
            RateLimit::parse("6/60s").unwrap(),
            RateLimit {
                count: 6,
                per: Duration::from_secs(60)
            }
        );
        assert_eq!(
            RateLimit::parse("30/1m").unwrap().per,
            Duration::from_secs(60)
        );
        assert_eq!(
            RateLimit::parse("100/2h").unwrap().per,
            Duration::from_secs(7200)
        );
        for bad in [
            "", "6", "6/", "x/60s", "6/60", "6/60d", "0/60s", "6/0s", "-1/60s",
        ] {
            let error = RateLimit::parse(bad).unwrap_err();
            assert!(error.contains("COUNT/PERIOD"), "{bad}: {error}");
        }
    }

    #[test]
    fn a_burst_is_allowed_then_refused_until_a_token_refills() {
        let limiter = Limiter::new("test", RateLimit::parse("3/60s").unwrap());
        let start = Instant::now();
        for _ in 0..3 {
            assert!(limiter.check("a", start).is_ok());
        }
        let wait = limiter.check("a", start).unwrap_err();
        assert_eq!(retry_after_seconds(wait), 20);
        // Another client is unaffected.
        assert!(limiter.check("b", start).is_ok());
        // After the refill time one more request passes, and only one.
        let later = start + Duration::from_secs(20);
        assert!(limiter.check("a", later).is_ok());
        assert!(limiter.check("a", later).is_err());
    }

    #[test]
    fn ipv6_clients_are_grouped_by_prefix_and_mapped_ipv4_by_address() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_key(a), client_key(b));
        assert_ne!(client_key(a), client_key(c));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(client_key(mapped), "192.0.2.7");
    }
}
