//! The ledger's contract on SQLite and PostgreSQL: compare-and-swap writes, the hash chain and
//! its verification, and concurrency without lost updates.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use domain::workflow::{decide, Actor, Bug, Command, Decision, Evidence, Policy, Refusal};
use domain::{BugState, Role};
use store::{Commit, DatabaseUrl, Store};

const NOW: i64 = 1_700_000_000_000;

use support::{fresh, raw};

async fn open_bug(store: &Store, id: &str) -> Bug {
    let bug = Bug::open(id, "shoplite", &format!("{id}-report"));
    store.create_bug(&bug, &[], &[], NOW).await.unwrap();
    bug
}

fn note(bug: &Bug, n: usize) -> Result<Decision, Refusal> {
    decide(
        bug,
        &Command::AddNote {
            note: format!("note-{n}"),
        },
        &Actor::Role {
            role: Role::Reviewer,
        },
        &Evidence::default(),
        &Policy::default(),
        NOW,
    )
}

fn drop_append_only(url: &DatabaseUrl) -> &'static [&'static str] {
    match url {
        DatabaseUrl::Sqlite { .. } => &[
            "DROP TRIGGER audit_events_no_update",
            "DROP TRIGGER audit_events_no_delete",
        ],
        DatabaseUrl::Postgres { .. } => {
            &["ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only"]
        }
    }
}

async fn a_bug_moves_through_the_engine_and_its_chain_verifies(backend: &str) {
    let (store, _url, _dir) = fresh(backend).await;
    open_bug(&store, "bug-1").await;
    let manager = Actor::Role {
        role: Role::Manager,
    };
    let applied = store
        .apply("bug-1", NOW, |bug| {
            decide(
                bug,
                &Command::RecordTriage { note: "t".into() },
                &manager,
                &Evidence::default(),
                &Policy::default(),
                NOW,
            )
        })
        .await
        .unwrap();
    assert!(applied.changed);
    assert_eq!(applied.bug.state, BugState::Triaged);

    // A refused command records nothing.
    let refused = store
        .apply("bug-1", NOW, |bug| {
            decide(
                bug,
                &Command::Approve {
                    head: domain::workflow::CommitSha::parse(&"a".repeat(40)).unwrap(),
                },
                &Actor::Role { role: Role::Fixer },
                &Evidence::default(),
                &Policy::default(),
                NOW,
            )
        })
        .await;
    assert!(
        matches!(refused, Err(store::ApplyError::Refused(r)) if r.kind == domain::workflow::RefusalKind::Forbidden)
    );

    let stored = store.load_bug("bug-1").await.unwrap().unwrap();
    assert_eq!(stored.bug.version, 1);
    assert_eq!(stored.event_count, 1);
    let events = store.events_of("bug-1").await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event.kind, "triaged");
    assert_eq!(events[0].event.actor_kind, "role");
    assert_eq!(events[0].event.actor_id, "manager");
    assert_eq!(store.verify_ledger().await.unwrap().unwrap().events, 1);
    assert!(matches!(
        store.apply("nope", NOW, |b| note(b, 0)).await,
        Err(store::ApplyError::NotFound(_))
    ));
}

async fn a_stale_version_loses_the_compare_and_swap(backend: &str) {
    let (store, _url, _dir) = fresh(backend).await;
    let bug = open_bug(&store, "bug-1").await;
    let first = note(&bug, 1).unwrap();
    let second = note(&bug, 2).unwrap();
    assert_eq!(
        store.commit_decision(0, &first, NOW).await.unwrap(),
        Commit::Done
    );
    assert_eq!(
        store.commit_decision(0, &second, NOW).await.unwrap(),
        Commit::VersionConflict
    );
    let stored = store.load_bug("bug-1").await.unwrap().unwrap();
    assert_eq!((stored.bug.version, stored.event_count), (1, 1));
}

async fn events_are_append_only_and_tampering_is_named(backend: &str) {
    let (store, url, _dir) = fresh(backend).await;
    let mut bug = open_bug(&store, "bug-1").await;
    for n in 0..4 {
        let decision = note(&bug, n).unwrap();
        store
            .commit_decision(bug.version, &decision, NOW)
            .await
            .unwrap();
        bug = decision.bug;
    }
    assert!(store.verify_ledger().await.unwrap().is_ok());

    // The application's own database refuses edits.
    let refused = std::panic::AssertUnwindSafe(raw(
        &url,
        &["UPDATE audit_events SET actor_id = 'x' WHERE seq = 2"],
    ));
    assert!(
        futures::FutureExt::catch_unwind(refused).await.is_err(),
        "an UPDATE of an event succeeded"
    );

    // Someone with raw access drops the guard and edits event 2.
    raw(&url, drop_append_only(&url)).await;
    raw(&url, &["UPDATE audit_events SET body = REPLACE(body, 'note-1', 'note-X') WHERE bug_id = 'bug-1' AND seq = 2"]).await;
    let broken = store.verify_ledger().await.unwrap().unwrap_err();
    assert_eq!((broken.bug_id.as_str(), broken.seq), ("bug-1", 2));
    assert!(broken.reason.contains("edited"), "{broken}");
}

async fn deleted_and_reordered_events_are_named(backend: &str) {
    for tamper in ["delete", "reorder"] {
        let (store, url, _dir) = fresh(backend).await;
        let mut bug = open_bug(&store, "bug-1").await;
        for n in 0..4 {
            let decision = note(&bug, n).unwrap();
            store
                .commit_decision(bug.version, &decision, NOW)
                .await
                .unwrap();
            bug = decision.bug;
        }
        raw(&url, drop_append_only(&url)).await;
        match tamper {
            "delete" => {
                raw(
                    &url,
                    &["DELETE FROM audit_events WHERE bug_id = 'bug-1' AND seq = 3"],
                )
                .await
            }
            _ => {
                raw(
                    &url,
                    &[
                        "UPDATE audit_events SET seq = 100 WHERE bug_id = 'bug-1' AND seq = 2",
                        "UPDATE audit_events SET seq = 2 WHERE bug_id = 'bug-1' AND seq = 3",
                        "UPDATE audit_events SET seq = 3 WHERE bug_id = 'bug-1' AND seq = 100",
                    ],
                )
                .await
            }
        }
        let broken = store.verify_ledger().await.unwrap().unwrap_err();
        let expected = if tamper == "delete" { 3 } else { 2 };
        assert_eq!(broken.seq, expected, "{tamper}: {broken}");
    }
}

async fn concurrent_writers_on_one_bug_lose_no_update(backend: &str) {
    const WRITERS: usize = 32;
    const COMMANDS: usize = 50;
    let (store, _url, _dir) = fresh(backend).await;
    open_bug(&store, "hot").await;
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..COMMANDS {
                store
                    .apply("hot", NOW, |bug| note(bug, writer * 1_000 + n))
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let stored = store.load_bug("hot").await.unwrap().unwrap();
    assert_eq!(stored.bug.version, (WRITERS * COMMANDS) as u64);
    assert_eq!(stored.event_count, (WRITERS * COMMANDS) as u64);
    let summary = store.verify_ledger().await.unwrap().unwrap();
    assert_eq!(summary.events, (WRITERS * COMMANDS) as u64);
}

on_both!(
    a_bug_moves_through_the_engine_and_its_chain_verifies,
    a_stale_version_loses_the_compare_and_swap,
    events_are_append_only_and_tampering_is_named,
    deleted_and_reordered_events_are_named,
    concurrent_writers_on_one_bug_lose_no_update,
);

/// A full SQLite database (here: capped by `max_page_count`, as a full disk would) refuses
/// writes with its own error, the health probe says so, and once space is free again writes
/// work without a restart — no pooled connection is left stuck inside a failed transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_recovers_from_a_full_database_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let url = store::testing::fresh_sqlite(dir.path());
    {
        let store = Store::connect(&url).await.unwrap();
        store.migrate().await.unwrap();
        store.close().await;
    }
    // Room to free later: a filler table written outside the cap.
    raw(
        &url,
        &[
            "CREATE TABLE filler (b BLOB)",
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 64) \
             INSERT INTO filler SELECT zeroblob(8000) FROM n",
        ],
    )
    .await;
    let pages: i64 = {
        use sqlx::Connection;
        let store::DatabaseUrl::Sqlite { path } = &url else {
            unreachable!()
        };
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{path}"))
            .await
            .unwrap();
        sqlx::query_scalar("PRAGMA page_count")
            .fetch_one(&mut c)
            .await
            .unwrap()
    };
    let store = Store::connect_with_pragmas(&url, &[("max_page_count", pages.to_string())])
        .await
        .unwrap();
    // Fill it: bugs, each in its own transaction, until the database refuses.
    let mut refusals = Vec::new();
    for n in 0..2_000 {
        let bug = Bug::open(&format!("full-{n}"), "shoplite", &"r".repeat(2_000));
        if let Err(error) = store.create_bug(&bug, &[], &[], NOW).await {
            refusals.push(error.to_string());
            if refusals.len() == 20 {
                break;
            }
        }
    }
    assert_eq!(refusals.len(), 20, "the cap was never reached");
    for refusal in &refusals {
        assert!(
            refusal.contains("full"),
            "every refusal is the full database's own, not a stuck connection's: {refusals:?}"
        );
    }
    assert!(store.probe_write(NOW).await.is_err(), "health sees it");
    // Reads still answer.
    store.ping().await.unwrap();
    // Space is freed (the disk grown, a file removed): writes work again, on every connection.
    raw(&url, &["DELETE FROM filler"]).await;
    for n in 0..40 {
        let bug = Bug::open(&format!("after-{n}"), "shoplite", "report");
        store.create_bug(&bug, &[], &[], NOW).await.unwrap();
    }
    store.probe_write(NOW + 1).await.unwrap();
    assert!(store.load_bug("after-39").await.unwrap().is_some());
}
