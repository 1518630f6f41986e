//! Hand-offs and heartbeats, against SQLite and the real PostgreSQL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use store::{testing, CrewTask, DatabaseUrl, Store};

fn new_task(id: &str, key: &str, to: &str, body: &str) -> CrewTask {
    CrewTask {
        id: id.into(),
        dedupe_key: key.into(),
        bug_id: Some("bug-1".into()),
        kind: "reproduce".into(),
        sender: "manager".into(),
        addressed_to: to.into(),
        body: body.into(),
        body_sha256: domain::crew::body_hash(body),
        created_at: 100,
        accepted_at: None,
        completed_at: None,
        outcome: None,
    }
}

async fn contract(url: DatabaseUrl) {
    let store = Store::connect(&url).await.unwrap();
    store.migrate().await.unwrap();

    let (sent, fresh) = store
        .send_task(&new_task(
            "t1",
            "reproduce:bug-1:v3",
            "reproducer",
            "{\"bug\":\"bug-1\"}",
        ))
        .await
        .unwrap();
    assert!(fresh);
    assert_eq!(
        sent.body_sha256,
        domain::crew::body_hash("{\"bug\":\"bug-1\"}")
    );
    // The same hand-off again (another id, same key): the first one stands.
    let (again, fresh) = store
        .send_task(&new_task(
            "t2",
            "reproduce:bug-1:v3",
            "reproducer",
            "{\"other\":1}",
        ))
        .await
        .unwrap();
    assert!(!fresh);
    assert_eq!(again, sent);
    store
        .send_task(&new_task("t3", "fix:bug-1:v9", "fixer", "{}"))
        .await
        .unwrap();

    // Leases of 1,000 ms: at time `now`, acceptances before `now - 1000` have run out.
    let lease = |now: i64| now - 1_000;
    let open = store
        .open_tasks_for("reproducer", lease(150))
        .await
        .unwrap();
    assert_eq!(
        open.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["t1"]
    );
    assert!(store
        .open_tasks_for("reviewer", lease(150))
        .await
        .unwrap()
        .is_empty());

    assert!(
        !store.complete_task("t1", "done", 150, None).await.unwrap(),
        "not accepted yet"
    );
    assert!(store.accept_task("t1", 200, lease(200)).await.unwrap());
    assert!(
        !store.accept_task("t1", 201, lease(201)).await.unwrap(),
        "accepted once while the lease holds"
    );
    assert!(store
        .open_tasks_for("reproducer", lease(1_100))
        .await
        .unwrap()
        .is_empty());
    // The worker died with it: once the lease ran out the task is offered and taken again.
    let offered = store
        .open_tasks_for("reproducer", lease(1_300))
        .await
        .unwrap();
    assert_eq!(
        offered.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["t1"]
    );
    assert!(store.accept_task("t1", 1_300, lease(1_300)).await.unwrap());
    assert!(
        !store.accept_task("t1", 1_301, lease(1_301)).await.unwrap(),
        "the new lease holds"
    );
    // The first worker, back from the dead, holds the lease of 200: it can neither renew it
    // nor complete the task the second worker holds.
    assert!(!store.renew_task("t1", 200, 1_310).await.unwrap());
    assert!(!store
        .complete_task("t1", "late", 1_310, Some(200))
        .await
        .unwrap());
    // The second renews its lease (1,300 → 1,350): offered to nobody until 2,350.
    assert!(store.renew_task("t1", 1_300, 1_350).await.unwrap());
    assert!(
        !store.renew_task("t1", 1_300, 1_360).await.unwrap(),
        "a renewal names the lease it holds now"
    );
    assert!(store
        .open_tasks_for("reproducer", lease(2_300))
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .complete_task("t1", "reproduced", 1_400, Some(1_350))
        .await
        .unwrap());
    assert!(
        !store.renew_task("t1", 1_350, 1_410).await.unwrap(),
        "completed"
    );
    assert!(!store
        .complete_task("t1", "again", 1_401, None)
        .await
        .unwrap());
    // Completed: never offered again, however old.
    assert!(store
        .open_tasks_for("reproducer", lease(99_000))
        .await
        .unwrap()
        .is_empty());
    assert!(!store
        .accept_task("t1", 99_000, lease(99_000))
        .await
        .unwrap());
    let done = store.crew_task("t1").await.unwrap().unwrap();
    assert_eq!(
        (done.accepted_at, done.completed_at),
        (Some(1_350), Some(1_400))
    );
    assert_eq!(done.outcome.as_deref(), Some("reproduced"));
    assert_eq!(store.crew_task("nope").await.unwrap(), None);
    assert_eq!(store.recent_tasks(10).await.unwrap().len(), 2);
    let of_bug = store.tasks_for_bug("bug-1", 10).await.unwrap();
    assert!(of_bug.iter().all(|t| t.bug_id.as_deref() == Some("bug-1")));
    assert!(of_bug.iter().any(|t| t.id == "t1"), "{of_bug:?}");
    assert!(store
        .tasks_for_bug("bug-none", 10)
        .await
        .unwrap()
        .is_empty());

    store.heartbeat("fixer", "idle", 1_000).await.unwrap();
    store
        .heartbeat("fixer", "working on bug-1", 2_000)
        .await
        .unwrap();
    store.heartbeat("manager", "idle", 1_500).await.unwrap();
    assert_eq!(
        store.heartbeats().await.unwrap(),
        [
            ("fixer".to_owned(), 2_000, "working on bug-1".to_owned()),
            ("manager".to_owned(), 1_500, "idle".to_owned()),
        ]
    );
}

#[tokio::test]
async fn hand_offs_and_heartbeats_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    contract(testing::fresh_sqlite(dir.path())).await;
}

#[tokio::test]
async fn hand_offs_and_heartbeats_on_postgres() {
    contract(testing::fresh_postgres().await).await;
}
