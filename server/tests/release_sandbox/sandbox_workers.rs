//! The desk's sandbox runs as jobs for worker hosts (`R2R_SANDBOX_RUNNER=workers`), on
//! PostgreSQL: a desk with no sandbox of its own measures proposed reproductions through two
//! `r2r sandbox worker` processes sharing its queue; a worker killed mid-job loses the job to
//! the other when its lease runs out and the proposal still lands; each worker's token opens
//! the worker routes and nothing else, the crew's tokens do not open them, and a revoked
//! token stops at once. Without any worker the desk says so instead of waiting for ever.

use crate::common;

use domain::Role;
use serde_json::{json, Value};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use store::Store;

const FAILING: &str = "#[test]\nfn coupon_never_makes_the_total_negative() {\n    assert_eq!(cart::total(200, 300), 0, \"payable total for SAVE300\");\n}\n";

/// `r2r sandbox add-worker --name NAME` against `url`: the token it printed.
fn add_worker(dir: &std::path::Path, url: &str, name: &str) -> String {
    let output = common::r2r(dir)
        .args(["sandbox", "add-worker", "--name", name])
        .env("DATABASE_URL", url)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("R2R_SANDBOX_WORKER_TOKEN="))
        .unwrap()
        .to_owned()
}

/// A worker process, killed when dropped (a failing test leaves none behind).
struct Worker(Child);

impl Worker {
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A `r2r sandbox worker` process for the desk at `base`.
fn start_worker(dir: &std::path::Path, base: &str, token: &str) -> Worker {
    Worker(
        common::r2r(dir)
            .args([
                "sandbox",
                "worker",
                "--desk",
                base,
                "--backend",
                "docker",
                "--idle",
                "100",
            ])
            .env("R2R_SANDBOX_WORKER_TOKEN", token)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    )
}

struct Desk {
    base: String,
    reproducer: String,
    client: reqwest::Client,
}

impl Desk {
    async fn post(&self, token: &str, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// A new bug (its own title, so that it joins no other) in `reproducing`.
    async fn bug_reproducing(&self, title: &str) -> String {
        let (bug, _) = common::file_report(&self.base, json!({"component": "shoplite", "title": title, "what_happened": "-100", "expected": "0", "steps": "SAVE300 on 200"})).await;
        let (status, answer) = self
            .post(
                &self.reproducer,
                &format!("/api/v1/bugs/{bug}/reproduction/start"),
                json!({}),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
        bug
    }

    async fn propose(&self, bug: &str) -> (u16, Value) {
        self.post(
            &self.reproducer,
            &format!("/api/v1/bugs/{bug}/reproduction"),
            json!({
                "test_path": "tests/coupon.rs", "test_name": "coupon_never_makes_the_total_negative",
                "test_source": FAILING, "model": "scripted-shoplite-1", "provider": "scripted",
                "claimed": {"exit_code": 101, "verdict": "reproduced"},
            }),
        )
        .await
    }
}

async fn jobs_done(store: &Store, name: &str) -> i64 {
    store
        .sandbox_workers()
        .await
        .unwrap()
        .into_iter()
        .find(|w| w.name == name)
        .unwrap()
        .jobs_done
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_share_the_queue_and_a_killed_workers_job_goes_to_the_other() {
    if !common::docker_here().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (bare, _work) = common::local_forge_with(dir.path(), "cart", common::cart_crate).await;
    let url = match store::testing::fresh_postgres().await {
        store::DatabaseUrl::Postgres { url } => url,
        other => panic!("{other:?}"),
    };
    let reproducer = server::cli::setup::new_role_token(Role::Reproducer);
    let owner_hash = server::auth::hash_password(common::PASSWORD).unwrap();
    let session_key = "k".repeat(64);
    let server = common::start_server_with(
        &url,
        &[
            ("R2R_REPRODUCER_TOKEN", reproducer.as_str()),
            ("R2R_OWNER_EMAIL", common::OWNER),
            ("R2R_OWNER_PASSWORD_HASH", owner_hash.as_str()),
            ("R2R_SESSION_KEY", session_key.as_str()),
            ("R2R_LOCAL_FORGE", bare.to_str().unwrap()),
            // The desk's host runs nothing itself.
            ("R2R_SANDBOX_BACKEND", "none"),
            ("R2R_SANDBOX_RUNNER", "workers"),
            ("R2R_SANDBOX_CONCURRENCY", "4"),
            // One worker's word per job here (the queue itself is under test); a second
            // worker's confirmation has a test of its own.
            ("R2R_SANDBOX_CONFIRM", "never"),
        ],
    );
    let desk = Desk {
        base: server.base.clone(),
        reproducer: reproducer.clone(),
        client: reqwest::Client::new(),
    };
    let store = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    let token_a = add_worker(dir.path(), &url, "host-a");
    let token_b = add_worker(dir.path(), &url, "host-b");
    assert_ne!(token_a, token_b);

    // Only host-a runs; it is killed as soon as it holds the first job.
    let first = desk
        .bug_reproducing("Coupon makes the total negative")
        .await;
    let mut worker_a = start_worker(dir.path(), &desk.base, &token_a);
    let proposal = {
        let desk = Desk {
            base: desk.base.clone(),
            reproducer: reproducer.clone(),
            client: desk.client.clone(),
        };
        let bug = first.clone();
        tokio::spawn(async move { desk.propose(&bug).await })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let queue = store.sandbox_queue().await.unwrap();
        if queue.iter().any(|(_, w, _)| w.as_deref() == Some("host-a")) {
            break;
        }
        assert!(Instant::now() < deadline, "host-a never claimed: {queue:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker_a.kill();
    let killed_at = Instant::now();
    let mut worker_b = start_worker(dir.path(), &desk.base, &token_b);
    let (status, answer) = proposal.await.unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["state"], "awaiting_reporter");
    assert_eq!(
        answer["desk_run"]["backend"], "docker",
        "measured in the worker's Docker sandbox: {answer}"
    );
    assert_eq!(
        answer["desk_run"]["runner"], "worker host-b",
        "the evidence names the worker that measured it: {answer}"
    );
    assert!(
        killed_at.elapsed() >= Duration::from_secs(10),
        "the dead worker's job waited for its lease to run out"
    );
    assert_eq!(jobs_done(&store, "host-a").await, 0, "host-a died mid-job");
    assert!(jobs_done(&store, "host-b").await >= 1);
    let kept = store.evidence_for(&first).await.unwrap();
    assert!(kept.iter().any(|e| e.kind == "reproduction_rerun"
        && e.body["backend"] == "docker"
        && e.body["stdout"]
            .as_str()
            .unwrap_or_default()
            .contains("payable total for SAVE300")));

    // Both hosts now share the queue: two proposals at once, one on each.
    let mut worker_a = start_worker(dir.path(), &desk.base, &token_a);
    let second = desk
        .bug_reproducing("Checkout shows minus rupees after voucher")
        .await;
    let third = desk
        .bug_reproducing("Wallet balance printed below zero on invoice")
        .await;
    assert!(first != second && second != third && first != third);
    let b_before = jobs_done(&store, "host-b").await;
    let (one, two) = tokio::join!(desk.propose(&second), desk.propose(&third));
    assert_eq!((one.0, two.0), (200, 200), "{one:?} {two:?}");
    assert!(jobs_done(&store, "host-a").await >= 1, "host-a took a job");
    assert!(
        jobs_done(&store, "host-b").await > b_before,
        "host-b took a job"
    );
    assert!(
        store.sandbox_queue().await.unwrap().is_empty(),
        "no job is left behind"
    );

    // The owners see where runs go and each worker's state on the crew page.
    let (cookie, _) =
        common::sign_in(&desk.client, &desk.base, common::OWNER, common::PASSWORD).await;
    let page = desk
        .client
        .get(format!("{}/desk/crew", desk.base))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("Runs go to worker hosts (R2R_SANDBOX_RUNNER=workers): 2 active.")
            && page.contains("Worker host-a: active")
            && page.contains("Worker host-b: active"),
        "{page}"
    );

    // Each token opens the worker routes and nothing else; the crew's do not open them.
    let list = desk
        .client
        .get(format!("{}/api/v1/bugs", desk.base))
        .bearer_auth(&token_a)
        .send()
        .await
        .unwrap();
    assert_eq!(list.status(), 401);
    let (status, _) = desk
        .post(&reproducer, "/api/v1/sandbox/jobs/claim", json!({}))
        .await;
    assert_eq!(status, 401, "a crew token is no worker token");
    let (status, answer) = desk
        .post(
            &token_b,
            "/api/v1/sandbox/jobs/none/outcome",
            json!({"lease_id": "x", "outcome": {"error": "forged"}}),
        )
        .await;
    assert_eq!(status, 409, "no lease, no outcome: {answer}");
    let output = common::r2r(dir.path())
        .args(["sandbox", "revoke-worker", "--name", "host-b"])
        .env("DATABASE_URL", &url)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let (status, _) = desk
        .post(&token_b, "/api/v1/sandbox/jobs/claim", json!({}))
        .await;
    assert_eq!(status, 401, "a revoked worker token stops at once");
    // The revoked worker process stops by itself with the reason.
    let stopped = worker_b.0.wait().unwrap();
    assert!(!stopped.success());
    worker_a.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_worker_the_desk_says_so_instead_of_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let (bare, _work) = common::local_forge_with(dir.path(), "cart", common::cart_crate).await;
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let reproducer = server::cli::setup::new_role_token(Role::Reproducer);
    let server = common::start_server_with(
        &url,
        &[
            ("R2R_REPRODUCER_TOKEN", reproducer.as_str()),
            ("R2R_LOCAL_FORGE", bare.to_str().unwrap()),
            ("R2R_SANDBOX_RUNNER", "workers"),
            ("R2R_SANDBOX_CLAIM_TIMEOUT", "1"),
        ],
    );
    let desk = Desk {
        base: server.base.clone(),
        reproducer,
        client: reqwest::Client::new(),
    };
    let bug = desk
        .bug_reproducing("Coupon makes the total negative")
        .await;
    let (status, answer) = desk.propose(&bug).await;
    assert_eq!(status, 503, "{answer}");
    let message = answer["message"].as_str().unwrap();
    assert!(
        message.contains("no sandbox worker claimed the job within 1 s")
            && message.contains("r2r sandbox worker"),
        "{message}"
    );
    let store = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    assert_eq!(
        store.load_bug(&bug).await.unwrap().unwrap().bug.state,
        domain::BugState::Reproducing,
        "nothing was recorded"
    );
    assert!(
        store.sandbox_queue().await.unwrap().is_empty(),
        "the given-up job is gone from the queue"
    );
    // A runner the desk does not know stops start-up with its name.
    let output = common::r2r(dir.path())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("DATABASE_URL", &url)
        .env("R2R_SANDBOX_RUNNER", "elsewhere")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("R2R_SANDBOX_RUNNER"));
}

const PASSING: &str = "#[test]\nfn coupon_keeps_a_small_total() {\n    assert_eq!(cart::total(200, 100), 100, \"payable total for SAVE100\");\n}\n";

/// A lying worker host, played by the test over the worker API with its own real token: it
/// claims whatever it can and, without running anything, reports the proposed test (a job
/// with `--test`) as failed with the words a failing cargo test prints, and anything else
/// (the baseline) as green. Its made-up assertion ends in `says`.
fn mallory(
    base: String,
    token: String,
    names_failing: &'static str,
    says: &'static str,
) -> tokio::task::JoinHandle<u32> {
    tokio::spawn(async move {
        let client = reqwest::Client::new();
        let mut answered = 0;
        loop {
            let claim = client
                .post(format!("{base}/api/v1/sandbox/jobs/claim"))
                .bearer_auth(&token)
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            match claim.status().as_u16() {
                204 => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                200 => {}
                // Its token ended (distrusted): it stops.
                _ => return answered,
            }
            let job: Value = claim.json().await.unwrap();
            let command = job["job"]["command"].to_string();
            let ran = if command.contains("--test ") {
                json!({"exit_code": 101, "timed_out": false, "oom_killed": false, "duration_ms": 900,
                       "backend": "docker",
                       "stdout": format!("running 1 test\ntest {names_failing} ... FAILED\n\nfailures:\n\n---- {names_failing} stdout ----\n\nthread '{names_failing}' panicked at tests/coupon.rs:3:5:\nassertion `left == right` failed: {says}\n  left: -100\n right: 0\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\nfailures:\n    {names_failing}\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored\n"),
                       "stderr": ""})
            } else {
                json!({"exit_code": 0, "timed_out": false, "oom_killed": false, "duration_ms": 700,
                       "backend": "docker", "stdout": "test result: ok. 0 passed; 0 failed\n", "stderr": ""})
            };
            let finished = client
                .post(format!(
                    "{base}/api/v1/sandbox/jobs/{}/outcome",
                    job["id"].as_str().unwrap()
                ))
                .bearer_auth(&token)
                .json(&json!({"lease_id": job["lease_id"], "outcome": {"ran": ran}}))
                .send()
                .await
                .unwrap();
            assert!(
                finished.status().is_success(),
                "{:?}",
                finished.text().await
            );
            answered += 1;
        }
    })
}

/// A worker host that lies cannot move a bug: every test run is confirmed by a second worker
/// that never saw the first answer; a made-up failure of a passing test is refused with both
/// workers named and nothing recorded, a run both tell alike names both on its evidence, and
/// once an owner distrusts the liar its token ends and the bug it measured starts over (the
/// reporter's question withdrawn), its evidence marked on the desk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_worker_confirms_each_run_and_a_distrusted_workers_bugs_are_measured_again() {
    if !common::docker_here().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (bare, _work) = common::local_forge_with(dir.path(), "cart", common::cart_crate).await;
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let reproducer = server::cli::setup::new_role_token(Role::Reproducer);
    let owner_hash = server::auth::hash_password(common::PASSWORD).unwrap();
    let session_key = "k".repeat(64);
    let server = common::start_server_with(
        &url,
        &[
            ("R2R_REPRODUCER_TOKEN", reproducer.as_str()),
            ("R2R_OWNER_EMAIL", common::OWNER),
            ("R2R_OWNER_PASSWORD_HASH", owner_hash.as_str()),
            ("R2R_SESSION_KEY", session_key.as_str()),
            ("R2R_LOCAL_FORGE", bare.to_str().unwrap()),
            ("R2R_SANDBOX_BACKEND", "none"),
            ("R2R_SANDBOX_RUNNER", "workers"),
            ("R2R_SANDBOX_CLAIM_TIMEOUT", "60"),
        ],
    );
    let desk = Desk {
        base: server.base.clone(),
        reproducer: reproducer.clone(),
        client: reqwest::Client::new(),
    };
    let store = Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    let honest = add_worker(dir.path(), &url, "honest");
    let liar = add_worker(dir.path(), &url, "mallory");
    let _honest = start_worker(dir.path(), &desk.base, &honest);

    // A passing test reported as failing: the honest worker's run says otherwise.
    let lying = mallory(
        desk.base.clone(),
        liar.clone(),
        "coupon_keeps_a_small_total",
        "payable total for SAVE100",
    );
    let bug = desk
        .bug_reproducing("Coupon makes the total negative")
        .await;
    let (status, answer) = desk
        .post(
            &reproducer,
            &format!("/api/v1/bugs/{bug}/reproduction"),
            json!({
                "test_path": "tests/small.rs", "test_name": "coupon_keeps_a_small_total",
                "test_source": PASSING, "model": "scripted-shoplite-1", "provider": "scripted",
            }),
        )
        .await;
    assert_eq!(status, 503, "{answer}");
    let message = answer["message"].as_str().unwrap();
    assert!(
        message.contains("worker mallory")
            && message.contains("worker honest")
            && message.contains("disagree")
            && message.contains("failing coupon_keeps_a_small_total")
            && message.contains("exit 0"),
        "{message}"
    );
    let stored = store.load_bug(&bug).await.unwrap().unwrap().bug;
    assert_eq!(stored.state, domain::BugState::Reproducing, "nothing moved");
    assert!(stored.reproduction.is_none());
    assert!(!store
        .evidence_for(&bug)
        .await
        .unwrap()
        .iter()
        .any(|e| e.kind == "reproduction_rerun"));
    lying.abort();

    // A failing test whose failure mallory makes up in other words than the real one (the
    // same exit, the same failing test, another assertion): the verdicts differ.
    let lying = mallory(
        desk.base.clone(),
        liar.clone(),
        "coupon_never_makes_the_total_negative",
        "payable total for SAVE300, and the shop owes the customer",
    );
    let (status, answer) = desk.propose(&bug).await;
    assert_eq!(status, 503, "{answer}");
    let message = answer["message"].as_str().unwrap();
    assert!(
        message.contains("verdicts differ") && message.contains("mallory"),
        "{message}"
    );
    lying.abort();

    // A failing test both workers tell alike: confirmed, and both are named.
    let lying = mallory(
        desk.base.clone(),
        liar.clone(),
        "coupon_never_makes_the_total_negative",
        "payable total for SAVE300",
    );
    let (status, answer) = desk.propose(&bug).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["state"], "awaiting_reporter");
    let runner = answer["desk_run"]["runner"].as_str().unwrap();
    assert!(
        runner.contains("confirmed by worker")
            && runner.contains("honest")
            && runner.contains("mallory"),
        "{runner}"
    );
    assert!(
        store.sandbox_queue().await.unwrap().is_empty(),
        "no job is left behind"
    );

    // The owner stops trusting mallory: its token ends, and the bug it helped measure
    // starts over within seconds, its question to the reporter withdrawn.
    let output = common::r2r(dir.path())
        .args(["sandbox", "distrust-worker", "--name", "mallory"])
        .env("DATABASE_URL", &url)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("1 bug(s)"),
        "{output:?}"
    );
    assert!(
        lying.await.unwrap() >= 1,
        "mallory stopped when its token ended"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let stored = loop {
        let stored = store.load_bug(&bug).await.unwrap().unwrap().bug;
        if stored.state == domain::BugState::Reopened {
            break stored;
        }
        assert!(Instant::now() < deadline, "still {:?}", stored.state);
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(stored.questions.is_empty() && stored.reproduction.is_none());
    let events = store.events_of(&bug).await.unwrap();
    let distrusted = events
        .iter()
        .find(|e| e.event.kind == "measurement_distrusted")
        .unwrap();
    assert_eq!(distrusted.event.detail["worker"], "mallory");
    // Once only, whatever the sweep sees later.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        store
            .events_of(&bug)
            .await
            .unwrap()
            .iter()
            .filter(|e| e.event.kind == "measurement_distrusted")
            .count(),
        1
    );
    // Its name is never given a token again.
    let again = common::r2r(dir.path())
        .args(["sandbox", "add-worker", "--name", "mallory"])
        .env("DATABASE_URL", &url)
        .output()
        .unwrap();
    assert!(!again.status.success(), "{again:?}");
    // The owners see the mark on the evidence and on the crew page.
    let (cookie, _) =
        common::sign_in(&desk.client, &desk.base, common::OWNER, common::PASSWORD).await;
    for (path, expected) in [
        (
            format!("/desk/bugs/{bug}"),
            "DISTRUSTED: measured by worker mallory",
        ),
        ("/desk/crew".to_owned(), "Worker mallory: distrusted"),
    ] {
        let page = desk
            .client
            .get(format!("{}{path}", desk.base))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(page.contains(expected), "{path}: {page}");
    }
}

/// The peak resident memory of process `pid` (VmHWM), in KiB.
fn peak_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A worker token with no job (or a job it holds no lease on) sends sixteen 70 MiB outcomes
/// at once: each is refused before its body is read, and the desk's memory stays bounded (it
/// held about 70 MiB per request before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outcomes_without_a_lease_are_refused_before_their_bodies_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let server = common::start_server_with(&url, &[("R2R_SANDBOX_RUNNER", "workers")]);
    let token = add_worker(dir.path(), &url, "stranger");
    let before = peak_kib(server.pid());
    let body = axum::body::Bytes::from(vec![b' '; 70 * 1024 * 1024]);
    let client = reqwest::Client::new();
    let posts = (0..16).map(|n| {
        let request = client
            .post(format!(
                "{}/api/v1/sandbox/jobs/job-{n}/outcome",
                server.base
            ))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body.clone());
        async move { request.send().await.map(|r| r.status().as_u16()) }
    });
    let answers = futures_util::future::join_all(posts).await;
    for answer in &answers {
        // Answered 409 at once; the client may see its unread upload cut off instead.
        assert!(
            matches!(answer, Ok(409) | Err(_)),
            "nothing is accepted without a lease: {answers:?}"
        );
    }
    assert!(answers.iter().any(|a| matches!(a, Ok(409))), "{answers:?}");
    let after = peak_kib(server.pid());
    eprintln!("desk peak memory: {before} KiB before, {after} KiB after 16 × 70 MiB");
    assert!(
        after < before + 150 * 1024,
        "the desk held the bodies: {before} KiB → {after} KiB"
    );
}

/// A worker `host-a` of the desk at `base` (database `url`) that holds the lease on a queued
/// job `id` of `purpose`: its token, the claim's answer and the desk's store.
async fn leased_job(
    dir: &std::path::Path,
    url: &str,
    base: &str,
    id: &str,
    purpose: &str,
) -> (String, Value, Store) {
    let token = add_worker(dir, url, "host-a");
    let snapshot = tempfile::tempdir().unwrap();
    std::fs::write(snapshot.path().join("data.txt"), "x").unwrap();
    let job = sandbox::SandboxJob::new(
        snapshot.path(),
        vec!["/bin/true".into()],
        Duration::from_secs(30),
    );
    let spec = serde_json::to_string(&sandbox::wire::WireJob::pack(&job).unwrap()).unwrap();
    let store = Store::connect(&store::DatabaseUrl::parse(url).unwrap())
        .await
        .unwrap();
    store
        .enqueue_sandbox_job(id, purpose, &spec, None, server::clock::now_ms())
        .await
        .unwrap();
    let claimed: Value = reqwest::Client::new()
        .post(format!("{base}/api/v1/sandbox/jobs/claim"))
        .bearer_auth(&token)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(claimed["id"], id, "{claimed}");
    (token, claimed, store)
}

/// An outcome is bounded by what its job can produce: a test run's (no artifact) at 16 MiB,
/// refused 413 beyond, before it is kept; the lease stays the worker's, so it can still send
/// the real, small one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_runs_outcome_is_bounded_by_what_a_test_run_can_produce() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let server = common::start_server_with(&url, &[("R2R_SANDBOX_RUNNER", "workers")]);
    let (token, claimed, _store) =
        leased_job(dir.path(), &url, &server.base, "job-t", "test").await;
    let client = reqwest::Client::new();
    let outcome = |stdout: String| {
        json!({"lease_id": claimed["lease_id"], "outcome": {"ran": {
            "exit_code": 0, "timed_out": false, "oom_killed": false, "duration_ms": 5,
            "backend": "docker", "stdout": stdout, "stderr": ""}}})
    };
    let oversized = client
        .post(format!("{}/api/v1/sandbox/jobs/job-t/outcome", server.base))
        .bearer_auth(&token)
        .json(&outcome("x".repeat(20 * 1024 * 1024)))
        .send()
        .await;
    assert!(
        matches!(
            oversized.as_ref().map(|r| r.status().as_u16()),
            Ok(413) | Err(_)
        ),
        "{:?}",
        oversized.map(|r| r.status())
    );
    let fitting = client
        .post(format!("{}/api/v1/sandbox/jobs/job-t/outcome", server.base))
        .bearer_auth(&token)
        .json(&outcome("ok\n".to_owned()))
        .send()
        .await
        .unwrap();
    assert_eq!(fitting.status(), 200, "{}", fitting.text().await.unwrap());
}

/// The resident memory of process `pid` now (VmRSS), in KiB.
fn resident_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A build's large outcome goes to a file while it arrives, not into the desk's memory: with
/// 47 of its 48 MiB sent (a slow worker's upload), the desk holds no more than it did before
/// the upload began (it held the whole body as it grew before); the whole outcome is then
/// recorded as sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_outcome_is_kept_on_disk_while_it_arrives() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let server = common::start_server_with(&url, &[("R2R_SANDBOX_RUNNER", "workers")]);
    let (token, claimed, store) =
        leased_job(dir.path(), &url, &server.base, "job-b", "build").await;
    let body = serde_json::to_vec(
        &json!({"lease_id": claimed["lease_id"], "outcome": {"ran": {
        "exit_code": 0, "timed_out": false, "oom_killed": false, "duration_ms": 5,
        "backend": "docker", "stdout": "y".repeat(48 * 1024 * 1024), "stderr": ""}}}),
    )
    .unwrap();
    let address = server.base.trim_start_matches("http://").to_owned();
    let mut socket = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /api/v1/sandbox/jobs/job-b/outcome HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let before = resident_kib(server.pid());
    socket.write_all(head.as_bytes()).await.unwrap();
    let (most, rest) = body.split_at(body.len() - 1024 * 1024);
    socket.write_all(most).await.unwrap();
    socket.flush().await.unwrap();
    // Let the desk take what was sent.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let during = resident_kib(server.pid());
    socket.write_all(rest).await.unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.unwrap();
    eprintln!("desk resident memory: {before} KiB before, {during} KiB with 47 MiB received");
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.contains("\"recorded\":true"),
        "{}",
        answer.chars().take(600).collect::<String>()
    );
    assert!(
        during < before + 16 * 1024,
        "the desk held the arriving body: {before} KiB → {during} KiB"
    );
    match store.sandbox_job_status("job-b").await.unwrap() {
        store::sandbox_jobs::SandboxJobStatus::Finished { worker, outcome } => {
            assert_eq!(worker, "host-a");
            let outcome: Value = serde_json::from_str(&outcome).unwrap();
            assert_eq!(
                outcome["ran"]["stdout"].as_str().map(str::len),
                Some(48 * 1024 * 1024)
            );
        }
        other => panic!("{other:?}"),
    }
}

/// A worker that starts an outcome and then sends it a byte at a time without renewing its
/// lease loses the upload with the lease (409 `lease_lost` about 20 s in), not after the
/// body's 300 s timeout: two such uploads cannot hold the desk's upload slots for minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_ends_with_its_lease() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let server = common::start_server_with(&url, &[("R2R_SANDBOX_RUNNER", "workers")]);
    let (token, _claimed, _store) =
        leased_job(dir.path(), &url, &server.base, "job-s", "build").await;
    let address = server.base.trim_start_matches("http://").to_owned();
    let socket = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /api/v1/sandbox/jobs/job-s/outcome HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\n{{\"lease_id\""
    );
    let started = Instant::now();
    let (mut reading, mut writing) = socket.into_split();
    writing.write_all(head.as_bytes()).await.unwrap();
    // The answer is read while the worker is still sending, a byte a second.
    let answered = tokio::spawn(async move {
        let mut answer = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            match reading.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buffer[..n]);
                    if String::from_utf8_lossy(&answer).contains("lease_lost") {
                        break;
                    }
                }
            }
        }
        String::from_utf8_lossy(&answer).into_owned()
    });
    while !answered.is_finished() && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let _ = writing.write_all(b" ").await;
    }
    let answer = answered.await.unwrap();
    let took = started.elapsed();
    assert!(
        answer.starts_with("HTTP/1.1 409") && answer.contains("lease_lost"),
        "{answer}"
    );
    assert!(
        took < Duration::from_secs(50),
        "the upload outlived its lease: {took:?}"
    );
}
