//! `/api/v1/bugs`: the engineering view of bugs and every bug command people and the crew
//! may send (each guarded by its own operation in the table; the router fixes the operation
//! id, never the path).

use crate::auth::Credential;
use crate::error::Kind;
use crate::service::commands::run_command;
use crate::service::forge::{self as forge_service, HeadBody};
use crate::web::AppState;
use crate::web::Op;
use crate::web::Refused;
use crate::web::{guard, json_body, respond};
use api_types::{BugDetail, BugList, BugSummary, ReportEntry};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::workflow::Command;
use serde::Deserialize;

use crate::service::commands::screened_note;
use crate::service::reproduction::{self, Proposed};

/// `GET /api/v1/bugs[?after=FINGERPRINT&wait_ms=N]`: every bug; with `after` (the
/// fingerprint of a list the caller has) and `wait_ms`, answered once the list differs from
/// that one — woken the moment a bug changes — or when the wait is over.
pub async fn list_bugs(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::ListBugs)?;
        let wait = crate::web::wait::wait_of(query.as_deref())?;
        let after = query
            .as_deref()
            .unwrap_or_default()
            .split('&')
            .find_map(|pair| pair.strip_prefix("after="))
            .unwrap_or_default()
            .to_owned();
        let list = crate::web::wait::until_found(
            state.store.work_added(),
            wait,
            |list: &BugList| list.fingerprint != after,
            || bug_list(&state),
        )
        .await?;
        Ok::<_, Refused>(Json(list))
    }
    .await;
    respond(result)
}

async fn bug_list(state: &AppState) -> Result<BugList, Refused> {
    use sha2::Digest;
    let waiting = state
        .store
        .crew_starts_put_off(crate::clock::now_ms())
        .await?;
    let mut bugs = Vec::new();
    let mut fingerprint = sha2::Sha256::new();
    for id in state.store.bug_ids().await? {
        if let Some(stored) = state.store.load_bug(&id).await? {
            let bug = stored.bug;
            let crew_budget_until = waiting.get(&bug.id).copied();
            fingerprint
                .update(format!("{}:{}:{crew_budget_until:?}\n", bug.id, bug.version).as_bytes());
            bugs.push(BugSummary {
                crew_budget_until,
                reports: bug.reports.len(),
                id: bug.id,
                component: bug.component,
                state: bug.state,
                version: bug.version,
            });
        }
    }
    Ok(BugList {
        bugs,
        fingerprint: hex::encode(&fingerprint.finalize()[..12]),
    })
}

/// `GET /api/v1/bugs/{id}`.
pub async fn get_bug(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::GetBug)?;
        let stored = state
            .store
            .load_bug(&id)
            .await?
            .ok_or_else(|| Refused::unknown_bug(&id))?;
        let reports = state
            .store
            .reports_of_bug(&id)
            .await?
            .into_iter()
            .map(|r| ReportEntry {
                id: r.id,
                filed_at: r.created_at,
                dossier: r.dossier,
                repeat_of: r.repeat_of,
            })
            .collect();
        Ok::<_, Refused>(Json(BugDetail {
            bug: stored.bug,
            reports,
            events: stored.event_count,
        }))
    }
    .await;
    respond(result)
}

#[derive(Deserialize)]
struct NoteBody {
    note: String,
}

#[derive(Deserialize)]
struct HandBody {
    reason: domain::workflow::NeedsHumanReason,
}

#[derive(Deserialize)]
struct ReopenBody {
    reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DuplicateBody {
    of: String,
}

/// A bug command (`/api/v1/bugs/{id}/…`), guarded as operation `op` of [`OPERATIONS`].
pub async fn bug_operation(
    state: AppState,
    credential: Credential,
    headers: HeaderMap,
    id: String,
    op: Op,
    body: axum::body::Bytes,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, op)?;
        let actor = credential.actor();
        if matches!(op, Op::Triage | Op::StartReproduction) {
            crate::service::reporter::crew_may_start(&state, &id).await?;
        }
        match op {
            Op::ProposeReproduction => {
                let proposed: Proposed = json_body(&body)?;
                let (state, id) = (state.clone(), id.clone());
                let proposal = reproduction::to_the_end(async move {
                    reproduction::propose(&state, &id, proposed).await
                })
                .await?;
                return Ok(match proposal {
                    reproduction::Proposal::Recorded(answer) => Json(answer).into_response(),
                    reproduction::Proposal::NotReproduced(answer) => {
                        (StatusCode::UNPROCESSABLE_ENTITY, Json(answer)).into_response()
                    }
                });
            }
            Op::Merge => {
                let merge: HeadBody = json_body(&body)?;
                let head = forge_service::parse_sha(&merge.head)?;
                let merged = forge_service::merge(&state, &id, head, &actor).await?;
                let mut response = Json(merged.recorded).into_response();
                if let Ok(value) = HeaderValue::from_str(merged.merge_commit.as_str()) {
                    response.headers_mut().insert("x-r2r-merge-commit", value);
                }
                return Ok(response);
            }
            Op::Promote => {
                let recorded = crate::service::commands::promote(&state, &id, &actor).await?;
                return Ok(Json(recorded).into_response());
            }
            Op::MarkDuplicate => {
                let duplicate: DuplicateBody = json_body(&body)?;
                let recorded = crate::service::commands::mark_duplicate(
                    &state,
                    &id,
                    duplicate.of.trim(),
                    &actor,
                )
                .await?;
                return Ok(Json(recorded).into_response());
            }
            Op::Approve => {
                let approve: HeadBody = json_body(&body)?;
                let head = forge_service::parse_sha(&approve.head)?;
                let recorded = forge_service::approve(&state, &id, head, &actor).await?;
                return Ok(Json(recorded).into_response());
            }
            _ => {}
        }
        let command = match op {
            Op::Triage => {
                let note: NoteBody = json_body(&body)?;
                Command::RecordTriage {
                    note: screened_note(&note.note)?,
                }
            }
            Op::AddNote => {
                let note: NoteBody = json_body(&body)?;
                Command::AddNote {
                    note: screened_note(&note.note)?,
                }
            }
            Op::Reopen => {
                let reopen: ReopenBody = json_body(&body)?;
                Command::OwnerReopen {
                    reason: reopen.reason,
                }
            }
            Op::Retry => Command::OwnerRetry,
            Op::TakeOver => Command::OwnerTakeOver,
            Op::HandToHuman => {
                let handed: HandBody = json_body(&body)?;
                Command::HandToHuman {
                    reason: handed.reason,
                }
            }
            Op::StartFix => Command::StartFix,
            Op::StartReproduction => Command::StartReproduction,
            other => {
                return Err(Refused::new(
                    Kind::Forbidden,
                    "undeclared_operation",
                    format!("{other:?} is not a bug command."),
                ))
            }
        };
        let recorded = run_command(&state, &id, command, &actor).await?;
        Ok(Json(recorded).into_response())
    }
    .await;
    respond(result)
}
