//! The crew as a service: hand-offs accepted only by their addressee with the exact body's
//! hash; the crew connected only while all four roles beat; `r2r crew run` going from
//! disconnected to connected; and `r2r serve` with the crew in-process taking a ShopLite bug
//! from a report to a reviewed draft pull request with nobody driving it but the reporter.

use crate::common;

use domain::Role;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The desk's API as the crew's roles call it.
type Desk = common::desk::Roles;

fn tokens() -> std::collections::HashMap<Role, String> {
    common::desk::role_tokens().0
}

fn env_of(tokens: &std::collections::HashMap<Role, String>) -> Vec<(String, String)> {
    common::desk::token_env(tokens)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_offs_are_taken_only_by_their_addressee_with_the_exact_body() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens();
    let env = env_of(&tokens);
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = common::start_server_with(
        &format!("sqlite://{}/desk.db", dir.path().display()),
        &pairs,
    );
    let desk = Desk::at(&server.base, &tokens);
    let body = r#"{"bug":"bug-1","version":3}"#;
    let send = json!({"addressed_to": "fixer", "kind": "fix", "bug": "bug-1", "body": body, "dedupe_key": "fix:bug-1:v3"});
    let (status, task) = desk
        .call(
            "POST",
            "/api/v1/crew/tasks",
            Role::Manager,
            Some(send.clone()),
        )
        .await;
    assert_eq!(status, 201, "{task}");
    assert_eq!(task["sender"], "manager");
    assert_eq!(task["body_sha256"], domain::crew::body_hash(body));
    let id = task["id"].as_str().unwrap().to_owned();
    // The same hand-off again: the first task, nothing new.
    let (status, again) = desk
        .call("POST", "/api/v1/crew/tasks", Role::Manager, Some(send))
        .await;
    assert_eq!((status, again["id"].as_str()), (200, Some(id.as_str())));
    for (role, body, expected) in [
        (
            Role::Recorder,
            json!({"addressed_to": "fixer", "kind": "x", "body": "{}"}),
            403,
        ),
        (
            Role::Manager,
            json!({"addressed_to": "manager", "kind": "x", "body": "{}"}),
            422,
        ),
        (
            Role::Manager,
            json!({"addressed_to": "recorder", "kind": "x", "body": "{}"}),
            422,
        ),
        (
            Role::Manager,
            json!({"addressed_to": "fixer", "kind": "x", "body": ""}),
            422,
        ),
        (
            Role::Manager,
            json!({"addressed_to": "fixer", "kind": "x", "body": "{}", "approve": true}),
            422,
        ),
    ] {
        let (status, answer) = desk
            .call("POST", "/api/v1/crew/tasks", role, Some(body))
            .await;
        assert_eq!(status, expected, "{answer}");
    }

    // Only the fixer sees it, and only the fixer with the exact body's hash takes it.
    let (_, open) = desk
        .call("GET", "/api/v1/crew/tasks", Role::Reviewer, None)
        .await;
    assert_eq!(open["tasks"], json!([]));
    let (_, open) = desk
        .call("GET", "/api/v1/crew/tasks", Role::Fixer, None)
        .await;
    assert_eq!(open["tasks"][0]["body"], body);
    let accept = |hash: String, named: &str| json!({"addressed_to": named, "body_sha256": hash});
    let path = format!("/api/v1/crew/tasks/{id}/accept");
    let right = domain::crew::body_hash(body);
    let wrong = domain::crew::body_hash(r#"{"bug":"bug-2","version":3}"#);
    for (role, body, expected, code) in [
        (
            Role::Reviewer,
            accept(right.clone(), "reviewer"),
            403,
            "not_addressed_to_you",
        ),
        (
            Role::Reviewer,
            accept(right.clone(), "fixer"),
            403,
            "not_addressed_to_you",
        ),
        (
            Role::Fixer,
            accept(right.clone(), "reviewer"),
            403,
            "not_addressed_to_you",
        ),
        (Role::Fixer, accept(wrong, "fixer"), 409, "body_mismatch"),
    ] {
        let (status, answer) = desk.call("POST", &path, role, Some(body)).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (expected, Some(code)),
            "{answer}"
        );
    }
    let (status, answer) = desk
        .call(
            "POST",
            &path,
            Role::Fixer,
            Some(accept(right.clone(), "fixer")),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = desk
        .call("POST", &path, Role::Fixer, Some(accept(right, "fixer")))
        .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (409, Some("already_accepted"))
    );
    let done = format!("/api/v1/crew/tasks/{id}/complete");
    let (status, _) = desk
        .call(
            "POST",
            &done,
            Role::Reviewer,
            Some(json!({"outcome": "done"})),
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = desk
        .call(
            "POST",
            &done,
            Role::Fixer,
            Some(json!({"outcome": "draft pull request #1"})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = desk
        .call(
            "POST",
            "/api/v1/crew/tasks/task-nope/accept",
            Role::Fixer,
            Some(accept("0".repeat(64), "fixer")),
        )
        .await;
    assert_eq!(status, 404);

    // Connected only with the crew's four fresh heartbeats; the recorder beats beside them
    // (shown on its own) and does not count; the concierge may not beat at all.
    let (_, status_now) = desk.call("GET", "/api/v1/crew", Role::Manager, None).await;
    assert_eq!(status_now["connected"], false);
    assert_eq!(status_now["tasks"][0]["outcome"], "draft pull request #1");
    assert_eq!(status_now["recorder"]["fresh"], false);
    let (status, _) = desk
        .call(
            "POST",
            "/api/v1/crew/heartbeat",
            Role::Recorder,
            Some(json!({"detail": "shoplite: live"})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = desk
        .call(
            "POST",
            "/api/v1/crew/heartbeat",
            Role::Concierge,
            Some(json!({})),
        )
        .await;
    assert!(matches!(status, 401 | 403), "the concierge beat: {status}");
    let (_, with_recorder) = desk.call("GET", "/api/v1/crew", Role::Manager, None).await;
    assert_eq!(with_recorder["recorder"]["fresh"], true, "{with_recorder}");
    assert_eq!(with_recorder["recorder"]["doing"], "shoplite: live");
    assert_eq!(with_recorder["roles"].as_array().unwrap().len(), 4);
    for role in [Role::Manager, Role::Reproducer, Role::Fixer] {
        let (status, _) = desk
            .call(
                "POST",
                "/api/v1/crew/heartbeat",
                role,
                Some(json!({"detail": "idle"})),
            )
            .await;
        assert_eq!(status, 200);
    }
    let (_, three) = desk.call("GET", "/api/v1/crew", Role::Fixer, None).await;
    assert_eq!(three["connected"], false, "{three}");
    desk.call(
        "POST",
        "/api/v1/crew/heartbeat",
        Role::Reviewer,
        Some(json!({"detail": "reviewing bug-1"})),
    )
    .await;
    let (_, four) = desk.call("GET", "/api/v1/crew", Role::Fixer, None).await;
    assert_eq!(four["connected"], true, "{four}");
    assert_eq!(four["roles"][3]["doing"], "reviewing bug-1");
    assert_eq!(four["fresh_within_ms"], 90_000);
}

/// Whether the Docker sandbox is here; when it is not and the test command did not require
/// it, says that the test is skipped.
async fn wait_for(
    what: &str,
    limit: Duration,
    mut check: impl FnMut()
        -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<Value>> + Send>>,
) -> Value {
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A desk on a fresh SQLite file in `dir` with every role's token and `extra` variables: the
/// server, its [`Desk`], the database URL and the environment it was started with.
fn crew_desk(
    dir: &std::path::Path,
    extra: &[(&str, &str)],
) -> (common::RunningServer, Desk, String, Vec<(String, String)>) {
    let tokens = tokens();
    let mut env = env_of(&tokens);
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let url = format!("sqlite://{}/desk.db", dir.display());
    let server = common::start_server_with(&url, &pairs);
    let desk = Desk::at(&server.base, &tokens);
    (server, desk, url, env)
}

/// The coupon report every ShopLite scenario files.
fn coupon_report() -> Value {
    json!({
        "component": "shoplite", "title": "SAVE300 makes the total negative",
        "what_happened": "The total shows -₹100", "expected": "A total of ₹0",
        "steps": "Cart of ₹200, coupon SAVE300",
    })
}

/// Waits (at most `limit`) until bug `bug` is in one of `wanted`; its view.
async fn bug_in(desk: &Desk, bug: &str, wanted: &[&str], what: &str, limit: Duration) -> Value {
    let started = Instant::now();
    loop {
        let (_, view) = desk
            .call("GET", &format!("/api/v1/bugs/{bug}"), Role::Manager, None)
            .await;
        if view["bug"]["state"]
            .as_str()
            .is_some_and(|state| wanted.contains(&state))
        {
            return view;
        }
        assert!(
            started.elapsed() < limit,
            "timed out waiting for {what}: {view}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits for the reporter's reproduction question on their tracking page and answers yes;
/// the tracking page that asked.
async fn confirm_reproduction(base: &str, capability: &str) -> Value {
    let client = reqwest::Client::new();
    let started = Instant::now();
    let tracking = loop {
        let tracking: Value = client
            .get(format!("{base}/api/v1/track"))
            .header("x-r2r-capability", capability)
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
            "no reproduction question: {tracking}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let answered = client
        .post(format!("{base}/api/v1/track/answer"))
        .header("x-r2r-capability", capability)
        .json(&json!({"request_id": tracking["question"]["request_id"], "kind": "reproduction", "yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    tracking
}

/// The bug's crew step once its worker has completed the task its last submission moved on
/// (bounded), checked: each of the reproduce and fix steps has tasks, all completed.
async fn steps_all_completed(desk: &Desk, bug: &str) -> Value {
    let started = Instant::now();
    let step = loop {
        let (status, step) = desk
            .call(
                "GET",
                &format!("/api/v1/bugs/{bug}/crew-step"),
                Role::Manager,
                None,
            )
            .await;
        assert_eq!(status, 200);
        let open = step["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["kind"] != "review" && !t["completed_at"].is_i64());
        if !open || started.elapsed() > Duration::from_secs(30) {
            break step;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    for kind in ["reproduce", "fix"] {
        let of_kind: Vec<&Value> = step["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["kind"] == kind)
            .collect();
        assert!(!of_kind.is_empty(), "{kind}: {step}");
        assert!(
            of_kind.iter().all(|t| t["completed_at"].is_i64()),
            "no {kind} task left open: {step}"
        );
    }
    step
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crew_connects_and_works_a_bug_through_to_a_reviewed_draft() {
    if !common::docker_here().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = common::shoplite_forge(dir.path()).await;
    let tokens = tokens();
    let mut env = env_of(&tokens);
    env.extend([
        ("R2R_LOCAL_FORGE".to_owned(), bare.display().to_string()),
        ("R2R_SANDBOX_BACKEND".to_owned(), "docker".to_owned()),
    ]);

    // First without a crew: disconnected; then `r2r crew run` connects all four roles.
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let server = common::start_server_with(&url, &pairs);
    let desk = Desk::at(&server.base, &tokens);
    let (_, before) = desk.call("GET", "/api/v1/crew", Role::Manager, None).await;
    assert_eq!(before["connected"], false);
    let env_file = dir.path().join("crew.env");
    let lines: String = env
        .iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .chain(["R2R_MODEL_PROVIDER=scripted\n".to_owned()])
        .collect();
    std::fs::write(&env_file, lines).unwrap();
    let mut crew = common::r2r_with_env_file(&env_file)
        .args(["crew", "run", "--desk", &desk.base, "--poll-ms", "300"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let base = desk.base.clone();
    let manager = desk.token(Role::Manager).to_owned();
    let connected = wait_for("the crew to connect", Duration::from_secs(30), || {
        let (base, manager) = (base.clone(), manager.clone());
        Box::pin(async move {
            let status: Value = reqwest::Client::new()
                .get(format!("{base}/api/v1/crew"))
                .bearer_auth(manager)
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            (status["connected"] == true).then_some(status)
        })
    })
    .await;
    assert_eq!(connected["roles"].as_array().unwrap().len(), 4);
    crew.kill().unwrap();
    crew.wait().unwrap();
    drop(server);

    // Now `r2r serve` with the crew in-process: a report is all it takes to get to a
    // measured reproduction; the reporter's yes is all it takes to get to a reviewed draft.
    env.push(("R2R_MODEL_PROVIDER".to_owned(), "scripted".to_owned()));
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let url = format!("sqlite://{}/desk2.db", dir.path().display());
    let server = common::start_server_with(&url, &pairs);
    let desk = Desk::at(&server.base, &tokens);
    let filed: Value = reqwest::Client::new()
        .post(format!("{}/api/v1/reports", desk.base))
        .json(&json!({
            "component": "shoplite", "title": "SAVE300 makes the total negative",
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
    let track = |base: String, capability: String| {
        Box::pin(async move {
            let tracking: Value = reqwest::Client::new()
                .get(format!("{base}/api/v1/track"))
                .header("x-r2r-capability", capability)
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            Some(tracking)
        })
    };
    let base = desk.base.clone();
    let question = wait_for(
        "the reproduction question",
        Duration::from_secs(180),
        || {
            let fut = track(base.clone(), capability.clone());
            Box::pin(async move {
                let tracking = fut.await?;
                (tracking["question"]["kind"] == "reproduction").then_some(tracking)
            })
        },
    )
    .await;
    let answered = reqwest::Client::new()
        .post(format!("{}/api/v1/track/answer", desk.base))
        .header("x-r2r-capability", &capability)
        .json(&json!({"request_id": question["question"]["request_id"], "kind": "reproduction", "yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let manager = desk.token(Role::Manager).to_owned();
    let bug_for_wait = bug.clone();
    let reviewed = wait_for("a reviewed draft", Duration::from_secs(240), || {
        let (base, manager, bug) = (base.clone(), manager.clone(), bug_for_wait.clone());
        Box::pin(async move {
            let status: Value = reqwest::Client::new()
                .get(format!("{base}/api/v1/crew"))
                .bearer_auth(&manager)
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            let review_done = status["tasks"].as_array()?.iter().any(|t| {
                t["kind"] == "review" && t["bug"] == bug.as_str() && t["completed_at"].is_i64()
            });
            review_done.then_some(status)
        })
    })
    .await;
    let kinds: Vec<&str> = reviewed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap())
        .collect();
    for kind in ["reproduce", "fix", "review"] {
        assert!(kinds.contains(&kind), "{kinds:?}");
    }
    assert!(reviewed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["body_sha256"].as_str().unwrap().len() == 64));
    let (_, view) = desk
        .call("GET", &format!("/api/v1/bugs/{bug}"), Role::Manager, None)
        .await;
    assert_eq!(view["bug"]["state"], "in_review", "{view}");
    assert_eq!(reviewed["connected"], true);
    assert!(
        reviewed["spend"]["book"]["calls"].as_u64().unwrap() >= 4,
        "triage, test, test review, fix, code review: {reviewed}"
    );
}

/// A crew that cannot go on says so: a bug the (scripted) model has no answer for goes to
/// `needs_human` with that reason instead of sitting in `reproducing`; the tracking page stops
/// saying the crew works on it; an owner takes it over (the crew can then do nothing with it)
/// and gives it back (the crew tries again and hands it back again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crew_that_cannot_go_on_hands_the_bug_to_a_person_who_takes_it_over_or_gives_it_back() {
    let desk = common::owner_desk(&[("R2R_MODEL_PROVIDER", "scripted")]);
    let base = desk.server.base.clone();
    let (bug, capability) = common::file_report(
        &base,
        json!({"component": "shoplite", "title": "A huge price shows an infinite total",
               "what_happened": "A price of 1e308 with quantity 2 shows a total of inf.",
               "expected": "A clear error", "steps": "Enter price 1e308\nSet quantity 2"}),
    )
    .await;
    let client = reqwest::Client::new();
    let (cookie, csrf) = common::sign_in(&client, &base, common::OWNER, common::PASSWORD).await;
    let (detail_base, detail_cookie) = (base.clone(), cookie.clone());
    let detail = move |bug: String| {
        let (base, cookie) = (detail_base.clone(), detail_cookie.clone());
        Box::pin(async move {
            let answer: Value = reqwest::Client::new()
                .get(format!("{base}/api/v1/bugs/{bug}"))
                .header("cookie", cookie)
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            Some(answer["bug"].clone())
        })
    };
    let handed = |bug: String| {
        let detail = detail.clone();
        move || {
            let detail = detail.clone();
            let bug = bug.clone();
            Box::pin(async move {
                let b = detail(bug).await?;
                (b["state"] == "needs_human").then_some(b)
            })
                as std::pin::Pin<Box<dyn std::future::Future<Output = Option<Value>> + Send>>
        }
    };
    let stopped = wait_for(
        "the crew to hand the bug over",
        Duration::from_secs(60),
        handed(bug.clone()),
    )
    .await;
    assert_eq!(stopped["needs_human"], "model_no_answer", "{stopped}");

    // The reporter is told a person has it, not that the crew works on it.
    let tracking: Value = client
        .get(format!("{base}/api/v1/track"))
        .header("x-r2r-capability", &capability)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(tracking["bug"]["state"], "needs_human");
    let told = format!(
        "{} {}",
        tracking["bug"]["state_label"], tracking["bug"]["next"]
    );
    assert!(!told.contains("The crew"), "{told}");
    // The owner's page says why and offers both ways on.
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
        page.contains("the crew’s model gave no usable answer")
            || page.contains("the crew&#x27;s model gave no usable answer")
            || page.contains("the crew's model gave no usable answer"),
        "{page}"
    );
    assert!(
        page.contains("Try again…") && page.contains("Take it over…"),
        "{page}"
    );
    // What the crew spent on it and what is left, on the bug's page and the crew page.
    assert!(page.contains("data-testid=\"crew-budget\""), "{page}");
    assert!(
        page.contains("model spend $0.0000 of $0.5000 for this bug (2 calls)")
            && page.contains("reproduction attempts 0 of 3 used, fix attempts 0 of 2 used"),
        "{page}"
    );
    let crew_page = client
        .get(format!("{base}/desk/crew"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        crew_page.contains("data-testid=\"bug-spend\"")
            && crew_page.contains(&format!("/desk/bugs/{bug}")),
        "{crew_page}"
    );

    let owner_post = |path: String| {
        client
            .post(format!("{base}{path}"))
            .header("cookie", &cookie)
            .header("x-csrf-token", &csrf)
            .json(&json!({}))
            .send()
    };
    // Taken over through the desk, as a browser without JavaScript does it: the question's
    // page, then its form posted to the desk's server function. The crew's hand-over (and any
    // other crew command) is refused from now on.
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let question = format!("{base}/desk/bugs/{bug}/confirm?action=take_over");
    let act = |action: &str| {
        no_redirects
            .post(format!("{base}/desk/fn/act"))
            .header("cookie", &cookie)
            .header("accept", "text/html")
            .header("referer", &question)
            .form(&[
                ("csrf", csrf.as_str()),
                ("action", action),
                ("bug", bug.as_str()),
            ])
            .send()
    };
    // An action the desk does not know is refused (back to the question, saying so) and
    // does nothing.
    let misspelt = act("TAKE_OVER_PLEASE").await.unwrap();
    assert_eq!(misspelt.status(), 302);
    assert!(misspelt.headers()["location"]
        .to_str()
        .unwrap()
        .contains("__err="));
    assert_eq!(
        detail(bug.clone()).await.unwrap()["needs_human"],
        "model_no_answer"
    );
    let asked = client
        .get(&question)
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(asked.status(), 200);
    let asked = asked.text().await.unwrap();
    assert!(
        asked.contains("Take this bug over from the crew?") && asked.contains("/desk/fn/act"),
        "{asked}"
    );
    assert_eq!(detail(bug.clone()).await.unwrap()["state"], "needs_human");
    assert_eq!(
        detail(bug.clone()).await.unwrap()["needs_human"],
        "model_no_answer",
        "asking changed nothing"
    );
    let taken = act("take_over").await.unwrap();
    assert_eq!(taken.status(), 302, "{:?}", taken.headers());
    assert!(
        taken.headers()["location"]
            .to_str()
            .unwrap()
            .starts_with(&format!("/desk/bugs/{bug}?done=take_over.")),
        "{:?}",
        taken.headers()
    );
    let crew = Desk::at(&base, &desk.tokens);
    let (status, _) = crew
        .call(
            "POST",
            &format!("/api/v1/bugs/{bug}/hand-to-human"),
            Role::Reproducer,
            Some(json!({"reason": "model_no_answer"})),
        )
        .await;
    assert_eq!(status, 409);
    let (status, _) = crew
        .call(
            "POST",
            &format!("/api/v1/bugs/{bug}/reproduction/start"),
            Role::Reproducer,
            None,
        )
        .await;
    assert_eq!(status, 409);
    // A role cannot give it back.
    let (status, _) = crew
        .call(
            "POST",
            &format!("/api/v1/bugs/{bug}/retry"),
            Role::Manager,
            None,
        )
        .await;
    assert_eq!(status, 403);
    assert_eq!(
        detail(bug.clone()).await.unwrap()["needs_human"],
        "taken_over"
    );

    // Given back: the crew tries again, and hands it back again for the same reason.
    let retried = owner_post(format!("/api/v1/bugs/{bug}/retry"))
        .await
        .unwrap();
    assert_eq!(retried.status(), 200);
    let again = wait_for(
        "the crew to try again and hand it back",
        Duration::from_secs(60),
        handed(bug.clone()),
    )
    .await;
    assert_eq!(again["needs_human"], "model_no_answer", "{again}");
    assert!(
        again["version"].as_u64().unwrap() > stopped["version"].as_u64().unwrap(),
        "{again}"
    );
}

/// A worker that dies with a task it accepted (a crash, `kill -9`) does not strand it: once
/// its lease (`R2R_CREW_TASK_LEASE`, here 1 s) runs out, the task is offered again and another
/// worker of the role takes it; a completed task is never offered again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_worker_died_is_offered_again_when_its_lease_runs_out() {
    let desk = common::owner_desk(&[("R2R_CREW_TASK_LEASE", "1")]);
    let crew = Desk::at(&desk.server.base, &desk.tokens);
    let body = r#"{"bug":"bug-lease"}"#;
    let (status, sent) = crew
        .call(
            "POST",
            "/api/v1/crew/tasks",
            Role::Manager,
            Some(json!({
                "addressed_to": "reproducer", "kind": "reproduce", "body": body,
            })),
        )
        .await;
    assert_eq!(status, 201, "{sent}");
    let id = sent["id"].as_str().unwrap().to_owned();
    let hash = sent["body_sha256"].as_str().unwrap().to_owned();
    let offered = || async {
        let (_, open) = crew
            .call("GET", "/api/v1/crew/tasks", Role::Reproducer, None)
            .await;
        open["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["id"] == id.as_str())
            .count()
    };
    let accept = || async {
        crew.call(
            "POST",
            &format!("/api/v1/crew/tasks/{id}/accept"),
            Role::Reproducer,
            Some(json!({"addressed_to": "reproducer", "body_sha256": hash})),
        )
        .await
    };
    assert_eq!(offered().await, 1);
    assert_eq!(accept().await.0, 200);
    assert_eq!(accept().await.0, 409, "taken while the lease holds");
    assert_eq!(offered().await, 0);
    // The worker is gone; the lease runs out.
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    assert_eq!(offered().await, 1, "offered again");
    assert_eq!(accept().await.0, 200, "taken by the next worker");
    let (status, _) = crew
        .call(
            "POST",
            &format!("/api/v1/crew/tasks/{id}/complete"),
            Role::Reproducer,
            Some(json!({"outcome": "proposed"})),
        )
        .await;
    assert_eq!(status, 200);
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    assert_eq!(
        offered().await,
        0,
        "a completed task is never offered again"
    );
    assert_eq!(accept().await.0, 409);
}

/// A step the crew cannot finish for a reason outside it — here the sandbox is unreachable —
/// is tried again after a wait, a bounded number of times (`R2R_CREW_RETRIES`, here 2), and
/// then lands with a person with the reason, on the owner's page, the tracking page and the
/// crew-step endpoint; it is never left in `reproducing` silently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_keeps_failing_is_retried_then_handed_to_a_person_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let bare = common::shoplite_forge(dir.path()).await;
    let bare = bare.display().to_string();
    let nowhere = format!("unix://{}/no-docker.sock", dir.path().display());
    let desk = common::owner_desk(&[
        ("R2R_MODEL_PROVIDER", "scripted"),
        ("R2R_LOCAL_FORGE", &bare),
        ("R2R_SANDBOX_BACKEND", "docker"),
        ("DOCKER_HOST", &nowhere),
        ("R2R_CREW_RETRIES", "2"),
        ("R2R_CREW_RETRY_BACKOFF", "1"),
    ]);
    let base = desk.server.base.clone();
    let (bug, capability) = common::file_report(
        &base,
        json!({"component": "shoplite", "title": "SAVE300 makes the total negative",
               "what_happened": "The total shows -₹100", "expected": "A total of ₹0",
               "steps": "Cart of ₹200, coupon SAVE300"}),
    )
    .await;
    let crew = Desk::at(&base, &desk.tokens);
    let step_path = format!("/api/v1/bugs/{bug}/crew-step");
    let (crew_base, manager) = (base.clone(), crew.token(Role::Manager).to_owned());
    let path = step_path.clone();
    let handed = wait_for(
        "the bug to reach a person after two failed tries",
        Duration::from_secs(120),
        move || {
            let (base, manager, path) = (crew_base.clone(), manager.clone(), path.clone());
            Box::pin(async move {
                let step: Value = reqwest::Client::new()
                    .get(format!("{base}{path}"))
                    .bearer_auth(manager)
                    .send()
                    .await
                    .ok()?
                    .json()
                    .await
                    .ok()?;
                (step["state"] == "needs_human").then_some(step)
            })
        },
    )
    .await;
    assert!(
        handed["step"].is_null(),
        "no crew step in needs_human: {handed}"
    );
    let tries: Vec<&Value> = handed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "reproduce")
        .collect();
    assert_eq!(tries.len(), 2, "two tries, no more: {handed}");
    for task in &tries {
        let outcome = task["outcome"].as_str().unwrap_or_default();
        assert!(
            outcome.contains("sandbox"),
            "each try says why it failed: {outcome}"
        );
    }
    let keys: Vec<&str> = tries
        .iter()
        .map(|t| t["dedupe_key"].as_str().unwrap())
        .collect();
    assert!(
        keys.iter().any(|k| k.ends_with(":try1")) && keys.iter().any(|k| k.ends_with(":try2")),
        "{keys:?}"
    );
    // The second try waited for the backoff after the first ended.
    let mut ends: Vec<i64> = tries
        .iter()
        .map(|t| t["completed_at"].as_i64().unwrap())
        .collect();
    let mut starts: Vec<i64> = tries
        .iter()
        .map(|t| t["created_at"].as_i64().unwrap())
        .collect();
    ends.sort_unstable();
    starts.sort_unstable();
    assert!(starts[1] >= ends[0] + 1_000, "{starts:?} {ends:?}");

    let client = reqwest::Client::new();
    let (cookie, _) = common::sign_in(&client, &base, common::OWNER, common::PASSWORD).await;
    let detail: Value = client
        .get(format!("{base}/api/v1/bugs/{bug}"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(detail["bug"]["needs_human"], "crew_step_failed", "{detail}");
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
        page.contains("could not finish it") && page.contains("Try again…"),
        "{page}"
    );
    let tracking: Value = client
        .get(format!("{base}/api/v1/track"))
        .header("x-r2r-capability", &capability)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(tracking["bug"]["state"], "needs_human", "{tracking}");
    // The step endpoint is the crew's and the owners', not the public's.
    let (status, _) = crew.call("GET", &step_path, Role::Recorder, None).await;
    assert_eq!(status, 403);
    let anonymous = client
        .get(format!("{base}{step_path}"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
}

/// Fault injection (127.0.0.1 only, bounded): the server, with its in-process crew and its
/// deployer, is killed with SIGKILL at each step of the loop and started again on the same
/// database — right after the report is filed (before or during triage), while the crew
/// reproduces, while the bug waits for its reporter, while the crew fixes, as soon as the
/// draft is in review (while the reviewer writes its note), right after an owner merges it,
/// while the deployer releases the merge, and right after the reporter confirms the live fix.
/// Each time the accepted task's lease runs out (the default, 20 s without a renewal), the
/// restarted crew takes the task again — killed while it reproduces, the bug reaches its
/// reporter's question within a minute of the restart (it waited out 15 minutes before); the restarted deployer builds the merge again or has the recorder record the
/// release it restarted. The loop still reaches the reporter's question, the draft pull
/// request, a completed review, the recorded release and `verified`, with the ledger intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_at_each_step_of_the_loop_resumes_after_a_restart() {
    if !common::docker_here().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = common::shoplite_forge(dir.path()).await;
    let tokens = tokens();
    let mut env = env_of(&tokens);
    env.extend([
        ("R2R_LOCAL_FORGE".to_owned(), bare.display().to_string()),
        ("R2R_SANDBOX_BACKEND".to_owned(), "docker".to_owned()),
        ("R2R_MODEL_PROVIDER".to_owned(), "scripted".to_owned()),
        ("R2R_DEPLOY".to_owned(), "on".to_owned()),
        (
            "R2R_DEPLOY_DIR".to_owned(),
            dir.path().join("releases").display().to_string(),
        ),
        ("R2R_OWNER_EMAIL".to_owned(), OWNER.to_owned()),
        (
            "R2R_OWNER_PASSWORD_HASH".to_owned(),
            server::auth::hash_password(PASSWORD).unwrap(),
        ),
        ("R2R_SESSION_KEY".to_owned(), "k".repeat(64)),
    ]);
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let manager = tokens[&Role::Manager].clone();
    let state_of = |base: String, bug: String, manager: String| async move {
        let view: Value = reqwest::Client::new()
            .get(format!("{base}/api/v1/bugs/{bug}"))
            .bearer_auth(manager)
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        view["bug"]["state"].as_str().map(str::to_owned)
    };
    let reach = |base: String, bug: String, wanted: &'static [&'static str], what: &'static str| {
        let manager = manager.clone();
        async move {
            wait_for(what, Duration::from_secs(240), move || {
                let (base, bug, manager) = (base.clone(), bug.clone(), manager.clone());
                Box::pin(async move {
                    let state = state_of(base, bug, manager).await?;
                    wanted.contains(&state.as_str()).then(|| json!(state))
                })
            })
            .await
        }
    };

    let server = common::start_server_with(&url, &pairs);
    let filed: Value = reqwest::Client::new()
        .post(format!("{}/api/v1/reports", server.base))
        .json(&json!({
            "component": "shoplite", "title": "SAVE300 makes the total negative",
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
    drop(server); // SIGKILL at once: before or while the manager triages
    let server = common::start_server_with(&url, &pairs);
    let at = reach(
        server.base.clone(),
        bug.clone(),
        &["reproducing", "awaiting_reporter"],
        "the crew to triage and start reproducing after the restart",
    )
    .await;
    drop(server); // SIGKILL, mid-step when it was still reproducing
    let server = common::start_server_with(&url, &pairs);
    let restarted = std::time::Instant::now();
    reach(
        server.base.clone(),
        bug.clone(),
        &["awaiting_reporter"],
        "the reporter's question after the restart",
    )
    .await;
    if at == "reproducing" {
        let resumed = restarted.elapsed();
        eprintln!("killed while reproducing; the reporter was asked {resumed:?} after the restart");
        assert!(
            resumed < Duration::from_secs(60),
            "a restart waited out the lease: {resumed:?}"
        );
    }
    drop(server); // SIGKILL while the bug waits for its reporter
    let server = common::start_server_with(&url, &pairs);
    let tracking: Value = reqwest::Client::new()
        .get(format!("{}/api/v1/track", server.base))
        .header("x-r2r-capability", &capability)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let answered = reqwest::Client::new()
        .post(format!("{}/api/v1/track/answer", server.base))
        .header("x-r2r-capability", &capability)
        .json(&json!({"request_id": tracking["question"]["request_id"], "kind": "reproduction", "yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let at = reach(
        server.base.clone(),
        bug.clone(),
        &["fixing", "in_review"],
        "the crew to start fixing",
    )
    .await;
    drop(server); // SIGKILL again
    let server = common::start_server_with(&url, &pairs);
    if at == "fixing" {
        eprintln!("killed while fixing");
    }
    reach(
        server.base.clone(),
        bug.clone(),
        &["in_review"],
        "the draft pull request after the restart",
    )
    .await;
    drop(server); // SIGKILL as soon as the draft is in review: mid-review, or before it
    let server = common::start_server_with(&url, &pairs);
    let status = wait_for(
        "a completed review after the restart",
        Duration::from_secs(120),
        {
            let (base, manager, bug) = (server.base.clone(), manager.clone(), bug.clone());
            move || {
                let (base, manager, bug) = (base.clone(), manager.clone(), bug.clone());
                Box::pin(async move {
                    let step: Value = reqwest::Client::new()
                        .get(format!("{base}/api/v1/bugs/{bug}/crew-step"))
                        .bearer_auth(manager)
                        .send()
                        .await
                        .ok()?
                        .json()
                        .await
                        .ok()?;
                    let reviewed = step["tasks"]
                        .as_array()?
                        .iter()
                        .any(|t| t["kind"] == "review" && t["completed_at"].is_i64());
                    reviewed.then_some(step)
                })
            }
        },
    )
    .await;
    assert_eq!(
        state_of(server.base.clone(), bug.clone(), manager.clone())
            .await
            .as_deref(),
        Some("in_review"),
        "a review moves nothing: {status}"
    );
    // Every restart, and nothing worse: at most one try of each step stayed open on the
    // dead server, and each step ended with one completed task that moved the bug on.
    let desk = Desk::at(&server.base, &tokens);
    let step = steps_all_completed(&desk, &bug).await;
    assert!(step["step"].is_null(), "people hold it now: {step}");

    // An owner approves the draft's exact head and merges it; SIGKILL at once (merged, before
    // or as the deployer sees the new head).
    let (_, view) = desk
        .call("GET", &format!("/api/v1/bugs/{bug}"), Role::Manager, None)
        .await;
    let head = view["bug"]["pull_request"]["head"]
        .as_str()
        .unwrap()
        .to_owned();
    let owner = owner_session(&server.base).await;
    let (status, approved, _) = owner
        .post(
            &format!("/api/v1/bugs/{bug}/approve"),
            json!({"head": head}),
        )
        .await;
    assert_eq!(status, 200, "{approved}");
    let (status, merged, merge) = owner
        .post(&format!("/api/v1/bugs/{bug}/merge"), json!({"head": head}))
        .await;
    assert_eq!(
        (status, merged["state"].as_str()),
        (200, Some("merged")),
        "{merged}"
    );
    let merge = merge.unwrap();
    drop(server); // SIGKILL right after the merge
    let recorder = desk.token(Role::Recorder).to_owned();
    let release_step = |base: String| {
        let (recorder, merge) = (recorder.clone(), merge.clone());
        move || {
            let (base, recorder, merge) = (base.clone(), recorder.clone(), merge.clone());
            Box::pin(async move {
                let crew: Value = reqwest::Client::new()
                    .get(format!("{base}/api/v1/crew"))
                    .bearer_auth(recorder)
                    .send()
                    .await
                    .ok()?
                    .json()
                    .await
                    .ok()?;
                let release = crew["release"].clone();
                (release["commit"] == merge.as_str()
                    && ["testing", "building", "starting", "checking"]
                        .contains(&release["step"].as_str().unwrap_or("")))
                .then_some(release)
            })
                as std::pin::Pin<Box<dyn std::future::Future<Output = Option<Value>> + Send>>
        }
    };
    let server = common::start_server_with(&url, &pairs);
    let deploying = wait_for(
        "the deployer to release the merge after the restart",
        Duration::from_secs(120),
        release_step(server.base.clone()),
    )
    .await;
    drop(server); // SIGKILL while the merge is being released
    eprintln!("killed while the release was {}", deploying["step"]);
    let server = common::start_server_with(&url, &pairs);
    reach(
        server.base.clone(),
        bug.clone(),
        &["deployed"],
        "the recorded release of the merge after the restart",
    )
    .await;
    let health: Value = reqwest::Client::new()
        .get(format!("{}/live/shoplite/api/health", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["commit"], merge.as_str(), "{health}");

    // The reporter confirms the live fix; SIGKILL right after the answer: it stays verified.
    let tracking: Value = reqwest::Client::new()
        .get(format!("{}/api/v1/track", server.base))
        .header("x-r2r-capability", &capability)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        tracking["bug"]["release"]["commit"],
        merge.as_str(),
        "{tracking}"
    );
    let answered: Value = reqwest::Client::new()
        .post(format!("{}/api/v1/track/answer", server.base))
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
    assert_eq!(answered["state"], "verified", "{answered}");
    drop(server); // SIGKILL after the reporter's last word
    let server = common::start_server_with(&url, &pairs);
    assert_eq!(
        state_of(server.base.clone(), bug.clone(), manager.clone())
            .await
            .as_deref(),
        Some("verified")
    );

    // An owner rolls the service back to the release before the merge: it is served again
    // (its artifact's hash checked), the bug whose fix it lacks goes back to merged with the
    // owner's reason, and nobody is asked about a fix that is not live.
    let base = String::from_utf8(
        std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&bare)
            .args(["rev-parse", &format!("{}^1", merge.as_str())])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_owned();
    let rollback = "/api/v1/releases/shoplite/rollback";
    let owner = owner_session(&server.base).await;
    let crew_token = reqwest::Client::new()
        .post(format!("{}{rollback}", server.base))
        .bearer_auth(desk.token(Role::Recorder))
        .json(&json!({"commit": base, "reason": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(crew_token.status(), 403, "only an owner rolls back");
    for (path, body, status, code) in [
        (
            "/api/v1/releases/nothing/rollback",
            json!({"commit": base, "reason": "r"}),
            404,
            "unknown_service",
        ),
        (
            rollback,
            json!({"commit": base, "reason": "  "}),
            422,
            "reason_required",
        ),
        (
            rollback,
            json!({"commit": base, "reason": "\u{200b}\u{202e}\u{0}\u{1b}"}),
            422,
            "reason_required",
        ),
        (
            rollback,
            json!({"commit": base, "reason": "x".repeat(2_001)}),
            422,
            "reason_too_long",
        ),
        (
            rollback,
            json!({"commit": "not-a-commit", "reason": "r"}),
            422,
            "",
        ),
        (
            rollback,
            json!({"commit": merge.as_str(), "reason": "r"}),
            409,
            "rollback_refused",
        ),
        (
            rollback,
            json!({"commit": "1".repeat(40), "reason": "r"}),
            409,
            "rollback_refused",
        ),
    ] {
        let (got, answer, _) = owner.post(path, body).await;
        assert_eq!(got, status, "{path}: {answer}");
        assert!(code.is_empty() || answer["error"] == code, "{answer}");
    }
    let live_commit = |base_url: String| async move {
        let health: Value = reqwest::Client::new()
            .get(format!("{base_url}/live/shoplite/api/health"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        health["commit"].as_str().unwrap_or_default().to_owned()
    };
    // The owner does it from the crew page: its release list offers every release built here
    // but the live one, each as a form that asks for the reason.
    let crew_page = reqwest::Client::new()
        .get(format!("{}/desk/crew", server.base))
        .header("cookie", &owner.cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        crew_page.contains("data-testid=\"releases\""),
        "{crew_page}"
    );
    for commit in [base.as_str(), merge.as_str()] {
        assert!(
            crew_page.contains(&format!("data-commit=\"{commit}\"")),
            "{commit} is listed: {crew_page}"
        );
    }
    assert!(crew_page.contains("live now"), "{crew_page}");
    assert!(
        crew_page.contains(&format!("name=\"head\" value=\"{base}\"")),
        "the earlier release can be served again: {crew_page}"
    );
    assert!(
        !crew_page.contains(&format!("name=\"head\" value=\"{}\"", merge.as_str())),
        "the live one is not offered: {crew_page}"
    );
    let act = |fields: Vec<(&'static str, String)>| {
        let (base_url, cookie) = (server.base.clone(), owner.cookie.clone());
        async move {
            let response = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap()
                .post(format!("{base_url}/desk/fn/act"))
                .header("cookie", cookie)
                .form(&fields)
                .send()
                .await
                .unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    let form = |csrf: &str, reason: &str| {
        vec![
            ("csrf", csrf.to_owned()),
            ("action", "rollback".to_owned()),
            ("of", "shoplite".to_owned()),
            ("head", base.clone()),
            ("reason", reason.to_owned()),
        ]
    };
    let (status, answer) = act(form("0000", "because")).await;
    assert_eq!(status, 403, "another session's form is refused: {answer}");
    let (status, answer) = act(form(&owner.csrf, "\u{200b} \u{202e}")).await;
    assert!(
        status == 422 && answer.contains("reason_required"),
        "a reason of nothing visible is none: {status} {answer}"
    );
    assert_eq!(live_commit(server.base.clone()).await, merge.as_str());
    let (status, answer) = act(form(&owner.csrf, "checkout broke after the coupon fix")).await;
    assert!(status < 400, "{status} {answer}");
    assert_eq!(live_commit(server.base.clone()).await, base);
    assert_eq!(
        state_of(server.base.clone(), bug.clone(), manager.clone())
            .await
            .as_deref(),
        Some("merged")
    );
    let tracking: Value = reqwest::Client::new()
        .get(format!("{}/api/v1/track", server.base))
        .header("x-r2r-capability", &capability)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(tracking["question"].is_null(), "{tracking}");
    assert!(
        tracking["bug"]["release"].is_null(),
        "no release with the fix is offered to try: {tracking}"
    );
    let said: Vec<&str> = tracking["bug"]["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["label"].as_str())
        .collect();
    assert!(
        said.last().is_some_and(|l| l.contains("rolled back")),
        "the rollback is on the reporter's timeline: {said:?}"
    );
    assert!(
        !tracking
            .to_string()
            .contains("checkout broke after the coupon fix"),
        "the owner's reason stays with the owners"
    );
    // After a restart the rolled-back release stays live: the head it replaced is not
    // released again.
    drop(server);
    let server = common::start_server_with(&url, &pairs);
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(live_commit(server.base.clone()).await, base);
    assert_eq!(
        state_of(server.base.clone(), bug.clone(), manager.clone())
            .await
            .as_deref(),
        Some("merged")
    );
    // Rolled forward to the release with the fix (served again, so recorded again): the bug
    // is deployed again and its reporter is asked again.
    let owner = owner_session(&server.base).await;
    let (status, answer, _) = owner
        .post(
            rollback,
            json!({"commit": merge.as_str().to_uppercase(), "reason": "the coupon fix was fine after all"}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["live"],
        merge.as_str(),
        "named in lower case: {answer}"
    );
    assert_eq!(live_commit(server.base.clone()).await, merge.as_str());
    reach(
        server.base.clone(),
        bug.clone(),
        &["deployed"],
        "the bug deployed again with the release that carries its fix",
    )
    .await;
    drop(server);
    let store = store::Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    assert!(store.verify_ledger().await.unwrap().is_ok());
}

const OWNER: &str = "owner@example.org";
const PASSWORD: &str = "correct horse battery staple";

/// An owner's signed-in session: its cookie and CSRF token.
struct OwnerSession {
    base: String,
    cookie: String,
    csrf: String,
}

async fn owner_session(base: &str) -> OwnerSession {
    let signed_in = reqwest::Client::new()
        .post(format!("{base}/api/v1/session"))
        .json(&json!({"email": OWNER, "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 201);
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
    OwnerSession {
        base: base.to_owned(),
        cookie,
        csrf,
    }
}

impl OwnerSession {
    /// Posts `body` as the owner: the status, the answer and the merge commit header.
    async fn post(&self, path: &str, body: Value) -> (u16, Value, Option<String>) {
        let response = reqwest::Client::new()
            .post(format!("{}{path}", self.base))
            .header("cookie", &self.cookie)
            .header("x-csrf-token", &self.csrf)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let merge = response
            .headers()
            .get("x-r2r-merge-commit")
            .map(|v| v.to_str().unwrap().to_owned());
        (status, response.json().await.unwrap_or(Value::Null), merge)
    }
}

/// The Python demo target goes through the same loop as ShopLite: Tallybook in its local
/// forge (seeded as `r2r setup` seeds it), the `python` profile, the scripted crew in-process.
/// The reporter's words reach a pytest reproduction measured in the sandbox, the reporter's
/// yes reaches a fix of `tallybook/split.py` whose suite and checks ran green, and a review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_target_goes_from_report_to_a_reviewed_fix() {
    if !common::docker_here().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("tallybook.git");
    server::cli::demo_run::seed_tallybook(&common::repo_root().join("tallybook"), &bare)
        .await
        .unwrap();
    let (_server, desk, _, _) = crew_desk(
        dir.path(),
        &[
            ("R2R_LOCAL_FORGE", bare.to_str().unwrap()),
            ("R2R_SANDBOX_BACKEND", "docker"),
            ("R2R_TARGET_PROFILE", "python"),
            ("R2R_FIX_ALLOWED_PATHS", "tallybook/"),
            ("R2R_COMPONENTS", "tallybook"),
            ("R2R_CREW_COMPONENTS", "tallybook"),
            ("R2R_MODEL_PROVIDER", "scripted"),
        ],
    );
    let (bug, capability) = common::file_report(
        &desk.base,
        json!({
            "component": "tallybook",
            "title": "Splitting the dinner bill loses a paisa",
            "what_happened": "We were three at dinner, ₹100 in all. Split evenly, each share is ₹33.33 and together they only add up to ₹99.99.",
            "expected": "The shares add up to the whole bill, ₹100.00",
            "steps": "Add a ₹100 expense, split it between 3 people, add up the shares",
        }),
    )
    .await;
    let view = bug_in(
        &desk,
        &bug,
        &["awaiting_reporter"],
        "the reproduction question",
        Duration::from_secs(180),
    )
    .await;
    let evidence = view.to_string();
    assert!(
        evidence.contains(crew::scripted::SPLIT_TEST_NAME)
            && evidence.contains("do not add up to ₹100.00"),
        "the pytest assertion is the evidence: {view}"
    );
    let question = confirm_reproduction(&desk.base, &capability).await;
    assert!(
        question.to_string().contains("₹99.99"),
        "the reporter reads the reproduction in their terms: {question}"
    );
    let bug_for_wait = bug.clone();
    let (base, manager) = (desk.base.clone(), desk.token(Role::Manager).to_owned());
    wait_for("the fix's review", Duration::from_secs(240), || {
        let (base, manager, bug) = (base.clone(), manager.clone(), bug_for_wait.clone());
        Box::pin(async move {
            let status: Value = reqwest::Client::new()
                .get(format!("{base}/api/v1/crew"))
                .bearer_auth(&manager)
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            status["tasks"]
                .as_array()?
                .iter()
                .any(|t| {
                    t["kind"] == "review" && t["bug"] == bug.as_str() && t["completed_at"].is_i64()
                })
                .then_some(status)
        })
    })
    .await;
    let (_, view) = desk
        .call("GET", &format!("/api/v1/bugs/{bug}"), Role::Manager, None)
        .await;
    assert_eq!(view["bug"]["state"], "in_review", "{view}");
    assert_eq!(
        view["bug"]["pull_request"]["changed_paths"],
        json!([
            crew::scripted::SPLIT_SOURCE_PATH,
            crew::scripted::SPLIT_TEST_PATH
        ]),
        "{view}"
    );
    let head = view["bug"]["pull_request"]["head"].as_str().unwrap();
    let shown = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(&bare)
        .args([
            "show",
            &format!("{head}:{}", crew::scripted::SPLIT_SOURCE_PATH),
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("divmod(total.paise, people)"),
        "the draft's head carries the fix: {}",
        String::from_utf8_lossy(&shown.stderr)
    );
}

/// Runs `r2r project …` against the database at `url`; exit code, stdout and stderr.
fn project_cli(dir: &std::path::Path, url: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let env_file = dir.join("project.env");
    // The desk's own environment: its project `default` is ShopLite in `dir`.
    std::fs::write(
        &env_file,
        format!(
            "DATABASE_URL={url}\nR2R_COMPONENTS=shoplite\nR2R_LOCAL_FORGE={}\n",
            dir.join("shoplite.git").display()
        ),
    )
    .unwrap();
    let output = common::r2r_with_env_file(&env_file)
        .arg("project")
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// One desk, two projects: ShopLite configured by the environment (Rust) and Tallybook added
/// with `r2r project add` while the desk runs (Python). Each report goes to its component's
/// project: its forge, its profile, its folders; the evidence names the project. Bad
/// definitions are refused with the flag named, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_desk_serves_two_projects_each_bug_in_its_own_repository_and_language() {
    if !common::docker_here().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let shoplite = common::shoplite_forge(dir.path()).await;
    let tallybook = dir.path().join("tallybook.git");
    server::cli::demo_run::seed_tallybook(&common::repo_root().join("tallybook"), &tallybook)
        .await
        .unwrap();
    let tokens = tokens();
    let mut env = env_of(&tokens);
    env.extend(
        [
            ("R2R_LOCAL_FORGE", shoplite.display().to_string()),
            ("R2R_SANDBOX_BACKEND", "docker".to_owned()),
            ("R2R_COMPONENTS", "shoplite".to_owned()),
            ("R2R_CREW_COMPONENTS", "shoplite".to_owned()),
            ("R2R_MODEL_PROVIDER", "scripted".to_owned()),
            ("R2R_RATE_INTAKE", "100/60s".to_owned()),
        ]
        .map(|(k, v)| (k.to_owned(), v)),
    );
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let server = common::start_server_with(&url, &pairs);
    let desk = Desk::at(&server.base, &tokens);
    let client = reqwest::Client::new();
    let file = |component: &str, title: &str, what: &str| {
        client
            .post(format!("{}/api/v1/reports", desk.base))
            .json(&json!({
                "component": component, "title": title, "what_happened": what,
                "expected": "It adds up", "steps": "See above",
            }))
            .send()
    };
    // Not a component yet.
    assert_eq!(
        file(
            "tallybook",
            "Split loses a paisa",
            "₹100 three ways is ₹99.99"
        )
        .await
        .unwrap()
        .status(),
        422
    );

    // Refusals name the flag and write nothing.
    let tally = tallybook.to_str().unwrap();
    let work_tree = dir.path().join("work/.git");
    let work_tree = work_tree.to_str().unwrap();
    let shop = shoplite.to_str().unwrap();
    for (args, flag) in [
        // A work tree's .git is not a bare repository (its checked-out branch would move).
        (
            vec![
                "--profile",
                "python",
                "--components",
                "tallybook",
                "--forge",
                work_tree,
            ],
            "--forge",
        ),
        // Another project's repository.
        (
            vec![
                "--profile",
                "python",
                "--components",
                "tallybook",
                "--forge",
                shop,
            ],
            "--forge",
        ),
        (
            vec![
                "--profile",
                "python",
                "--components",
                "tallybook",
                "--forge",
                tally,
                "--fix-paths",
                ".git",
            ],
            "--fix-paths",
        ),
        (
            vec![
                "--profile",
                "python",
                "--components",
                "tallybook",
                "--forge",
                tally,
                "--name",
                "Tally\u{202e}book",
            ],
            "--name",
        ),
        (
            vec![
                "--profile",
                "cobol",
                "--components",
                "tallybook",
                "--forge",
                tally,
            ],
            "--profile",
        ),
        (
            vec![
                "--profile",
                "python",
                "--components",
                "shoplite",
                "--forge",
                tally,
            ],
            "--components",
        ),
        (
            vec![
                "--profile",
                "python",
                "--components",
                "tallybook",
                "--forge",
                "/nonexistent/x.git",
            ],
            "--forge",
        ),
        (
            vec![
                "--profile",
                "python",
                "--components",
                "tallybook",
                "--forge",
                tally,
                "--fix-paths",
                "../etc",
            ],
            "--fix-paths",
        ),
    ] {
        let mut all = vec!["add", "--id", "tallybook"];
        all.extend(args);
        let (code, _, stderr) = project_cli(dir.path(), &url, &all);
        assert_ne!(code, Some(0), "{all:?}");
        assert!(stderr.contains(flag), "{all:?}: {stderr}");
    }
    let (code, _, stderr) = project_cli(
        dir.path(),
        &url,
        &[
            "add",
            "--id",
            "default",
            "--profile",
            "python",
            "--components",
            "x",
            "--forge",
            tally,
        ],
    );
    assert_ne!(code, Some(0));
    assert!(stderr.contains("--id"), "{stderr}");
    let (_, listed, _) = project_cli(dir.path(), &url, &["list"]);
    assert_eq!(
        listed.lines().count(),
        2,
        "only the environment's project: {listed}"
    );

    let (code, stdout, stderr) = project_cli(
        dir.path(),
        &url,
        &[
            "add",
            "--id",
            "tallybook",
            "--name",
            "Tallybook",
            "--components",
            "tallybook,splits",
            "--forge",
            tally,
            "--profile",
            "python",
            "--fix-paths",
            "tallybook",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("added     tallybook"), "{stdout}");
    let (code, _, stderr) = project_cli(
        dir.path(),
        &url,
        &[
            "add",
            "--id",
            "tallybook",
            "--components",
            "other",
            "--forge",
            tally,
            "--profile",
            "go",
        ],
    );
    assert_ne!(code, Some(0));
    assert!(stderr.contains("exists already"), "{stderr}");
    let (_, listed, _) = project_cli(dir.path(), &url, &["list"]);
    assert!(
        listed.contains("tallybook      tallybook,splits       python   on    tallybook/"),
        "{listed}"
    );

    // The running desk serves it within a second or two.
    let started = std::time::Instant::now();
    let filed: Value = loop {
        let response = file(
            "splits",
            "Splitting the dinner bill loses a paisa",
            "Three of us, ₹100 in all: each share is ₹33.33 and they add up to ₹99.99",
        )
        .await
        .unwrap();
        let status = response.status();
        if status == 201 {
            break response.json().await.unwrap();
        }
        assert_eq!(status, 422, "{}", response.text().await.unwrap());
        assert!(started.elapsed() < Duration::from_secs(10), "never served");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let tally_bug = filed["bug_id"].as_str().unwrap().to_owned();
    let shop: Value = file(
        "shoplite",
        "SAVE300 makes the total negative",
        "The coupon makes the total -₹100",
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let shop_bug = shop["bug_id"].as_str().unwrap().to_owned();

    // Both reach the reporter's question, each measured in its own project.
    for (bug, project, profile, test) in [
        (
            &tally_bug,
            "tallybook",
            "python",
            crew::scripted::SPLIT_TEST_PATH,
        ),
        (
            &shop_bug,
            "default",
            "rust",
            crew::scripted::COUPON_TEST_PATH,
        ),
    ] {
        let base = desk.base.clone();
        let manager = desk.token(Role::Manager).to_owned();
        let bug = bug.clone();
        let view = wait_for("a measured reproduction", Duration::from_secs(180), || {
            let (base, manager, bug) = (base.clone(), manager.clone(), bug.clone());
            Box::pin(async move {
                let view: Value = reqwest::Client::new()
                    .get(format!("{base}/api/v1/bugs/{bug}"))
                    .bearer_auth(&manager)
                    .send()
                    .await
                    .ok()?
                    .json()
                    .await
                    .ok()?;
                (view["bug"]["state"] == "awaiting_reporter").then_some(view)
            })
        })
        .await;
        assert_eq!(view["bug"]["reproduction"]["test_path"], test, "{view}");
        let evidence_id = view["bug"]["reproduction"]["id"].as_str().unwrap();
        let ledger = store::Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
            .await
            .unwrap();
        let evidence = ledger.evidence_for(&bug).await.unwrap();
        let rerun = evidence.iter().find(|e| e.id == evidence_id).unwrap();
        let body = &rerun.body;
        assert_eq!(
            (body["project"].as_str(), body["profile"].as_str()),
            (Some(project), Some(profile)),
            "{body}"
        );
    }

    // The spend is booked to each project.
    let (_, crew_status) = desk.call("GET", "/api/v1/crew", Role::Manager, None).await;
    let by_project = crew_status["spend"]["by_project"].as_array().unwrap();
    for project in ["default", "tallybook"] {
        let row = by_project.iter().find(|r| r["project"] == project).unwrap();
        // Triage, the test, its review (the scripted model costs $0: calls are what show).
        assert_eq!(row["calls"].as_u64(), Some(3), "{crew_status}");
    }

    // An edit: the crew no longer works Tallybook's bugs; a new one waits for people.
    let (code, _, stderr) = project_cli(
        dir.path(),
        &url,
        &["edit", "--id", "tallybook", "--crew", "off"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let (code, _, stderr) = project_cli(
        dir.path(),
        &url,
        &["edit", "--id", "default", "--crew", "off"],
    );
    assert_ne!(code, Some(0));
    assert!(stderr.contains("environment"), "{stderr}");
    let (_, listed, _) = project_cli(dir.path(), &url, &["list"]);
    assert!(listed.contains("python   off"), "{listed}");
    // A stored definition that no longer reads: its bugs go to no project (never to another
    // project's code), the list says so, and a whole edit serves it again.
    let ledger = store::Store::connect(&store::DatabaseUrl::parse(&url).unwrap())
        .await
        .unwrap();
    drop(ledger);
    {
        use sqlx::Connection;
        let path = url.trim_start_matches("sqlite://");
        let mut raw = sqlx::SqliteConnection::connect(&format!("sqlite://{path}"))
            .await
            .unwrap();
        sqlx::query(
            "UPDATE projects SET spec = '{', updated_at = updated_at + 1 WHERE id = 'tallybook'",
        )
        .execute(&mut raw)
        .await
        .unwrap();
    }
    let (_, listed, _) = project_cli(dir.path(), &url, &["list"]);
    assert!(listed.contains("tallybook      NOT SERVED"), "{listed}");
    let started = Instant::now();
    loop {
        let crew_status = desk
            .call("GET", "/api/v1/crew", Role::Manager, None)
            .await
            .1;
        if crew_status["spend"]["by_project"]
            .as_array()
            .is_some_and(|rows| !rows.iter().any(|r| r["project"] == "tallybook"))
        {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{crew_status}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Its components take no reports, and its bugs are with no project's code: a reproduction
    // context for the Tallybook bug cannot be built from ShopLite's repository.
    assert_eq!(
        file("splits", "Split loses a paisa", "₹100 three ways")
            .await
            .unwrap()
            .status(),
        422
    );
    let (status, refused) = desk
        .call(
            "GET",
            &format!("/api/v1/bugs/{tally_bug}/fix/context"),
            Role::Fixer,
            None,
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    let (code, _, stderr) = project_cli(
        dir.path(),
        &url,
        &[
            "edit",
            "--id",
            "tallybook",
            "--name",
            "Tallybook",
            "--components",
            "tallybook,splits",
            "--forge",
            tally,
            "--profile",
            "python",
            "--fix-paths",
            "tallybook",
            "--crew",
            "off",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let (_, listed, _) = project_cli(dir.path(), &url, &["list"]);
    assert!(!listed.contains("NOT SERVED"), "{listed}");

    // A component its bugs name cannot be given up (they would move to another repository).
    let (code, _, stderr) = project_cli(
        dir.path(),
        &url,
        &["edit", "--id", "tallybook", "--components", "tallybook"],
    );
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("--components") && stderr.contains("\"splits\" is named by 1 bug"),
        "{stderr}"
    );
    // Nor can the branch its bugs were measured on change under them.
    let (code, _, stderr) = project_cli(
        dir.path(),
        &url,
        &["edit", "--id", "tallybook", "--branch", "release"],
    );
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("--branch")
            && stderr.contains("were measured, merged and released on main"),
        "{stderr}"
    );
}

/// Fault injection (127.0.0.1 only, bounded): the crew runs as its own `r2r crew run` process
/// beside the desk and is killed with SIGKILL while it reproduces and again while it fixes; a
/// new crew process is started each time. The dead worker's lease runs out (3 s), the new one
/// takes the task, and the loop still reaches the reporter's question and the draft.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crew_process_killed_mid_step_is_replaced_and_the_loop_goes_on() {
    if !common::docker_here().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = common::shoplite_forge(dir.path()).await;
    let (_server, desk, _, env) = crew_desk(
        dir.path(),
        &[
            ("R2R_LOCAL_FORGE", bare.to_str().unwrap()),
            ("R2R_SANDBOX_BACKEND", "docker"),
            ("R2R_CREW", "off"),
            ("R2R_CREW_TASK_LEASE", "3"),
        ],
    );
    let env_file = dir.path().join("crew.env");
    let lines: String = env
        .iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .chain(["R2R_MODEL_PROVIDER=scripted\n".to_owned()])
        .collect();
    std::fs::write(&env_file, lines).unwrap();
    let crew = || {
        common::r2r_with_env_file(&env_file)
            .args(["crew", "run", "--desk", &desk.base, "--poll-ms", "200"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (bug, capability) = common::file_report(&desk.base, coupon_report()).await;
    let reach = |wanted: &'static [&'static str], what: &'static str| {
        bug_in(&desk, &bug, wanted, what, Duration::from_secs(240))
    };
    // Killed as soon as the task is in hand (the crew reproduces or has just proposed).
    let mut first = crew();
    let at = reach(
        &["reproducing", "awaiting_reporter"],
        "the crew to take the bug",
    )
    .await;
    first.kill().unwrap();
    first.wait().unwrap();
    eprintln!("first crew killed at {}", at["bug"]["state"]);
    let mut second = crew();
    confirm_reproduction(&desk.base, &capability).await;
    let at = reach(&["fixing", "in_review"], "the crew to take the fix").await;
    second.kill().unwrap();
    second.wait().unwrap();
    eprintln!("second crew killed at {}", at["bug"]["state"]);
    let mut third = crew();
    reach(&["in_review"], "the draft after the new crew").await;
    // Nothing stayed open or was done twice: each step has completed tasks, and one draft.
    steps_all_completed(&desk, &bug).await;
    third.kill().unwrap();
    third.wait().unwrap();
    let (_, view) = desk
        .call("GET", &format!("/api/v1/bugs/{bug}"), Role::Manager, None)
        .await;
    assert_eq!(
        view["bug"]["pull_request"]["number"], 1,
        "one draft: {view}"
    );
}

/// A stand-in for the Docker daemon's socket that can be taken down and brought back: a
/// unix-socket proxy at `path` to the real engine. Down, nothing listens there (as when
/// `dockerd` stops); up again, connections go through.
struct DockerSwitch {
    path: std::path::PathBuf,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl DockerSwitch {
    fn new(path: std::path::PathBuf) -> Self {
        DockerSwitch { path, server: None }
    }

    fn up(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let listener = tokio::net::UnixListener::bind(&self.path).unwrap();
        self.server = Some(tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if let Ok(mut engine) =
                        tokio::net::UnixStream::connect("/var/run/docker.sock").await
                    {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut engine).await;
                    }
                });
            }
        }));
    }

    fn down(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Fault injection (127.0.0.1 and a unix socket only, bounded): Docker is unreachable when the
/// crew reproduces, so each try fails and the bug goes to a person with the reason; Docker
/// comes back (no restart of the desk); an owner gives the bug back to the crew and it reaches
/// the reporter's question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_unreachable_then_back_the_bug_waits_with_a_person_then_goes_on() {
    if !common::docker_here().await || !std::path::Path::new("/var/run/docker.sock").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = common::shoplite_forge(dir.path()).await;
    let bare = bare.display().to_string();
    let socket = dir.path().join("docker.sock");
    let mut docker = DockerSwitch::new(socket.clone());
    let docker_host = format!("unix://{}", socket.display());
    let desk = common::owner_desk(&[
        ("R2R_MODEL_PROVIDER", "scripted"),
        ("R2R_LOCAL_FORGE", &bare),
        ("R2R_SANDBOX_BACKEND", "docker"),
        ("DOCKER_HOST", &docker_host),
        ("R2R_CREW_RETRIES", "2"),
        ("R2R_CREW_RETRY_BACKOFF", "1"),
    ]);
    let base = desk.server.base.clone();
    let (bug, capability) = common::file_report(
        &base,
        json!({"component": "shoplite", "title": "SAVE300 makes the total negative",
               "what_happened": "The total shows -₹100", "expected": "A total of ₹0",
               "steps": "Cart of ₹200, coupon SAVE300"}),
    )
    .await;
    let crew = Desk::at(&base, &desk.tokens);
    let handed = bug_in(
        &crew,
        &bug,
        &["needs_human"],
        "a person to get the bug while Docker is down",
        Duration::from_secs(120),
    )
    .await;
    assert_eq!(handed["bug"]["needs_human"], "crew_step_failed", "{handed}");

    docker.up();
    let client = reqwest::Client::new();
    let (cookie, csrf) = common::sign_in(&client, &base, common::OWNER, common::PASSWORD).await;
    let retried = client
        .post(format!("{base}/api/v1/bugs/{bug}/retry"))
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(retried.status(), 200);
    bug_in(
        &crew,
        &bug,
        &["awaiting_reporter"],
        "the reporter's question once Docker is back",
        Duration::from_secs(180),
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
    assert_eq!(tracking["question"]["kind"], "reproduction", "{tracking}");
    docker.down();
}

/// A worker that asks for tasks with `wait_ms` is answered the moment one is sent to it —
/// through the same server (SQLite), and through another server on the same PostgreSQL,
/// woken by the database's notice — not when its wait is over; with nothing sent, it gets an
/// empty list once the wait is over. A wait out of bounds is refused by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_worker_gets_a_task_the_moment_it_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens();
    let env = env_of(&tokens);
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut databases = vec![format!("sqlite://{}/desk.db", dir.path().display())];
    if std::env::var("R2R_TEST_POSTGRES_URL").is_ok() {
        let store::DatabaseUrl::Postgres { url } = store::testing::fresh_postgres().await else {
            unreachable!()
        };
        databases.push(url);
    }
    for (n, database) in databases.iter().enumerate() {
        let sender = common::start_server_with(database, &pairs);
        // On PostgreSQL the worker waits at a second server: the notice must cross.
        let second = database
            .starts_with("postgres")
            .then(|| common::start_server_with(database, &pairs));
        let waiter_base = second
            .as_ref()
            .map_or(sender.base.clone(), |s| s.base.clone());
        let send_to = Desk::at(&sender.base, &tokens);
        let wait_at = Desk::at(&waiter_base, &tokens);
        let (status, refused) = wait_at
            .call("GET", "/api/v1/crew/tasks?wait_ms=25001", Role::Fixer, None)
            .await;
        assert_eq!(
            (status, refused["error"].as_str()),
            (422, Some("invalid_wait"))
        );
        let started = std::time::Instant::now();
        let (status, empty) = wait_at
            .call("GET", "/api/v1/crew/tasks?wait_ms=600", Role::Fixer, None)
            .await;
        assert_eq!(status, 200);
        assert_eq!(empty["tasks"].as_array().unwrap().len(), 0);
        assert!(started.elapsed() >= std::time::Duration::from_millis(600));

        let waiting = tokio::spawn(async move {
            let asked = std::time::Instant::now();
            let answer = wait_at
                .call("GET", "/api/v1/crew/tasks?wait_ms=20000", Role::Fixer, None)
                .await;
            (answer, asked.elapsed())
        });
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let body = format!(r#"{{"bug":"bug-{n}","version":1}}"#);
        let (status, task) = send_to
            .call(
                "POST",
                "/api/v1/crew/tasks",
                Role::Manager,
                Some(
                    json!({"addressed_to": "fixer", "kind": "fix", "bug": format!("bug-{n}"),
                            "body": body, "dedupe_key": format!("fix:bug-{n}:v1")}),
                ),
            )
            .await;
        assert_eq!(status, 201, "{task}");
        let ((status, open), waited) = waiting.await.unwrap();
        assert_eq!(status, 200, "{open}");
        assert_eq!(open["tasks"][0]["id"], task["id"], "{database}: {open}");
        assert!(
            waited < std::time::Duration::from_secs(10),
            "{database}: answered when the task was sent, not when the wait was over ({waited:?})"
        );
    }
}
