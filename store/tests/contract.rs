//! The store's contract: the same assertions against SQLite and the real PostgreSQL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use store::{testing, Backend, DatabaseUrl, NewOwner, Store};

async fn migrated(url: &DatabaseUrl) -> Store {
    let store = Store::connect(url).await.expect("connect");
    store.migrate().await.expect("migrate");
    store
}

async fn contract(url: DatabaseUrl, backend: Backend) {
    let store = migrated(&url).await;
    assert_eq!(store.backend(), backend);

    // Migrating again is a no-op and the schema version is the newest migration.
    store.migrate().await.expect("second migrate");
    assert_eq!(
        store.schema_version().await.unwrap(),
        Some(store::SCHEMA_VERSION)
    );
    store.ping().await.expect("ping");

    // The installation id is fixed by the first caller.
    let first = store.ensure_instance("desk-a", 1).await.unwrap();
    let second = store.ensure_instance("desk-b", 2).await.unwrap();
    assert_eq!(first, "desk-a");
    assert_eq!(second, "desk-a");

    // An owner is created once; a second bootstrap with the same email changes nothing.
    let owner = NewOwner {
        id: "owner-1".into(),
        email: "first@desk.test".into(),
        password_hash: "$argon2id$v=19$first".into(),
    };
    assert!(store.ensure_owner(&owner, 10).await.unwrap());
    let again = NewOwner {
        id: "owner-2".into(),
        password_hash: "$argon2id$v=19$second".into(),
        ..owner.clone()
    };
    assert!(!store.ensure_owner(&again, 11).await.unwrap());
    assert_eq!(
        store
            .owner_password_hash("first@desk.test")
            .await
            .unwrap()
            .as_deref(),
        Some("$argon2id$v=19$first")
    );
    assert_eq!(
        store.owner_password_hash("nobody@desk.test").await.unwrap(),
        None
    );

    // Projects: added once, replaced only at the version the editor read, the stamp moves.
    assert_eq!(store.projects_stamp().await.unwrap(), (0, 0));
    use store::projects::ProjectWrite;
    let spec = |v: u32, components: &[&str]| {
        serde_json::json!({"v": v, "components": components}).to_string()
    };
    let tally = ["tally".to_owned()];
    assert_eq!(
        store
            .write_project("tally", &spec(1, &["tally"]), &tally, None, 100, "cli")
            .await
            .unwrap(),
        ProjectWrite::Written
    );
    assert_eq!(
        store
            .write_project("tally", &spec(2, &["tally"]), &tally, None, 101, "cli")
            .await
            .unwrap(),
        ProjectWrite::Stale
    );
    // Another project cannot claim a stored project's component.
    assert_eq!(
        store
            .write_project(
                "other",
                &spec(1, &["x", "tally"]),
                &["x".to_owned(), "tally".to_owned()],
                None,
                101,
                "cli"
            )
            .await
            .unwrap(),
        ProjectWrite::ComponentTaken {
            component: "tally".into(),
            project: "tally".into()
        }
    );
    assert_eq!(store.projects_stamp().await.unwrap(), (1, 100));
    // A GitHub repository (in any letter case) and a service are claimed like components.
    let hub = serde_json::json!({"components": ["hub"], "github": "Octo/Shop", "deploy": "web", "forge_path": "/srv/hub.git"})
        .to_string();
    assert_eq!(
        store::projects::claims(&hub),
        [
            "hub",
            "github:octo/shop",
            "deploy:web",
            "forge:/srv/hub.git"
        ]
    );
    assert_eq!(
        store
            .write_project(
                "hub",
                &hub,
                &store::projects::claims(&hub),
                None,
                100,
                "cli"
            )
            .await
            .unwrap(),
        ProjectWrite::Written
    );
    for (theirs, clash) in [
        (
            serde_json::json!({"components": ["hub2"], "github": "octo/shop"}),
            "github:octo/shop",
        ),
        (
            serde_json::json!({"components": ["hub2"], "deploy": "web"}),
            "deploy:web",
        ),
        (
            serde_json::json!({"components": ["hub2"], "forge_path": "/srv/hub.git"}),
            "forge:/srv/hub.git",
        ),
    ] {
        let text = theirs.to_string();
        assert_eq!(
            store
                .write_project(
                    "hub2",
                    &text,
                    &store::projects::claims(&text),
                    None,
                    101,
                    "cli"
                )
                .await
                .unwrap(),
            ProjectWrite::ComponentTaken {
                component: clash.into(),
                project: "hub".into()
            }
        );
    }
    assert_eq!(store.projects_stamp().await.unwrap(), (2, 200));
    assert_eq!(
        store
            .write_project(
                "tally",
                &spec(3, &["tally"]),
                &tally,
                Some(99),
                102,
                "a@desk.test"
            )
            .await
            .unwrap(),
        ProjectWrite::Stale
    );
    // An edit at the same millisecond still moves the stamp.
    assert_eq!(
        store
            .write_project(
                "tally",
                &spec(3, &["tally"]),
                &tally,
                Some(100),
                100,
                "a@desk.test"
            )
            .await
            .unwrap(),
        ProjectWrite::Written
    );
    assert_eq!(
        store
            .write_project("gone", "{}", &[], Some(0), 102, "a@desk.test")
            .await
            .unwrap(),
        ProjectWrite::Stale
    );
    let projects = store.projects().await.unwrap();
    assert_eq!(projects.len(), 2);
    assert_eq!(projects[0].id, "hub");
    assert_eq!(
        (
            projects[1].spec.as_str(),
            projects[1].created_at,
            projects[1].updated_at,
            projects[1].updated_by.as_str()
        ),
        (spec(3, &["tally"]).as_str(), 100, 101, "a@desk.test")
    );
    assert_eq!(store.projects_stamp().await.unwrap(), (2, 201));
    assert_eq!(store.bugs_naming("tally").await.unwrap(), 0);

    // What was written survives a new pool (it was committed, not cached).
    store.close().await;
    assert!(
        store.ping().await.is_err(),
        "a closed store must not answer"
    );
    let reopened = migrated(&url).await;
    assert_eq!(
        reopened.ensure_instance("desk-c", 3).await.unwrap(),
        "desk-a"
    );
    assert!(reopened
        .owner_password_hash("first@desk.test")
        .await
        .unwrap()
        .is_some());
    assert_eq!(reopened.projects().await.unwrap().len(), 2);
}

#[tokio::test]
async fn the_contract_holds_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    // A missing folder is created.
    let url = testing::fresh_sqlite(&dir.path().join("nested"));
    contract(url, Backend::Sqlite).await;
}

#[tokio::test]
async fn the_contract_holds_on_postgres() {
    let url = testing::fresh_postgres().await;
    contract(url, Backend::Postgres).await;
}
