//! `/api/health`, `/api/openapi.json`, and the answer for an `/api` path the table does not
//! declare.

use crate::web::ops::openapi_document;
use crate::web::{AppState, Refused};
use app::dto::{Health, SERVICE_NAME};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;
use std::time::Duration;

/// How long a health check waits for the database.
const HEALTH_DB_TIMEOUT: Duration = Duration::from_secs(2);

/// `GET /api/health`: 200 when the database answers, 503 with the reason when not.
pub async fn health(State(state): State<AppState>) -> Response {
    let storage = state.store.backend().as_str().to_owned();
    let reachable = match tokio::time::timeout(HEALTH_DB_TIMEOUT, state.store.ping()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            tracing::warn!(%error, "health: database ping failed");
            Err(format!("database unreachable: {storage} did not answer"))
        }
        Err(_) => Err(format!(
            "database unreachable: {storage} did not answer within {} s",
            HEALTH_DB_TIMEOUT.as_secs()
        )),
    };
    let schema_version = match reachable {
        Ok(()) => state.store.schema_version().await.ok().flatten(),
        Err(_) => None,
    };
    let (code, status) = match &reachable {
        Ok(()) => (StatusCode::OK, "ok".to_owned()),
        Err(reason) => (StatusCode::SERVICE_UNAVAILABLE, reason.clone()),
    };
    let body = Health {
        service: SERVICE_NAME.to_owned(),
        version: crate::build_info::VERSION.to_owned(),
        commit: crate::build_info::COMMIT.to_owned(),
        storage,
        status,
        database_reachable: reachable.is_ok(),
        schema_version,
        instance: Some(state.instance.clone()),
    };
    let mut response = (code, Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `GET /api/openapi.json`.
pub async fn openapi() -> Json<Value> {
    Json(openapi_document())
}

/// Any other `/api` path: a JSON 404 that names no operation.
pub async fn undeclared_api_path() -> Response {
    crate::web::respond::<Response>(Err(Refused::new(
        StatusCode::NOT_FOUND,
        "unknown_operation",
        "No such operation: see /api/openapi.json for every operation this desk serves.",
    )))
}
