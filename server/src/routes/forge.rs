//! `GET /api/v1/bugs/{id}/diff` (owners read a fix), `POST /api/v1/deployments` (the
//! recorder records a commit that is live) and `POST /api/v1/releases/{service}/rollback`
//! (an owner serves an earlier release again). The bug commands that touch the forge (submit a
//! fix, approve, merge) are routed with the other bug commands in [`super::bugs`].

use crate::auth::Credential;
use crate::service::forge::{self as forge_service, parse_sha};
use crate::web::{guard, json_body, respond, AppState, LimitedBody, Refused};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

/// `GET /api/v1/bugs/{id}/diff`.
pub async fn diff(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "getDiff")?;
        Ok::<_, Refused>(Json(forge_service::diff(&state, &id).await?))
    }
    .await;
    respond(result)
}

#[derive(Deserialize)]
struct DeploymentBody {
    deployment: String,
    commit: String,
    /// The project it is a release of (default: the environment's, `default`).
    #[serde(default)]
    project: Option<String>,
}

/// `POST /api/v1/deployments`: the recorder (after `r2r recorder verify`) records that a
/// commit is live; every bug in review, approved or merged sees it, with ancestry from git.
pub async fn record_deployment(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "recordDeployment")?;
        let deployment: DeploymentBody = json_body(&body)?;
        let commit = parse_sha(&deployment.commit)?;
        let actor = credential.actor();
        let bugs = forge_service::record_deployment(
            &state,
            &deployment.deployment,
            &commit,
            &actor,
            deployment
                .project
                .as_deref()
                .unwrap_or(domain::project::ENVIRONMENT_PROJECT),
        )
        .await?;
        let bugs: Vec<_> = bugs
            .into_iter()
            .map(|(bug, ok)| json!({"bug": bug, "ok": ok}))
            .collect();
        Ok::<_, Refused>(Json(
            json!({"deployment": deployment.deployment.trim(), "bugs": bugs}),
        ))
    }
    .await;
    respond(result)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RollbackBody {
    commit: String,
    reason: String,
}

/// How long an owner's rollback may take to go live (start the earlier release, check its
/// health) before the answer says it is still under way.
const ROLLBACK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// `POST /api/v1/releases/{service}/rollback` (owners): the deployer serves an earlier
/// release of `service` it built and recorded (its artifact's SHA-256 checked again), the
/// bugs whose merge it lacks go back to `merged` with the owner's reason, and the recorder
/// records it. A new head that lands later is released as any other.
pub async fn roll_back(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(service): Path<String>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "rollBack")?;
        let request: RollbackBody = json_body(&body)?;
        let commit = parse_sha(&request.commit)?;
        let reason: String = request.reason.trim().chars().take(2_000).collect();
        if reason.is_empty() {
            return Err(Refused::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "reason_required",
                "Say why the release is rolled back (reason): it goes in the ledger of every bug whose fix stops being live.",
            ));
        }
        let board = state.releases_serving(&service).ok_or_else(|| {
            Refused::new(
                StatusCode::NOT_FOUND,
                "unknown_service",
                format!("No deployer on this desk serves {service:?}."),
            )
        })?;
        if let Some(leader) = board.leader_elsewhere() {
            return Err(Refused::new(
                StatusCode::CONFLICT,
                "deployer_elsewhere",
                format!("The desk server at {leader} leads {service:?}'s deployer and holds its releases: ask it to roll back."),
            ));
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        board
            .request_rollback(crate::web::Rollback {
                commit: commit.clone(),
                reason,
                owner: credential.actor(),
                reply,
            })
            .map_err(|_| {
                Refused::new(
                    StatusCode::CONFLICT,
                    "rollback_in_progress",
                    "Another rollback of this service is under way; try again when it is live.",
                )
            })?;
        match tokio::time::timeout(ROLLBACK_WAIT, answer).await {
            Ok(Ok(Ok(bugs))) => Ok::<_, Refused>(
                Json(json!({
                    "service": service,
                    "live": commit.as_str(),
                    "bugs_back_to_merged": bugs,
                }))
                .into_response(),
            ),
            Ok(Ok(Err(why))) => Err(Refused::new(
                StatusCode::CONFLICT,
                "rollback_refused",
                format!("The release {} was not served again: {why}", commit.as_str()),
            )),
            Ok(Err(_)) => Err(Refused::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "deployer_stopped",
                "The service's deployer stopped before it took the rollback; nothing changed.",
            )),
            Err(_) => Ok((
                StatusCode::ACCEPTED,
                Json(json!({
                    "service": service,
                    "rolling_back_to": commit.as_str(),
                    "message": format!("The rollback is still under way after {} s (the deployer finishes the release it is on first); the crew page says when it is live.", ROLLBACK_WAIT.as_secs()),
                })),
            )
                .into_response()),
        }
    }
    .await;
    respond(result)
}
