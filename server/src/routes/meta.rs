//! `/api/health`, `/api/openapi.json`, and the answer for an `/api` path the table does not
//! declare.

use crate::error::Kind;
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
    let writable = match &reachable {
        Ok(()) => writable(&state).await,
        Err(_) => Ok(()),
    };
    let (code, status) = match (&reachable, writable) {
        (Ok(()), Ok(())) => (StatusCode::OK, "ok".to_owned()),
        (Ok(()), Err(reason)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("degraded: the database answers but refuses writes ({reason}); reports cannot be filed until it takes them again"),
        ),
        (Err(reason), _) => (StatusCode::SERVICE_UNAVAILABLE, reason.clone()),
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

/// How long a write probe's answer is reused: health may be asked many times a second.
const WRITE_PROBE_EVERY: Duration = Duration::from_secs(3);

/// Whether the database takes a write now (probed at most every [`WRITE_PROBE_EVERY`]).
async fn writable(state: &AppState) -> Result<(), String> {
    let cached = state
        .write_probe
        .lock()
        .ok()
        .and_then(|probe| probe.clone())
        .filter(|(at, _)| at.elapsed() < WRITE_PROBE_EVERY);
    if let Some((_, answer)) = cached {
        return answer;
    }
    let answer = match tokio::time::timeout(
        HEALTH_DB_TIMEOUT,
        state.store.probe_write(crate::clock::now_ms()),
    )
    .await
    {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            tracing::warn!(%error, "health: the database refused a write");
            Err(error.to_string())
        }
        Err(_) => Err(format!(
            "a write did not finish within {} s",
            HEALTH_DB_TIMEOUT.as_secs()
        )),
    };
    if let Ok(mut probe) = state.write_probe.lock() {
        *probe = Some((std::time::Instant::now(), answer.clone()));
    }
    answer
}

/// `GET /api/openapi.json`.
pub async fn openapi() -> Json<Value> {
    Json(openapi_document())
}

/// Any other `/api` path: a JSON 404 that names no operation.
pub async fn undeclared_api_path() -> Response {
    crate::web::respond::<Response>(Err(Refused::new(
        Kind::NotFound,
        "unknown_operation",
        "No such operation: see /api/openapi.json for every operation this desk serves.",
    )))
}
