//! `POST /webhooks/github`: the signature (HMAC-SHA256 over the raw body, constant time) is
//! checked before a byte is parsed; repositories outside the allowlist are refused; the event
//! is filed as an outbox job keyed by its delivery id and the SHA-256 of the signed body, and
//! answered 202. The GitHub worker ([`crate::workers::github`]) applies it.

use crate::clock::now_ms;
use crate::error::Kind;
use crate::service::github_events::*;
use crate::web::AppState;
use crate::web::Refused;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::workflow::{Consumer, JobDraft};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Largest webhook body accepted (GitHub's payloads for these events are far smaller).
pub const MAX_WEBHOOK_BYTES: usize = 1024 * 1024;

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `POST /webhooks/github`.
pub async fn webhook(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let result = async {
        let Some(secret) = &state.github.webhook_secret else {
            return Err(Refused::new(
                Kind::Unauthenticated,
                "webhooks_disabled",
                "no webhook secret is configured (R2R_GITHUB_WEBHOOK_SECRET)",
            ));
        };
        if body.len() > MAX_WEBHOOK_BYTES {
            return Err(Refused::new(
                Kind::TooLarge,
                "too_large",
                "webhook body too large",
            ));
        }
        if !signature_valid(
            secret.expose().as_bytes(),
            &body,
            header(&headers, "x-hub-signature-256"),
        ) {
            tracing::warn!("github webhook: bad or missing signature");
            return Err(Refused::new(
                Kind::Unauthenticated,
                "bad_signature",
                "X-Hub-Signature-256 does not match the body",
            ));
        }
        let delivery = header(&headers, "x-github-delivery")
            .unwrap_or_default()
            .trim()
            .to_owned();
        let event = header(&headers, "x-github-event")
            .unwrap_or_default()
            .trim()
            .to_owned();
        if delivery.is_empty() || event.is_empty() || delivery.len() > 100 || event.len() > 100 {
            return Err(Refused::new(
                Kind::BadRequest,
                "missing_headers",
                "X-GitHub-Delivery and X-GitHub-Event are required",
            ));
        }
        let payload: Value = serde_json::from_slice(&body).map_err(|e| {
            Refused::new(
                Kind::BadRequest,
                "malformed_json",
                format!("not JSON: {e}"),
            )
        })?;
        let repository = payload["repository"]["full_name"]
            .as_str()
            .unwrap_or_default();
        if !state
            .github
            .repositories
            .iter()
            .any(|r| r.eq_ignore_ascii_case(repository))
        {
            tracing::warn!(repository, "github webhook: repository not allowed");
            return Err(Refused::new(
                Kind::Forbidden,
                "repository_not_allowed",
                "this desk does not follow that repository",
            ));
        }
        if event == "ping" {
            return Ok((StatusCode::OK, Json(json!({"pong": true}))).into_response());
        }
        let job = JobDraft {
            idempotency_key: format!("github:{delivery}"),
            kind: format!("github_{event}"),
            consumer: Consumer::Forge,
            available_at: now_ms(),
            payload: BTreeMap::from([
                ("event".to_owned(), event.clone()),
                ("delivery".to_owned(), delivery.clone()),
                (
                    "body".to_owned(),
                    String::from_utf8_lossy(&body).into_owned(),
                ),
            ]),
        };
        // The signature covers the body and not `X-GitHub-Delivery`, so anyone who captured
        // one signed delivery could re-send it under a delivery id of their choosing. The
        // desk therefore also refuses a body it has accepted before, by the SHA-256 of the
        // exact signed bytes, recorded in the same transaction as the job. That drops
        // nothing GitHub legitimately sends: a redelivery reuses the delivery id *and* the
        // body (already a replay), and two distinct events never have identical bodies —
        // every payload names its own object and moment (a review's `id` and
        // `submitted_at`, a push's `before`/`after` and the pull request's `updated_at`, a
        // deployment status's `id`). Were two bodies ever byte-identical, they would state
        // the same fact twice, and applying it once is all the engine would do anyway.
        let body_hash = body_sha256(&body);
        let fresh = state
            .store
            .enqueue_webhook(
                &store::NewWebhook {
                    source: SOURCE,
                    body_sha256: &body_hash,
                    delivery: &delivery,
                    event: &event,
                },
                &job,
                now_ms(),
            )
            .await
            ?;
        if !fresh {
            tracing::warn!(%delivery, %event, body_sha256 = %body_hash, "github webhook: this body or delivery id was accepted before; not applied again");
        }
        tracing::info!(%delivery, %event, fresh, "github webhook accepted");
        Ok((
            StatusCode::ACCEPTED,
            Json(json!({"queued": fresh, "replay": !fresh})),
        )
            .into_response())
    }
    .await;
    result.unwrap_or_else(IntoResponse::into_response)
}
