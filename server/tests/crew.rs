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
    if !common::docker_here().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = common::shoplite_forge(dir.path()).await;
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

/// A double of a model that needs the project's code: it writes the right test only when the
/// source of `quote_form` is in its prompt and the desk's verdict on its previous test is
/// there too; its first answer never compiles. Counts the reproduction calls it answered.
async fn needs_context_double() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let calls = counted.clone();
            async move {
                let system = body["messages"][0]["content"].as_str().unwrap_or_default();
                let user = body["messages"][1]["content"].as_str().unwrap_or_default();
                let reproducing = system.starts_with("You write exactly one new automated test");
                if reproducing {
                    calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                let has_source = system.contains(
                    "pub fn quote_form(price: &str, quantity: &str, coupon: &str)",
                );
                let told_why = user.contains("the test did not compile");
                let (path, source) = if has_source && told_why {
                    ("tests/coupon_total.rs", crew::scripted::COUPON_TEST.to_owned())
                } else if has_source {
                    // Close: the right function, the wrong argument types.
                    (
                        "tests/coupon_total.rs",
                        "use shoplite::quote_form;\n#[test]\nfn save300_on_a_200_rupee_cart_is_free_not_negative() {\n    let quote = quote_form(200, 1, \"SAVE300\").unwrap();\n    assert!(quote.payable.0 >= 0.0);\n}\n".to_owned(),
                    )
                } else {
                    // A guess at an API the project does not have.
                    (
                        "tests/coupon_total.rs",
                        "use shop::checkout::total_with_coupon;\n#[test]\nfn save300_on_a_200_rupee_cart_is_free_not_negative() {\n    assert_eq!(total_with_coupon(200.0, \"SAVE300\"), 0.0);\n}\n".to_owned(),
                    )
                };
                let content = if reproducing {
                    json!({
                        "test_path": path,
                        "test_name": crew::scripted::COUPON_TEST_NAME,
                        "test_source": source,
                        "summary": "With coupon SAVE300 on a ₹200 cart the shop asks you to pay −₹100; you expected ₹0.",
                    })
                    .to_string()
                } else {
                    "{}".to_owned()
                };
                Json(json!({
                    "id": "chatcmpl-9", "object": "chat.completion", "model": "needs-context-1",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
                }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, calls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_needs_the_code_reproduces_only_with_context_and_feedback() {
    if !common::docker_here().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = common::shoplite_forge(dir.path()).await;
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let reproducer = server::cli::setup::new_role_token(Role::Reproducer);
    let fixer = server::cli::setup::new_role_token(Role::Fixer);
    // Three components, so the three reports are three bugs whatever their words.
    let server = common::start_server_with(
        &url,
        &[
            ("R2R_REPRODUCER_TOKEN", reproducer.as_str()),
            ("R2R_FIXER_TOKEN", fixer.as_str()),
            ("R2R_LOCAL_FORGE", bare.to_str().unwrap()),
            ("R2R_SANDBOX_BACKEND", "docker"),
            ("R2R_COMPONENTS", "shoplite,checkout,coupons"),
            ("R2R_CREW_COMPONENTS", "shoplite,checkout,coupons"),
            ("R2R_RATE_INTAKE", "100/60s"),
        ],
    );
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let mut bugs = Vec::new();
    for component in ["shoplite", "checkout", "coupons"] {
        let filed: Value = client
            .post(format!("{base}/api/v1/reports"))
            .json(&json!({
                "component": component,
                "title": "The coupon makes my total negative",
                "what_happened": "I put a ₹200 tea set in the cart, applied SAVE300, and the total to pay was -₹100",
                "expected": "A total of ₹0",
                "steps": "Cart of ₹200, coupon SAVE300",
            }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        bugs.push(filed["bug_id"].as_str().unwrap().to_owned());
    }
    let (api, calls) = needs_context_double().await;
    let (model, prices) = crew::config::provider_from(|name| {
        match name {
            "R2R_MODEL_PROVIDER" => Some("openai-compatible"),
            "R2R_MODEL_BASE_URL" => Some(api.as_str()),
            "R2R_MODEL_NAME" => Some("needs-context-1"),
            _ => None,
        }
        .map(str::to_owned)
    })
    .unwrap();
    let desk = crew::desk::Desk::new(&base, &reproducer).unwrap();
    let context_of = |bug: &str, token: &str| {
        client
            .get(format!("{base}/api/v1/bugs/{bug}/reproduction/context"))
            .bearer_auth(token)
            .send()
    };
    // Not reproducing yet: no context; and never for another role.
    assert_eq!(
        context_of(&bugs[0], &reproducer).await.unwrap().status(),
        409
    );
    assert_eq!(context_of(&bugs[0], &fixer).await.unwrap().status(), 403);
    let hint = server::config::project_hint(sandbox::Profile::Rust);
    let reproduced = |approach: crew::reproducer::Approach, bug: String| {
        let (desk, model, prices) = (desk.clone(), &model, prices);
        async move { crew::reproducer::reproduce(&desk, model.as_ref(), &prices, &bug, &approach).await }
    };

    // Context and feedback: the second test compiles and fails for the bug.
    let answer = reproduced(crew::reproducer::Approach::full(hint), bugs[0].clone())
        .await
        .unwrap();
    assert_eq!(answer["state"], "awaiting_reporter", "{answer}");
    assert_eq!(calls.swap(0, std::sync::atomic::Ordering::SeqCst), 2);

    // Context without feedback: three tests that do not compile, then a person.
    let spent = reproduced(
        crew::reproducer::Approach {
            feedback: false,
            ..crew::reproducer::Approach::full(hint)
        },
        bugs[1].clone(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(spent, crew::reproducer::ReproduceError::AttemptsSpent(_)),
        "{spent}"
    );
    assert_eq!(calls.swap(0, std::sync::atomic::Ordering::SeqCst), 3);
    let state_of = |bug: String| {
        let request = client
            .get(format!("{base}/api/v1/bugs/{bug}"))
            .bearer_auth(&reproducer)
            .send();
        async move {
            let view: Value = request.await.unwrap().json().await.unwrap();
            (
                view["bug"]["state"].as_str().unwrap().to_owned(),
                view["bug"]["needs_human"].clone(),
                view["bug"]["reproduction_attempts"].clone(),
            )
        }
    };
    assert_eq!(
        state_of(bugs[1].clone()).await,
        ("needs_human".to_owned(), json!("not_reproduced"), json!(3))
    );

    // What the reproducer reads: the package, how its tests import it, the map and the code.
    let started = client
        .post(format!("{base}/api/v1/bugs/{}/reproduction/start", bugs[2]))
        .bearer_auth(&reproducer)
        .send()
        .await
        .unwrap();
    assert!(started.status().is_success());
    let context: api_types::ReproductionContext = context_of(&bugs[2], &reproducer)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(context.package.as_deref(), Some("shoplite"));
    assert!(
        context.how_to_test.contains("use shoplite::"),
        "{}",
        context.how_to_test
    );
    assert_eq!(context.files[0].path, "src/lib.rs");
    assert!(context.files[0]
        .matched
        .iter()
        .any(|w| w == "coupon" || w == "save300"));
    assert!(context
        .map
        .iter()
        .any(|e| e.path == "src/lib.rs" && e.symbols.iter().any(|s| s == "quote_form")));
    assert_eq!((context.attempts, context.max_attempts), (0, 3));

    // Feedback without context: the model never sees the code, and never compiles.
    let spent = reproduced(
        crew::reproducer::Approach {
            context: false,
            ..crew::reproducer::Approach::full(hint)
        },
        bugs[2].clone(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(spent, crew::reproducer::ReproduceError::AttemptsSpent(_)),
        "{spent}"
    );
    assert_eq!(calls.swap(0, std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(state_of(bugs[2].clone()).await.0, "needs_human".to_owned());
}
