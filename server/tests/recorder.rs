//! `r2r recorder verify` against a running desk: a URL serving another commit, or one that
//! does not answer, is refused and records nothing; the exact commit is recorded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use app::dto::Health;
use domain::workflow::{decide, Actor, Command, CommitSha, Evidence, Policy, Reproduction, Rerun};
use domain::Role;
use serde_json::{json, Value};
use store::Store;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_exact_live_commit_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("shop.git");
    forge::LocalForge::init(&bare, "main").await.unwrap();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let recorder = server::cli::setup::new_role_token(Role::Recorder);
    let server = common::start_server_with(
        &url,
        &[
            ("R2R_RECORDER_TOKEN", recorder.as_str()),
            ("R2R_LOCAL_FORGE", bare.to_str().unwrap()),
        ],
    );
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let health: Health = client
        .get(format!("{base}/api/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let Ok(live) = CommitSha::parse(&health.commit) else {
        panic!(
            "the desk was built outside a git checkout: health commit {:?}",
            health.commit
        );
    };

    // A bug in review, so a recorded deployment shows on it.
    let filed: Value = client
        .post(format!("{base}/api/v1/reports"))
        .json(&json!({"component": "shoplite", "title": "Total negative", "what_happened": "x", "expected": "", "steps": ""}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let bug = filed["bug_id"].as_str().unwrap().to_owned();
    let store = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    let steps = [
        (Command::StartReproduction, Role::Reproducer, None),
        (
            Command::ProposeReproduction {
                reproduction: Reproduction {
                    id: "run".into(),
                    test_path: "t.rs".into(),
                    test_sha256: "7".repeat(64),
                    assertion: "x".into(),
                },
            },
            Role::Reproducer,
            Some(Rerun::Reproduced),
        ),
    ];
    for (command, role, rerun) in steps {
        let now = server::clock::now_ms();
        store
            .apply(&bug, now, |b| {
                let evidence = Evidence {
                    rerun,
                    ..Evidence::default()
                };
                decide(
                    b,
                    &command,
                    &Actor::Role { role },
                    &evidence,
                    &Policy::default(),
                    now,
                )
            })
            .await
            .unwrap();
    }
    // The reporter's yes, the crew's fix: the bug waits in review.
    let now = server::clock::now_ms();
    let request_id = store.load_bug(&bug).await.unwrap().unwrap().bug.questions[0]
        .request_id
        .clone();
    let report = filed["report_id"].as_str().unwrap().to_owned();
    for (command, actor) in [
        (
            Command::AnswerReproduction {
                request_id,
                confirmed: true,
                reason: None,
            },
            Actor::Reporter { report },
        ),
        (Command::StartFix, Actor::Role { role: Role::Fixer }),
        (
            Command::SubmitFix {
                number: 1,
                head: CommitSha::parse(&"c".repeat(40)).unwrap(),
                changed_paths: vec!["a.rs".into()],
            },
            Actor::Role { role: Role::Fixer },
        ),
    ] {
        store
            .apply(&bug, now, |b| {
                decide(
                    b,
                    &command,
                    &actor,
                    &Evidence::default(),
                    &Policy::default(),
                    now,
                )
            })
            .await
            .unwrap();
    }

    let env_file = dir.path().join("recorder.env");
    std::fs::write(&env_file, format!("R2R_RECORDER_TOKEN={recorder}\n")).unwrap();
    let verify = |sha: String, public: String| {
        common::r2r_with_env_file(&env_file)
            .args([
                "recorder",
                "verify",
                "--sha",
                &sha,
                "--url",
                &base,
                "--public-url",
                &public,
                "--desk",
                &base,
            ])
            .output()
            .unwrap()
    };
    let deployments = || async { store.load_bug(&bug).await.unwrap().unwrap().bug.deployments };

    let other = "0".repeat(40);
    let refused = verify(other.clone(), base.clone());
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!("expected exactly {other}")),
        "{stderr}"
    );
    assert!(stderr.contains("Nothing was recorded"), "{stderr}");
    let unreachable = verify(live.to_string(), "http://127.0.0.1:9".into());
    assert_eq!(unreachable.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unreachable.stderr).contains("cannot reach"));
    assert!(deployments().await.is_empty(), "nothing recorded");

    let ok = verify(live.to_string(), base.clone());
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let recorded = deployments().await;
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].commit, live);
    assert_eq!(recorded[0].id, format!("verify-{}", &live.as_str()[..12]));

    let bad_flag = common::r2r_with_env_file(&env_file)
        .args([
            "recorder",
            "verify",
            "--sha",
            "nope",
            "--url",
            &base,
            "--public-url",
            &base,
        ])
        .output()
        .unwrap();
    assert_ne!(bad_flag.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&bad_flag.stderr).contains("--sha is invalid"));
}
