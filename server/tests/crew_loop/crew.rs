//! `r2r crew reproduce` against a running desk with a local forge holding ShopLite and the
//! Docker sandbox: the scripted provider's test is re-run by the desk and recorded; a prompt
//! outside the script proposes nothing; the OpenAI-compatible client, talking to a double on
//! 127.0.0.1, gets its call reserved and settled at the reported tokens' price.

use crate::common::{self, TestDesk};

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
    let desk = TestDesk::with()
        .shoplite()
        .roles(&[Role::Reproducer])
        .sandbox("docker")
        .start()
        .await;
    let base = desk.base.clone();
    let reproducer = desk.token(Role::Reproducer).to_owned();
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

    let env_file = desk.dir.path().join("crew.env");
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

/// What a model that needs the code writes for one target: a guess at an API the project
/// does not have (without the source), a close test that still does not load (with the
/// source), and the right test (with the source and the desk's verdict on the close one).
struct Knows {
    /// Text of the function under test, as it appears in the project.
    signature: &'static str,
    test_path: &'static str,
    test_name: &'static str,
    guess: &'static str,
    close: &'static str,
    right: &'static str,
    summary: &'static str,
}

const SHOPLITE_KNOWS: Knows = Knows {
    signature: "pub fn quote_form(price: &str, quantity: &str, coupon: &str)",
    test_path: "tests/coupon_total.rs",
    test_name: crew::scripted::COUPON_TEST_NAME,
    guess: "use shop::checkout::total_with_coupon;\n#[test]\nfn save300_on_a_200_rupee_cart_is_free_not_negative() {\n    assert_eq!(total_with_coupon(200.0, \"SAVE300\"), 0.0);\n}\n",
    // The right function, the wrong argument types.
    close: "use shoplite::quote_form;\n#[test]\nfn save300_on_a_200_rupee_cart_is_free_not_negative() {\n    let quote = quote_form(200, 1, \"SAVE300\").unwrap();\n    assert!(quote.payable.0 >= 0.0);\n}\n",
    right: crew::scripted::COUPON_TEST,
    summary: "With coupon SAVE300 on a ₹200 cart the shop asks you to pay −₹100; you expected ₹0.",
};

const TALLYBOOK_KNOWS: Knows = Knows {
    signature: "def split_evenly(total: Money, people: int) -> list:",
    test_path: "tests/test_split_adds_up.py",
    test_name: crew::scripted::SPLIT_TEST_NAME,
    guess: "from expenses.bill import divide\n\n\ndef test_three_way_split_of_100_rupees_adds_up_to_the_bill():\n    assert sum(divide(100.0, 3)) == 100.0\n",
    // The right module, a name it does not export.
    close: "from tallybook import Money, split_equally\n\n\ndef test_three_way_split_of_100_rupees_adds_up_to_the_bill():\n    assert sum(s.paise for s in split_equally(Money.rupees(100), 3)) == 10_000\n",
    right: crew::scripted::SPLIT_TEST,
    summary: crew::scripted::SPLIT_SUMMARY,
};

/// A double of a model that needs the project's code: it writes the right test only when the
/// source of the function under test is in its prompt and the desk's verdict on its previous
/// test is there too; its first answer never loads. Counts the reproduction calls it answered.
async fn needs_context_double(
    knows: &'static Knows,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
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
                let has_source = system.contains(knows.signature);
                let told_why = user.contains("the test did not compile");
                let source = match (has_source, told_why) {
                    (true, true) => knows.right,
                    (true, false) => knows.close,
                    (false, _) => knows.guess,
                };
                let content = if reproducing {
                    json!({
                        "test_path": knows.test_path,
                        "test_name": knows.test_name,
                        "test_source": source,
                        "summary": knows.summary,
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
    // Three components, so the three reports are three bugs whatever their words.
    let desk = TestDesk::with()
        .shoplite()
        .roles(&[Role::Reproducer, Role::Fixer])
        .sandbox("docker")
        .envs(&[
            ("R2R_COMPONENTS", "shoplite,checkout,coupons"),
            ("R2R_CREW_COMPONENTS", "shoplite,checkout,coupons"),
            ("R2R_RATE_INTAKE", "100/60s"),
        ])
        .start()
        .await;
    let base = desk.base.clone();
    let reproducer = desk.token(Role::Reproducer).to_owned();
    let fixer = desk.token(Role::Fixer).to_owned();
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
    let (api, calls) = needs_context_double(&SHOPLITE_KNOWS).await;
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
        matches!(spent, crew::guard::ReproduceError::AttemptsSpent(_)),
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
        matches!(spent, crew::guard::ReproduceError::AttemptsSpent(_)),
        "{spent}"
    );
    assert_eq!(calls.swap(0, std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(state_of(bugs[2].clone()).await.0, "needs_human".to_owned());
}

/// Another language's target for the same model.
struct Target {
    profile: sandbox::Profile,
    fix_paths: &'static str,
    report: Value,
    knows: &'static Knows,
    package: &'static str,
    imports: &'static str,
    module: &'static str,
}

/// The same model on another language's target. With the code and the desk's verdicts it
/// reaches the reporter's question on its second test; without either it spends its attempts
/// and the bug goes to a person.
async fn needs_the_code(target: Target, bare: std::path::PathBuf) {
    let desk = TestDesk::with()
        .roles(&[Role::Reproducer])
        .sandbox("docker")
        .envs(&[
            ("R2R_LOCAL_FORGE", bare.to_str().unwrap()),
            ("R2R_TARGET_PROFILE", target.profile.as_str()),
            ("R2R_FIX_ALLOWED_PATHS", target.fix_paths),
            ("R2R_COMPONENTS", "one,two,three"),
            ("R2R_CREW_COMPONENTS", "one,two,three"),
            ("R2R_RATE_INTAKE", "100/60s"),
        ])
        .start()
        .await;
    let base = desk.base.clone();
    let reproducer = desk.token(Role::Reproducer).to_owned();
    let client = reqwest::Client::new();
    let mut bugs = Vec::new();
    for component in ["one", "two", "three"] {
        let mut report = target.report.clone();
        report["component"] = json!(component);
        let filed: Value = client
            .post(format!("{base}/api/v1/reports"))
            .json(&report)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        bugs.push(filed["bug_id"].as_str().unwrap().to_owned());
    }
    let (api, calls) = needs_context_double(target.knows).await;
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
    let hint = server::config::project_hint(target.profile);
    let reproduced = |approach: crew::reproducer::Approach, bug: String| {
        let (desk, model, prices) = (desk.clone(), &model, prices);
        async move { crew::reproducer::reproduce(&desk, model.as_ref(), &prices, &bug, &approach).await }
    };
    let state_of = |bug: String| {
        let request = client
            .get(format!("{base}/api/v1/bugs/{bug}"))
            .bearer_auth(&reproducer)
            .send();
        async move {
            let view: Value = request.await.unwrap().json().await.unwrap();
            view["bug"]["state"].as_str().unwrap().to_owned()
        }
    };

    let answer = reproduced(crew::reproducer::Approach::full(hint), bugs[0].clone())
        .await
        .unwrap();
    assert_eq!(answer["state"], "awaiting_reporter", "{answer}");
    assert_eq!(calls.swap(0, std::sync::atomic::Ordering::SeqCst), 2);

    let started = client
        .post(format!("{base}/api/v1/bugs/{}/reproduction/start", bugs[2]))
        .bearer_auth(&reproducer)
        .send()
        .await
        .unwrap();
    assert!(started.status().is_success());
    // What the reproducer read: the package tests import and the module under test.
    let context: api_types::ReproductionContext = client
        .get(format!(
            "{base}/api/v1/bugs/{}/reproduction/context",
            bugs[2]
        ))
        .bearer_auth(&reproducer)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(context.package.as_deref(), Some(target.package));
    assert!(
        context.how_to_test.contains(target.imports),
        "{}",
        context.how_to_test
    );
    assert!(
        context
            .files
            .iter()
            .take(3)
            .any(|f| f.path == target.module),
        "{:?}",
        context.files.iter().map(|f| &f.path).collect::<Vec<_>>()
    );

    for (approach, bug) in [
        (
            crew::reproducer::Approach {
                feedback: false,
                ..crew::reproducer::Approach::full(hint)
            },
            &bugs[1],
        ),
        (
            crew::reproducer::Approach {
                context: false,
                ..crew::reproducer::Approach::full(hint)
            },
            &bugs[2],
        ),
    ] {
        let spent = reproduced(approach, bug.clone()).await.unwrap_err();
        assert!(
            matches!(spent, crew::guard::ReproduceError::AttemptsSpent(_)),
            "{spent}"
        );
        assert_eq!(calls.swap(0, std::sync::atomic::Ordering::SeqCst), 3);
        assert_eq!(state_of(bug.clone()).await, "needs_human");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_needs_tallybooks_code_reproduces_only_with_context_and_feedback() {
    if !common::docker_here().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("tallybook.git");
    server::cli::demo_run::seed_tallybook(&common::repo_root().join("tallybook"), &bare)
        .await
        .unwrap();
    let target = Target {
        profile: sandbox::Profile::Python,
        fix_paths: "tallybook/",
        report: json!({
            "title": "Splitting the bill loses a paisa",
            "what_happened": "₹100 split evenly between three people gives ₹33.33 each, which adds up to ₹99.99",
            "expected": "Shares that add up to ₹100.00",
            "steps": "Add a ₹100 expense, split it three ways",
        }),
        knows: &TALLYBOOK_KNOWS,
        package: "tallybook",
        imports: "from tallybook import",
        module: "tallybook/split.py",
    };
    needs_the_code(target, bare).await;
}

const NODE_KNOWS: Knows = Knows {
    signature: "export function payableTotal(subtotal, coupon)",
    test_path: "test/coupon.test.mjs",
    test_name: "SAVE300 on a 200 cart costs nothing",
    guess: "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { checkout } from '../lib/checkout.mjs';\n\ntest('SAVE300 on a 200 cart costs nothing', () => {\n  assert.equal(checkout(200, 'SAVE300'), 0);\n});\n",
    close: "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { payable } from '../src/cart.mjs';\n\ntest('SAVE300 on a 200 cart costs nothing', () => {\n  assert.equal(payable(200, 'SAVE300'), 0);\n});\n",
    right: "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { payableTotal } from '../src/cart.mjs';\n\ntest('SAVE300 on a 200 cart costs nothing', () => {\n  assert.equal(payableTotal(200, 'SAVE300'), 0, 'payable total');\n});\n",
    summary: "With coupon SAVE300 on a 200 cart the shop asks for -100; you expected 0.",
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_needs_a_node_projects_code_reproduces_only_with_context_and_feedback() {
    if !common::docker_here().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (bare, _work) = common::local_forge_with(dir.path(), "cart-js", |work| {
        let write = |path: &str, text: &str| {
            let path = work.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("package.json", "{\"name\": \"cart-js\", \"version\": \"1.0.0\", \"type\": \"module\"}\n");
        write(
            "src/coupons.mjs",
            "// Flat coupons, in rupees.\nexport const COUPONS = { SAVE300: 300, TEN: 10 };\n\nexport function couponValue(code) {\n  return COUPONS[code] ?? 0;\n}\n",
        );
        write(
            "src/cart.mjs",
            "import { couponValue } from './coupons.mjs';\n\n// What the customer pays for a cart after a coupon.\nexport function payableTotal(subtotal, coupon) {\n  return subtotal - couponValue(coupon);\n}\n",
        );
        write(
            "src/format.mjs",
            "export function rupees(amount) {\n  return `₹${amount.toFixed(2)}`;\n}\n",
        );
        write(
            "test/format.test.mjs",
            "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { rupees } from '../src/format.mjs';\n\ntest('formats rupees', () => {\n  assert.equal(rupees(5), '₹5.00');\n});\n",
        );
    })
    .await;
    let target = Target {
        profile: sandbox::Profile::NodeTest,
        fix_paths: "src/",
        report: json!({
            "title": "The coupon makes my total negative",
            "what_happened": "A 200 cart with coupon SAVE300 asks me to pay -100",
            "expected": "A total of 0",
            "steps": "Cart of 200, coupon SAVE300",
        }),
        knows: &NODE_KNOWS,
        package: "cart-js",
        imports: "node:test",
        module: "src/cart.mjs",
    };
    needs_the_code(target, bare).await;
}
