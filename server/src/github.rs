//! GitHub: signed webhooks in, a REST client out.
//!
//! `POST /webhooks/github` checks `X-Hub-Signature-256` (HMAC-SHA256 over the raw body, in
//! constant time) before parsing a byte, refuses repositories outside the allowlist, and
//! files the event as an outbox job keyed by `X-GitHub-Delivery`, recorded with the SHA-256
//! of the signed body in the same transaction — so a replayed delivery, or a captured body
//! re-sent under a fresh delivery id, is a no-op — then answers 202. A worker applies queued
//! events through the engine, with the evidence fetched from the forge first: ancestry,
//! CODEOWNERS on the base branch, and for a review the reviewer's access to the repository
//! (only write, maintain or admin approves; failing to learn it counts nothing).

use crate::clock::now_ms;
use crate::config::GitHubConfig;
use crate::service::commands::{Fetched, KnownAncestry};
use crate::web::AppState;
use crate::web::Refused;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::codeowners::CodeOwners;
use domain::workflow::{
    decide, Actor, Bug, Command, CommitSha, Consumer, DeploymentStatus, Evidence, JobDraft, Policy,
};
use domain::{BugState, Role};
use forge::{Forge, ForgeError, RepoPermission};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::Duration;
use store::Store;

/// Largest webhook body accepted (GitHub's payloads for these events are far smaller).
pub const MAX_WEBHOOK_BYTES: usize = 1024 * 1024;

/// `sha256=<hex>` of `body` under `secret`.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return String::new();
    };
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Whether `presented` is the signature of `body`, compared in constant time.
pub fn signature_valid(secret: &[u8], body: &[u8], presented: Option<&str>) -> bool {
    let Some(presented) = presented else {
        return false;
    };
    let Some(hex_part) = presented.trim().strip_prefix("sha256=") else {
        return false;
    };
    let Ok(bytes) = hex::decode(hex_part) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&bytes).is_ok()
}

/// Hex SHA-256 of a webhook body, exactly as signed.
pub fn body_sha256(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

/// The `source` of GitHub's rows in the store's webhook record.
const SOURCE: &str = "github";

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `POST /webhooks/github`.
pub async fn webhook(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let result = async {
        let Some(secret) = &state.github.webhook_secret else {
            return Err(Refused::new(
                StatusCode::UNAUTHORIZED,
                "webhooks_disabled",
                "no webhook secret is configured (R2R_GITHUB_WEBHOOK_SECRET)",
            ));
        };
        if body.len() > MAX_WEBHOOK_BYTES {
            return Err(Refused::new(
                StatusCode::PAYLOAD_TOO_LARGE,
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
                StatusCode::UNAUTHORIZED,
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
                StatusCode::BAD_REQUEST,
                "missing_headers",
                "X-GitHub-Delivery and X-GitHub-Event are required",
            ));
        }
        let payload: Value = serde_json::from_slice(&body).map_err(|e| {
            Refused::new(
                StatusCode::BAD_REQUEST,
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
                StatusCode::FORBIDDEN,
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
            .map_err(Refused::storage)?;
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

// ---------------------------------------------------------------------------------------------
// Applying queued events

fn sha(value: &Value) -> Option<CommitSha> {
    value.as_str().and_then(|s| CommitSha::parse(s).ok())
}

fn github_user(user: &Value) -> Actor {
    Actor::GitHubUser {
        login: user["login"].as_str().unwrap_or_default().to_owned(),
        bot: user["type"].as_str() != Some("User"),
    }
}

async fn bugs_with_pull_request(store: &Store, number: u64) -> Result<Vec<Bug>, store::StoreError> {
    let mut found = Vec::new();
    for id in store
        .bug_ids_in_states(&[BugState::InReview, BugState::Approved, BugState::Fixing])
        .await?
    {
        if let Some(stored) = store.load_bug(&id).await? {
            if stored
                .bug
                .pull_request
                .as_ref()
                .is_some_and(|pr| pr.number == number)
            {
                found.push(stored.bug);
            }
        }
    }
    Ok(found)
}

/// What applying one event did, for logs and tests.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct EventOutcome {
    /// Bugs whose ledger changed.
    pub changed: Vec<String>,
    /// Bugs whose engine refused the event (with the reason code).
    pub refused: Vec<(String, String)>,
    /// Why an event did not count, in words (a review from an account without write
    /// access, say); recorded with the delivery.
    pub notes: Vec<String>,
}

/// A refusal code for a review that did not count because of the reviewer's access.
pub const REVIEWER_WITHOUT_WRITE_ACCESS: &str = "reviewer_without_write_access";

/// Whether `login`'s approving review may count. `Ok(Ok(_))`: GitHub says the account has
/// write, maintain or admin access. `Ok(Err(reason))`: GitHub's answer is final and it is not
/// enough — read, triage or none, or GitHub will not tell (404, 401, 403) — so the review does
/// not count. `Err`: GitHub could not be asked (network, 5xx, 429); the review does not count
/// yet, and the job is retried.
async fn reviewer_access(
    forge: &dyn Forge,
    login: &str,
) -> Result<Result<RepoPermission, String>, ForgeError> {
    match forge.collaborator_permission(login).await {
        Ok(access) if access.may_approve() => Ok(Ok(access)),
        Ok(access) => Ok(Err(format!(
            "GitHub gives {login} {access} on the repository; an approval needs write, maintain or admin"
        ))),
        Err(ForgeError::Status { status, what })
            if (400..500).contains(&status) && status != 429 =>
        {
            Ok(Err(format!(
                "GitHub answered {status} for {what}, so the desk cannot tell that {login} may approve"
            )))
        }
        Err(ForgeError::Invalid(reason)) => Ok(Err(reason)),
        Err(error) => Err(ForgeError::Context {
            context: format!(
                "the approval by {login} does not count until GitHub tells its permission"
            ),
            source: Box::new(error),
        }),
    }
}

pub(crate) async fn apply(
    store: &Store,
    bug: &str,
    command: &Command,
    actor: &Actor,
    fetched: &Fetched,
    policy: &Policy,
    outcome: &mut EventOutcome,
) -> Result<(), store::StoreError> {
    let now = now_ms();
    match store
        .apply(bug, now, |b| {
            let evidence = Evidence {
                rerun: fetched.rerun,
                ancestry: Some(&fetched.ancestry),
                code_owners: fetched.code_owners.as_ref(),
            };
            decide(b, command, actor, &evidence, policy, now)
        })
        .await
    {
        Ok(applied) if applied.changed => outcome.changed.push(bug.to_owned()),
        Ok(_) => {}
        Err(store::ApplyError::Refused(refusal)) => {
            tracing::info!(bug, code = %refusal.code, "github event refused by the engine");
            outcome.refused.push((bug.to_owned(), refusal.code));
        }
        Err(store::ApplyError::Store(error)) => return Err(error),
        Err(error) => outcome.refused.push((bug.to_owned(), error.to_string())),
    }
    Ok(())
}

/// Applies one queued GitHub event.
pub async fn apply_event(
    store: &Store,
    forge: &dyn Forge,
    config: &GitHubConfig,
    policy: &Policy,
    event: &str,
    payload: &Value,
) -> Result<EventOutcome, ForgeError> {
    let mut outcome = EventOutcome::default();
    let store_error = |e: store::StoreError| ForgeError::Status {
        status: 503,
        what: e.to_string(),
    };
    match (event, payload["action"].as_str().unwrap_or_default()) {
        ("pull_request", "synchronize") => {
            let number = payload["pull_request"]["number"]
                .as_u64()
                .unwrap_or_default();
            let Some(head) = sha(&payload["pull_request"]["head"]["sha"]) else {
                return Ok(outcome);
            };
            for bug in bugs_with_pull_request(store, number)
                .await
                .map_err(store_error)?
            {
                apply(
                    store,
                    &bug.id,
                    &Command::NewHead { head: head.clone() },
                    &Actor::Forge,
                    &Fetched::default(),
                    policy,
                    &mut outcome,
                )
                .await
                .map_err(store_error)?;
            }
        }
        ("pull_request", "closed") if payload["pull_request"]["merged"].as_bool() == Some(true) => {
            let pr = &payload["pull_request"];
            let number = pr["number"].as_u64().unwrap_or_default();
            let (Some(head), Some(merge_commit)) =
                (sha(&pr["head"]["sha"]), sha(&pr["merge_commit_sha"]))
            else {
                return Ok(outcome);
            };
            let actor = github_user(&pr["merged_by"]);
            for bug in bugs_with_pull_request(store, number)
                .await
                .map_err(store_error)?
            {
                let mut fetched = Fetched::default();
                for deployment in bug
                    .deployments
                    .iter()
                    .filter(|d| d.status == DeploymentStatus::Pending)
                {
                    let relation = forge.relation(&merge_commit, &deployment.commit).await?;
                    fetched
                        .ancestry
                        .0
                        .insert((merge_commit.clone(), deployment.commit.clone()), relation);
                }
                let command = Command::Merge {
                    head: head.clone(),
                    merge_commit: merge_commit.clone(),
                };
                apply(
                    store,
                    &bug.id,
                    &command,
                    &actor,
                    &fetched,
                    policy,
                    &mut outcome,
                )
                .await
                .map_err(store_error)?;
            }
        }
        ("pull_request_review", "submitted")
            if payload["review"]["state"]
                .as_str()
                .is_some_and(|s| s.eq_ignore_ascii_case("approved")) =>
        {
            let number = payload["pull_request"]["number"]
                .as_u64()
                .unwrap_or_default();
            let Some(head) = sha(&payload["review"]["commit_id"]) else {
                return Ok(outcome);
            };
            let actor = github_user(&payload["review"]["user"]);
            let bugs = bugs_with_pull_request(store, number)
                .await
                .map_err(store_error)?;
            if bugs.is_empty() {
                return Ok(outcome);
            }
            // A bot is refused by the engine (it is no person); anyone else's approval counts
            // only with write access, as GitHub itself would require for a review that gates
            // a merge. GitHub is asked at the time the review is applied.
            if let Actor::GitHubUser { login, bot: false } = &actor {
                match reviewer_access(forge, login).await? {
                    Ok(access) => {
                        tracing::info!(login, %access, pull_request = number, "github reviewer may approve");
                    }
                    Err(reason) => {
                        tracing::warn!(login, pull_request = number, %reason, "github approval not counted");
                        outcome
                            .notes
                            .push(format!("approval by {login} not counted: {reason}"));
                        for bug in bugs {
                            outcome
                                .refused
                                .push((bug.id, REVIEWER_WITHOUT_WRITE_ACCESS.to_owned()));
                        }
                        return Ok(outcome);
                    }
                }
            }
            // CODEOWNERS on the base branch, never the pull request's own copy: a change
            // that edits CODEOWNERS must not choose its own code owners.
            let fetched = Fetched {
                rerun: None,
                ancestry: KnownAncestry::default(),
                code_owners: forge
                    .codeowners_at_base()
                    .await?
                    .map(|text| CodeOwners::parse(&text)),
            };
            for bug in bugs {
                apply(
                    store,
                    &bug.id,
                    &Command::Approve { head: head.clone() },
                    &actor,
                    &fetched,
                    policy,
                    &mut outcome,
                )
                .await
                .map_err(store_error)?;
            }
        }
        ("deployment_status", _) => {
            let status = &payload["deployment_status"];
            let deployment = &payload["deployment"];
            let counts = status["state"].as_str() == Some("success")
                && deployment["task"].as_str() == Some(forge::RECORDER_TASK)
                && deployment["environment"].as_str()
                    == Some(config.production_environment.as_str());
            let Some(commit) = sha(&deployment["sha"]).filter(|_| counts) else {
                return Ok(outcome);
            };
            let id = deployment["id"].to_string();
            let recorder = Actor::Role {
                role: Role::Recorder,
            };
            for bug_id in store
                .bug_ids_in_states(&[BugState::InReview, BugState::Approved, BugState::Merged])
                .await
                .map_err(store_error)?
            {
                let Some(stored) = store.load_bug(&bug_id).await.map_err(store_error)? else {
                    continue;
                };
                let mut fetched = Fetched::default();
                if let Some(merge) = &stored.bug.merge {
                    let relation = forge.relation(&merge.merge_commit, &commit).await?;
                    fetched
                        .ancestry
                        .0
                        .insert((merge.merge_commit.clone(), commit.clone()), relation);
                }
                let command = Command::RecordDeployment {
                    deployment: id.clone(),
                    commit: commit.clone(),
                };
                apply(
                    store,
                    &bug_id,
                    &command,
                    &recorder,
                    &fetched,
                    policy,
                    &mut outcome,
                )
                .await
                .map_err(store_error)?;
            }
        }
        _ => {}
    }
    Ok(outcome)
}

/// Claims queued GitHub events and applies them, until the process ends.
pub async fn run_worker(store: Store, config: GitHubConfig, policy: Policy) {
    // Deliveries filed before the desk kept body hashes: record theirs, so a captured old
    // body is recognised too.
    match store
        .backfill_webhook_deliveries(SOURCE, "github:", body_sha256)
        .await
    {
        Ok(0) => {}
        Ok(recorded) => tracing::info!(
            recorded,
            "github: recorded the bodies of earlier deliveries"
        ),
        Err(error) => tracing::warn!(%error, "github: could not record earlier deliveries' bodies"),
    }
    let mut ticker = tokio::time::interval(Duration::from_millis(500));
    loop {
        ticker.tick().await;
        if let Err(error) = work_once(&store, &config, &policy).await {
            tracing::warn!(%error, "github worker: will retry");
        }
    }
}

/// One pass over the queue; returns how many events were applied.
pub async fn work_once(
    store: &Store,
    config: &GitHubConfig,
    policy: &Policy,
) -> Result<usize, store::StoreError> {
    let jobs = store
        .claim_jobs(Consumer::Forge.as_str(), 10, now_ms())
        .await?;
    let mut done = 0;
    for job in jobs {
        let body = job.payload.get("body").map_or("", String::as_str);
        let body_hash = body_sha256(body.as_bytes());
        let payload: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let repository = payload["repository"]["full_name"]
            .as_str()
            .unwrap_or_default();
        let forge = config.forge(repository);
        let event = job.payload.get("event").map_or("", String::as_str);
        match apply_event(store, &forge, config, policy, event, &payload).await {
            Ok(outcome) => {
                tracing::info!(key = %job.key, changed = outcome.changed.len(), refused = outcome.refused.len(), "github event applied");
                let recorded = json!({
                    "changed": outcome.changed,
                    "refused": outcome.refused,
                    "notes": outcome.notes,
                });
                store
                    .record_webhook_outcome(
                        SOURCE,
                        &body_hash,
                        &recorded.to_string(),
                        Some(now_ms()),
                    )
                    .await?;
                store.ack_job(&job.key, &job.lease_id, now_ms()).await?;
                done += 1;
            }
            Err(error) => {
                let error = error.to_string();
                tracing::warn!(key = %job.key, %error, "github event not applied yet; will retry");
                store
                    .record_webhook_outcome(
                        SOURCE,
                        &body_hash,
                        &json!({"not_applied_yet": error}).to_string(),
                        None,
                    )
                    .await?;
                store
                    .fail_job(&job.key, &job.lease_id, &error, now_ms())
                    .await?;
            }
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn githubs_documented_test_vector_verifies() {
        // From GitHub's documentation on validating webhook deliveries.
        let secret = b"It's a Secret to Everybody";
        let body = b"Hello, World!";
        let expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(signature(secret, body), expected);
        assert!(signature_valid(secret, body, Some(expected)));
        assert!(!signature_valid(secret, b"Hello, World?", Some(expected)));
        assert!(!signature_valid(b"another secret", body, Some(expected)));
        assert!(!signature_valid(
            secret,
            body,
            Some(&expected.replace("sha256=", "sha1="))
        ));
        assert!(!signature_valid(secret, body, Some("sha256=zz")));
        assert!(!signature_valid(secret, body, None));
    }
}
