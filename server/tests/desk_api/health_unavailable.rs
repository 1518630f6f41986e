//! `/api/health` answers 503 with a reason when the database cannot be reached.

use app::dto::Health;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;

#[tokio::test]
async fn health_is_503_with_a_reason_when_the_database_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let url = store::testing::fresh_sqlite(dir.path());
    let store = store::Store::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    let config = server::config::Config::from_env(&Default::default(), None).unwrap();
    let state = server::web::AppState::new(
        leptos::prelude::LeptosOptions::builder()
            .output_name("r2r")
            .build(),
        store.clone(),
        "desk-test".into(),
        &config,
    );
    let router = server::router::router(state);

    let ok = router
        .clone()
        .oneshot(Request::get("/api/health").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);

    store.close().await;
    let down = router
        .oneshot(Request::get("/api/health").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(down.status(), StatusCode::SERVICE_UNAVAILABLE);
    let bytes = axum::body::to_bytes(down.into_body(), 64 * 1024)
        .await
        .unwrap();
    let health: Health = serde_json::from_slice(&bytes).unwrap();
    assert!(!health.database_reachable);
    assert!(
        health.status.starts_with("database unreachable"),
        "{}",
        health.status
    );
    assert_eq!(health.storage, "sqlite");
}
