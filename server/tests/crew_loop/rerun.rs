//! The desk re-runs a proposed reproduction in its own sandbox: only a new test that fails
//! on an assertion there is recorded; a passing test, a test that does not compile, an
//! existing file or a path outside the tests are refused, and every run is kept as evidence.

use crate::common::{self, TestDesk};

use domain::Role;
use serde_json::{json, Value};

const FAILING: &str = "#[test]\nfn coupon_never_makes_the_total_negative() {\n    assert_eq!(cart::total(200, 300), 0, \"payable total for SAVE300\");\n}\n";
/// [`FAILING`], after four seconds: a measurement long enough to send a second proposal into.
const SLOW_FAILING: &str = "#[test]\nfn coupon_never_makes_the_total_negative() {\n    std::thread::sleep(std::time::Duration::from_secs(4));\n    assert_eq!(cart::total(200, 300), 0, \"payable total for SAVE300\");\n}\n";
const PASSING: &str = "#[test]\nfn coupon_never_makes_the_total_negative() {\n    assert_eq!(cart::total(200, 100), 100);\n}\n";
const BROKEN: &str = "#[test]\nfn coupon_never_makes_the_total_negative() {\n    assert_eq!(cart::totl(200, 300), 0);\n}\n";

/// Docker is required under the test command; elsewhere its absence is said and skipped.
async fn docker_available() -> bool {
    let ok = std::env::var("R2R_SANDBOX_REQUIRED").as_deref() == Ok("1")
        || sandbox::connect(sandbox::Backend::Docker, sandbox::docker::DEFAULT_IMAGE)
            .await
            .is_ok();
    if !ok {
        eprintln!("SKIPPED: no Docker sandbox here (./scripts/sandbox-host.sh prepares one)");
    }
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_test_failing_on_its_assertion_in_the_desks_sandbox_is_recorded() {
    if !docker_available().await {
        return;
    }
    let desk = TestDesk::with()
        .forge("cart", |work| {
            common::cart_crate(work);
            common::write(work, "tests/existing.rs", "#[test]\nfn ok() {}\n");
        })
        .roles(&[Role::Reproducer, Role::Fixer])
        .sandbox("docker")
        .start()
        .await;
    let (base, client) = (&desk.base, &desk.client);
    let (bug, capability) = desk.file_coupon_bug().await;
    let post = |role: Role, path: &str, body: Value| desk.act(role, &bug, path, body);
    let propose = |path: &str, source: &str| {
        json!({
            "test_path": path, "test_name": "coupon_never_makes_the_total_negative",
            "test_source": source, "model": "scripted-shoplite-1", "provider": "scripted",
            "claimed": {"exit_code": 101, "verdict": "reproduced"},
        })
    };

    // Not reproducing yet: the engine refuses before any sandbox run.
    let (status, answer) = post(
        Role::Reproducer,
        "reproduction",
        propose("tests/coupon.rs", FAILING),
    )
    .await;
    assert_eq!(status, 409, "{answer}");
    let (status, _) = post(Role::Reproducer, "reproduction/start", json!({})).await;
    assert_eq!(status, 200);
    // Another crew role may not propose.
    let (status, _) = post(
        Role::Fixer,
        "reproduction",
        propose("tests/coupon.rs", FAILING),
    )
    .await;
    assert_eq!(status, 403);
    // Paths outside the tests, traversal, an existing file.
    for path in [
        "src/lib.rs",
        "../escape.rs",
        "tests/../../x.rs",
        "/etc/x.rs",
        "tests/existing.rs",
    ] {
        let (status, answer) = post(Role::Reproducer, "reproduction", propose(path, FAILING)).await;
        assert_eq!(status, 422, "{path}: {answer}");
    }
    // The crew claims a failure, but the desk's run passes or does not compile.
    let (status, answer) = post(
        Role::Reproducer,
        "reproduction",
        propose("tests/coupon.rs", PASSING),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["error"], "not_reproduced");
    assert!(
        answer["message"].as_str().unwrap().contains("test passed"),
        "{answer}"
    );
    let (status, answer) = post(
        Role::Reproducer,
        "reproduction",
        propose("tests/coupon.rs", BROKEN),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert!(
        answer["message"].as_str().unwrap().contains("CompileError"),
        "{answer}"
    );

    let store = desk.store().await;
    assert_eq!(
        store.load_bug(&bug).await.unwrap().unwrap().bug.state,
        domain::BugState::Reproducing,
        "nothing was recorded"
    );

    // A genuine failure, measured by the desk; a second proposal sent while it is measured
    // (once the desk holds the measurement: the run takes seconds) is refused at once (only
    // one could be recorded) and runs nothing.
    let ((status, answer), (second, refusal)) = tokio::join!(
        post(
            Role::Reproducer,
            "reproduction",
            propose("tests/coupon.rs", SLOW_FAILING),
        ),
        async {
            let hold = format!("measure:{bug}");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while store
                .leader_of(&hold, server::clock::now_ms())
                .await
                .unwrap()
                .is_none()
            {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the desk never held the measurement"
                );
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            post(
                Role::Reproducer,
                "reproduction",
                propose("tests/coupon_again.rs", FAILING),
            )
            .await
        }
    );
    assert_eq!(
        (second, refusal["error"].as_str()),
        (409, Some("already_measuring")),
        "{refusal}"
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["state"], "awaiting_reporter");
    assert_eq!(answer["desk_run"]["backend"], "docker");
    let stored = store.load_bug(&bug).await.unwrap().unwrap().bug;
    let reproduction = stored.reproduction.unwrap();
    assert!(
        reproduction.assertion.contains("payable total for SAVE300"),
        "the desk's own assertion: {}",
        reproduction.assertion
    );
    let evidence = store.evidence_for(&bug).await.unwrap();
    assert_eq!(evidence.len(), 3, "every desk run is kept");
    // The baseline ran the target's own suite; the proposals came from the scripted provider,
    // and their evidence says so.
    assert!(evidence.iter().all(|e| e.label
        == if e.kind == "baseline_run" {
            "isolated test"
        } else {
            "simulated demo"
        }));
    let kept = evidence.iter().find(|e| e.id == reproduction.id).unwrap();
    assert_eq!(kept.body["backend"], "docker");
    assert_eq!(kept.body["provider"], "scripted");
    assert_eq!(kept.body["test_source"], SLOW_FAILING);
    assert!(kept.body["stdout"]
        .as_str()
        .unwrap()
        .contains("test result: FAILED"));

    // The reporter sees the test path and the desk's assertion.
    let tracking: Value = client
        .get(format!("{base}/api/v1/track"))
        .header("x-r2r-capability", &capability)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        tracking.to_string().contains("tests/coupon.rs"),
        "{tracking}"
    );
    assert!(
        tracking.to_string().contains("payable total for SAVE300"),
        "{tracking}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_red_baseline_sends_the_bug_to_a_person() {
    if !docker_available().await {
        return;
    }
    let desk = TestDesk::with()
        .forge("red", |work| {
            common::cart_crate(work);
            common::write(
                work,
                "tests/already_red.rs",
                "#[test]\nfn already_red() { assert_eq!(cart::total(1, 0), 2); }\n",
            );
        })
        .roles(&[Role::Reproducer])
        .start()
        .await;
    let (bug, _) = desk.file_coupon_bug().await;
    let (status, _) = desk
        .act(Role::Reproducer, &bug, "reproduction/start", json!({}))
        .await;
    assert_eq!(status, 200);
    let (status, answer) = desk
        .act(Role::Reproducer, &bug, "reproduction", json!({"test_path": "tests/coupon.rs", "test_name": "coupon_never_makes_the_total_negative", "test_source": FAILING}))
        .await;
    assert_eq!(status, 409);
    assert_eq!(answer["error"], "red_baseline", "{answer}");
    // The refusal names the test that is red, not only the evidence.
    assert!(
        answer["message"]
            .as_str()
            .unwrap_or_default()
            .contains("failing: already_red"),
        "{answer}"
    );
    let store = desk.store().await;
    let bug = store.load_bug(&bug).await.unwrap().unwrap().bug;
    assert_eq!(bug.state, domain::BugState::NeedsHuman);
    assert!(bug.reproduction.is_none());
    let evidence = store.evidence_for(&bug.id).await.unwrap();
    assert_eq!(evidence.len(), 1);
    assert_eq!(evidence[0].kind, "baseline_run");
    assert!(evidence[0].body["stdout"]
        .as_str()
        .unwrap()
        .contains("already_red"));
}

/// A client that goes away does not end its measurement: the desk runs it to the end and
/// records it, and until then the bug's place is held — another proposal is refused at once
/// instead of starting a second container beside the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_whose_client_went_away_is_measured_to_the_end_and_holds_its_place() {
    if !docker_available().await {
        return;
    }
    const SLOW: &str = "#[test]\nfn coupon_never_makes_the_total_negative() {\n    std::thread::sleep(std::time::Duration::from_secs(6));\n    assert_eq!(cart::total(200, 300), 0, \"payable total for SAVE300\");\n}\n";
    let desk = TestDesk::with()
        .cart()
        .roles(&[Role::Reproducer])
        .sandbox("docker")
        .envs(&[("R2R_SANDBOX_CONCURRENCY", "1")])
        .start()
        .await;
    let base = desk.base.clone();
    let reproducer = desk.token(Role::Reproducer).to_owned();
    let (bug, _) = common::file_report(&base, json!({"component": "shoplite", "title": "Coupon makes the total negative", "what_happened": "-100", "expected": "0", "steps": ""})).await;
    let propose = |path: &str, source: &str, timeout: std::time::Duration| {
        let request = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .unwrap()
            .post(format!("{base}/api/v1/bugs/{bug}/reproduction"))
            .bearer_auth(&reproducer)
            .json(&json!({
                "test_path": path, "test_name": "coupon_never_makes_the_total_negative",
                "test_source": source, "provider": "scripted",
            }));
        async move { request.send().await }
    };
    let started = reqwest::Client::new()
        .post(format!("{base}/api/v1/bugs/{bug}/reproduction/start"))
        .bearer_auth(&reproducer)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), 200);
    let gone = propose("tests/slow.rs", SLOW, std::time::Duration::from_secs(2)).await;
    assert!(gone.is_err(), "the client gave up: {gone:?}");
    let second = propose(
        "tests/coupon.rs",
        FAILING,
        std::time::Duration::from_secs(60),
    )
    .await
    .unwrap();
    assert_eq!(second.status(), 409);
    let refusal: Value = second.json().await.unwrap();
    assert_eq!(refusal["error"], "already_measuring", "{refusal}");
    let store = desk.store().await;
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let stored = store.load_bug(&bug).await.unwrap().unwrap().bug;
        if stored.state == domain::BugState::AwaitingReporter {
            assert_eq!(stored.reproduction.unwrap().test_path, "tests/slow.rs");
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "the slow proposal was never recorded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// A reproduction never lives where a fix may write: with fixes allowed under `tests/` too
/// (an owner's setting), a proposed test there is refused before anything runs, naming the
/// fix path — a fixer could otherwise make the bug's own test pass by editing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposed_test_inside_a_fix_path_is_refused() {
    let desk = TestDesk::with()
        .cart()
        .roles(&[Role::Reproducer])
        .envs(&[("R2R_FIX_ALLOWED_PATHS", "src/,tests/")])
        .start()
        .await;
    let (bug, _) = desk.file_coupon_bug().await;
    let post = |path: &str, body: Value| desk.act(Role::Reproducer, &bug, path, body);
    assert_eq!(post("reproduction/start", json!({})).await.0, 200);
    for path in ["tests/coupon.rs", "./tests/coupon.rs"] {
        let (status, answer) = post(
            "reproduction",
            json!({
                "test_path": path, "test_name": "coupon_never_makes_the_total_negative",
                "test_source": FAILING, "model": "scripted-shoplite-1", "provider": "scripted",
            }),
        )
        .await;
        assert_eq!(status, 422, "{path}: {answer}");
        assert_eq!(answer["error"], "invalid_test_path", "{answer}");
        assert!(
            answer["message"]
                .as_str()
                .unwrap()
                .contains("under tests/, where a fix may write"),
            "{answer}"
        );
    }
    // Nor anywhere the project's runner would not look (a build script, a bench, a
    // manifest): cargo's integration tests live under tests/.
    for path in ["build.rs", "benches/coupon.rs", "Cargo.toml"] {
        let (status, answer) = post(
            "reproduction",
            json!({
                "test_path": path, "test_name": "coupon_never_makes_the_total_negative",
                "test_source": FAILING, "model": "scripted-shoplite-1", "provider": "scripted",
            }),
        )
        .await;
        assert_eq!(status, 422, "{path}: {answer}");
        assert!(
            answer["message"]
                .as_str()
                .unwrap()
                .contains("matches none of the project's test paths (tests/**/*.rs"),
            "{answer}"
        );
    }
}

/// An owner's own test paths replace the profile's: with R2R_TEST_PATHS naming a regressions
/// folder, a test anywhere else under tests/ is refused with the pattern named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposed_test_must_match_the_projects_test_paths() {
    let desk = TestDesk::with()
        .cart()
        .roles(&[Role::Reproducer])
        .envs(&[("R2R_TEST_PATHS", "tests/regression_*.rs")])
        .start()
        .await;
    let (bug, _) = desk.file_coupon_bug().await;
    let post = |path: &str, body: Value| desk.act(Role::Reproducer, &bug, path, body);
    assert_eq!(post("reproduction/start", json!({})).await.0, 200);
    let (status, answer) = post(
        "reproduction",
        json!({
            "test_path": "tests/coupon.rs", "test_name": "coupon_never_makes_the_total_negative",
            "test_source": FAILING, "model": "scripted-shoplite-1", "provider": "scripted",
        }),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("matches none of the project's test paths (tests/regression_*.rs)"),
        "{answer}"
    );
    // The crew is told where tests go before it writes one.
    let (_, context) = desk
        .call(
            "GET",
            &format!("/api/v1/bugs/{bug}/reproduction/context"),
            Role::Reproducer,
            None,
        )
        .await;
    assert!(
        context["how_to_test"]
            .as_str()
            .unwrap()
            .contains("only at a path matching one of: tests/regression_*.rs"),
        "{context}"
    );
    // At a matching path the test is measured (and, failing on the bug, reproduces it).
    let (status, answer) = post(
        "reproduction",
        json!({
            "test_path": "tests/regression_coupon.rs", "test_name": "coupon_never_makes_the_total_negative",
            "test_source": FAILING, "model": "scripted-shoplite-1", "provider": "scripted",
        }),
    )
    .await;
    assert_ne!(answer["error"], "invalid_test_path", "{status}: {answer}");
}

/// Two desk servers on one PostgreSQL measure a bug's proposal once between them: while one
/// measures, a proposal for the same bug sent to the other is refused at once (409
/// `already_measuring`, naming the server that measures), and runs nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_database_measure_a_bug_once() {
    // Fails on its assertion after 4 s: long enough to be measured while the other asks.
    if !docker_available().await || std::env::var("R2R_TEST_POSTGRES_URL").is_err() {
        return;
    }
    let first = TestDesk::with()
        .postgres()
        .cart()
        .roles(&[Role::Reproducer])
        .sandbox("docker")
        .start()
        .await;
    let second = TestDesk::beside(&first).start().await;
    let (bug, _) = first.file_coupon_bug().await;
    let post = |desk: &'static str, path: &str, body: Value| {
        let desk = if desk == "first" { &first } else { &second };
        desk.act(Role::Reproducer, &bug, path, body)
    };
    let propose = |path: &str| {
        json!({
            "test_path": path, "test_name": "coupon_never_makes_the_total_negative",
            "test_source": SLOW_FAILING, "model": "scripted-shoplite-1", "provider": "scripted",
        })
    };
    assert_eq!(post("first", "reproduction/start", json!({})).await.0, 200);
    let ((status, answer), (second_status, refusal)) = tokio::join!(
        post("first", "reproduction", propose("tests/coupon.rs")),
        async {
            tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
            post("second", "reproduction", propose("tests/coupon_again.rs")).await
        }
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(second_status, 409, "{refusal}");
    assert_eq!(refusal["error"], "already_measuring", "{refusal}");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .contains(&format!("the desk server at {}", first.base)),
        "{refusal}"
    );
    let store = first.store().await;
    let evidence = store.evidence_for(&bug).await.unwrap();
    assert!(
        evidence
            .iter()
            .all(|e| e.body["test_path"] != "tests/coupon_again.rs"),
        "the refused proposal ran nothing"
    );
    // Once the answer is in, the measurement's hold is given up at once.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        store
            .leader_of(&format!("measure:{bug}"), server::clock::now_ms())
            .await
            .unwrap(),
        None
    );
}

/// A team's crate as it often is: registry dependencies (a dev-dependency among them) and no
/// `Cargo.lock`. The desk prepares the crates once into its cache (the one step that reaches
/// crates.io), generates and keeps the lockfile, and then measures the baseline and the
/// proposal with no network. A dependency from git is refused with its reason before anything
/// is fetched, and nothing is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crate_with_registry_dependencies_and_no_lockfile_is_measured_offline() {
    if !docker_available().await {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let deps = cache.path().join("deps");
    let manifest = "[package]\nname = \"till\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"1\"\n\n[dev-dependencies]\npretty_assertions = \"1\"\n\n[workspace]\n";
    let desk = TestDesk::with()
        .forge("till", move |work| {
            common::write(work, "Cargo.toml", manifest);
            common::write(
                work,
                "src/lib.rs",
                "pub fn price(cents: u64) -> String {\n    let mut b = itoa::Buffer::new();\n    let whole = b.format(cents / 100).to_owned();\n    format!(\"{whole}.{:0>2}\", cents / 100)\n}\n",
            );
            common::write(work, "tests/existing.rs", "#[test]\nfn ok() {}\n");
        })
        .roles(&[Role::Reproducer])
        .sandbox("docker")
        .env("R2R_DEPS_DIR", deps.to_str().unwrap())
        .start()
        .await;
    let work = desk.work.clone().unwrap();
    let (bug, _) = desk.file(json!({"component": "shoplite", "title": "Prices show the euros twice", "what_happened": "12.12 for 12.34", "expected": "12.34", "steps": ""})).await;
    let post = |path: &str, body: Value| desk.act(Role::Reproducer, &bug, path, body);
    let (status, _) = post("reproduction/start", json!({})).await;
    assert_eq!(status, 200);
    let test = "use pretty_assertions::assert_eq;\n\n#[test]\nfn cents_follow_the_point() {\n    assert_eq!(till::price(1234), \"12.34\", \"shown price\");\n}\n";
    let (status, answer) = post(
        "reproduction",
        json!({
            "test_path": "tests/price.rs", "test_name": "cents_follow_the_point",
            "test_source": test, "model": "scripted-shoplite-1", "provider": "scripted",
            "claimed": {"exit_code": 101, "verdict": "reproduced"},
        }),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["state"], "awaiting_reporter", "{answer}");
    // The desk generated the lockfile and keeps it in its cache, beside the crates it fetched.
    let kept: Vec<_> = std::fs::read_dir(deps.join("cargo"))
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(kept.len(), 1, "one prepare for one set of manifests");
    let lock = std::fs::read_to_string(kept[0].path().join("Cargo.lock")).unwrap();
    assert!(lock.contains("name = \"itoa\"") && lock.contains("name = \"pretty_assertions\""));
    assert!(kept[0].path().join("vendor").read_dir().unwrap().count() >= 3);
    // Nothing was pushed into the team's repository.
    common::git(&work, &["fetch", "--quiet", "origin"]);
    assert!(
        common::git(&work, &["ls-tree", "--name-only", "origin/main"])
            .lines()
            .all(|name| name != "Cargo.lock")
    );
    let store = desk.store().await;
    // Recorded only past a green baseline: the project's own suite built and passed offline.
    let stored = store.load_bug(&bug).await.unwrap().unwrap().bug;
    let reproduction = stored.reproduction.unwrap();
    assert!(
        reproduction.assertion.contains("shown price"),
        "{}",
        reproduction.assertion
    );
    let evidence = store.evidence_for(&bug).await.unwrap();
    let kept = evidence.iter().find(|e| e.id == reproduction.id).unwrap();
    assert_eq!(kept.body["backend"], "docker");
}

/// A dependency from git is refused with its reason before anything is fetched or measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crate_depending_on_git_is_refused_with_the_reason() {
    if !docker_available().await {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let deps = cache.path().join("deps");
    let desk = TestDesk::with()
        .forge("gitdep", |work| {
            common::write(work, "Cargo.toml", "[package]\nname = \"g\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nsecret = { git = \"https://example.invalid/secret\" }\n\n[workspace]\n");
            common::write(work, "src/lib.rs", "pub fn f() {}\n");
        })
        .roles(&[Role::Reproducer])
        .sandbox("docker")
        .env("R2R_DEPS_DIR", deps.to_str().unwrap())
        .start()
        .await;
    let (bug, _) = desk.file(json!({"component": "shoplite", "title": "f does nothing", "what_happened": "nothing", "expected": "something", "steps": ""})).await;
    let (status, _) = desk
        .act(Role::Reproducer, &bug, "reproduction/start", json!({}))
        .await;
    assert_eq!(status, 200);
    let (status, answer) = desk
        .act(
            Role::Reproducer,
            &bug,
            "reproduction",
            json!({
                "test_path": "tests/f.rs", "test_name": "f_works",
                "test_source": "#[test]\nfn f_works() { assert!(false, \"no\"); }\n",
                "model": "scripted-shoplite-1", "provider": "scripted",
                "claimed": {"exit_code": 101, "verdict": "reproduced"},
            }),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(answer["error"], "dependencies_refused", "{answer}");
    assert!(
        answer["message"].as_str().unwrap().contains("from git"),
        "{answer}"
    );
    assert!(
        !deps.join("cargo").exists()
            || deps.join("cargo").read_dir().unwrap().all(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.'))
    );
    let store = desk.store().await;
    assert!(
        store.evidence_for(&bug).await.unwrap().is_empty(),
        "nothing was measured"
    );
}
