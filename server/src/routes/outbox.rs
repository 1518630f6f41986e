//! Notifications over HTTP: the concierge leases outbox jobs, records each channel it
//! delivered through (the inbox write stores the notice on the reporter's tracking page),
//! reports failures for a backed-off retry and acknowledges; owners write to a reporter.
//!
//! The desk composes every notice itself from the job (`domain::notice::compose`), so the
//! concierge never supplies text that lands on a tracking page, and a reporter's address is
//! handed only to the concierge, only for a job addressed to that reporter (the owners'
//! notices carry the owners' addresses).

use crate::auth::Credential;
use crate::clock::now_ms;
use crate::error::Kind;
use crate::service::notify::send_message;
use crate::web::guard;
use crate::web::json_body;
use crate::web::respond;
use crate::web::AppState;
use crate::web::LimitedBody;
use crate::web::Op;
use crate::web::Refused;
use api_types::{ClaimedJob, ClaimedJobs, ClaimedNotice};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::notice::{compose, Audience, Channel, Notice};
use domain::workflow::Actor;
use serde::Deserialize;
use serde_json::json;
use store::notices::{InboxNotice, StoredJob};

/// How many jobs one claim leases.
const CLAIM_BATCH: u32 = 20;

fn audience_of(notice: &Notice) -> api_types::Audience {
    match &notice.audience {
        Audience::Reporter(report) => api_types::Audience::Reporter(report.clone()),
        Audience::Owners => api_types::Audience::Owners,
    }
}

/// `POST /api/v1/outbox/concierge/claim[?wait_ms=N]`: the next jobs under one lease, each
/// with its composed notice, the reporter's address (when they left one) and the channels
/// already delivered; with `wait_ms`, answered as soon as a job is queued (or when the wait
/// is over, with none).
pub async fn claim(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::ClaimNotifications)?;
        let wait = crate::web::wait::wait_of(query.as_deref())?;
        let jobs = crate::web::wait::until_found(
            state.store.work_added(),
            wait,
            |jobs: &Vec<store::outbox::ClaimedJob>| !jobs.is_empty(),
            || async {
                state
                    .store
                    .claim_jobs("concierge", CLAIM_BATCH, now_ms())
                    .await
                    .map_err(Refused::storage)
            },
        )
        .await?;
        let mut out = Vec::with_capacity(jobs.len());
        for job in jobs {
            let delivered = state
                .store
                .deliveries_of(&job.key)
                .await?
                .into_iter()
                .map(|channel| channel.as_str().to_owned())
                .collect();
            let mut entry = ClaimedJob {
                key: job.key.clone(),
                kind: job.kind.clone(),
                attempts: job.attempts,
                lease_id: job.lease_id.clone(),
                leased_until: job.leased_until,
                delivered,
                notice: None,
                error: None,
            };
            match compose(&job.kind, &job.payload) {
                Ok(notice) => {
                    let emails: Vec<String> = match &notice.audience {
                        Audience::Reporter(report) => state
                            .store
                            .report(report)
                            .await?
                            .and_then(|r| r.contact)
                            .into_iter()
                            .collect(),
                        Audience::Owners => state.store.owner_emails().await?,
                    };
                    entry.notice = Some(ClaimedNotice {
                        audience: audience_of(&notice),
                        bug: notice.bug,
                        subject: notice.subject,
                        body: notice.body,
                        webhook_text: notice.webhook_text,
                        emails,
                    });
                }
                Err(error) => entry.error = Some(error.to_string()),
            }
            out.push(entry);
        }
        Ok::<_, Refused>(Json(ClaimedJobs { jobs: out }))
    }
    .await;
    respond(result)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LeaseBody {
    lease_id: String,
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

fn lease_lost() -> Refused {
    Refused::new(
        Kind::Conflict,
        "lease_lost",
        "No live lease with that id on this job.",
    )
}

/// The concierge's job `key`, provided `lease_id` holds it now.
async fn leased_job(state: &AppState, key: &str, lease_id: &str) -> Result<StoredJob, Refused> {
    let job = state
        .store
        .outbox_job(key)
        .await?
        .filter(|job| job.consumer == "concierge")
        .ok_or_else(Refused::not_found)?;
    if job.leased_by(lease_id, now_ms()) {
        Ok(job)
    } else {
        Err(lease_lost())
    }
}

/// `POST /api/v1/outbox/jobs/{key}/delivered`: one channel went through. Repeating it is
/// harmless (`"new": false`).
pub async fn delivered(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(key): Path<String>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::RecordDelivery)?;
        let body: LeaseBody = json_body(&body)?;
        let channel = body
            .channel
            .as_deref()
            .and_then(Channel::parse)
            .ok_or_else(|| {
                Refused::new(
                    Kind::Invalid,
                    "invalid_channel",
                    "channel: one of inbox, email, webhook",
                )
            })?;
        let job = leased_job(&state, &key, &body.lease_id).await?;
        let notice = compose(&job.kind, &job.payload)
            .map_err(|error| Refused::new(Kind::Invalid, "undeliverable", error.to_string()))?;
        let inbox = match (&notice.audience, channel) {
            (Audience::Reporter(report), Channel::Inbox) => Some(InboxNotice {
                key: key.clone(),
                report_id: report.clone(),
                bug_id: notice.bug.clone(),
                kind: job.kind.clone(),
                subject: notice.subject.clone(),
                body: notice.body.clone(),
                delivered_at: 0,
            }),
            (Audience::Owners, Channel::Inbox) => {
                return Err(Refused::new(
                    Kind::Invalid,
                    "invalid_channel",
                    "a notice for the owners has no tracking page: email or webhook",
                ))
            }
            _ => None,
        };
        let detail = body.detail.unwrap_or_default();
        let new = state
            .store
            .record_delivery(&key, channel, inbox.as_ref(), &detail, now_ms())
            .await?;
        Ok::<_, Refused>(Json(
            json!({"key": key, "channel": channel.as_str(), "new": new}),
        ))
    }
    .await;
    respond(result)
}

/// `POST /api/v1/outbox/jobs/{key}/fail`: a delivery failed; the job comes back after a
/// backoff (5 s, doubling, at most an hour).
pub async fn fail(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(key): Path<String>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::FailNotification)?;
        let body: LeaseBody = json_body(&body)?;
        let error = body.error.unwrap_or_default();
        if error.trim().is_empty() {
            return Err(Refused::new(
                Kind::Invalid,
                "invalid_body",
                "error: say what failed",
            ));
        }
        leased_job(&state, &key, &body.lease_id).await?;
        let failed = state
            .store
            .fail_job(&key, &body.lease_id, &error, now_ms())
            .await?;
        if !failed {
            return Err(lease_lost());
        }
        let status = state.store.job_status(&key).await?;
        let (attempts, available_at) = status.map(|s| (s.0, s.1)).unwrap_or_default();
        Ok(Json(
            json!({"key": key, "attempts": attempts, "retry_at": available_at}),
        ))
    }
    .await;
    respond(result)
}

/// `POST /api/v1/outbox/jobs/{key}/ack`: every due channel went through (a reporter's notice
/// at least to the tracking page).
pub async fn ack(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(key): Path<String>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::AckNotification)?;
        let body: LeaseBody = json_body(&body)?;
        let job = leased_job(&state, &key, &body.lease_id).await?;
        let for_reporter = compose(&job.kind, &job.payload)
            .is_ok_and(|n| matches!(n.audience, Audience::Reporter(_)));
        if for_reporter {
            let delivered = state.store.deliveries_of(&key).await?;
            if !delivered.contains(&Channel::Inbox) {
                return Err(Refused::new(
                    Kind::Conflict,
                    "inbox_first",
                    "A reporter's notice is done only once it is on their tracking page.",
                ));
            }
        }
        let done = state.store.ack_job(&key, &body.lease_id, now_ms()).await?;
        if done {
            Ok(StatusCode::NO_CONTENT.into_response())
        } else {
            Err(lease_lost())
        }
    }
    .await;
    respond(result)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageBody {
    text: String,
}

/// `POST /api/v1/reports/{id}/messages`: an owner writes to a reporter (shown on their
/// tracking page at once; the concierge also emails it when they left an address).
pub async fn message_reporter(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(report): Path<String>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::MessageReporter)?;
        let body: MessageBody = json_body(&body)?;
        let Actor::Owner { id: author } = credential.actor() else {
            return Err(Refused::new(
                Kind::Forbidden,
                "forbidden_actor",
                "only owners write to reporters",
            ));
        };
        let seq = send_message(&state, &report, &author, &body.text).await?;
        Ok((
            StatusCode::CREATED,
            Json(json!({"report": report, "seq": seq})),
        ))
    }
    .await;
    respond(result)
}
