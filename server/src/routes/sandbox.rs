//! Sandbox jobs over HTTP, for worker hosts (`r2r sandbox worker`): claim the oldest waiting
//! job under a lease, renew the lease while it runs, report the outcome. Only a worker's own
//! token opens these routes, and it opens nothing else; the desk's credentials do not open
//! them either. The desk decides how long a lease lasts; a worker that stops renewing loses
//! the job to the next claim.

use crate::auth::Credential;
use crate::clock::now_ms;
use crate::error::Kind;
use crate::web::Op;
use crate::web::{guard, json_body, read_body_to_file, respond, AppState, LimitedBody, Refused};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use store::sandbox_jobs::ClaimedSandboxJob;

/// How long a claim holds a job before it must be renewed (20 s).
pub const LEASE_MS: i64 = 20_000;
/// The largest outcome a worker may send for a build (its output, and the artifact).
pub const OUTCOME_BYTES: usize = 72 * 1024 * 1024;
/// The largest outcome of a test run: its two output streams, each capped by the sandbox
/// (at most 16 MiB together as the wire allows; 2 MiB by default), JSON-escaped.
pub const TEST_OUTCOME_BYTES: usize = 16 * 1024 * 1024;
/// How long an outcome's body may take to arrive (72 MiB at about 250 KiB/s).
pub const OUTCOME_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);
/// How many outcomes this process reads at once: with [`OUTCOME_BYTES`] each, what worker
/// uploads can make the desk hold is bounded whatever the number of workers.
pub const OUTCOME_UPLOADS: usize = 2;
/// What a worker told to wait is asked to wait.
const UPLOAD_RETRY_AFTER_SECONDS: u64 = 5;

/// The outcomes being read now: a slot each, and the jobs they are for (one upload a job).
static UPLOAD_SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(OUTCOME_UPLOADS);
static UPLOADING: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// One outcome being read, for one job; both are let go when it is dropped.
struct Upload {
    job: String,
    _slot: tokio::sync::SemaphorePermit<'static>,
}

impl Upload {
    /// A slot for reading job `id`'s outcome: 409 while another upload for the same job is
    /// being read, 503 with `Retry-After` while [`OUTCOME_UPLOADS`] others are.
    fn begin(id: &str) -> Result<Upload, Refused> {
        let mut uploading = UPLOADING.lock().map_err(|_| {
            Refused::new(
                Kind::Internal,
                "uploads_broken",
                "the desk's upload book is broken; restart it",
            )
        })?;
        if uploading.iter().any(|job| job == id) {
            return Err(Refused::new(
                Kind::Conflict,
                "upload_in_progress",
                format!("An outcome for sandbox job {id} is already being received; one upload a lease."),
            ));
        }
        let slot = UPLOAD_SLOTS.try_acquire().map_err(|_| {
            Refused::new(
                Kind::Unavailable,
                "uploads_busy",
                format!("The desk is receiving {OUTCOME_UPLOADS} outcomes already; send it again in {UPLOAD_RETRY_AFTER_SECONDS} s (the lease is kept while you renew it)."),
            )
            .with_retry_after(UPLOAD_RETRY_AFTER_SECONDS)
        })?;
        uploading.push(id.to_owned());
        Ok(Upload {
            job: id.to_owned(),
            _slot: slot,
        })
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let Ok(mut uploading) = UPLOADING.lock() {
            uploading.retain(|job| job != &self.job);
        }
    }
}

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
            Kind::Forbidden,
            "forbidden",
            "only a sandbox worker's token may do this",
        )),
    }
}

fn lease_lost(id: &str) -> Refused {
    Refused::new(
        Kind::Conflict,
        "lease_lost",
        format!("The lease on sandbox job {id} is no longer yours (it expired and the job was claimed again, or the job is over); drop it."),
    )
}

/// How often an upload's lease is looked at while its body arrives.
const LEASE_LOOK: std::time::Duration = std::time::Duration::from_secs(2);

/// Returns once `worker` no longer holds a live lease on job `id` (looked at every
/// [`LEASE_LOOK`]); a storage failure counts as still held (the body's own timeout bounds it).
async fn lease_lapses(state: &AppState, id: &str, worker: &str) {
    loop {
        tokio::time::sleep(LEASE_LOOK).await;
        if let Ok(None) = state.store.sandbox_job_held(id, worker, now_ms()).await {
            return;
        }
    }
}

/// `POST /api/v1/sandbox/jobs/claim`: the oldest waiting job under a new lease, or 204.
pub async fn claim(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
    LimitedBody(_): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::ClaimSandboxJob)?;
        let worker = worker_name(&credential)?;
        let wait = crate::web::wait::wait_of(query.as_deref())?;
        let claimed = crate::web::wait::until_found(
            state.store.work_added(),
            wait,
            Option::is_some,
            || async {
                state
                    .store
                    .claim_sandbox_job(worker, LEASE_MS, now_ms())
                    .await
                    .map_err(Refused::storage)
            },
        )
        .await?;
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
                Kind::Internal,
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
        guard(&state, &credential, &headers, Op::RenewSandboxJob)?;
        let worker = worker_name(&credential)?;
        let renewal: Renewal = json_body(&body)?;
        let now = now_ms();
        let renewed = state
            .store
            .renew_sandbox_job(&id, &renewal.lease_id, worker, now + LEASE_MS, now)
            .await?;
        if !renewed {
            return Err(lease_lost(&id));
        }
        Ok(Json(serde_json::json!({"leased_until": now + LEASE_MS})))
    }
    .await;
    respond(result)
}

/// `POST /api/v1/sandbox/jobs/{key}/outcome`: the outcome of a job run under the caller's
/// lease. The credential, the job and the worker's live lease on it are checked before a
/// byte of the (large) body is read, and only [`OUTCOME_UPLOADS`] bodies are read at once,
/// one per job: a token without a job, or many at once, cannot make the desk hold them.
pub async fn finish(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::FinishSandboxJob)?;
        let worker = worker_name(&credential)?;
        let Some(purpose) = state.store.sandbox_job_held(&id, worker, now_ms()).await? else {
            return Err(lease_lost(&id));
        };
        // A test run carries no artifact: its outcome's bound is the output's.
        let limit = if purpose == "build" {
            OUTCOME_BYTES
        } else {
            TEST_OUTCOME_BYTES
        };
        let _upload = Upload::begin(&id)?;
        let (mut parts, body) = request.into_parts();
        // An outcome may carry a build's artifact: it gets longer than other bodies to arrive.
        parts
            .extensions
            .insert(crate::web::extract::BodyTimeout(OUTCOME_TIMEOUT));
        // Streamed to a file as it arrives (never held whole in memory while a slow worker
        // sends it), then read from there off the request threads. It arrives while the lease
        // holds: a worker that stops renewing loses its upload slot with its lease, not after
        // the body's long timeout.
        let file = tokio::select! {
            file = read_body_to_file(&parts, body, limit) => file?,
            () = lease_lapses(&state, &id, worker) => return Err(lease_lost(&id)),
        };
        let (finished, outcome) = tokio::task::spawn_blocking(move || {
            let finished: Finished = serde_json::from_reader(std::io::BufReader::new(file))?;
            let outcome = serde_json::to_string(&finished.outcome)?;
            Ok::<_, serde_json::Error>((finished, outcome))
        })
        .await
        .map_err(|e| {
            Refused::new(
                Kind::Internal,
                "outcome_unread",
                format!("reading the outcome stopped: {e}"),
            )
        })?
        .map_err(|e| {
            Refused::new(
                Kind::Invalid,
                "invalid_body",
                format!("The outcome does not read: {e}"),
            )
        })?;
        let recorded = state
            .store
            .finish_sandbox_job(&id, &finished.lease_id, worker, &outcome, now_ms())
            .await?;
        if !recorded {
            return Err(lease_lost(&id));
        }
        tracing::info!(job = %id, worker, "sandbox job finished");
        Ok(Json(serde_json::json!({"recorded": true})))
    }
    .await;
    respond(result)
}
