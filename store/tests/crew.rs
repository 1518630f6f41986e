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

    let open = store.open_tasks_for("reproducer").await.unwrap();
    assert_eq!(
        open.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["t1"]
    );
    assert!(store.open_tasks_for("reviewer").await.unwrap().is_empty());

    assert!(
        !store.complete_task("t1", "done", 150).await.unwrap(),
        "not accepted yet"
    );
    assert!(store.accept_task("t1", 200).await.unwrap());
    assert!(
        !store.accept_task("t1", 201).await.unwrap(),
        "accepted once"
    );
    assert!(store.open_tasks_for("reproducer").await.unwrap().is_empty());
    assert!(store.complete_task("t1", "reproduced", 300).await.unwrap());
    assert!(!store.complete_task("t1", "again", 301).await.unwrap());
    let done = store.crew_task("t1").await.unwrap().unwrap();
    assert_eq!(
        (done.accepted_at, done.completed_at),
        (Some(200), Some(300))
    );
    assert_eq!(done.outcome.as_deref(), Some("reproduced"));
    assert_eq!(store.crew_task("nope").await.unwrap(), None);
    assert_eq!(store.recent_tasks(10).await.unwrap().len(), 2);

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
