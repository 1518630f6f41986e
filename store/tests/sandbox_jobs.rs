//! Sandbox jobs on both backends: one holder per job, oldest first, a dead worker's job comes
//! back when its lease expires (a bounded number of times), a stale lease can neither renew
//! nor finish, parallel claims (as from several hosts) never hand one job out twice, and
//! worker tokens name their worker until revoked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashSet;
use store::sandbox_jobs::{SandboxJobStatus, MAX_SANDBOX_CLAIMS};

async fn a_job_is_held_by_one_worker_and_returns_when_its_lease_expires(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    store
        .enqueue_sandbox_job("j1", "fix", "{}", None, 1_000)
        .await
        .unwrap();
    store
        .enqueue_sandbox_job("j2", "fix", "{}", None, 1_001)
        .await
        .unwrap();
    let a = store
        .claim_sandbox_job("a", 10_000, 2_000)
        .await
        .unwrap()
        .unwrap();
    let b = store
        .claim_sandbox_job("b", 10_000, 2_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (a.id.as_str(), b.id.as_str()),
        ("j1", "j2"),
        "oldest first, one each"
    );
    assert!(store
        .claim_sandbox_job("c", 10_000, 2_000)
        .await
        .unwrap()
        .is_none());
    // a renews; b dies and its job goes to c once the lease is over.
    assert!(store
        .renew_sandbox_job("j1", &a.lease_id, "a", 30_000, 11_000)
        .await
        .unwrap());
    let c = store
        .claim_sandbox_job("c", 10_000, 12_001)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((c.id.as_str(), c.claims), ("j2", 2));
    // Another worker cannot renew a lease it does not hold, even knowing its id.
    assert!(!store
        .renew_sandbox_job("j1", &a.lease_id, "c", 50_000, 12_001)
        .await
        .unwrap());
    // The dead worker's lease no longer renews or finishes anything.
    assert!(!store
        .renew_sandbox_job("j2", &b.lease_id, "b", 40_000, 12_002)
        .await
        .unwrap());
    assert!(!store
        .finish_sandbox_job("j2", &b.lease_id, "b", "late", 12_003)
        .await
        .unwrap());
    assert!(store
        .finish_sandbox_job("j2", &c.lease_id, "c", "ok", 12_004)
        .await
        .unwrap());
    assert_eq!(
        store.sandbox_job_status("j2").await.unwrap(),
        SandboxJobStatus::Finished {
            worker: "c".into(),
            outcome: "ok".into()
        }
    );
    assert!(matches!(
        store.sandbox_job_status("j1").await.unwrap(),
        SandboxJobStatus::Waiting { claims: 1, .. }
    ));
    store.delete_sandbox_job("j2").await.unwrap();
    assert_eq!(
        store.sandbox_job_status("j2").await.unwrap(),
        SandboxJobStatus::Missing
    );
}

async fn a_job_is_claimed_a_bounded_number_of_times(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    store
        .enqueue_sandbox_job("j", "fix", "{}", None, 0)
        .await
        .unwrap();
    let mut now = 1;
    for claim in 1..=MAX_SANDBOX_CLAIMS {
        let worker = format!("w{claim}");
        let job = store
            .claim_sandbox_job(&worker, 10, now)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(job.claims, claim);
        now += 20;
        // A worker that let its lease lapse never claims the same job again.
        if claim < MAX_SANDBOX_CLAIMS {
            assert!(store
                .claim_sandbox_job(&worker, 10, now)
                .await
                .unwrap()
                .is_none());
        }
    }
    assert!(store
        .claim_sandbox_job("fresh", 10, now)
        .await
        .unwrap()
        .is_none());
    // The job's status names every worker that let it lapse, oldest first.
    match store.sandbox_job_status("j").await.unwrap() {
        SandboxJobStatus::Waiting { worker, lapsed, .. } => {
            assert_eq!(worker.as_deref(), Some("w3"));
            assert_eq!(lapsed, vec!["w1".to_owned(), "w2".to_owned()]);
        }
        other => panic!("{other:?}"),
    }
    // A name with a LIKE wildcard is matched as itself: `w_1` is not `w1`.
    store
        .enqueue_sandbox_job("k", "fix", "{}", None, now)
        .await
        .unwrap();
    store
        .claim_sandbox_job("w1", 10, now)
        .await
        .unwrap()
        .unwrap();
    assert!(store
        .claim_sandbox_job("w_1", 10, now + 20)
        .await
        .unwrap()
        .is_some());
}

async fn parallel_claims_never_hand_one_job_out_twice(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    for n in 0..40 {
        store
            .enqueue_sandbox_job(&format!("j{n:02}"), "fix", "{}", None, n)
            .await
            .unwrap();
    }
    let mut claimers = Vec::new();
    for w in 0..8 {
        let store = store.clone();
        claimers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some(job) = store
                .claim_sandbox_job(&format!("w{w}"), 60_000, 100)
                .await
                .unwrap()
            {
                mine.push(job.id);
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for claimer in claimers {
        all.extend(claimer.await.unwrap());
    }
    let distinct: HashSet<_> = all.iter().collect();
    assert_eq!((all.len(), distinct.len()), (40, 40));
}

async fn worker_tokens_name_their_worker_until_revoked(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    assert!(store.add_sandbox_worker("host-a", "h1", 5).await.unwrap());
    assert!(!store.add_sandbox_worker("host-a", "h2", 6).await.unwrap());
    assert_eq!(
        store.sandbox_worker_of("h1").await.unwrap().as_deref(),
        Some("host-a")
    );
    assert!(store.sandbox_worker_of("h2").await.unwrap().is_none());
    assert!(store.revoke_sandbox_worker("host-a", 7).await.unwrap());
    assert!(!store.revoke_sandbox_worker("host-a", 8).await.unwrap());
    assert!(store.sandbox_worker_of("h1").await.unwrap().is_none());
    assert_eq!(
        store.sandbox_workers().await.unwrap()[0].revoked_at,
        Some(7)
    );
    // The revoked name comes back with a new token; the old one stays dead.
    assert!(store.add_sandbox_worker("host-a", "h3", 9).await.unwrap());
    assert_eq!(
        store.sandbox_worker_of("h3").await.unwrap().as_deref(),
        Some("host-a")
    );
    assert!(store.sandbox_worker_of("h1").await.unwrap().is_none());
}

/// A confirming job never goes to the worker whose run it confirms, even when that worker
/// is the only one asking; any other worker takes it.
async fn a_confirmation_never_goes_to_the_worker_it_confirms(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    store
        .enqueue_sandbox_job("again", "test", "{}", Some("host-a"), 1_000)
        .await
        .unwrap();
    for now in [2_000, 60_000] {
        assert!(
            store
                .claim_sandbox_job("host-a", 10_000, now)
                .await
                .unwrap()
                .is_none(),
            "host-a may not confirm its own run"
        );
    }
    let b = store
        .claim_sandbox_job("host-b", 10_000, 60_001)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(b.id, "again");
}

/// Distrusting a worker ends its token at once, takes back the jobs it holds (another
/// worker claims them at once, its own outcome is refused), and its name is never given to a
/// new token: what it measured stays marked as its.
async fn a_distrusted_worker_loses_its_token_its_jobs_and_its_name(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    assert!(store.add_sandbox_worker("mallory", "hm", 1).await.unwrap());
    assert!(store.add_sandbox_worker("host-b", "hb", 1).await.unwrap());
    assert_eq!(store.active_sandbox_workers().await.unwrap(), 2);
    store
        .enqueue_sandbox_job("j", "test", "{}", None, 1_000)
        .await
        .unwrap();
    let held = store
        .claim_sandbox_job("mallory", 60_000, 2_000)
        .await
        .unwrap()
        .unwrap();
    assert!(store
        .distrust_sandbox_worker("mallory", 3_000)
        .await
        .unwrap());
    assert!(!store
        .distrust_sandbox_worker("mallory", 3_001)
        .await
        .unwrap());
    assert!(!store
        .distrust_sandbox_worker("nobody", 3_001)
        .await
        .unwrap());
    assert!(store.sandbox_worker_of("hm").await.unwrap().is_none());
    assert_eq!(store.active_sandbox_workers().await.unwrap(), 1);
    assert_eq!(
        store.sandbox_job_held("j", "mallory", 3_002).await.unwrap(),
        None
    );
    assert!(!store
        .finish_sandbox_job("j", &held.lease_id, "mallory", "{}", 3_002)
        .await
        .unwrap());
    let taken = store
        .claim_sandbox_job("host-b", 60_000, 3_003)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken.id, "j", "its job went to another worker at once");
    assert!(!store.add_sandbox_worker("mallory", "hm2", 4).await.unwrap());
    let workers = store.sandbox_workers().await.unwrap();
    let mallory = workers.iter().find(|w| w.name == "mallory").unwrap();
    assert_eq!(
        (mallory.distrusted_at, mallory.revoked_at),
        (Some(3_000), Some(3_000))
    );
}

on_both!(
    a_confirmation_never_goes_to_the_worker_it_confirms,
    a_distrusted_worker_loses_its_token_its_jobs_and_its_name,
    a_job_is_held_by_one_worker_and_returns_when_its_lease_expires,
    a_job_is_claimed_a_bounded_number_of_times,
    parallel_claims_never_hand_one_job_out_twice,
    worker_tokens_name_their_worker_until_revoked,
);
