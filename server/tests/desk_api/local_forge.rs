//! The local forge end to end through the HTTP API: a confirmed bug's fix is pushed as a
//! branch, opened as a draft pull request, reviewed and approved at its exact head by an
//! owner, merged with a real git merge, recorded live by the recorder and confirmed by the
//! reporter — and the refusals on the way change nothing.

use crate::common;

use domain::workflow::{decide, Actor, Command, Evidence, Policy, Reproduction, Rerun};
use domain::Role;
use serde_json::{json, Value};
use store::Store;

const PASSWORD: &str = "correct horse battery staple";
const OWNER: &str = "owner@example.org";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_goes_from_branch_to_verified_through_the_desk() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("shop.git");
    forge::LocalForge::init(&bare, "main").await.unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    common::git(&work, &["init", "--quiet", "--initial-branch", "main"]);
    common::git(&work, &["remote", "add", "origin", bare.to_str().unwrap()]);
    common::write(&work, ".github/CODEOWNERS", &format!("* {OWNER}\n"));
    common::write(
        &work,
        "shoplite/src/lib.rs",
        "pub fn payable() -> i64 { -100 }\n",
    );
    common::git(&work, &["add", "."]);
    common::git(&work, &["commit", "--quiet", "-m", "shop"]);
    common::git(&work, &["push", "--quiet", "origin", "main"]);

    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let hash = server::auth::hash_password(PASSWORD).unwrap();
    let tokens: Vec<(Role, String)> = Role::ALL
        .into_iter()
        .map(|role| (role, server::cli::setup::new_role_token(role)))
        .collect();
    let mut env: Vec<(String, String)> = tokens
        .iter()
        .map(|(role, token)| (role.token_variable().to_owned(), token.clone()))
        .collect();
    env.extend([
        ("R2R_OWNER_EMAIL".to_owned(), OWNER.to_owned()),
        ("R2R_OWNER_PASSWORD_HASH".to_owned(), hash),
        ("R2R_SESSION_KEY".to_owned(), "s".repeat(64)),
        ("R2R_LOCAL_FORGE".to_owned(), bare.display().to_string()),
    ]);
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = common::start_server_with(&url, &pairs);
    let base = server.base.clone();
    let token = |role: Role| tokens.iter().find(|(r, _)| *r == role).unwrap().1.clone();
    let client = reqwest::Client::new();
    let post = |path: String, bearer: Option<String>, body: Value| {
        let client = client.clone();
        let url = format!("{base}{path}");
        async move {
            let mut request = client.post(url).json(&body);
            if let Some(bearer) = bearer {
                request = request.bearer_auth(bearer);
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };

    // A report; the crew proves it (the proposal carries the desk's own re-run, as the
    // sandbox will); the reporter confirms.
    let (status, filed) = post(
        "/api/v1/reports".into(),
        None,
        json!({"component": "shoplite", "title": "SAVE300 negative total", "what_happened": "−₹100", "expected": "₹0", "steps": ""}),
    )
    .await;
    assert_eq!(status, 201);
    let bug = filed["bug_id"].as_str().unwrap().to_owned();
    let capability = filed["tracking_link"]
        .as_str()
        .unwrap()
        .trim_start_matches("/track#")
        .to_owned();
    let (status, _) = post(
        format!("/api/v1/bugs/{bug}/reproduction/start"),
        Some(token(Role::Manager)),
        json!({}),
    )
    .await;
    assert_eq!(status, 200);
    let store = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    let now = server::clock::now_ms();
    store
        .apply(&bug, now, |b| {
            let evidence = Evidence {
                rerun: Some(Rerun::Reproduced),
                ..Evidence::default()
            };
            let reproduction = Reproduction {
                id: "run-1".into(),
                test_path: "shoplite/regressions/coupon_save300.rs".into(),
                test_sha256: "5".repeat(64),
                assertion: "payable -100 < 0".into(),
                summary: None,
            };
            decide(
                b,
                &Command::ProposeReproduction { reproduction },
                &Actor::Role {
                    role: Role::Reproducer,
                },
                &evidence,
                &Policy::default(),
                now,
            )
        })
        .await
        .unwrap();
    let tracking: Value = client
        .get(format!("{base}/api/v1/track"))
        .header("x-r2r-capability", &capability)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (status, _) = post(
        "/api/v1/track/answer".into(),
        None,
        json!({"request_id": tracking["question"]["request_id"], "kind": "reproduction", "yes": true}),
    )
    .await;
    assert_eq!(status, 404, "answers need the capability header");
    let answered = client
        .post(format!("{base}/api/v1/track/answer"))
        .header("x-r2r-capability", &capability)
        .json(&json!({"request_id": tracking["question"]["request_id"], "kind": "reproduction", "yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);

    // The fixer pushes a branch and opens the draft pull request.
    let (status, _) = post(
        format!("/api/v1/bugs/{bug}/fix/start"),
        Some(token(Role::Fixer)),
        json!({}),
    )
    .await;
    assert_eq!(status, 200);
    common::git(&work, &["checkout", "--quiet", "-b", "fix/save300"]);
    common::write(
        &work,
        "shoplite/src/lib.rs",
        "pub fn payable() -> i64 { 0 }\n",
    );
    common::git(&work, &["commit", "--quiet", "-am", "Clamp the discount"]);
    common::git(&work, &["push", "--quiet", "origin", "fix/save300"]);
    let head = common::git(&work, &["rev-parse", "HEAD"]);
    // The fixer's token opens no draft for a branch it pushed: only the desk opens one, for
    // a fix it measured and committed itself (a hand-made change stands in for that here).
    let (status, _) = post(
        format!("/api/v1/bugs/{bug}/fix"),
        Some(token(Role::Fixer)),
        json!({"branch": "fix/save300", "description": "measured by the desk"}),
    )
    .await;
    assert!(
        [404, 405].contains(&status),
        "a draft for a branch the desk never measured: {status}"
    );
    let opened = common::open_measured_draft(&url, &bare, &bug, "fix/save300").await;
    assert_eq!(opened, head);

    // The crew cannot approve or merge; an owner reads the diff and approves the exact head.
    let (status, _) = post(
        format!("/api/v1/bugs/{bug}/approve"),
        Some(token(Role::Fixer)),
        json!({"head": head}),
    )
    .await;
    assert_eq!(status, 403);
    let signed_in = client
        .post(format!("{base}/api/v1/session"))
        .json(&json!({"email": OWNER, "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let csrf = signed_in.json::<Value>().await.unwrap()["csrf_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let owner_post = |path: String, body: Value| {
        let client = client.clone();
        let url = format!("{base}{path}");
        let (cookie, csrf) = (cookie.clone(), csrf.clone());
        async move {
            let response = client
                .post(url)
                .header("cookie", cookie)
                .header("x-csrf-token", csrf)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let merge = response
                .headers()
                .get("x-r2r-merge-commit")
                .map(|v| v.to_str().unwrap().to_owned());
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
                merge,
            )
        }
    };
    let diff: Value = client
        .get(format!("{base}/api/v1/bugs/{bug}/diff"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(diff["diff"]
        .as_str()
        .unwrap()
        .contains("+pub fn payable() -> i64 { 0 }"));
    assert_eq!(diff["changed_paths"], json!(["shoplite/src/lib.rs"]));
    let main_before = common::git(&work, &["ls-remote", "origin", "refs/heads/main"]);
    let (status, body, _) =
        owner_post(format!("/api/v1/bugs/{bug}/merge"), json!({"head": head})).await;
    assert_eq!(status, 409, "not approved yet: {body}");
    assert_eq!(
        common::git(&work, &["ls-remote", "origin", "refs/heads/main"]),
        main_before,
        "nothing merged"
    );
    let (status, body, _) =
        owner_post(format!("/api/v1/bugs/{bug}/approve"), json!({"head": head})).await;
    assert_eq!((status, body["state"].as_str()), (200, Some("approved")));

    // A stale head is refused; the approved one is merged for real.
    let (status, _, _) = owner_post(
        format!("/api/v1/bugs/{bug}/merge"),
        json!({"head": "f".repeat(40)}),
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(
        common::git(&work, &["ls-remote", "origin", "refs/heads/main"]),
        main_before
    );
    let (status, body, merge) =
        owner_post(format!("/api/v1/bugs/{bug}/merge"), json!({"head": head})).await;
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some("merged")),
        "{body}"
    );
    let merge = merge.unwrap();
    common::git(&work, &["fetch", "--quiet", "origin"]);
    assert_eq!(common::git(&work, &["rev-parse", "origin/main"]), merge);
    common::git(
        &work,
        &["merge-base", "--is-ancestor", &head, "origin/main"],
    );
    // What was merged stays readable: the approved change and what the merge did to main.
    let merged: Value = client
        .get(format!("{base}/api/v1/bugs/{bug}/diff"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        merged["diff"]
            .as_str()
            .unwrap()
            .contains("+pub fn payable() -> i64 { 0 }"),
        "{merged}"
    );
    assert!(
        merged["merge_diff"]
            .as_str()
            .unwrap()
            .contains("+pub fn payable() -> i64 { 0 }"),
        "{merged}"
    );

    // The merged bug says what it waits for, and what proves it.
    let page = client
        .get(format!("{base}/desk/bugs/{bug}"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(&format!("Waiting for: the release of {}", &merge[..12])),
        "{page}"
    );
    assert!(page.contains("r2r recorder verify --sha"), "{page}");

    // Someone rewrites the branch after the merge: the same tree under a new commit (an
    // amended message). Once the merge is past its grace, the desk re-binds the bug to the
    // new commit and says so in the ledger; nobody is asked to approve anything again.
    common::git(&work, &["checkout", "--quiet", "-B", "main", "origin/main"]);
    common::git(
        &work,
        &[
            "commit",
            "--quiet",
            "--amend",
            "-m",
            "Merge, message rewritten",
        ],
    );
    common::git(&work, &["push", "--quiet", "--force", "origin", "main"]);
    let rewritten = common::git(&work, &["rev-parse", "HEAD"]);
    assert_ne!(rewritten, merge);
    tokio::time::sleep(std::time::Duration::from_millis(
        server::service::forge::REWRITE_GRACE_MS as u64 + 500,
    ))
    .await;
    let merge = rewritten;

    // The recorder records the verified deployment; the reporter confirms the live fix.
    let (status, _) = post(
        "/api/v1/deployments".into(),
        Some(token(Role::Fixer)),
        json!({"deployment": "d1", "commit": merge}),
    )
    .await;
    assert_eq!(status, 403, "only the recorder records deployments");
    let (status, body) = post(
        "/api/v1/deployments".into(),
        Some(token(Role::Recorder)),
        json!({"deployment": "d1", "commit": merge}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let tracking: Value = client
        .get(format!("{base}/api/v1/track"))
        .header("x-r2r-capability", &capability)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(tracking["bug"]["state"], "deployed");
    assert_eq!(tracking["bug"]["release"]["commit"], merge.as_str());
    let answered: Value = client
        .post(format!("{base}/api/v1/track/answer"))
        .header("x-r2r-capability", &capability)
        .json(
            &json!({"request_id": tracking["question"]["request_id"], "kind": "fix", "yes": true}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answered["state"], "verified");
    let ledger = store.load_bug(&bug).await.unwrap().unwrap().bug;
    assert_eq!(ledger.merge.unwrap().merge_commit.as_str(), merge);
    assert!(store.verify_ledger().await.unwrap().is_ok());
}

/// Issue 14, finding 7: CODEOWNERS is read on the base branch (as GitHub does), so a change
/// that edits CODEOWNERS to name its approver does not make them a code owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_edits_codeowners_does_not_choose_its_own_code_owner() {
    let dir = tempfile::tempdir().unwrap();
    let (bare, work) = common::local_forge_with(dir.path(), "shop", |work| {
        common::write(work, ".github/CODEOWNERS", "* carol@example.org\n");
        common::write(
            work,
            "shoplite/src/lib.rs",
            "pub fn payable() -> i64 { -100 }\n",
        );
    })
    .await;
    let desk = common::owner_desk(&[("R2R_LOCAL_FORGE", bare.to_str().unwrap())]);
    let base = desk.server.base.clone();
    let token = |role: Role| desk.tokens[&role].clone();
    let client = reqwest::Client::new();
    let store = Store::connect(&store::DatabaseUrl::parse(&desk.database_url).unwrap())
        .await
        .unwrap();

    // A confirmed bug whose fix is being written.
    let (bug, capability) = common::file_report(&base, json!({"component": "shoplite", "title": "SAVE300 negative total", "what_happened": "-100", "expected": "0", "steps": ""})).await;
    let started = client
        .post(format!("{base}/api/v1/bugs/{bug}/reproduction/start"))
        .bearer_auth(token(Role::Manager))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), 200);
    let now = server::clock::now_ms();
    store
        .apply(&bug, now, |b| {
            let evidence = Evidence {
                rerun: Some(Rerun::Reproduced),
                ..Evidence::default()
            };
            let reproduction = Reproduction {
                id: "run-1".into(),
                test_path: "shoplite/regressions/coupon_save300.rs".into(),
                test_sha256: "5".repeat(64),
                assertion: "payable -100 < 0".into(),
                summary: None,
            };
            decide(
                b,
                &Command::ProposeReproduction { reproduction },
                &Actor::Role {
                    role: Role::Reproducer,
                },
                &evidence,
                &Policy::default(),
                now,
            )
        })
        .await
        .unwrap();
    let tracking: Value = client
        .get(format!("{base}/api/v1/track"))
        .header("x-r2r-capability", &capability)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let answered = client
        .post(format!("{base}/api/v1/track/answer"))
        .header("x-r2r-capability", &capability)
        .json(&json!({"request_id": tracking["question"]["request_id"], "kind": "reproduction", "yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let started = client
        .post(format!("{base}/api/v1/bugs/{bug}/fix/start"))
        .bearer_auth(token(Role::Fixer))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), 200);

    // The change fixes the bug and, in passing, names the owner as the code owner of
    // everything.
    common::git(&work, &["checkout", "--quiet", "-b", "fix/save300"]);
    common::write(
        &work,
        "shoplite/src/lib.rs",
        "pub fn payable() -> i64 { 0 }\n",
    );
    common::write(
        &work,
        ".github/CODEOWNERS",
        &format!("* {}\n", common::OWNER),
    );
    common::git(&work, &["commit", "--quiet", "-am", "Clamp the discount"]);
    common::git(&work, &["push", "--quiet", "origin", "fix/save300"]);
    let head = common::git(&work, &["rev-parse", "HEAD"]);
    let opened = common::open_measured_draft(&desk.database_url, &bare, &bug, "fix/save300").await;
    assert_eq!(opened, head);

    let (cookie, csrf) = common::sign_in(&client, &base, common::OWNER, common::PASSWORD).await;
    let approved = client
        .post(format!("{base}/api/v1/bugs/{bug}/approve"))
        .header("cookie", cookie)
        .header("x-csrf-token", csrf)
        .json(&json!({"head": head}))
        .send()
        .await
        .unwrap();
    assert_eq!(approved.status(), 200);
    let stored = store.load_bug(&bug).await.unwrap().unwrap().bug;
    assert_eq!(stored.approvals.len(), 1);
    assert!(
        !stored.approvals[0].code_owner,
        "the change named its own code owner"
    );
}
