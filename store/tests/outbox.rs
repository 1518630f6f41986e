//! The outbox's contract on SQLite and PostgreSQL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use domain::workflow::{Consumer, JobDraft};
use std::collections::{BTreeMap, HashSet};
use store::{Store, LEASE_MS};

const NOW: i64 = 1_700_000_000_000;

async fn fresh(backend: &str) -> (Store, Option<tempfile::TempDir>) {
    let (store, _url, dir) = support::fresh(backend).await;
    (store, dir)
}

fn job(key: &str) -> JobDraft {
    JobDraft {
        idempotency_key: key.to_owned(),
        kind: "ask_fix".to_owned(),
        consumer: Consumer::Concierge,
        available_at: NOW,
        payload: BTreeMap::from([("report".to_owned(), "r-1".to_owned())]),
    }
}

async fn a_duplicate_enqueue_is_a_no_op(backend: &str) {
    let (store, _dir) = fresh(backend).await;
    assert!(store.enqueue_job(&job("k1"), None, NOW).await.unwrap());
    assert!(!store.enqueue_job(&job("k1"), None, NOW).await.unwrap());
    let claimed = store.claim_jobs("concierge", 10, NOW).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].payload["report"], "r-1");
    assert_eq!(claimed[0].leased_until, NOW + LEASE_MS);
    // Another consumer's queue is separate.
    store
        .enqueue_job(
            &JobDraft {
                consumer: Consumer::Manager,
                ..job("k2")
            },
            None,
            NOW,
        )
        .await
        .unwrap();
    assert_eq!(
        store.claim_jobs("concierge", 10, NOW).await.unwrap().len(),
        0
    );
    assert_eq!(store.claim_jobs("manager", 10, NOW).await.unwrap().len(), 1);
}

async fn acknowledging_needs_the_current_lease(backend: &str) {
    let (store, _dir) = fresh(backend).await;
    store.enqueue_job(&job("k1"), None, NOW).await.unwrap();
    let first = store
        .claim_jobs("concierge", 10, NOW)
        .await
        .unwrap()
        .remove(0);
    assert!(!store.ack_job("k1", "not-the-lease", NOW).await.unwrap());
    assert!(store.ack_job("k1", &first.lease_id, NOW).await.unwrap());
    assert!(
        !store.ack_job("k1", &first.lease_id, NOW).await.unwrap(),
        "acknowledged twice"
    );
    assert!(store
        .claim_jobs("concierge", 10, NOW + 2 * LEASE_MS)
        .await
        .unwrap()
        .is_empty());
    assert!(store.job_status("k1").await.unwrap().unwrap().3);
}

async fn a_killed_workers_jobs_come_back_after_the_lease(backend: &str) {
    let (store, _dir) = fresh(backend).await;
    for n in 0..3 {
        store
            .enqueue_job(&job(&format!("k{n}")), None, NOW)
            .await
            .unwrap();
    }
    let dead = store.claim_jobs("concierge", 10, NOW).await.unwrap();
    assert_eq!(dead.len(), 3);
    // The worker dies without acknowledging. Within the lease nobody else gets the jobs.
    assert!(store
        .claim_jobs("concierge", 10, NOW + LEASE_MS - 1)
        .await
        .unwrap()
        .is_empty());
    let rescued = store
        .claim_jobs("concierge", 10, NOW + LEASE_MS)
        .await
        .unwrap();
    assert_eq!(rescued.len(), 3);
    assert_ne!(rescued[0].lease_id, dead[0].lease_id);
    // The dead worker's lease is stale now.
    assert!(!store
        .ack_job(&dead[0].key, &dead[0].lease_id, NOW + LEASE_MS)
        .await
        .unwrap());
    assert!(store
        .ack_job(&rescued[0].key, &rescued[0].lease_id, NOW + LEASE_MS)
        .await
        .unwrap());
}

async fn a_failure_backs_off_exponentially(backend: &str) {
    let (store, _dir) = fresh(backend).await;
    store.enqueue_job(&job("k1"), None, NOW).await.unwrap();
    let mut now = NOW;
    for (attempt, delay) in [(1, 5_000), (2, 10_000), (3, 20_000)] {
        let claimed = store
            .claim_jobs("concierge", 1, now)
            .await
            .unwrap()
            .remove(0);
        assert!(store
            .fail_job("k1", &claimed.lease_id, "smtp refused", now)
            .await
            .unwrap());
        let (attempts, available_at, error, done) = store.job_status("k1").await.unwrap().unwrap();
        assert_eq!(
            (attempts, available_at - now, error.as_deref(), done),
            (attempt, delay, Some("smtp refused"), false)
        );
        assert!(store
            .claim_jobs("concierge", 1, available_at - 1)
            .await
            .unwrap()
            .is_empty());
        now = available_at;
    }
    assert!(!store.fail_job("k1", "stale", "x", now).await.unwrap());
}

async fn concurrent_workers_never_hold_the_same_job(backend: &str) {
    const JOBS: usize = 200;
    let (store, _dir) = fresh(backend).await;
    for n in 0..JOBS {
        store
            .enqueue_job(&job(&format!("job-{n:03}")), None, NOW)
            .await
            .unwrap();
    }
    let mut workers = Vec::new();
    for _ in 0..4 {
        let store = store.clone();
        workers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let batch = store.claim_jobs("concierge", 7, NOW).await.unwrap();
                if batch.is_empty() {
                    break mine;
                }
                for claimed in batch {
                    assert!(store
                        .ack_job(&claimed.key, &claimed.lease_id, NOW)
                        .await
                        .unwrap());
                    mine.push(claimed.key);
                }
            }
        }));
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    for worker in workers {
        for key in worker.await.unwrap() {
            total += 1;
            assert!(seen.insert(key.clone()), "{key} was held by two workers");
        }
    }
    assert_eq!(total, JOBS);
}

on_both!(
    a_duplicate_enqueue_is_a_no_op,
    acknowledging_needs_the_current_lease,
    a_killed_workers_jobs_come_back_after_the_lease,
    a_failure_backs_off_exponentially,
    concurrent_workers_never_hold_the_same_job,
);
