//! The spend guard over HTTP: crew roles reserve and settle, a call over the per-call cap or
//! past the budget is a 429 that names the limit, owners read the book, a bad budget setting
//! stops the server with the variable's name.

use crate::common::{self, TestDesk};

use domain::Role;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crew_calls_reserve_settle_and_stop_at_the_budget() {
    let desk = TestDesk::with()
        .roles(&[Role::Reproducer, Role::Concierge])
        .envs(&[
            ("R2R_SPEND_TOTAL", "0.05"),
            ("R2R_SPEND_PER_BUG", "0.04"),
            // This test is about the total and the per-bug budget; the share of unconfirmed
            // bugs has a test of its own.
            ("R2R_SPEND_UNCONFIRMED_PERCENT", "100"),
        ])
        .start()
        .await;
    let base = desk.base.clone();
    let reproducer = desk.token(Role::Reproducer).to_owned();
    let concierge = desk.token(Role::Concierge).to_owned();
    let (bug_a, _) = common::file_report(
        &base,
        json!({"component": "shoplite", "title": "SAVE300 makes the total negative",
               "what_happened": "The total shows -₹100", "expected": "₹0", "steps": "Apply SAVE300"}),
    )
    .await;
    let (bug_b, _) = common::file_report(
        &base,
        json!({"component": "desk", "title": "The menu overlaps the logo",
               "what_happened": "Overlapping text", "expected": "No overlap", "steps": "Open the desk"}),
    )
    .await;
    let client = reqwest::Client::new();
    let post = |path: &str, token: &str, body: Value| {
        let request = client
            .post(format!("{base}{path}"))
            .bearer_auth(token)
            .json(&body);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let on = |bug: &str, micros: u64| json!({"provider": "openai-compatible", "model": "local-coder-7b", "worst_case_micros": micros, "bug": bug});
    let call = |micros: u64| on(&bug_b, micros);

    let (status, first) = post("/api/v1/model-calls", &reproducer, on(&bug_a, 30_000)).await;
    assert_eq!(status, 201, "{first}");
    let (status, refused) = post("/api/v1/model-calls", &reproducer, on(&bug_a, 30_001)).await;
    assert_eq!(status, 429);
    assert_eq!(refused["refusal"]["reason"], "over_per_call");
    // 0.04 $ per bug: 0.03 is reserved for bug A, another 0.015 on it does not fit…
    let (status, refused) = post("/api/v1/model-calls", &reproducer, on(&bug_a, 15_000)).await;
    assert_eq!(status, 429, "{refused}");
    assert_eq!(refused["refusal"]["reason"], "over_bug_budget");
    assert_eq!(refused["refusal"]["left"], 10_000);
    // …and 0.05 $ in all: another 0.03, on bug B, does not fit either.
    let (status, refused) = post("/api/v1/model-calls", &reproducer, call(30_000)).await;
    assert_eq!(status, 429, "{refused}");
    assert_eq!(refused["refusal"]["reason"], "over_budget");
    // A call names a bug the desk holds: none, or a made-up one, is refused before the book.
    let mut nameless = call(1);
    nameless.as_object_mut().unwrap().remove("bug");
    let (status, _) = post("/api/v1/model-calls", &reproducer, nameless).await;
    assert_eq!(status, 422);
    let (status, refused) = post("/api/v1/model-calls", &reproducer, on("bug-made-up", 1)).await;
    assert_eq!(status, 404, "{refused}");
    // A timeout keeps the worst case booked; 0.02 still fits.
    let id = first["id"].as_str().unwrap();
    let (status, _) = post(
        &format!("/api/v1/model-calls/{id}/settle"),
        &reproducer,
        json!({"outcome": "timed_out", "cost_micros": 10}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = post(
        &format!("/api/v1/model-calls/{id}/settle"),
        &reproducer,
        json!({"outcome": "answered"}),
    )
    .await;
    assert_eq!(status, 409, "settled once");
    let (status, _) = post("/api/v1/model-calls", &reproducer, call(20_000)).await;
    assert_eq!(status, 201);
    // The concierge has no business here; bad bodies are named.
    let (status, _) = post("/api/v1/model-calls", &concierge, call(1)).await;
    assert_eq!(status, 401);
    let (status, _) = post("/api/v1/model-calls", &reproducer, json!({"provider": "x"})).await;
    assert_eq!(status, 422);

    let book: Value = client
        .get(format!("{base}/api/v1/spend"))
        .bearer_auth(&reproducer)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(book["budget"]["total"], 50_000);
    assert_eq!(book["book"]["committed"], 50_000);
    assert_eq!(book["book"]["settled"], 30_000);
    assert_eq!(book["book"]["calls"], 2);
}

/// Strangers cannot starve confirmed bugs: calls about bugs nobody confirmed or promoted take at
/// most R2R_SPEND_UNCONFIRMED_PERCENT of the budget together (here half of $0.12); an owner's
/// promotion moves a bug to the other half, through the API and the desk alike, and no one
/// else may promote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unconfirmed_bugs_take_their_share_and_a_promoted_bug_the_rest() {
    let desk = common::owner_desk(&[
        ("R2R_SPEND_TOTAL", "0.12"),
        ("R2R_SPEND_UNCONFIRMED_PERCENT", "50"),
    ]);
    let base = desk.server.base.clone();
    let mut bugs = Vec::new();
    for (title, steps) in [
        ("SAVE300 makes the total negative", "Apply SAVE300"),
        ("The menu overlaps the logo", "Open the desk"),
        ("Search for teapot returns shoes", "Search teapot"),
    ] {
        let (bug, _) = common::file_report(
            &base,
            json!({"component": "shoplite", "title": title, "what_happened": title,
                   "expected": "no bug", "steps": steps}),
        )
        .await;
        bugs.push(bug);
    }
    let client = reqwest::Client::new();
    let manager = desk.tokens[&Role::Manager].clone();
    let reserve = |bug: &str| {
        client
            .post(format!("{base}/api/v1/model-calls"))
            .bearer_auth(&manager)
            .json(&json!({"provider": "openai-compatible", "model": "m", "worst_case_micros": 30_000, "bug": bug}))
            .send()
    };
    assert_eq!(reserve(&bugs[0]).await.unwrap().status(), 201);
    assert_eq!(reserve(&bugs[1]).await.unwrap().status(), 201);
    // $0.06 of unconfirmed work is booked: a third stranger's bug waits, with the reason.
    let refused = reserve(&bugs[2]).await.unwrap();
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(
        body["refusal"]["reason"], "over_unconfirmed_share",
        "{body}"
    );
    assert_eq!(body["refusal"]["share"], 60_000, "{body}");

    // Only an owner promotes: not the crew, not a stranger, not a session without its token.
    let promote = format!("{base}/api/v1/bugs/{}/promote", bugs[2]);
    let by_crew = client
        .post(&promote)
        .bearer_auth(&manager)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(by_crew.status(), 403, "{}", by_crew.text().await.unwrap());
    let anonymous = client.post(&promote).json(&json!({})).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let (cookie, csrf) = common::sign_in(&client, &base, common::OWNER, common::PASSWORD).await;
    let no_csrf = client
        .post(&promote)
        .header("cookie", &cookie)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(no_csrf.status(), 403);
    let promoted = client
        .post(&promote)
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(promoted.status(), 200, "{}", promoted.text().await.unwrap());
    // The promoted bug's calls come from the other half; the strangers' half stays spent.
    assert_eq!(reserve(&bugs[2]).await.unwrap().status(), 201);
    let refused: Value = reserve(&bugs[0]).await.unwrap().json().await.unwrap();
    assert_eq!(
        refused["refusal"]["reason"], "over_unconfirmed_share",
        "{refused}"
    );
    assert_eq!(reserve(&bugs[2]).await.unwrap().status(), 201);
    // Then the whole budget is spent, for everyone.
    let refused: Value = reserve(&bugs[2]).await.unwrap().json().await.unwrap();
    assert_eq!(refused["refusal"]["reason"], "over_budget", "{refused}");
    // The bug view offers no second promotion; its ledger names the owner's promotion.
    let view = client
        .get(format!("{base}/desk/bugs/{}", bugs[2]))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!view.contains("Promote…"), "{view}");
    assert!(view.contains("promoted"), "{view}");
    let other = client
        .get(format!("{base}/desk/bugs/{}", bugs[1]))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(other.contains("Promote…"), "{other}");
    // The crew page shows the share and what it used.
    let crew = client
        .get(format!("{base}/desk/crew"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        crew.contains("may take 50% of the budget together (R2R_SPEND_UNCONFIRMED_PERCENT): $0.06 of $0.06 used"),
        "{crew}"
    );
}

/// Spend cannot be parked on a bug no crew works on any more: a duplicate (or a verified or
/// taken-over bug) takes no booking, so a spent bug's budget cannot be dodged through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_model_call_is_booked_to_a_bug_the_crew_no_longer_works_on() {
    let desk = common::owner_desk(&[]);
    let base = desk.server.base.clone();
    let (stays, _) = common::file_report(
        &base,
        json!({"component": "shoplite", "title": "SAVE300 makes the total negative",
               "what_happened": "The total shows -₹100", "expected": "₹0", "steps": "Apply SAVE300"}),
    )
    .await;
    let (goes, _) = common::file_report(
        &base,
        json!({"component": "desk", "title": "The menu overlaps the logo",
               "what_happened": "Overlapping text", "expected": "No overlap", "steps": "Open the desk"}),
    )
    .await;
    let client = reqwest::Client::new();
    let (cookie, csrf) = common::sign_in(&client, &base, common::OWNER, common::PASSWORD).await;
    let reproducer = desk.tokens[&Role::Reproducer].clone();
    let reserve = |bug: &str| {
        client
            .post(format!("{base}/api/v1/model-calls"))
            .bearer_auth(&reproducer)
            .json(&json!({"provider": "openai-compatible", "model": "m", "worst_case_micros": 1_000, "bug": bug}))
            .send()
    };
    assert_eq!(reserve(&goes).await.unwrap().status(), 201);
    let merged = client
        .post(format!("{base}/api/v1/bugs/{goes}/duplicate"))
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .json(&json!({ "of": stays }))
        .send()
        .await
        .unwrap();
    assert_eq!(merged.status(), 200, "{}", merged.text().await.unwrap());
    let refused = reserve(&goes).await.unwrap();
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "bug_closed_to_the_crew", "{body}");
    assert_eq!(reserve(&stays).await.unwrap().status(), 201);
}

#[test]
fn a_bad_budget_setting_stops_the_server_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join("bad.env");
    std::fs::write(
        &env_file,
        format!(
            "DATABASE_URL=sqlite://{}/d.db\nR2R_SPEND_TOTAL=five dollars\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let output = common::r2r_with_env_file(&env_file)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("R2R_SPEND_TOTAL"), "{stderr}");
}
