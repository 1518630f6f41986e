//! `r2r crew reproduce` against a running desk with a local forge holding ShopLite and the
//! Docker sandbox: the scripted provider's test is re-run by the desk and recorded; a prompt
//! outside the script proposes nothing; the OpenAI-compatible client, talking to a double on
//! 127.0.0.1, gets its call reserved and settled at the reported tokens' price.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use axum::routing::post;
use axum::{Json, Router};
use domain::Role;
use serde_json::{json, Value};

async fn double() -> String {
    let content = json!({
        "test_path": crew::scripted::COUPON_TEST_PATH,
        "test_name": crew::scripted::COUPON_TEST_NAME,
        "test_source": crew::scripted::COUPON_TEST,
    })
    .to_string();
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |Json(_body): Json<Value>| {
            let content = content.clone();
            async move {
                Json(json!({
                    "id": "chatcmpl-7", "object": "chat.completion", "model": "local-coder-7b",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1_000, "completion_tokens": 500, "total_tokens": 1_500},
                }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reproducer_proposes_and_the_desk_decides() {
    if std::env::var("R2R_SANDBOX_REQUIRED").as_deref() != Ok("1")
        && sandbox::connect(sandbox::Backend::Docker, sandbox::docker::DEFAULT_IMAGE)
            .await
            .is_err()
    {
        eprintln!("SKIPPED: no Docker sandbox here (./scripts/sandbox-host.sh prepares one)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (bare, _work) = common::local_forge_with(dir.path(), "shoplite", |work| {
        server::cli::demo::prepare_scratch(&common::repo_root().join("shoplite"), work, false)
            .unwrap();
        std::fs::remove_dir_all(work.join("tests")).unwrap();
    })
    .await;
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let reproducer = server::cli::setup::new_role_token(Role::Reproducer);
    let server = common::start_server_with(
        &url,
        &[
            ("R2R_REPRODUCER_TOKEN", reproducer.as_str()),
            ("R2R_LOCAL_FORGE", bare.to_str().unwrap()),
            ("R2R_SANDBOX_BACKEND", "docker"),
        ],
    );
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let file = |component: &str, title: &str, what: &str| {
        let request = client.post(format!("{base}/api/v1/reports")).json(&json!({
            "component": component, "title": title, "what_happened": what,
            "expected": "A total of ₹0", "steps": "Cart of ₹200, coupon SAVE300",
        }));
        async move {
            let filed: Value = request.send().await.unwrap().json().await.unwrap();
            filed["bug_id"].as_str().unwrap().to_owned()
        }
    };
    let coupon = file(
        "shoplite",
        "SAVE300 makes the total negative",
        "The total shows -₹100",
    )
    .await;
    let blurry = file(
        "shoplite",
        "The logo is blurry on my phone",
        "It looks pixelated",
    )
    .await;
    let elsewhere = file(
        "desk",
        "The desk's menu overlaps the logo",
        "Overlapping text",
    )
    .await;

    let env_file = dir.path().join("crew.env");
    let crew_env = |extra: &str| {
        std::fs::write(
            &env_file,
            format!("R2R_REPRODUCER_TOKEN={reproducer}\n{extra}"),
        )
        .unwrap();
    };
    let reproduce = |bug: &str| {
        common::r2r_with_env_file(&env_file)
            .args(["crew", "reproduce", "--bug", bug, "--desk", &base])
            .output()
            .unwrap()
    };

    // No provider configured: nothing happens, and it says which variable.
    crew_env("");
    let output = reproduce(&coupon);
    assert_ne!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stderr).contains("R2R_MODEL_PROVIDER is not set"));

    crew_env("R2R_MODEL_PROVIDER=scripted\n");
    let output = reproduce(&coupon);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(answer["state"], "awaiting_reporter");
    assert_eq!(answer["desk_run"]["backend"], "docker");
    assert_eq!(answer["advisory_review"], "recorded as a note", "{answer}");

    let output = reproduce(&blurry);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no scripted answer"));
    // Outside the crew's components: the desk escalates, and no model is called.
    let output = reproduce(&elsewhere);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("needs_human"));

    // A hosted-style provider (the double), priced: 1,000 tokens in at $0.60/M and 500 out at
    // $2.40/M = 600 + 1,200 µ$.
    let api = double().await;
    let negative = file(
        "shoplite",
        "Checkout shows minus one hundred rupees after a coupon",
        "-₹100",
    )
    .await;
    crew_env(&format!(
        "R2R_MODEL_PROVIDER=openai-compatible\nR2R_MODEL_BASE_URL={api}\nR2R_MODEL_NAME=local-coder-7b\nR2R_MODEL_PRICE_INPUT=0.60\nR2R_MODEL_PRICE_OUTPUT=2.40\nR2R_MODEL_MAX_TOKENS=2000\n"
    ));
    let output = reproduce(&negative);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let book: Value = client
        .get(format!("{base}/api/v1/spend"))
        .bearer_auth(&reproducer)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // Scripted: the test and its advisory review; unscripted: one failed call; out of scope:
    // none; the double: the test and a review whose answer broke the schema (still paid).
    assert_eq!(book["book"]["calls"], 5, "{book}");
    assert_eq!(book["book"]["open_calls"], 0, "every call settled: {book}");
    assert_eq!(book["book"]["settled"], 3_600, "{book}");
}
