//! `r2r recorder verify` against a running desk: a URL serving another commit, or one that
//! does not answer, is refused and records nothing; the exact commit is recorded.

use crate::common;

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
                    summary: None,
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

    // `r2r recorder run`: the recorder as a role beside a deployment it watches. One round
    // against a public URL that does not answer records nothing and exits 1; against the
    // deployment itself it records what is served, under `<project>-<first 12>`, and beats.
    let run = |public: &str| {
        common::r2r_with_env_file(&env_file)
            .args([
                "recorder",
                "run",
                "--once",
                "--url",
                &base,
                "--public-url",
                public,
                "--desk",
                &base,
                "--project",
                "reporter-to-release",
            ])
            .output()
            .unwrap()
    };
    let refused = run("http://127.0.0.1:9");
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not recorded"));
    assert_eq!(
        deployments().await.len(),
        1,
        "a failed round records nothing"
    );
    // A release of a project the desk does not serve is refused by the desk, by name.
    for (project, words) in [
        ("nope", "unknown_project"),
        ("Not An Id", "--desk-project is invalid"),
    ] {
        let other = common::r2r_with_env_file(&env_file)
            .args([
                "recorder",
                "run",
                "--once",
                "--url",
                &base,
                "--public-url",
                &base,
            ])
            .args(["--desk", &base, "--project", "reporter-to-release"])
            .args(["--desk-project", project])
            .output()
            .unwrap();
        assert_eq!(other.status.code(), Some(1), "{project}");
        let said = String::from_utf8_lossy(&other.stderr);
        assert!(said.contains(words), "{project}: {said}");
    }
    assert_eq!(deployments().await.len(), 1, "nothing recorded for them");
    let watched = run(&base);
    assert!(
        watched.status.success(),
        "{}",
        String::from_utf8_lossy(&watched.stderr)
    );
    assert!(String::from_utf8_lossy(&watched.stdout)
        .contains(&format!("recorded: reporter-to-release at {live}")));
    let recorded = deployments().await;
    assert_eq!(recorded.len(), 2);
    assert_eq!(
        recorded[1].id,
        format!("reporter-to-release-{}", &live.as_str()[..12])
    );
    let crew: Value = client
        .get(format!("{base}/api/v1/crew"))
        .bearer_auth(&recorder)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(crew["recorder"]["fresh"], true, "{crew}");
    assert!(
        crew["recorder"]["doing"]
            .as_str()
            .unwrap()
            .contains("recorded"),
        "{crew}"
    );
    // A token that is not the recorder's is refused before anything is asked or recorded.
    let stranger = dir.path().join("stranger.env");
    std::fs::write(
        &stranger,
        "R2R_RECORDER_TOKEN=r2r_recorder_not-a-real-token\n",
    )
    .unwrap();
    let impostor = common::r2r_with_env_file(&stranger)
        .args([
            "recorder",
            "run",
            "--once",
            "--url",
            &base,
            "--public-url",
            &base,
            "--desk",
            &base,
        ])
        .output()
        .unwrap();
    assert_ne!(impostor.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&impostor.stderr).contains("is not the recorder's token"),
        "{}",
        String::from_utf8_lossy(&impostor.stderr)
    );
    assert_eq!(deployments().await.len(), 2);
    let bad_poll = common::r2r_with_env_file(&env_file)
        .args([
            "recorder",
            "run",
            "--url",
            &base,
            "--public-url",
            &base,
            "--poll-ms",
            "5",
        ])
        .output()
        .unwrap();
    assert_eq!(
        bad_poll.status.code(),
        Some(2),
        "a poll below 200 ms is refused by the parser"
    );
}

/// An instance that answers `/api/health` for `answers` requests and is then gone (its socket
/// closed, as when the process is killed); counts what it was asked.
async fn instance(
    commit: &str,
    answers: usize,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = asked.clone();
    let body =
        json!({"service": "shoplite", "version": "0.1.0", "commit": commit, "storage": "none",
        "status": "ok", "database_reachable": true, "schema_version": null, "instance": "shop-1"})
        .to_string();
    tokio::spawn(async move {
        while counter.load(Ordering::SeqCst) < answers {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut request = [0u8; 2048];
            let _ = socket.read(&mut request).await;
            counter.fetch_add(1, Ordering::SeqCst);
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        }
        // Dropping the listener: the next connection is refused.
    });
    (url, asked)
}

/// The recorder checks both addresses, then every check again just before it records: an
/// instance killed between the two rounds records nothing, and the same instance left
/// running is recorded (the desk's side is a double that counts the record calls).
#[tokio::test]
async fn an_instance_killed_before_the_second_check_is_not_recorded() {
    use server::service::recorder::{verify_and_record, Expected, Publish, VerifyError};
    use std::sync::atomic::Ordering;
    let commit = "a".repeat(40);
    let expected = Expected {
        sha: CommitSha::parse(&commit).unwrap(),
        service: "shoplite".into(),
        assets: Default::default(),
    };
    // The desk double: answers 201 to every record call, counting them.
    let (desk, records) = instance(&commit, usize::MAX).await;

    // Killed after the first round (immutable + public address: two answers).
    let (killed, asked) = instance(&commit, 2).await;
    let publish = Publish::Desk {
        url: &desk,
        token: "recorder-token",
        project: None,
        deployment: "shoplite-aaaa",
    };
    let refused = verify_and_record(&killed, &killed, &expected, publish).await;
    assert!(
        matches!(refused, Err(VerifyError::Unreachable { .. })),
        "{refused:?}"
    );
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "the first round ran in full"
    );
    assert_eq!(
        records.load(Ordering::SeqCst),
        0,
        "a dead instance was recorded"
    );

    // The same instance, not killed: both rounds pass and the desk is asked to record it once.
    let (alive, asked) = instance(&commit, usize::MAX).await;
    let publish = Publish::Desk {
        url: &desk,
        token: "recorder-token",
        project: None,
        deployment: "shoplite-aaaa",
    };
    let recorded = verify_and_record(&alive, &alive, &expected, publish).await;
    assert_eq!(recorded.unwrap(), "shoplite-aaaa");
    assert_eq!(asked.load(Ordering::SeqCst), 4);
    assert_eq!(records.load(Ordering::SeqCst), 1);
}

/// A server that answers every request with a redirect to `target`.
async fn redirector(target: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let location = format!("{target}/api/health");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = [0u8; 2048];
            let _ = socket.read(&mut request).await;
            let response = format!(
                "HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    url
}

/// One address that redirects to the other would make the two-address check ask one server
/// twice: the recorder follows no redirect, and records nothing.
#[tokio::test]
async fn an_address_that_redirects_to_the_other_is_not_a_deployment() {
    use server::service::recorder::{verify_and_record, Expected, Publish, VerifyError};
    use std::sync::atomic::Ordering;
    let commit = "b".repeat(40);
    let expected = Expected {
        sha: CommitSha::parse(&commit).unwrap(),
        service: "shoplite".into(),
        assets: Default::default(),
    };
    let (desk, records) = instance(&commit, usize::MAX).await;
    let (real, _) = instance(&commit, usize::MAX).await;
    let pointer = redirector(&real).await;
    for (immutable, public) in [(&pointer, &real), (&real, &pointer)] {
        let publish = Publish::Desk {
            url: &desk,
            token: "t",
            project: None,
            deployment: "shoplite-bbbb",
        };
        let refused = verify_and_record(immutable, public, &expected, publish).await;
        match refused {
            Err(VerifyError::Unreachable { reason, .. }) => {
                assert!(reason.contains("no redirects"), "{reason}")
            }
            other => panic!("a redirect was followed: {other:?}"),
        }
    }
    assert_eq!(records.load(Ordering::SeqCst), 0);
}
