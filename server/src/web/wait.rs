//! Long polling: a route that hands out work (crew tasks, sandbox jobs, the bug list the
//! crew's manager acts on) may be asked to wait for it, `?wait_ms=N` (at most
//! [`MOST_WAIT_MS`]). It answers as soon as there is something, woken by the store the moment
//! work is added ([`store::Store::work_added`]: this server's writes, and every writer's on
//! PostgreSQL through `LISTEN r2r_work`), or when the wait is over with nothing.

use super::Refused;
use crate::error::Kind;
use std::time::Duration;
use tokio::time::Instant;

/// The longest a client may ask to wait.
pub const MOST_WAIT_MS: u64 = 25_000;

/// `wait_ms` of a raw query string: none (answer at once) or 1 to [`MOST_WAIT_MS`].
pub fn wait_of(query: Option<&str>) -> Result<Option<Duration>, Refused> {
    let Some(value) = query
        .unwrap_or_default()
        .split('&')
        .find_map(|pair| pair.strip_prefix("wait_ms="))
    else {
        return Ok(None);
    };
    match value.parse::<u64>() {
        Ok(0) => Ok(None),
        Ok(ms) if ms <= MOST_WAIT_MS => Ok(Some(Duration::from_millis(ms))),
        _ => Err(Refused::new(
            Kind::Invalid,
            "invalid_wait",
            format!(
                "wait_ms: a whole number of milliseconds from 0 to {MOST_WAIT_MS}, got {value:?}"
            ),
        )),
    }
}

/// Waits until work is added (`true`) or `deadline` passes (`false`).
pub async fn for_work(woken: &mut tokio::sync::watch::Receiver<u64>, deadline: Instant) -> bool {
    matches!(
        tokio::time::timeout_at(deadline, woken.changed()).await,
        Ok(Ok(()))
    )
}

/// Runs `look` until it finds something or the wait is over: at once when `wait` is `None`.
/// `woken` must be subscribed before the first look, so that work added meanwhile wakes it.
pub async fn until_found<T, F, Fut>(
    mut woken: tokio::sync::watch::Receiver<u64>,
    wait: Option<Duration>,
    found: impl Fn(&T) -> bool,
    mut look: F,
) -> Result<T, Refused>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Refused>>,
{
    let deadline = Instant::now() + wait.unwrap_or_default();
    loop {
        let answer = look().await?;
        if found(&answer) || Instant::now() >= deadline {
            return Ok(answer);
        }
        if !for_work(&mut woken, deadline).await {
            // The wait is over (or the store is gone): one last look.
            return look().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_a_bounded_number_of_milliseconds() {
        assert_eq!(wait_of(None).unwrap(), None);
        assert_eq!(wait_of(Some("")).unwrap(), None);
        assert_eq!(wait_of(Some("wait_ms=0")).unwrap(), None);
        assert_eq!(
            wait_of(Some("after=x&wait_ms=2500")).unwrap(),
            Some(Duration::from_millis(2_500))
        );
        for bad in ["wait_ms=25001", "wait_ms=-1", "wait_ms=soon", "wait_ms="] {
            assert_eq!(
                wait_of(Some(bad)).unwrap_err().error.error,
                "invalid_wait",
                "{bad}"
            );
        }
    }

    #[tokio::test]
    async fn a_waiter_wakes_when_work_is_added_and_not_before() {
        let (tx, rx) = tokio::sync::watch::channel(0_u64);
        let looks = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counter = looks.clone();
        let waiter = tokio::spawn(until_found(
            rx,
            Some(Duration::from_secs(20)),
            |n: &u32| *n >= 2,
            move || {
                let counter = counter.clone();
                async move { Ok(counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1) }
            },
        ));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            looks.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "it waits"
        );
        tx.send_modify(|n| *n += 1);
        let found = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken long before the wait is over")
            .unwrap()
            .unwrap();
        assert_eq!(found, 2);
    }

    #[tokio::test]
    async fn a_waiter_gives_up_at_its_deadline_with_a_last_look() {
        let (_tx, rx) = tokio::sync::watch::channel(0_u64);
        let started = Instant::now();
        let found = until_found(
            rx,
            Some(Duration::from_millis(200)),
            |_: &u32| false,
            || async { Ok(7_u32) },
        )
        .await
        .unwrap();
        assert_eq!(found, 7);
        assert!(started.elapsed() >= Duration::from_millis(200));
    }
}
