//! Sandbox jobs over HTTP, for worker hosts (`r2r sandbox worker`): claim the oldest waiting
//! job under a lease, renew the lease while it runs, report the outcome. Only a worker's own
//! token opens these routes, and it opens nothing else; the desk's credentials do not open
//! them either. The desk decides how long a lease lasts; a worker that stops renewing loses
//! the job to the next claim.

use crate::auth::Credential;
use crate::clock::now_ms;
use crate::web::{guard, json_body, read_body, respond, AppState, LimitedBody, Refused};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use store::sandbox_jobs::ClaimedSandboxJob;

/// How long a claim holds a job before it must be renewed (20 s).
pub const LEASE_MS: i64 = 20_000;
/// The largest outcome a worker may send (its output, and a build's artifact).
pub const OUTCOME_BYTES: usize = 72 * 1024 * 1024;
/// How long an outcome's body may take to arrive (72 MiB at about 250 KiB/s).
pub const OUTCOME_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// A claimed job, as a worker receives it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimedJob {
    /// The job's id.
    pub id: String,
    /// What the desk measures with it.
    pub purpose: String,
    /// Send with the renewals and the outcome.
    pub lease_id: String,
    /// How long each lease (and renewal) lasts; renew well before.
    pub lease_ms: i64,
    /// How many times it has been claimed, this claim included.
    pub claims: u32,
    /// The job.
    pub job: sandbox::wire::WireJob,
}

/// A renewal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Renewal {
    /// The lease being renewed.
    pub lease_id: String,
}

/// A finished job's report.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finished {
    /// The lease the job was run under.
    pub lease_id: String,
    /// What happened.
    pub outcome: sandbox::wire::WireOutcome,
}

fn worker_name(credential: &Credential) -> Result<&str, Refused> {
    match credential {
        Credential::Worker { name } => Ok(name),
        _ => Err(Refused::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "only a sandbox worker's token may do this",
        )),
    }
}

fn lease_lost(id: &str) -> Refused {
    Refused::new(
        StatusCode::CONFLICT,
        "lease_lost",
        format!("The lease on sandbox job {id} is no longer yours (it expired and the job was claimed again, or the job is over); drop it."),
    )
}

/// `POST /api/v1/sandbox/jobs/claim`: the oldest waiting job under a new lease, or 204.
pub async fn claim(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    LimitedBody(_): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "claimSandboxJob")?;
        let worker = worker_name(&credential)?;
        let claimed = state
            .store
            .claim_sandbox_job(worker, LEASE_MS, now_ms())
            .await
            .map_err(Refused::storage)?;
        let Some(ClaimedSandboxJob {
            id,
            purpose,
            spec,
            claims,
            lease_id,
            ..
        }) = claimed
        else {
            return Ok(StatusCode::NO_CONTENT.into_response());
        };
        let job = serde_json::from_str(&spec).map_err(|e| {
            Refused::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "corrupt_job",
                format!("sandbox job {id} does not read: {e}"),
            )
        })?;
        tracing::info!(job = %id, %purpose, worker, claims, "sandbox job claimed");
        Ok(Json(ClaimedJob {
            id,
            purpose,
            lease_id,
            lease_ms: LEASE_MS,
            claims,
            job,
        })
        .into_response())
    }
    .await;
    respond(result)
}

/// `POST /api/v1/sandbox/jobs/{key}/renew`: extends the caller's lease by [`LEASE_MS`].
pub async fn renew(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "renewSandboxJob")?;
        let worker = worker_name(&credential)?;
        let renewal: Renewal = json_body(&body)?;
        let now = now_ms();
        let renewed = state
            .store
            .renew_sandbox_job(&id, &renewal.lease_id, worker, now + LEASE_MS, now)
            .await
            .map_err(Refused::storage)?;
        if !renewed {
            return Err(lease_lost(&id));
        }
        Ok(Json(serde_json::json!({"leased_until": now + LEASE_MS})))
    }
    .await;
    respond(result)
}

/// `POST /api/v1/sandbox/jobs/{key}/outcome`: the outcome of a job run under the caller's
/// lease. The credential is checked before the (large) body is read.
pub async fn finish(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "finishSandboxJob")?;
        let worker = worker_name(&credential)?;
        let (mut parts, body) = request.into_parts();
        // An outcome may carry a build's artifact: it gets longer than other bodies to arrive.
        parts
            .extensions
            .insert(crate::web::extract::BodyTimeout(OUTCOME_TIMEOUT));
        let body = read_body(&parts, body, OUTCOME_BYTES).await?;
        let finished: Finished = json_body(&body)?;
        let outcome = serde_json::to_string(&finished.outcome).map_err(|e| {
            Refused::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                e.to_string(),
            )
        })?;
        let recorded = state
            .store
            .finish_sandbox_job(&id, &finished.lease_id, worker, &outcome, now_ms())
            .await
            .map_err(Refused::storage)?;
        if !recorded {
            return Err(lease_lost(&id));
        }
        tracing::info!(job = %id, worker, "sandbox job finished");
        Ok(Json(serde_json::json!({"recorded": true})))
    }
    .await;
    respond(result)
}
