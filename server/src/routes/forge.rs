//! `GET /api/v1/bugs/{id}/diff` (owners read a fix), `POST /api/v1/deployments` (the
//! recorder records a commit that is live) and `POST /api/v1/releases/{service}/rollback`
//! (an owner serves an earlier release again). The bug commands that touch the forge (submit a
//! fix, approve, merge) are routed with the other bug commands in [`super::bugs`].

use crate::auth::Credential;
use crate::service::forge::{self as forge_service, parse_sha};
use crate::web::Op;
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
        guard(&state, &credential, &headers, Op::GetDiff)?;
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
        guard(&state, &credential, &headers, Op::RecordDeployment)?;
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
    use crate::service::rollback::{self, RolledBack};
    let result = async {
        guard(&state, &credential, &headers, Op::RollBack)?;
        let request: RollbackBody = json_body(&body)?;
        let answer = rollback::roll_back(
            &state,
            &service,
            &request.commit,
            &request.reason,
            credential.actor(),
        )
        .await?;
        Ok::<_, Refused>(match answer {
            RolledBack::Live(commit, bugs) => Json(json!({
                "service": service,
                "live": commit.as_str(),
                "bugs_back_to_merged": bugs,
            }))
            .into_response(),
            RolledBack::UnderWay(commit) => (
                StatusCode::ACCEPTED,
                Json(json!({
                    "service": service,
                    "rolling_back_to": commit.as_str(),
                    "message": format!("The rollback is still under way after {} s (the deployer finishes the release it is on first); the crew page says when it is live.", rollback::ROLLBACK_WAIT.as_secs()),
                })),
            )
                .into_response(),
        })
    }
    .await;
    respond(result)
}
