//! The crew as the desk sees it: which roles have a live heartbeat, what each is doing, and
//! the open tasks (the crew page and `GET /api/v1/crew/status` show the same facts).

use crate::web::AppState;
use crate::web::Refused;
use axum::http::StatusCode;
use domain::crew::{self as rules};
use domain::Role;
use serde_json::{json, Value};

/// The crew's status: connections, spend, recent tasks (for `GET /api/v1/crew` and the
/// desk's crew page).
pub async fn status_json(state: &AppState) -> Result<Value, Refused> {
    let now = crate::clock::now_ms();
    let beats = state.store.heartbeats().await.map_err(Refused::storage)?;
    let pairs: Vec<(Role, i64)> = beats
        .iter()
        .filter_map(|(role, at, _)| parse_role(role).ok().map(|r| (r, *at)))
        .collect();
    let connections = rules::connections(&pairs, now);
    let roles: Vec<Value> = connections
        .iter()
        .map(|c| {
            let detail = beats
                .iter()
                .find(|(role, _, _)| role == c.role.as_str())
                .map(|(_, _, d)| d.clone());
            json!({
                "role": c.role, "last_seen": c.last_seen, "age_ms": c.age_ms,
                "fresh": c.fresh, "doing": detail,
            })
        })
        .collect();
    let spend = state
        .store
        .spend_summary(now)
        .await
        .map_err(Refused::storage)?;
    let tasks: Vec<Value> = state
        .store
        .recent_tasks(20)
        .await
        .map_err(Refused::storage)?
        .into_iter()
        .map(|t| {
            json!({
                "id": t.id, "kind": t.kind, "bug": t.bug_id, "sender": t.sender,
                "addressed_to": t.addressed_to, "body_sha256": t.body_sha256,
                "created_at": t.created_at, "accepted_at": t.accepted_at,
                "completed_at": t.completed_at, "outcome": t.outcome,
            })
        })
        .collect();
    let release = state.releases.progress().map(|p| {
        json!({
            "service": state.releases.service,
            "commit": p.commit,
            "step": p.step.as_str(),
            "detail": p.detail,
            "live": state.releases.live().map(|l| l.commit),
        })
    });
    let recorder = rules::connection(&pairs, Role::Recorder, now);
    let recorder_doing = beats
        .iter()
        .find(|(role, _, _)| role == Role::Recorder.as_str())
        .map(|(_, _, d)| d.clone());
    Ok(json!({
        "release": release,
        "recorder": {
            "role": recorder.role, "last_seen": recorder.last_seen, "age_ms": recorder.age_ms,
            "fresh": recorder.fresh, "doing": recorder_doing,
        },
        "connected": rules::connected(&connections),
        "fresh_within_ms": rules::HEARTBEAT_FRESH_MS,
        "roles": roles,
        "spend": {"budget": state.spend, "book": spend},
        "tasks": tasks,
    }))
}

pub fn parse_role(text: &str) -> Result<Role, Refused> {
    Role::ALL
        .into_iter()
        .find(|role| role.as_str() == text.trim())
        .ok_or_else(|| {
            Refused::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_role",
                format!("addressed_to: one of manager, reproducer, fixer, reviewer; got {text:?}"),
            )
        })
}
