//! Signed GitHub webhooks against the real binary, with GitHub's own example payloads
//! (npm `@octokit/webhooks-examples`, ids and SHAs adapted) and the REST client talking to a
//! protocol-level double of the API on 127.0.0.1.

use crate::common;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use domain::workflow::{decide, Actor, Command, CommitSha, Evidence, Policy, Reproduction, Rerun};
use domain::{BugState, Role};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::Store;

const SECRET: &str = "webhook-test-secret";
const REPO: &str = "octo-org/shop";

fn examples() -> Vec<Value> {
    let path = common::repo_root()
        .join("end2end/node_modules/@octokit/webhooks-examples/api.github.com/index.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run the README's test command (it installs end2end's npm packages)",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

/// GitHub's example for `event`/`action`, with `edits` (JSON pointer → value) applied.
fn example(all: &[Value], event: &str, action: &str, edits: &[(&str, Value)]) -> Value {
    let mut payload = all
        .iter()
        .find(|e| e["name"] == event)
        .and_then(|e| {
            e["examples"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["action"] == action)
        })
        .unwrap_or_else(|| panic!("no example {event}/{action}"))
        .clone();
    *payload.pointer_mut("/repository/full_name").unwrap() = json!(REPO);
    for (pointer, value) in edits {
        *payload
            .pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{event}/{action} has no {pointer}")) = value.clone();
    }
    payload
}

fn sign(body: &[u8]) -> String {
    server::service::github_events::signature(SECRET.as_bytes(), body)
}

async fn deliver(
    base: &str,
    event: &str,
    delivery: &str,
    payload: &Value,
    signature: Option<String>,
) -> (u16, Value) {
    let body = serde_json::to_vec(payload).unwrap();
    let signature = signature.unwrap_or_else(|| sign(&body));
    let response = reqwest::Client::new()
        .post(format!("{base}/webhooks/github"))
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", signature)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A check run the double reports: (id, name, status, conclusion).
type CheckRunRow = (u64, String, String, Option<String>);

/// The GitHub API double: compare results, CODEOWNERS files by commit, collaborators'
/// permissions, and the requests it saw.
#[derive(Clone, Default)]
struct Double {
    compare: Arc<Mutex<HashMap<String, String>>>,
    /// `.github/CODEOWNERS` by the commit it is read at.
    codeowners: Arc<Mutex<HashMap<String, String>>>,
    /// Login → (`permission`, `role_name`); an unknown login is GitHub's 404.
    permissions: Arc<Mutex<HashMap<String, (String, String)>>>,
    /// Every login whose permission was asked.
    permission_asks: Arc<Mutex<Vec<String>>>,
    /// While set, the permission endpoint drops the connection without an answer.
    permission_outage: Arc<std::sync::atomic::AtomicBool>,
    authorized: Arc<Mutex<Vec<bool>>>,
    branches: Arc<Mutex<HashMap<String, String>>>,
    /// A bare repository standing for GitHub's copy: branches not in `branches` are read here.
    remote: Arc<Mutex<Option<std::path::PathBuf>>>,
    /// Every write the client made: (path, JSON body).
    writes: Arc<Mutex<Vec<(String, Value)>>>,
    /// Check runs by commit: (id, name, status, conclusion).
    checks: Arc<Mutex<HashMap<String, Vec<CheckRunRow>>>>,
}

/// GitHub's checks API for a commit (one page; the shape of GitHub's answer).
async fn check_runs(
    State(double): State<Double>,
    headers: HeaderMap,
    Path((_o, _r, commit)): Path<(String, String, String)>,
) -> impl IntoResponse {
    authorized(&double, &headers);
    let runs: Vec<Value> = double
        .checks
        .lock()
        .unwrap()
        .get(&commit)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|(id, name, status, conclusion)| {
            json!({
                "id": id, "head_sha": commit, "node_id": format!("CR_{id}"),
                "external_id": "", "url": format!("https://api.github.com/repos/o/r/check-runs/{id}"),
                "html_url": format!("https://github.com/o/r/runs/{id}"), "details_url": null,
                "status": status, "conclusion": conclusion,
                "started_at": "2026-12-04T10:00:00Z",
                "completed_at": if status == "completed" { json!("2026-12-04T10:05:00Z") } else { Value::Null },
                "output": {"title": null, "summary": null, "text": null, "annotations_count": 0, "annotations_url": ""},
                "name": name, "check_suite": {"id": 5}, "app": {"id": 15368, "slug": "github-actions"},
                "pull_requests": [],
            })
        })
        .collect();
    Json(json!({"total_count": runs.len(), "check_runs": runs}))
}

/// The head of `branch` in the double's remote repository, if it has one.
fn remote_head(double: &Double, branch: &str) -> Option<String> {
    let remote = double.remote.lock().unwrap().clone()?;
    let output = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(remote)
        .args([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn authorized(double: &Double, headers: &HeaderMap) {
    double.authorized.lock().unwrap().push(
        headers
            .get("authorization")
            .is_some_and(|v| v == "Bearer ghs_test_token"),
    );
}

async fn repository(State(double): State<Double>, headers: HeaderMap) -> impl IntoResponse {
    authorized(&double, &headers);
    Json(json!({"full_name": REPO, "default_branch": "main", "private": false}))
}

async fn branch(
    State(double): State<Double>,
    headers: HeaderMap,
    Path((_o, _r, name)): Path<(String, String, String)>,
) -> impl IntoResponse {
    authorized(&double, &headers);
    let known = double.branches.lock().unwrap().get(&name).cloned();
    match known.or_else(|| remote_head(&double, &name)) {
        Some(head) => (
            StatusCode::OK,
            Json(json!({"name": name, "commit": {"sha": head}, "protected": false})),
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"message": "Branch not found"})),
        )
            .into_response(),
    }
}

/// `POST /pulls`, `/deployments` and `/deployments/{id}/statuses`, answered in GitHub's
/// shapes (201 with the fields the client reads; 422 with a message for a bad request).
async fn write(
    State(double): State<Double>,
    headers: HeaderMap,
    Path((_o, _r, path)): Path<(String, String, String)>,
    Json(body): Json<Value>,
) -> impl IntoResponse {
    authorized(&double, &headers);
    double
        .writes
        .lock()
        .unwrap()
        .push((path.clone(), body.clone()));
    let segments: Vec<&str> = path.split('/').collect();
    match segments.as_slice() {
        ["pulls"] => {
            let head = body["head"].as_str().unwrap_or_default();
            let known = double.branches.lock().unwrap().get(head).cloned();
            let Some(sha) = known.or_else(|| remote_head(&double, head)) else {
                return (
                    StatusCode::UNPROCESSABLE_ENTITY,
                    Json(json!({"message": "Validation Failed", "errors": [{"field": "head", "code": "invalid"}]})),
                )
                    .into_response();
            };
            (
                StatusCode::CREATED,
                Json(json!({
                    "number": 7, "state": "open", "draft": body["draft"],
                    "html_url": format!("https://github.com/{REPO}/pull/7"),
                    "head": {"ref": head, "sha": sha}, "base": {"ref": body["base"]},
                })),
            )
                .into_response()
        }
        ["deployments"] => (
            StatusCode::CREATED,
            Json(json!({"id": 9001, "sha": body["ref"], "ref": body["ref"], "task": body["task"], "environment": body["environment"]})),
        )
            .into_response(),
        ["deployments", id, "statuses"] => (
            StatusCode::CREATED,
            Json(json!({"id": 1, "state": body["state"], "deployment_url": format!("/deployments/{id}")})),
        )
            .into_response(),
        _ => (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response(),
    }
}

async fn compare(
    State(double): State<Double>,
    headers: HeaderMap,
    Path((_o, _r, spec)): Path<(String, String, String)>,
) -> impl IntoResponse {
    double.authorized.lock().unwrap().push(
        headers
            .get("authorization")
            .is_some_and(|v| v == "Bearer ghs_test_token"),
    );
    match double.compare.lock().unwrap().get(&spec) {
        Some(status) => (
            StatusCode::OK,
            Json(json!({"status": status, "ahead_by": 1, "behind_by": 0})),
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response(),
    }
}

async fn contents(
    State(double): State<Double>,
    Path((_o, _r, path)): Path<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> impl IntoResponse {
    let at = query.get("ref").expect("CODEOWNERS is read at a commit");
    let text = double.codeowners.lock().unwrap().get(at).cloned();
    match (path.as_str(), text) {
        (".github/CODEOWNERS", Some(text)) => (StatusCode::OK, text).into_response(),
        _ => (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response(),
    }
}

/// `GET /repos/{owner}/{repo}/collaborators/{username}/permission`, in GitHub's shape: the
/// legacy `permission` (`admin`, `write`, `read`, `none`; maintain reads as write, triage as
/// read), the `role_name`, and the user as a collaborator. An unknown account is a 404.
async fn permission(
    State(double): State<Double>,
    headers: HeaderMap,
    Path((_o, _r, login)): Path<(String, String, String)>,
) -> impl IntoResponse {
    authorized(&double, &headers);
    double.permission_asks.lock().unwrap().push(login.clone());
    if double
        .permission_outage
        .load(std::sync::atomic::Ordering::SeqCst)
    {
        // Unwinding the connection's task closes it with no response: a network error to
        // the client (and, unlike `panic!`, prints nothing).
        std::panic::resume_unwind(Box::new("the double drops the connection"));
    }
    let Some((permission, role)) = double.permissions.lock().unwrap().get(&login).cloned() else {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({
                "message": "Not Found",
                "documentation_url": "https://docs.github.com/rest/collaborators/collaborators#get-repository-permissions-for-a-user",
                "status": "404"
            })),
        )
            .into_response();
    };
    let rank = ["read", "triage", "write", "maintain", "admin"]
        .iter()
        .position(|r| *r == role)
        .map_or(-1, |p| p as i32);
    Json(json!({
        "permission": permission,
        "role_name": role,
        "user": {
            "login": login, "id": 583231, "node_id": "MDQ6VXNlcjU4MzIzMQ==",
            "avatar_url": "https://avatars.githubusercontent.com/u/583231?v=4", "gravatar_id": "",
            "url": format!("https://api.github.com/users/{login}"),
            "html_url": format!("https://github.com/{login}"),
            "type": "User", "site_admin": false,
            "permissions": {
                "admin": rank >= 4, "maintain": rank >= 3, "push": rank >= 2,
                "triage": rank >= 1, "pull": rank >= 0
            },
            "role_name": role
        }
    }))
    .into_response()
}

/// Gives `login` GitHub's answer for `role` (`admin`, `maintain`, `write`, `triage`, `read`).
fn grant(double: &Double, login: &str, role: &str) {
    let permission = match role {
        "admin" => "admin",
        "maintain" | "write" => "write",
        "triage" | "read" => "read",
        _ => "none",
    };
    double
        .permissions
        .lock()
        .unwrap()
        .insert(login.to_owned(), (permission.to_owned(), role.to_owned()));
}

async fn start_double() -> (String, Double) {
    let double = Double::default();
    let app = Router::new()
        .route("/repos/{o}/{r}/compare/{spec}", get(compare))
        .route("/repos/{o}/{r}/commits/{sha}/check-runs", get(check_runs))
        .route("/repos/{o}/{r}/contents/{*path}", get(contents))
        .route(
            "/repos/{o}/{r}/collaborators/{login}/permission",
            get(permission),
        )
        .route("/repos/{o}/{r}", get(repository))
        .route("/repos/{o}/{r}/branches/{*name}", get(branch))
        .route("/repos/{o}/{r}/{*path}", axum::routing::post(write))
        .with_state(double.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, double)
}

fn sha(c: char) -> String {
    c.to_string().repeat(40)
}

async fn step_within(
    store: &Store,
    bug: &str,
    command: Command,
    actor: Actor,
    rerun: Option<Rerun>,
    policy: &Policy,
) {
    let now = server::clock::now_ms();
    store
        .apply(bug, now, |b| {
            let evidence = Evidence {
                rerun,
                ..Evidence::default()
            };
            decide(b, &command, &actor, &evidence, policy, now)
        })
        .await
        .unwrap();
}

/// Files a report over HTTP and brings its bug to review with PR `number` at `head`.
async fn bug_in_review(
    base: &str,
    store: &Store,
    title: &str,
    number: u64,
    head: &str,
    paths: &[&str],
) -> (String, String) {
    bug_of_in_review(base, store, "shoplite", title, number, head, paths).await
}

/// [`bug_in_review`] for a report naming `component`.
async fn bug_of_in_review(
    base: &str,
    store: &Store,
    component: &str,
    title: &str,
    number: u64,
    head: &str,
    paths: &[&str],
) -> (String, String) {
    let policy = Policy {
        allowed_components: vec![component.to_owned()],
        ..Policy::default()
    };
    let client = reqwest::Client::new();
    let (bug, capability) = common::file_report(base, json!({"component": component, "title": title, "what_happened": "x", "expected": "", "steps": ""})).await;
    let reproducer = Actor::Role {
        role: Role::Reproducer,
    };
    step_within(
        store,
        &bug,
        Command::StartReproduction,
        reproducer.clone(),
        None,
        &policy,
    )
    .await;
    let reproduction = Reproduction {
        id: format!("run-{number}"),
        test_path: "shoplite/regressions/coupon_save300.rs".into(),
        test_sha256: format!("{number:064x}"),
        assertion: "payable < 0".into(),
        summary: None,
    };
    step_within(
        store,
        &bug,
        Command::ProposeReproduction { reproduction },
        reproducer,
        Some(Rerun::Reproduced),
        &policy,
    )
    .await;
    let tracking: Value = client
        .get(format!("{base}/api/v1/track"))
        .header("x-r2r-capability", &capability)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let request_id = tracking["question"]["request_id"].as_str().unwrap();
    let answered = client
        .post(format!("{base}/api/v1/track/answer"))
        .header("x-r2r-capability", &capability)
        .json(&json!({"request_id": request_id, "kind": "reproduction", "yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let fixer = Actor::Role { role: Role::Fixer };
    step_within(store, &bug, Command::StartFix, fixer.clone(), None, &policy).await;
    step_within(
        store,
        &bug,
        Command::SubmitFix {
            number,
            head: CommitSha::parse(head).unwrap(),
            changed_paths: paths.iter().map(|p| (*p).to_owned()).collect(),
        },
        fixer,
        None,
        &policy,
    )
    .await;
    (bug, capability)
}

/// Waits until the worker has applied queued events and the bug reaches `state` (or fails).
async fn wait_for(store: &Store, bug: &str, state: BugState) -> domain::workflow::Bug {
    for _ in 0..100 {
        let current = store.load_bug(bug).await.unwrap().unwrap().bug;
        if current.state == state {
            return current;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "bug {bug} never reached {state:?}: {:?}",
        store.load_bug(bug).await.unwrap().unwrap().bug.state
    );
}

/// Waits until the bug satisfies `done`.
async fn wait_until(
    store: &Store,
    bug: &str,
    what: &str,
    done: impl Fn(&domain::workflow::Bug) -> bool,
) -> domain::workflow::Bug {
    for _ in 0..100 {
        let current = store.load_bug(bug).await.unwrap().unwrap().bug;
        if done(&current) {
            return current;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("bug {bug}: never {what}");
}

/// A desk following [`REPO`] through the API double at `api`, with its database.
async fn github_desk(api: &str) -> (common::RunningServer, Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let server = common::start_server_with(
        &url,
        &[
            ("R2R_GITHUB_WEBHOOK_SECRET", SECRET),
            ("R2R_GITHUB_REPOSITORIES", REPO),
            ("R2R_GITHUB_API_URL", api),
            ("R2R_GITHUB_TOKEN", "ghs_test_token"),
        ],
    );
    let store = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    (server, store, dir)
}

/// GitHub's approved-review example for PR `number` at `head` by `login` (`type` = `kind`).
fn approval(all: &[Value], number: u64, head: &str, login: &str, kind: &str) -> Value {
    example(
        all,
        "pull_request_review",
        "submitted",
        &[
            ("/review/state", json!("approved")),
            ("/review/commit_id", json!(head)),
            ("/review/user/login", json!(login)),
            ("/review/user/type", json!(kind)),
            ("/pull_request/number", json!(number)),
        ],
    )
}

/// Lets the worker drain the queue, then returns the bug.
async fn settled(store: &Store, bug: &str) -> domain::workflow::Bug {
    tokio::time::sleep(Duration::from_millis(1500)).await;
    store.load_bug(bug).await.unwrap().unwrap().bug
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_events_drive_review_merge_and_release_and_bad_ones_change_nothing() {
    let all = examples();
    let (api, double) = start_double().await;
    grant(&double, "alice", "write");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let server = common::start_server_with(
        &url,
        &[
            ("R2R_GITHUB_WEBHOOK_SECRET", SECRET),
            ("R2R_GITHUB_REPOSITORIES", REPO),
            ("R2R_GITHUB_API_URL", &api),
            ("R2R_GITHUB_TOKEN", "ghs_test_token"),
            ("R2R_RATE_INTAKE", "100/60s"),
        ],
    );
    let base = &server.base;
    let store = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    let (h1, h2, merge) = (sha('1'), sha('2'), sha('3'));
    let (bug, _) = bug_in_review(
        base,
        &store,
        "SAVE300 total negative",
        2,
        &h1,
        &["shoplite/src/lib.rs"],
    )
    .await;

    let approve = |head: &str, login: &str, kind: &str| {
        example(
            &all,
            "pull_request_review",
            "submitted",
            &[
                ("/review/state", json!("approved")),
                ("/review/commit_id", json!(head)),
                ("/review/user/login", json!(login)),
                ("/review/user/type", json!(kind)),
                ("/pull_request/number", json!(2)),
            ],
        )
    };

    // A forged signature and a foreign repository are refused before anything is queued.
    let (status, _) = deliver(
        base,
        "pull_request_review",
        "d-forged",
        &approve(&h1, "alice", "User"),
        Some("sha256=".to_owned() + &"0".repeat(64)),
    )
    .await;
    assert_eq!(status, 401);
    let (status, _) = deliver(
        base,
        "pull_request_review",
        "d-unsigned",
        &approve(&h1, "alice", "User"),
        Some(String::new()),
    )
    .await;
    assert_eq!(status, 401);
    let mut foreign = approve(&h1, "alice", "User");
    *foreign.pointer_mut("/repository/full_name").unwrap() = json!("someone/else");
    let (status, _) = deliver(base, "pull_request_review", "d-foreign", &foreign, None).await;
    assert_eq!(status, 403);
    assert_eq!(
        settled(&store, &bug).await.state,
        BugState::InReview,
        "nothing recorded"
    );

    // A real approval of the exact head; its replay is acknowledged and ignored.
    let (status, body) = deliver(
        base,
        "pull_request_review",
        "d-approve-1",
        &approve(&h1, "alice", "User"),
        None,
    )
    .await;
    assert_eq!((status, body["replay"].clone()), (202, json!(false)));
    let approved = wait_for(&store, &bug, BugState::Approved).await;
    assert_eq!(approved.approvals.len(), 1);
    let (status, body) = deliver(
        base,
        "pull_request_review",
        "d-approve-1",
        &approve(&h1, "alice", "User"),
        None,
    )
    .await;
    assert_eq!((status, body["replay"].clone()), (202, json!(true)));

    // A push after the approval clears it.
    let push = example(
        &all,
        "pull_request",
        "synchronize",
        &[
            ("/pull_request/number", json!(2)),
            ("/pull_request/head/sha", json!(h2)),
        ],
    );
    deliver(base, "pull_request", "d-push", &push, None).await;
    let pushed = wait_for(&store, &bug, BugState::InReview).await;
    assert!(pushed.approvals.is_empty());
    assert_eq!(pushed.pull_request.as_ref().unwrap().head.as_str(), h2);

    // A merge of the old head is refused (the bug is back in review).
    let merged = |head: &str, by: &str, kind: &str| {
        example(
            &all,
            "pull_request",
            "closed",
            &[
                ("/pull_request/number", json!(2)),
                ("/pull_request/merged", json!(true)),
                ("/pull_request/head/sha", json!(head)),
                ("/pull_request/merge_commit_sha", json!(merge)),
                (
                    "/pull_request/merged_by",
                    json!({"login": by, "type": kind, "id": 7}),
                ),
            ],
        )
    };
    deliver(
        base,
        "pull_request",
        "d-merge-stale",
        &merged(&h1, "bob", "User"),
        None,
    )
    .await;
    assert_eq!(settled(&store, &bug).await.state, BugState::InReview);
    deliver(
        base,
        "pull_request_review",
        "d-approve-2",
        &approve(&h2, "alice", "User"),
        None,
    )
    .await;
    wait_for(&store, &bug, BugState::Approved).await;

    // A bot's merge is refused.
    deliver(
        base,
        "pull_request",
        "d-merge-bot",
        &merged(&h2, "dependabot[bot]", "Bot"),
        None,
    )
    .await;
    assert_eq!(settled(&store, &bug).await.state, BugState::Approved);

    // The recorder's deployment arrives before the merge: kept, then reconciled at the merge.
    double
        .compare
        .lock()
        .unwrap()
        .insert(format!("{merge}...{merge}"), "identical".into());
    let deployment = example(
        &all,
        "deployment_status",
        "created",
        &[
            ("/deployment_status/state", json!("success")),
            ("/deployment/task", json!("verify:production")),
            ("/deployment/environment", json!("production")),
            ("/deployment/sha", json!(merge)),
            ("/deployment/id", json!(4242)),
        ],
    );
    deliver(base, "deployment_status", "d-deploy", &deployment, None).await;
    let kept = settled(&store, &bug).await;
    assert_eq!(kept.state, BugState::Approved);
    assert_eq!(kept.deployments.len(), 1, "kept until the merge");
    deliver(
        base,
        "pull_request",
        "d-merge",
        &merged(&h2, "bob", "User"),
        None,
    )
    .await;
    let deployed = wait_for(&store, &bug, BugState::Deployed).await;
    assert_eq!(deployed.merge.as_ref().unwrap().merger.id, "bob");
    assert!(deployed
        .questions
        .iter()
        .any(|q| q.kind == domain::workflow::QuestionKind::Fix));
    assert!(
        double.authorized.lock().unwrap().iter().all(|ok| *ok),
        "the client sent its token"
    );
    assert!(
        !double.authorized.lock().unwrap().is_empty(),
        "the client asked the forge"
    );
    assert!(store.verify_ledger().await.unwrap().is_ok());
}

/// With required checks set, a recorder's deployment of a merged fix counts only once the
/// latest run of every required check on that very commit succeeded: none yet, one red, one
/// still running — each is said with the delivery and moves nothing; a green re-run does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_counts_only_once_the_required_checks_passed_on_its_commit() {
    let all = examples();
    let (api, double) = start_double().await;
    grant(&double, "alice", "write");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let server = common::start_server_with(
        &url,
        &[
            ("R2R_GITHUB_WEBHOOK_SECRET", SECRET),
            ("R2R_GITHUB_REPOSITORIES", REPO),
            ("R2R_GITHUB_API_URL", &api),
            ("R2R_GITHUB_TOKEN", "ghs_test_token"),
            ("R2R_GITHUB_REQUIRED_CHECKS", "test, lint"),
        ],
    );
    let base = &server.base;
    let store = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    let (head, merge) = (sha('4'), sha('5'));
    let (bug, _) = bug_in_review(
        base,
        &store,
        "SAVE300 total negative",
        3,
        &head,
        &["shoplite/src/lib.rs"],
    )
    .await;
    deliver(
        base,
        "pull_request_review",
        "c-approve",
        &approval(&all, 3, &head, "alice", "User"),
        None,
    )
    .await;
    wait_for(&store, &bug, BugState::Approved).await;
    let merged = example(
        &all,
        "pull_request",
        "closed",
        &[
            ("/pull_request/number", json!(3)),
            ("/pull_request/merged", json!(true)),
            ("/pull_request/head/sha", json!(head)),
            ("/pull_request/merge_commit_sha", json!(merge)),
            (
                "/pull_request/merged_by",
                json!({"login": "alice", "type": "User", "id": 7}),
            ),
        ],
    );
    deliver(base, "pull_request", "c-merge", &merged, None).await;
    wait_for(&store, &bug, BugState::Merged).await;
    double
        .compare
        .lock()
        .unwrap()
        .insert(format!("{merge}...{merge}"), "identical".into());
    // Each try is a deployment of its own (GitHub never applies one body twice).
    let deployment = |id: u64| {
        example(
            &all,
            "deployment_status",
            "created",
            &[
                ("/deployment_status/state", json!("success")),
                ("/deployment/task", json!("verify:production")),
                ("/deployment/environment", json!("production")),
                ("/deployment/sha", json!(merge)),
                ("/deployment/id", json!(id)),
            ],
        )
    };
    let run = |id: u64, name: &str, status: &str, conclusion: Option<&str>| {
        (
            id,
            name.to_owned(),
            status.to_owned(),
            conclusion.map(str::to_owned),
        )
    };
    for (n, (delivery, runs, said)) in [
        ("c-none", vec![], "test has not run"),
        (
            "c-red",
            vec![
                run(1, "test", "completed", Some("failure")),
                run(2, "lint", "completed", Some("success")),
            ],
            "test ended failure",
        ),
        (
            "c-running",
            vec![
                run(1, "test", "completed", Some("failure")),
                run(2, "lint", "completed", Some("success")),
                run(3, "test", "in_progress", None),
            ],
            "test is in_progress",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        double.checks.lock().unwrap().insert(merge.clone(), runs);
        let id = 70 + u64::try_from(n).unwrap();
        let (status, body) =
            deliver(base, "deployment_status", delivery, &deployment(id), None).await;
        assert_eq!(status, 202, "{body}");
        let kept = settled(&store, &bug).await;
        assert_eq!(kept.state, BugState::Merged, "{delivery}");
        assert!(kept.deployments.is_empty(), "{delivery}: nothing recorded");
        let recorded = store
            .webhook_delivery("github", delivery)
            .await
            .unwrap()
            .unwrap();
        let outcome: Value = serde_json::from_str(recorded.outcome.as_deref().unwrap()).unwrap();
        let note = outcome["notes"][0].as_str().unwrap_or_default();
        assert!(
            note.contains("not recorded") && note.contains(said),
            "{delivery}: {outcome}"
        );
    }
    double.checks.lock().unwrap().insert(
        merge.clone(),
        vec![
            run(1, "test", "completed", Some("failure")),
            run(2, "lint", "completed", Some("success")),
            run(3, "test", "completed", Some("success")),
            run(4, "docs", "completed", Some("failure")),
        ],
    );
    // The checks complete green: GitHub says so (check_suite completed) and the latest held
    // deployment of that commit is recorded — nobody has to deploy again.
    let completed = |delivery: &str, head_sha: &str| {
        let suite = example(
            &all,
            "check_suite",
            "completed",
            &[("/check_suite/head_sha", json!(head_sha))],
        );
        let delivery = delivery.to_owned();
        async move { deliver(base, "check_suite", &delivery, &suite, None).await }
    };
    // Another commit's suite completing changes nothing here.
    let (status, _) = completed("c-other-suite", &sha('9')).await;
    assert_eq!(status, 202);
    assert_eq!(settled(&store, &bug).await.state, BugState::Merged);
    let (status, body) = completed("c-suite", &merge).await;
    assert_eq!(status, 202, "{body}");
    let deployed = wait_for(&store, &bug, BugState::Deployed).await;
    assert_eq!(deployed.deployments.len(), 1);
    assert_eq!(
        deployed.deployments[0].id, "72",
        "the latest held deployment"
    );
    // The delivery's outcome is written just after the bug moves: wait for it (bounded).
    let mut outcome = None;
    for _ in 0..100 {
        outcome = store
            .webhook_delivery("github", "c-suite")
            .await
            .unwrap()
            .and_then(|d| d.outcome);
        if outcome.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        outcome
            .as_deref()
            .is_some_and(|o| o.contains("recorded: its required checks turned green")),
        "{outcome:?}"
    );
    // A later green deployment of the same commit adds a record, and nothing is held any more.
    deliver(base, "deployment_status", "c-green", &deployment(79), None).await;
    assert!(store
        .held_deployments(REPO, &merge)
        .await
        .unwrap()
        .is_empty());
}

/// Before its checks turn green, a held deployment is said on each completed suite that is
/// still red, and never recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_deployment_waits_while_its_checks_stay_red() {
    let all = examples();
    let (api, double) = start_double().await;
    grant(&double, "alice", "write");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let server = common::start_server_with(
        &url,
        &[
            ("R2R_GITHUB_WEBHOOK_SECRET", SECRET),
            ("R2R_GITHUB_REPOSITORIES", REPO),
            ("R2R_GITHUB_API_URL", &api),
            ("R2R_GITHUB_TOKEN", "ghs_test_token"),
            ("R2R_GITHUB_REQUIRED_CHECKS", "test"),
        ],
    );
    let base = &server.base;
    let store = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    let merge = sha('6');
    double.checks.lock().unwrap().insert(
        merge.clone(),
        vec![(
            1,
            "test".to_owned(),
            "completed".to_owned(),
            Some("failure".to_owned()),
        )],
    );
    let deployment = example(
        &all,
        "deployment_status",
        "created",
        &[
            ("/deployment_status/state", json!("success")),
            ("/deployment/task", json!("verify:production")),
            ("/deployment/environment", json!("production")),
            ("/deployment/sha", json!(merge)),
            ("/deployment/id", json!(90)),
        ],
    );
    deliver(base, "deployment_status", "h-deploy", &deployment, None).await;
    let suite = example(
        &all,
        "check_suite",
        "completed",
        &[("/check_suite/head_sha", json!(merge))],
    );
    deliver(base, "check_suite", "h-suite", &suite, None).await;
    let mut outcome = None;
    for _ in 0..100 {
        outcome = store
            .webhook_delivery("github", "h-suite")
            .await
            .unwrap()
            .and_then(|d| d.outcome);
        if outcome.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let outcome = outcome.expect("the suite event was applied");
    assert!(
        outcome.contains("deployment 90 of") && outcome.contains("still held"),
        "{outcome}"
    );
    assert_eq!(store.held_deployments(REPO, &merge).await.unwrap(), ["90"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sensitive_change_needs_two_people_one_of_them_a_code_owner_at_the_base() {
    let all = examples();
    let (api, double) = start_double().await;
    let (main, head) = (sha('b'), sha('a'));
    double
        .branches
        .lock()
        .unwrap()
        .insert("main".into(), main.clone());
    // CODEOWNERS on the base branch, and the pull request's own copy, which names its
    // author's accomplice: GitHub reads the base's, and so must the desk.
    double.codeowners.lock().unwrap().insert(
        main.clone(),
        "* @alice\nsrc/auth/ @carol\n/.github/ @carol\n".to_owned(),
    );
    double.codeowners.lock().unwrap().insert(
        head.clone(),
        "* @alice\nsrc/auth/ @carol @mallory\n/.github/ @carol @mallory\n".to_owned(),
    );
    for (login, role) in [
        ("alice", "admin"),
        ("bob", "maintain"),
        ("carol", "write"),
        ("mallory", "write"),
    ] {
        grant(&double, login, role);
    }
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let server = common::start_server_with(
        &url,
        &[
            ("R2R_GITHUB_WEBHOOK_SECRET", SECRET),
            ("R2R_GITHUB_REPOSITORIES", REPO),
            ("R2R_GITHUB_API_URL", &api),
            ("R2R_CREW_COMPONENTS", "shoplite"),
        ],
    );
    let store = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    let (bug, _) = bug_in_review(
        &server.base,
        &store,
        "Login token leaks",
        9,
        &head,
        &["src/auth/token.rs", ".github/CODEOWNERS"],
    )
    .await;
    let approve = |login: &str| {
        example(
            &all,
            "pull_request_review",
            "submitted",
            &[
                ("/review/state", json!("approved")),
                ("/review/commit_id", json!(head)),
                ("/review/user/login", json!(login)),
                ("/review/user/type", json!("User")),
                ("/pull_request/number", json!(9)),
            ],
        )
    };
    deliver(
        &server.base,
        "pull_request_review",
        "s-1",
        &approve("alice"),
        None,
    )
    .await;
    deliver(
        &server.base,
        "pull_request_review",
        "s-2",
        &approve("bob"),
        None,
    )
    .await;
    let two_without_owner = settled(&store, &bug).await;
    assert_eq!(two_without_owner.approvals.len(), 2);
    assert_eq!(
        two_without_owner.state,
        BugState::InReview,
        "two people, neither owns src/auth/"
    );
    // Mallory is a code owner only in the CODEOWNERS the change itself brings.
    deliver(
        &server.base,
        "pull_request_review",
        "s-mallory",
        &approve("mallory"),
        None,
    )
    .await;
    let after_mallory = settled(&store, &bug).await;
    assert_eq!(after_mallory.approvals.len(), 3);
    assert!(
        after_mallory.approvals.iter().all(|a| !a.code_owner),
        "the pull request chose its own code owner: {:?}",
        after_mallory.approvals
    );
    assert_eq!(after_mallory.state, BugState::InReview);
    deliver(
        &server.base,
        "pull_request_review",
        "s-3",
        &approve("carol"),
        None,
    )
    .await;
    let approved = wait_for(&store, &bug, BugState::Approved).await;
    assert!(approved
        .approvals
        .iter()
        .any(|a| a.code_owner && a.approver.id == "carol"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_opens_draft_pulls_and_the_recorder_records_through_github() {
    use forge::{DraftRequest, Forge, ForgeError};
    let all = examples();
    let (api, double) = start_double().await;
    let fix_head = sha('f');
    double
        .branches
        .lock()
        .unwrap()
        .insert("r2r/fix-bug-1".into(), fix_head.clone());
    let config = server::config::GitHubConfig {
        webhook_secret: None,
        repositories: vec![REPO.into()],
        api_url: api.clone(),
        token: Some(server::secret::Secret::new("ghs_test_token")),
        production_environment: "production".into(),
        fix_repository: None,
        git_url: "https://github.com".into(),
        required_checks: Vec::new(),
    };
    let forge = config.forge(REPO);

    // Facts: branch heads (unknown → none, unsafe names never leave the process).
    assert_eq!(
        forge
            .branch_head("r2r/fix-bug-1")
            .await
            .unwrap()
            .unwrap()
            .as_str(),
        fix_head
    );
    assert!(forge.branch_head("absent").await.unwrap().is_none());
    let writes_before = double.authorized.lock().unwrap().len();
    assert!(forge.branch_head("../../x").await.unwrap().is_none());
    assert_eq!(double.authorized.lock().unwrap().len(), writes_before);

    // A draft pull request: draft, into the default branch, evidence in the body.
    let pull = forge
        .open_draft(&DraftRequest {
            branch: "r2r/fix-bug-1".into(),
            title: "Fix bug-1: SAVE300 makes the total negative".into(),
            body: "Failing test: shoplite/tests/coupon.rs".into(),
        })
        .await
        .unwrap();
    assert_eq!(pull.number, 7);
    assert_eq!(pull.head.as_str(), fix_head);
    let (path, body) = double.writes.lock().unwrap()[0].clone();
    assert_eq!(path, "pulls");
    assert_eq!(body["draft"], json!(true));
    assert_eq!(body["base"], json!("main"));
    assert_eq!(body["head"], json!("r2r/fix-bug-1"));
    assert!(body["body"].as_str().unwrap().contains("Failing test"));
    // GitHub's 422 arrives as a refusal with its message, not as a transport error.
    let refused = forge
        .open_draft(&DraftRequest {
            branch: "not-pushed".into(),
            title: "t".into(),
            body: String::new(),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, ForgeError::Invalid(m) if m.contains("Validation Failed")),
        "{refused:?}"
    );

    // The recorder on GitHub: verify against the running desk, then a verify:production
    // deployment and its success status; GitHub's signed webhook moves the ledger.
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let server = common::start_server_with(
        &url,
        &[
            ("R2R_GITHUB_WEBHOOK_SECRET", SECRET),
            ("R2R_GITHUB_REPOSITORIES", REPO),
            ("R2R_GITHUB_API_URL", &api),
            ("R2R_GITHUB_TOKEN", "ghs_test_token"),
        ],
    );
    let base = server.base.clone();
    let health: Value = reqwest::get(format!("{base}/api/health"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let live = health["commit"].as_str().unwrap().to_owned();
    assert!(
        CommitSha::parse(&live).is_ok(),
        "the desk was built outside a git checkout: {live:?}"
    );
    let store = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    let (bug, _) = bug_in_review(
        &base,
        &store,
        "Coupon total negative",
        7,
        &fix_head,
        &["shoplite/src/lib.rs"],
    )
    .await;

    let env_file = dir.path().join("recorder.env");
    std::fs::write(
        &env_file,
        format!("R2R_GITHUB_API_URL={api}\nR2R_GITHUB_TOKEN=ghs_test_token\n"),
    )
    .unwrap();
    let verify = |commit: &str, extra: &[&str]| {
        common::r2r_with_env_file(&env_file)
            .args([
                "recorder",
                "verify",
                "--sha",
                commit,
                "--url",
                &base,
                "--public-url",
                &base,
            ])
            .args(["--record-with", "github"])
            .args(extra)
            .output()
            .unwrap()
    };
    let writes = || double.writes.lock().unwrap().len();
    let before = writes();
    let missing_repo = verify(&live, &[]);
    assert_ne!(missing_repo.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&missing_repo.stderr).contains("--repository is required"));
    let wrong = verify(&"0".repeat(40), &["--repository", REPO]);
    assert_eq!(wrong.status.code(), Some(1));
    assert_eq!(
        writes(),
        before,
        "a failed verification writes nothing to GitHub"
    );

    let ok = verify(&live, &["--repository", REPO]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("recorded as deployment 9001"));
    let recorded = double.writes.lock().unwrap()[before..].to_vec();
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    assert_eq!(recorded[0].0, "deployments");
    assert_eq!(recorded[0].1["task"], json!("verify:production"));
    assert_eq!(recorded[0].1["ref"], json!(live));
    assert_eq!(recorded[0].1["environment"], json!("production"));
    assert_eq!(recorded[1].0, "deployments/9001/statuses");
    assert_eq!(recorded[1].1["state"], json!("success"));

    // GitHub answers with a signed deployment_status carrying what the recorder created.
    let status = example(
        &all,
        "deployment_status",
        "created",
        &[
            ("/deployment_status/state", recorded[1].1["state"].clone()),
            ("/deployment/task", recorded[0].1["task"].clone()),
            (
                "/deployment/environment",
                recorded[0].1["environment"].clone(),
            ),
            ("/deployment/sha", recorded[0].1["ref"].clone()),
            ("/deployment/id", json!(9001)),
        ],
    );
    let (code, _) = deliver(&base, "deployment_status", "d-recorder", &status, None).await;
    assert_eq!(code, 202);
    let kept = settled(&store, &bug).await;
    assert_eq!(kept.deployments.len(), 1, "the deployment is on the bug");
    assert_eq!(kept.deployments[0].commit.as_str(), live);
    assert_eq!(kept.deployments[0].id, "9001");
    assert!(double.authorized.lock().unwrap().iter().all(|ok| *ok));
}

/// Issue 14, finding 5: the signature covers the body, not `X-GitHub-Delivery`. A captured
/// signed body re-sent under a fresh delivery id must not be applied again — here an old
/// `synchronize` that would move the head back and clear the approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_captured_body_resent_under_a_fresh_delivery_id_is_not_applied_again() {
    let all = examples();
    let (api, double) = start_double().await;
    grant(&double, "alice", "write");
    let (server, store, _dir) = github_desk(&api).await;
    let base = &server.base;
    let (h1, h2, h3) = (sha('4'), sha('5'), sha('6'));
    let (bug, _) = bug_in_review(
        base,
        &store,
        "Coupon total",
        3,
        &h1,
        &["shoplite/src/lib.rs"],
    )
    .await;
    let push = |before: &str, after: &str| {
        example(
            &all,
            "pull_request",
            "synchronize",
            &[
                ("/pull_request/number", json!(3)),
                ("/pull_request/head/sha", json!(after)),
                ("/before", json!(before)),
                ("/after", json!(after)),
            ],
        )
    };
    let to_h2 = push(&h1, &h2);
    let (status, body) = deliver(base, "pull_request", "r-push-2", &to_h2, None).await;
    assert_eq!((status, body["replay"].clone()), (202, json!(false)));
    wait_until(&store, &bug, "at h2", |b| {
        b.pull_request.as_ref().unwrap().head.as_str() == h2
    })
    .await;
    deliver(base, "pull_request", "r-push-3", &push(&h2, &h3), None).await;
    wait_until(&store, &bug, "at h3", |b| {
        b.pull_request.as_ref().unwrap().head.as_str() == h3
    })
    .await;
    deliver(
        base,
        "pull_request_review",
        "r-approve",
        &approval(&all, 3, &h3, "alice", "User"),
        None,
    )
    .await;
    wait_for(&store, &bug, BugState::Approved).await;

    // The captured push to h2, still validly signed, under a delivery id never seen.
    let (status, body) = deliver(base, "pull_request", "r-push-2-again", &to_h2, None).await;
    assert_eq!(
        (status, body["queued"].clone(), body["replay"].clone()),
        (202, json!(false), json!(true)),
        "acknowledged, not queued"
    );
    // GitHub's own redelivery (same id, same body) is a replay as before.
    let (status, body) = deliver(base, "pull_request", "r-push-2", &to_h2, None).await;
    assert_eq!((status, body["replay"].clone()), (202, json!(true)));
    let after = settled(&store, &bug).await;
    assert_eq!(
        after.state,
        BugState::Approved,
        "the old push was not applied"
    );
    assert_eq!(after.pull_request.as_ref().unwrap().head.as_str(), h3);
    assert_eq!(after.approvals.len(), 1);
    assert!(
        store
            .job_status("github:r-push-2-again")
            .await
            .unwrap()
            .is_none(),
        "no job was filed for the replay"
    );
    assert!(store
        .webhook_delivery("github", "r-push-2-again")
        .await
        .unwrap()
        .is_none());
    let first = store
        .webhook_delivery("github", "r-push-2")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        first.body_sha256,
        server::service::github_events::body_sha256(&serde_json::to_vec(&to_h2).unwrap()),
        "recognised by the SHA-256 of the signed body"
    );
}

/// Issue 14, finding 6: an approval counts only from an account with write, maintain or
/// admin access, as GitHub's collaborator-permission API says at the time; read, triage,
/// none, an unknown account, a bot, or no answer at all (fail closed) do not count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_account_with_write_access_approves_and_a_failed_check_counts_nothing() {
    let all = examples();
    let (api, double) = start_double().await;
    grant(&double, "dave", "read");
    grant(&double, "erin", "triage");
    grant(&double, "frank", "none");
    grant(&double, "gina", "write");
    let (server, store, _dir) = github_desk(&api).await;
    let base = &server.base;
    let head = sha('c');
    let (bug, _) = bug_in_review(
        base,
        &store,
        "Coupon rounding",
        5,
        &head,
        &["shoplite/src/lib.rs"],
    )
    .await;
    for (delivery, login, kind) in [
        ("p-read", "dave", "User"),
        ("p-triage", "erin", "User"),
        ("p-none", "frank", "User"),
        ("p-unknown", "mallory", "User"),
        ("p-bot", "renovate[bot]", "Bot"),
    ] {
        let (status, _) = deliver(
            base,
            "pull_request_review",
            delivery,
            &approval(&all, 5, &head, login, kind),
            None,
        )
        .await;
        assert_eq!(status, 202);
    }
    let after = settled(&store, &bug).await;
    assert_eq!(after.state, BugState::InReview);
    assert!(after.approvals.is_empty(), "{:?}", after.approvals);
    let asked = double.permission_asks.lock().unwrap().clone();
    for login in ["dave", "erin", "frank", "mallory"] {
        assert!(
            asked.iter().any(|l| l == login),
            "{login} was not checked: {asked:?}"
        );
    }
    assert!(
        !asked.iter().any(|l| l.contains("[bot]")),
        "a bot never counts, so it is not asked about"
    );
    for delivery in ["p-read", "p-triage", "p-none", "p-unknown", "p-bot"] {
        let (_, _, _, done) = store
            .job_status(&format!("github:{delivery}"))
            .await
            .unwrap()
            .unwrap();
        assert!(done, "{delivery}: a definite answer is final");
    }
    // Each refusal says why, kept with the delivery.
    for (delivery, words) in [
        ("p-read", ["dave", "permission read, role read"]),
        ("p-triage", ["erin", "permission read, role triage"]),
        ("p-none", ["frank", "permission none"]),
        ("p-unknown", ["mallory", "404"]),
        ("p-bot", ["", ""]),
    ] {
        let recorded = store
            .webhook_delivery("github", delivery)
            .await
            .unwrap()
            .unwrap();
        assert!(recorded.applied_at.is_some(), "{delivery}");
        let outcome: Value = serde_json::from_str(recorded.outcome.as_deref().unwrap()).unwrap();
        if delivery == "p-bot" {
            // The engine refuses a bot (no person); its permission is never asked.
            assert_eq!(outcome["refused"][0][1], json!("humans_only"), "{outcome}");
            continue;
        }
        assert_eq!(
            outcome["refused"][0],
            json!([bug, "reviewer_without_write_access"]),
            "{outcome}"
        );
        let note = outcome["notes"][0].as_str().unwrap_or_default();
        for word in words {
            assert!(note.contains(word), "{delivery}: {note:?} lacks {word:?}");
        }
    }

    // GitHub unreachable while checking a writer's approval: not counted, and retried.
    double
        .permission_outage
        .store(true, std::sync::atomic::Ordering::SeqCst);
    deliver(
        base,
        "pull_request_review",
        "p-outage",
        &approval(&all, 5, &head, "gina", "User"),
        None,
    )
    .await;
    let during = settled(&store, &bug).await;
    assert_eq!(during.state, BugState::InReview);
    assert!(during.approvals.is_empty());
    let (attempts, _, error, done) = store.job_status("github:p-outage").await.unwrap().unwrap();
    assert!(attempts >= 1 && !done, "{attempts} {done}");
    let error = error.unwrap_or_default();
    assert!(
        error.contains("gina") && error.contains("permission"),
        "{error}"
    );
    let waiting = store
        .webhook_delivery("github", "p-outage")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(waiting.applied_at, None);
    assert!(
        waiting
            .outcome
            .unwrap_or_default()
            .contains("not_applied_yet"),
        "the wait is recorded with the delivery"
    );
    double
        .permission_outage
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let approved = wait_for(&store, &bug, BugState::Approved).await;
    assert_eq!(approved.approvals.len(), 1);
    assert_eq!(approved.approvals[0].approver.id, "gina");
}

/// A git smart-HTTP server on 127.0.0.1: `git http-backend` (CGI) serving the bare
/// repositories under `root`, as GitHub serves `https://github.com/owner/name.git`. Every
/// request must carry `Authorization: Basic` of `x-access-token:<token>`; the others get 401.
/// Records each request's service and whether it was authorised.
async fn start_git_http(
    root: std::path::PathBuf,
    token: &'static str,
) -> (String, Arc<Mutex<Vec<(String, bool)>>>) {
    use axum::body::Bytes;
    use axum::http::{Method, Uri};
    use base64::Engine;
    let seen: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let log = seen.clone();
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"))
    );
    let handler = move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
        let (root, log, expected) = (root.clone(), log.clone(), expected.clone());
        async move {
            let ok = headers
                .get("authorization")
                .is_some_and(|v| v.as_bytes() == expected.as_bytes());
            log.lock()
                .unwrap()
                .push((format!("{} {}", method, uri.path()), ok));
            if !ok {
                return axum::http::Response::builder()
                    .status(401)
                    .header("WWW-Authenticate", "Basic realm=\"GitHub\"")
                    .body(axum::body::Body::from("Bad credentials"))
                    .unwrap();
            }
            let header = |name: &str| {
                headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned()
            };
            let mut child = tokio::process::Command::new("git")
                .arg("http-backend")
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("GIT_PROJECT_ROOT", &root)
                .env("GIT_HTTP_EXPORT_ALL", "1")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", &root)
                .env("REQUEST_METHOD", method.as_str())
                .env("PATH_INFO", uri.path())
                .env("QUERY_STRING", uri.query().unwrap_or_default())
                .env("CONTENT_TYPE", header("content-type"))
                .env("CONTENT_LENGTH", body.len().to_string())
                .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
                .env("HTTP_GIT_PROTOCOL", header("git-protocol"))
                .env("REMOTE_USER", "x-access-token")
                .env("REMOTE_ADDR", "127.0.0.1")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            {
                use tokio::io::AsyncWriteExt;
                let mut stdin = child.stdin.take().unwrap();
                stdin.write_all(&body).await.unwrap();
            }
            let output = child.wait_with_output().await.unwrap();
            let raw = output.stdout;
            let split = raw
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map(|at| (at, 4))
                .or_else(|| raw.windows(2).position(|w| w == b"\n\n").map(|at| (at, 2)))
                .unwrap();
            let head = String::from_utf8_lossy(&raw[..split.0]).into_owned();
            let mut response = axum::http::Response::builder();
            for line in head.lines() {
                let Some((name, value)) = line.split_once(':') else {
                    continue;
                };
                if name.eq_ignore_ascii_case("status") {
                    let code: u16 = value.trim()[..3].parse().unwrap();
                    response = response.status(code);
                } else {
                    response = response.header(name.trim(), value.trim());
                }
            }
            response
                .body(axum::body::Body::from(raw[split.0 + split.1..].to_vec()))
                .unwrap()
        }
    };
    let app = Router::new().fallback(handler);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

fn git_out(dir: &std::path::Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// The fixer's commit reaches GitHub: the desk keeps a bare clone, moves its main to GitHub's
/// before measuring, pushes the measured fix's branch over HTTPS with its token (in git's
/// environment only: never in a URL, a config file, the crew's context or the evidence),
/// and opens the draft pull request through the REST API; merging is GitHub's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_measured_fix_is_pushed_to_github_and_opened_there_as_a_draft() {
    fix_pushed_to_github(false).await;
}

/// The same for a project added with `r2r project add --github` beside an environment's
/// project that has no GitHub repository: its bugs' fixes go to its own repository.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_measured_fix_is_pushed_to_its_own_github_repository() {
    fix_pushed_to_github(true).await;
}

/// `stored`: the GitHub project is defined with `r2r project add` (component `shop`), not by
/// `R2R_GITHUB_FIX_REPOSITORY` and `R2R_LOCAL_FORGE`.
async fn fix_pushed_to_github(stored: bool) {
    if !common::docker_here().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // "GitHub's" copy of the repository, served over smart HTTP.
    let root = dir.path().join("github");
    std::fs::create_dir_all(root.join("octo-org")).unwrap();
    let (seeded, work) = common::local_forge_with(dir.path(), "seed", |work| {
        server::cli::demo::prepare_scratch(&common::repo_root().join("shoplite"), work, false)
            .unwrap();
        std::fs::remove_dir_all(work.join("tests")).unwrap();
    })
    .await;
    let remote = root.join("octo-org/shop.git");
    std::fs::rename(&seeded, &remote).unwrap();
    // The desk's clone, made now; GitHub's main then moves on, so the clone is behind.
    let mirror = dir.path().join("mirror.git");
    let cloned = std::process::Command::new("git")
        .args(["clone", "--bare", "--quiet"])
        .arg(&remote)
        .arg(&mirror)
        .output()
        .unwrap();
    assert!(cloned.status.success());
    std::fs::write(
        work.join("NOTES.md"),
        "Notes that landed on GitHub after the clone.\n",
    )
    .unwrap();
    for args in [
        vec!["add", "NOTES.md"],
        vec![
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.org",
            "commit",
            "--quiet",
            "-m",
            "notes",
        ],
        vec!["push", "--quiet", remote.to_str().unwrap(), "main"],
    ] {
        let done = std::process::Command::new("git")
            .current_dir(&work)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            done.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&done.stderr)
        );
    }
    let github_main = git_out(&remote, &["rev-parse", "main"]);
    assert_ne!(git_out(&mirror, &["rev-parse", "main"]), github_main);

    const TOKEN: &str = "ghs_push_token_0123456789";
    let (git_url, seen) = start_git_http(root.clone(), TOKEN).await;
    let (api, double) = start_double().await;
    *double.remote.lock().unwrap() = Some(remote.clone());
    let github = [
        ("R2R_GITHUB_WEBHOOK_SECRET", SECRET),
        ("R2R_GITHUB_REPOSITORIES", REPO),
        ("R2R_GITHUB_API_URL", api.as_str()),
        ("R2R_GITHUB_TOKEN", TOKEN),
        ("R2R_GITHUB_GIT_URL", git_url.as_str()),
    ];
    let mut env = github.to_vec();
    env.extend([
        ("R2R_SANDBOX_BACKEND", "docker"),
        ("R2R_MODEL_PROVIDER", "scripted"),
    ]);
    if !stored {
        env.extend([
            ("R2R_GITHUB_FIX_REPOSITORY", REPO),
            ("R2R_LOCAL_FORGE", mirror.to_str().unwrap()),
        ]);
    }
    let desk = common::owner_desk(&env);
    let server = &desk.server;
    let url = desk.database_url.clone();
    let base = server.base.clone();
    let component = if stored {
        let env_file = dir.path().join("project.env");
        let mut text: String = github.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        text.push_str(&format!("DATABASE_URL={url}\n"));
        std::fs::write(&env_file, text).unwrap();
        let added = common::r2r_with_env_file(&env_file)
            .args(["project", "add", "--id", "shop", "--components", "shop"])
            .args(["--profile", "rust", "--github", REPO, "--forge"])
            .arg(&mirror)
            .output()
            .unwrap();
        assert!(
            added.status.success(),
            "{}",
            String::from_utf8_lossy(&added.stderr)
        );
        tokio::time::sleep(Duration::from_millis(1500)).await; // served within a second
        "shop"
    } else {
        "shoplite"
    };
    let client = reqwest::Client::new();
    let filed: Value = client
        .post(format!("{base}/api/v1/reports"))
        .json(&json!({
            "component": component, "title": "SAVE300 makes the total negative",
            "what_happened": "The total shows -₹100", "expected": "A total of ₹0",
            "steps": "Cart of ₹200, coupon SAVE300",
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let bug = filed["bug_id"].as_str().unwrap().to_owned();
    let capability = filed["tracking_link"]
        .as_str()
        .unwrap()
        .trim_start_matches("/track#")
        .to_owned();
    let manager = desk.tokens[&Role::Manager].clone();
    let view_of = |bug: String| {
        let request = client
            .get(format!("{base}/api/v1/bugs/{bug}"))
            .bearer_auth(&manager)
            .send();
        async move { request.await.unwrap().json::<Value>().await.unwrap() }
    };
    let started = std::time::Instant::now();
    let question = loop {
        let tracking: Value = client
            .get(format!("{base}/api/v1/track"))
            .header("x-r2r-capability", &capability)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if tracking["question"]["kind"] == "reproduction" {
            break tracking;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "no question: {tracking}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // The reproduction was measured on GitHub's main, fetched into the clone first.
    assert_eq!(git_out(&mirror, &["rev-parse", "main"]), github_main);
    let answered = client
        .post(format!("{base}/api/v1/track/answer"))
        .header("x-r2r-capability", &capability)
        .json(&json!({"request_id": question["question"]["request_id"], "kind": "reproduction", "yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let view = loop {
        let view = view_of(bug.clone()).await;
        if view["bug"]["state"] == "in_review" {
            break view;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no draft: {view}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // GitHub's pull request, at the pushed head, on top of GitHub's main.
    let pr = &view["bug"]["pull_request"];
    assert_eq!(pr["number"], 7, "{view}");
    let head = pr["head"].as_str().unwrap();
    let writes = double.writes.lock().unwrap().clone();
    let (_, opened) = writes.iter().find(|(path, _)| path == "pulls").unwrap();
    assert_eq!(opened["draft"], true);
    let branch = opened["head"].as_str().unwrap();
    assert!(branch.starts_with(&format!("r2r/fix-{bug}-")), "{opened}");
    assert_eq!(
        git_out(&remote, &["rev-parse", &format!("refs/heads/{branch}")]),
        head
    );
    assert_eq!(
        git_out(&remote, &["rev-parse", &format!("{head}^")]),
        github_main
    );
    assert!(git_out(&remote, &["show", &format!("{head}:src/lib.rs")]).contains("discount.min("));
    // Every request to the git server carried the token; a push happened.
    let requests = seen.lock().unwrap().clone();
    assert!(requests.iter().all(|(_, ok)| *ok), "{requests:?}");
    assert!(
        requests
            .iter()
            .any(|(r, _)| r.ends_with("/git-receive-pack")),
        "{requests:?}"
    );
    // The token is nowhere the crew, the sandbox's evidence or a clone's config could show it.
    use base64::Engine;
    let encoded =
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{TOKEN}"));
    let config = git_out(&mirror, &["config", "--list"]);
    let ledger = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    let evidence = serde_json::to_string(
        &ledger
            .evidence_for(&bug)
            .await
            .unwrap()
            .iter()
            .map(|e| e.body.clone())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let fixer = desk.tokens[&Role::Fixer].clone();
    let context = client
        .get(format!("{base}/api/v1/bugs/{bug}/fix/context"))
        .bearer_auth(&fixer)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for (place, text) in [
        ("clone config", &config),
        ("evidence", &evidence),
        ("fix context", &context),
        ("bug view", &view.to_string()),
    ] {
        assert!(
            !text.contains(TOKEN) && !text.contains(&encoded),
            "the token leaked into the {place}"
        );
    }

    // Merging is GitHub's: an owner asking the desk to merge is told where.
    let (cookie, csrf) = common::sign_in(&client, &base, common::OWNER, common::PASSWORD).await;
    let owner_merge = client
        .post(format!("{base}/api/v1/bugs/{bug}/merge"))
        .header("cookie", cookie)
        .header("x-csrf-token", csrf)
        .json(&json!({"head": head}))
        .send()
        .await
        .unwrap();
    assert_eq!(owner_merge.status(), 409);
    let refusal: Value = owner_merge.json().await.unwrap();
    assert_eq!(refusal["error"], "merged_on_github", "{refusal}");

    // A wrong token: the push is refused with GitHub's words, and neither token is in them.
    let wrong = forge::RemoteAuth::github(&format!("{git_url}/{REPO}.git"), "ghs_wrong_token_xyz");
    let error = forge::LocalForge::new(&mirror, "main")
        .push_branch(&wrong, branch)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        !error.contains("ghs_wrong_token_xyz") && !error.contains(TOKEN),
        "{error}"
    );
    assert!(
        error.contains("401") || error.to_lowercase().contains("authentication"),
        "{error}"
    );
}

/// Pull request numbers and commits are not unique across repositories (a fork holds the
/// original's very commits): an event moves only the bugs of the project that follows its
/// repository. The environment's project follows the first listed repository; a project
/// added with `--github` follows its own, which must be listed and nobody else's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_moves_only_the_bugs_of_the_project_that_follows_its_repository() {
    const FORK: &str = "mallory/shop-fork";
    let all = examples();
    let (api, double) = start_double().await;
    grant(&double, "alice", "write");
    grant(&double, "mallory", "admin");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let listed = format!("{REPO},{FORK},octo-org/third");
    let env = [
        ("R2R_GITHUB_WEBHOOK_SECRET", SECRET),
        ("R2R_GITHUB_REPOSITORIES", listed.as_str()),
        ("R2R_GITHUB_API_URL", api.as_str()),
        ("R2R_GITHUB_TOKEN", "ghs_test_token"),
        ("R2R_RATE_INTAKE", "100/60s"),
    ];
    let server = common::start_server_with(&url, &env);
    let base = &server.base;
    let store = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();

    // A second project whose fixes go to the fork; the command line checks the repository.
    let forge = dir.path().join("fork.git");
    forge::LocalForge::init(&forge, "main").await.unwrap();
    let env_file = dir.path().join("project.env");
    let mut text: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    text.push_str(&format!("DATABASE_URL={url}\n"));
    std::fs::write(&env_file, text).unwrap();
    let add = |id: &str, github: &str| {
        let output = common::r2r_with_env_file(&env_file)
            .args([
                "project",
                "add",
                "--id",
                id,
                "--components",
                id,
                "--profile",
                "rust",
            ])
            .arg("--forge")
            .arg(&forge)
            .args(["--github", github])
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr),
        )
    };
    for (github, words) in [
        (
            "someone/else",
            "--github: someone/else is not in R2R_GITHUB_REPOSITORIES",
        ),
        (
            "mallory",
            "--github: expected a GitHub repository as owner/name",
        ),
        (
            "mallory/shop-fork.git",
            "--github: expected a GitHub repository",
        ),
    ] {
        let (code, said) = add("forkshop", github);
        assert_eq!(code, Some(1), "{github}: {said}");
        assert!(said.contains(words), "{github}: {said}");
    }
    let (code, said) = add("forkshop", FORK);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("fixes pushed to GitHub mallory/shop-fork"),
        "{said}"
    );
    let (code, said) = add("forkshop-two", FORK);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains(
            "--github: mallory/shop-fork is already the repository of the project \"forkshop\""
        ),
        "{said}"
    );
    let listing = common::r2r_with_env_file(&env_file)
        .args(["project", "list"])
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    assert!(listing.contains("octo-org/shop (events only)"), "{listing}");
    assert!(listing.contains("mallory/shop-fork"), "{listing}");
    tokio::time::sleep(Duration::from_millis(1500)).await; // the desk serves it within 1 s

    // Two bugs in review, each with pull request 7 at the very same head.
    let head = sha('7');
    let (ours, _) = bug_in_review(
        base,
        &store,
        "SAVE300 total negative",
        7,
        &head,
        &["src/lib.rs"],
    )
    .await;
    let (theirs, _) = bug_of_in_review(
        base,
        &store,
        "forkshop",
        "Checkout button does nothing",
        7,
        &head,
        &["src/lib.rs"],
    )
    .await;
    let approval_from = |repository: &str, login: &str| {
        let mut event = approval(&all, 7, &head, login, "User");
        *event.pointer_mut("/repository/full_name").unwrap() = json!(repository);
        event
    };

    // The fork's admin approves "pull request 7": the fork's project's bug only.
    let (status, _) = deliver(
        base,
        "pull_request_review",
        "f-1",
        &approval_from(FORK, "mallory"),
        None,
    )
    .await;
    assert_eq!(status, 202);
    wait_for(&store, &theirs, BugState::Approved).await;
    assert_eq!(settled(&store, &ours).await.state, BugState::InReview);
    let outcome = store
        .webhook_delivery("github", "f-1")
        .await
        .unwrap()
        .unwrap();
    assert!(outcome.applied_at.is_some());
    assert!(
        !outcome.outcome.unwrap().contains(&ours),
        "the event never touched our bug"
    );

    // The original's writer approves: ours only.
    // (in another letter case: GitHub's names are case-blind, and so is the desk).
    let (status, _) = deliver(
        base,
        "pull_request_review",
        "o-1",
        &approval_from(&REPO.to_uppercase(), "alice"),
        None,
    )
    .await;
    assert_eq!(status, 202);
    wait_for(&store, &ours, BugState::Approved).await;

    // With bugs in review, neither project's repository changes hands: not the fork's
    // project's own, and not the one the environment's project follows without naming it.
    let edit = common::r2r_with_env_file(&env_file)
        .args([
            "project",
            "edit",
            "--id",
            "forkshop",
            "--github",
            "octo-org/third",
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&edit.stderr).into_owned();
    assert!(
        !edit.status.success() && said.contains("--github: the project's bugs (component \"forkshop\") follow pull requests in mallory/shop-fork; it stays"),
        "{said}"
    );
    // The same from a shell whose settings do not list the fork (so it cannot serve that
    // project): the stored definition still guards it.
    let narrow = dir.path().join("narrow.env");
    std::fs::write(
        &narrow,
        std::fs::read_to_string(&env_file)
            .unwrap()
            .replace(&listed, &format!("{REPO},octo-org/third")),
    )
    .unwrap();
    let edit = common::r2r_with_env_file(&narrow)
        .args([
            "project",
            "edit",
            "--id",
            "forkshop",
            "--github",
            "octo-org/third",
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&edit.stderr).into_owned();
    assert!(
        !edit.status.success()
            && said.contains("follow pull requests in mallory/shop-fork; it stays"),
        "{said}"
    );
    let third = dir.path().join("third.git");
    forge::LocalForge::init(&third, "main").await.unwrap();
    let add = common::r2r_with_env_file(&env_file)
        .args([
            "project",
            "add",
            "--id",
            "third",
            "--components",
            "third",
            "--profile",
            "rust",
        ])
        .arg("--forge")
        .arg(&third)
        .args(["--github", "Octo-Org/Shop"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&add.stderr).into_owned();
    assert!(
        !add.status.success()
            && said.contains(
                "--github: the project \"default\" follows Octo-Org/Shop's events and has bugs"
            ),
        "{said}"
    );

    // The fork "merges pull request 7": the fork's bug is merged, ours is not.
    let mut merged = example(
        &all,
        "pull_request",
        "closed",
        &[
            ("/pull_request/number", json!(7)),
            ("/pull_request/merged", json!(true)),
            ("/pull_request/head/sha", json!(head)),
            ("/pull_request/merge_commit_sha", json!(sha('8'))),
            (
                "/pull_request/merged_by",
                json!({"login": "mallory", "type": "User", "id": 9}),
            ),
        ],
    );
    *merged.pointer_mut("/repository/full_name").unwrap() = json!(FORK);
    let (status, _) = deliver(base, "pull_request", "f-2", &merged, None).await;
    assert_eq!(status, 202);
    wait_for(&store, &theirs, BugState::Merged).await;
    assert_eq!(settled(&store, &ours).await.state, BugState::Approved);
    drop(server);
}
