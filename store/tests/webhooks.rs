//! The webhook record's contract on SQLite and PostgreSQL: a body or a delivery id accepted
//! once files nothing again, and deliveries filed before body hashes were kept are caught up.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use domain::workflow::{Consumer, JobDraft};
use std::collections::BTreeMap;
use store::NewWebhook;

const NOW: i64 = 1_700_000_000_000;

fn job(delivery: &str, body: &str) -> JobDraft {
    JobDraft {
        idempotency_key: format!("github:{delivery}"),
        kind: "github_pull_request".to_owned(),
        consumer: Consumer::Forge,
        available_at: NOW,
        payload: BTreeMap::from([
            ("event".to_owned(), "pull_request".to_owned()),
            ("delivery".to_owned(), delivery.to_owned()),
            ("body".to_owned(), body.to_owned()),
        ]),
    }
}

/// A stand-in for SHA-256 (the store only keeps what the caller computed).
fn hash(body: &[u8]) -> String {
    format!("h{}", String::from_utf8_lossy(body).len())
}

fn webhook<'a>(body_sha256: &'a str, delivery: &'a str) -> NewWebhook<'a> {
    NewWebhook {
        source: "github",
        body_sha256,
        delivery,
        event: "pull_request",
    }
}

async fn a_body_or_a_delivery_id_seen_before_files_nothing(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    assert!(store
        .enqueue_webhook(&webhook("aaa", "d1"), &job("d1", "{1}"), NOW)
        .await
        .unwrap());
    // The same body under a fresh delivery id (a captured body re-sent).
    assert!(!store
        .enqueue_webhook(&webhook("aaa", "d2"), &job("d2", "{1}"), NOW)
        .await
        .unwrap());
    // The same delivery id (GitHub's redelivery), even with another body.
    assert!(!store
        .enqueue_webhook(&webhook("bbb", "d1"), &job("d1", "{2}"), NOW)
        .await
        .unwrap());
    assert!(store.job_status("github:d2").await.unwrap().is_none());
    assert!(store
        .webhook_delivery("github", "d2")
        .await
        .unwrap()
        .is_none());
    // Another source keeps its own record.
    assert!(store
        .enqueue_webhook(
            &NewWebhook {
                source: "other",
                ..webhook("aaa", "o1")
            },
            &job("o1", "{1}"),
            NOW
        )
        .await
        .unwrap());
    let claimed = store.claim_jobs("forge", 10, NOW).await.unwrap();
    assert_eq!(claimed.len(), 2);

    let recorded = store
        .webhook_delivery("github", "d1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (recorded.body_sha256.as_str(), recorded.job_key.as_str()),
        ("aaa", "github:d1")
    );
    assert_eq!((recorded.outcome, recorded.applied_at), (None, None));
    store
        .record_webhook_outcome("github", "aaa", "not counted: read", Some(NOW + 1))
        .await
        .unwrap();
    let recorded = store
        .webhook_delivery("github", "d1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(recorded.outcome.as_deref(), Some("not counted: read"));
    assert_eq!(recorded.applied_at, Some(NOW + 1));
}

async fn deliveries_filed_before_body_hashes_are_caught_up(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    // Filed the old way: a job keyed by delivery id only.
    assert!(store
        .enqueue_job(&job("old", "{\"old\":1}"), None, NOW)
        .await
        .unwrap());
    store
        .enqueue_job(
            &JobDraft {
                idempotency_key: "other:1".into(),
                ..job("x", "{}")
            },
            None,
            NOW,
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .backfill_webhook_deliveries("github", "github:", hash)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .backfill_webhook_deliveries("github", "github:", hash)
            .await
            .unwrap(),
        0,
        "a second call records none"
    );
    let old = store
        .webhook_delivery("github", "old")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(old.body_sha256, hash(b"{\"old\":1}"));
    // That old body re-sent under a new delivery id is now recognised.
    assert!(!store
        .enqueue_webhook(
            &webhook(&hash(b"{\"old\":1}"), "new"),
            &job("new", "{\"old\":1}"),
            NOW
        )
        .await
        .unwrap());
    // An old delivery id with a body the desk never recorded is still a replay.
    assert!(!store
        .enqueue_webhook(&webhook("fresh-body", "old"), &job("old", "{}"), NOW)
        .await
        .unwrap());
}

on_both!(
    a_body_or_a_delivery_id_seen_before_files_nothing,
    deliveries_filed_before_body_hashes_are_caught_up,
);
