//! The OpenAI-compatible client against a protocol-level double on 127.0.0.1 answering in
//! the chat-completions shape: a good answer, malformed JSON, an answer that breaks the
//! schema, a cut-off answer, a 429 with Retry-After, a 500 with an error body, a timeout and
//! a refused connection.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use crew::openai::{OpenAiCompatible, OpenAiConfig};
use crew::{ModelError, ModelProvider, Prompt, Task};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the double received: the Authorization header and the JSON body.
type Seen = Vec<(Option<String>, Value)>;

#[derive(Clone, Default)]
struct Double {
    mode: Arc<Mutex<&'static str>>,
    seen: Arc<Mutex<Seen>>,
}

fn completion(content: &str, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_764_460_800, "model": "local-coder-7b",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 812, "completion_tokens": 95, "total_tokens": 907},
    })
}

async fn chat(
    State(double): State<Double>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> axum::response::Response {
    double.seen.lock().unwrap().push((
        headers
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_owned()),
        body,
    ));
    let mode = *double.mode.lock().unwrap();
    let good = r##"{"test_path":"tests/coupon.rs","test_name":"coupon_total","test_source":"#[test] fn coupon_total() { assert_eq!(1, 2); }"}"##;
    match mode {
        "good" => Json(completion(good, "stop")).into_response(),
        "malformed" => (StatusCode::OK, "{\"choices\": [ {\"message\": ").into_response(),
        "schema" => Json(completion(
            r#"{"test_path":"../../etc/passwd","test_name":"x","test_source":"y"}"#,
            "stop",
        ))
        .into_response(),
        "chatty" => {
            Json(completion("Sure! I'd be happy to write that test.", "stop")).into_response()
        }
        "cut" => Json(completion("{\"test_path\":\"tests/", "length")).into_response(),
        "429" => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "17")],
            Json(json!({"error": {"message": "Rate limit reached", "type": "requests"}})),
        )
            .into_response(),
        "500" => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": {"message": "model overloaded"}})),
        )
            .into_response(),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Json(completion(good, "stop")).into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn start() -> (String, Double) {
    let double = Double::default();
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(double.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, double)
}

fn client(base_url: &str, timeout: Duration) -> OpenAiCompatible {
    OpenAiCompatible::new(OpenAiConfig {
        base_url: base_url.to_owned(),
        api_key: Some("sk-test-key".into()),
        model: "local-coder-7b".into(),
        timeout,
        max_tokens: 1_200,
    })
    .unwrap()
}

fn prompt() -> Prompt {
    Prompt {
        task: Task::Reproduce,
        system: "Write one failing test.".into(),
        user: "UNTRUSTED REPORTER DATA\nSAVE300 negative".into(),
    }
}

#[tokio::test]
async fn every_answer_shape_is_read_or_refused_by_name() {
    let (url, double) = start().await;
    let model = client(&url, Duration::from_secs(2));
    let set = |mode| *double.mode.lock().unwrap() = mode;

    set("good");
    let completion = model.complete(&prompt()).await.unwrap();
    assert_eq!(completion.provider, "openai-compatible");
    assert!(!completion.scripted);
    assert_eq!(completion.model, "local-coder-7b");
    assert_eq!(completion.completion_tokens, Some(95));
    assert!(crew::schema::reproduction(&completion.content).is_ok());
    let (auth, body) = double.seen.lock().unwrap()[0].clone();
    assert_eq!(auth.as_deref(), Some("Bearer sk-test-key"));
    assert_eq!(body["model"], "local-coder-7b");
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["max_tokens"], 1_200);
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(body["response_format"]["type"], "json_object");

    set("malformed");
    assert!(
        matches!(model.complete(&prompt()).await, Err(ModelError::Malformed(m)) if m.contains("not JSON"))
    );
    set("cut");
    assert!(
        matches!(model.complete(&prompt()).await, Err(ModelError::Malformed(m)) if m.contains("cut off"))
    );
    for mode in ["schema", "chatty"] {
        set(mode);
        let content = model.complete(&prompt()).await.unwrap().content;
        assert!(crew::schema::reproduction(&content).is_err(), "{mode}");
    }
    set("429");
    assert_eq!(
        model.complete(&prompt()).await,
        Err(ModelError::RateLimited {
            retry_after: Some(17)
        })
    );
    set("500");
    assert_eq!(
        model.complete(&prompt()).await,
        Err(ModelError::Status {
            status: 500,
            message: "model overloaded".into()
        })
    );
    set("slow");
    let quick = client(&url, Duration::from_millis(300));
    assert_eq!(
        quick.complete(&prompt()).await,
        Err(ModelError::Timeout(300))
    );
    let nobody = client("http://127.0.0.1:9/v1", Duration::from_secs(2));
    assert!(matches!(
        nobody.complete(&prompt()).await,
        Err(ModelError::Connection(_))
    ));
    assert!(format!("{model:?}").contains("local-coder-7b"));
    assert!(
        !format!("{model:?}").contains("sk-test-key"),
        "the key never prints"
    );
}
