//! The crew as the desk sees it: which roles have a live heartbeat, what each is doing, and
//! the open tasks (the crew page and `GET /api/v1/crew/status` show the same facts).

use crate::error::Kind;
use crate::web::AppState;
use crate::web::Refused;
use domain::crew::{self as rules};
use domain::Role;
use serde_json::{json, Value};

/// The crew's status: connections, spend, recent tasks (for `GET /api/v1/crew` and the
/// desk's crew page).
pub async fn status_json(state: &AppState) -> Result<Value, Refused> {
    let now = crate::clock::now_ms();
    let beats = state.store.heartbeats().await?;
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
    let spend = state.store.spend_summary(now).await?;
    let tasks: Vec<Value> = state
        .store
        .recent_tasks(20)
        .await?
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
    // Every deploying project's release (the environment's is also `release`, as before).
    let releases: Vec<Value> = state
        .all_releases()
        .into_iter()
        .map(|(project, board)| {
            let progress = board.progress();
            json!({
                "project": project,
                "service": board.service,
                "commit": progress.as_ref().map(|p| p.commit.clone()),
                "step": progress.as_ref().map(|p| p.step.as_str()),
                "detail": progress.as_ref().map(|p| p.detail.clone()),
                "live": board.live().map(|l| l.commit),
            })
        })
        .collect();
    let recorder = rules::connection(&pairs, Role::Recorder, now);
    let recorder_doing = beats
        .iter()
        .find(|(role, _, _)| role == Role::Recorder.as_str())
        .map(|(_, _, d)| d.clone());
    // Spend per project: each component's spend booked to the project that serves it.
    let scope = state.reporter.fresh(&state.store).await;
    let mut by_project: Vec<(String, u64, u64)> = scope
        .targets
        .iter()
        .map(|t| (t.project.clone(), 0, 0))
        .collect();
    for (component, spent, calls) in state.store.spend_by_component().await? {
        let project = scope.target_of(&component).project.clone();
        if let Some(row) = by_project.iter_mut().find(|(p, _, _)| *p == project) {
            row.1 += spent;
            row.2 += calls;
        }
    }
    let by_project: Vec<Value> = by_project
        .into_iter()
        .map(|(project, spent, calls)| json!({"project": project, "spent": spent, "calls": calls}))
        .collect();
    Ok(json!({
        "release": release,
        "releases": releases,
        "recorder": {
            "role": recorder.role, "last_seen": recorder.last_seen, "age_ms": recorder.age_ms,
            "fresh": recorder.fresh, "doing": recorder_doing,
        },
        "connected": rules::connected(&connections),
        "fresh_within_ms": rules::HEARTBEAT_FRESH_MS,
        "roles": roles,
        "spend": {"budget": state.spend, "book": spend, "by_project": by_project},
        "tasks": tasks,
    }))
}

pub fn parse_role(text: &str) -> Result<Role, Refused> {
    Role::ALL
        .into_iter()
        .find(|role| role.as_str() == text.trim())
        .ok_or_else(|| {
            Refused::new(
                Kind::Invalid,
                "invalid_role",
                format!("addressed_to: one of manager, reproducer, fixer, reviewer; got {text:?}"),
            )
        })
}

/// The crew's step for `bug` in its state, its tasks and the verdict the manager acts on
/// (`None`: no such bug).
pub async fn crew_step(
    state: &AppState,
    bug: &str,
) -> Result<Option<api_types::BugCrewStep>, Refused> {
    let Some(found) = state.store.load_bug(bug).await? else {
        return Ok(None);
    };
    let Some(updated_at) = state.store.bug_updated_at(bug).await? else {
        return Ok(None);
    };
    let found = found.bug;
    let tasks = state.store.tasks_for_bug(bug, 100).await?;
    let now = crate::clock::now_ms();
    let step = rules::crew_step(found.state).map(|(kind, role)| {
        let facts: Vec<rules::StepTask> = tasks
            .iter()
            .map(|t| rules::StepTask {
                kind: t.kind.clone(),
                created_at: t.created_at,
                completed_at: t.completed_at,
            })
            .collect();
        api_types::CrewStep {
            kind: kind.to_owned(),
            addressed_to: role.as_str().to_owned(),
            since: updated_at,
            verdict: rules::step_verdict(kind, updated_at, &facts, now, state.crew_retry),
            attempts_allowed: state.crew_retry.attempts,
        }
    });
    Ok(Some(api_types::BugCrewStep {
        bug: found.id,
        state: found.state,
        version: found.version,
        now,
        step,
        tasks: tasks.into_iter().map(wire).collect(),
    }))
}

/// The crew step in plain words for the owner's bug page: who has it, or what it waits for.
pub fn step_words(step: &api_types::BugCrewStep) -> Option<String> {
    let crew_step = step.step.as_ref()?;
    let of = crew_step.attempts_allowed;
    let ours = |t: &&api_types::Task| {
        t.kind == crew_step.kind && t.completed_at.is_none_or(|at| at >= crew_step.since)
    };
    Some(match &crew_step.verdict {
        rules::StepVerdict::Working => {
            let open = step
                .tasks
                .iter()
                .filter(ours)
                .find(|t| t.completed_at.is_none());
            match open {
                Some(task) if task.accepted_at.is_some() => format!(
                    "the {} has the {} task ({}) and renews its lease while it works; if it stops, the task is offered again",
                    crew_step.addressed_to, crew_step.kind, task.id
                ),
                Some(task) => format!(
                    "the {} task ({}) waits for the {} to take it",
                    crew_step.kind, task.id, crew_step.addressed_to
                ),
                None => format!("the {} has the {} step", crew_step.addressed_to, crew_step.kind),
            }
        }
        rules::StepVerdict::Waiting { failed, until } => {
            let last = step
                .tasks
                .iter()
                .filter(ours)
                .filter_map(|t| t.outcome.as_deref())
                .next()
                .unwrap_or("no outcome given");
            format!(
                "{failed} of {of} tries of the {} step ended without moving it on (last: {last}); the manager sends the next in {} s",
                crew_step.kind,
                ((until - step.now).max(0) + 999) / 1000
            )
        }
        rules::StepVerdict::HandOff { attempt } => format!(
            "the manager sends try {attempt} of {of} of the {} step to the {} next",
            crew_step.kind, crew_step.addressed_to
        ),
        rules::StepVerdict::GiveUp { failed } => format!(
            "all {failed} tries of the {} step failed; the manager hands the bug to a person next",
            crew_step.kind
        ),
    })
}

/// A stored task as the API sends it.
pub fn wire(task: store::CrewTask) -> api_types::Task {
    api_types::Task {
        id: task.id,
        dedupe_key: task.dedupe_key,
        bug_id: task.bug_id,
        kind: task.kind,
        sender: task.sender,
        addressed_to: task.addressed_to,
        body: task.body,
        body_sha256: task.body_sha256,
        created_at: task.created_at,
        accepted_at: task.accepted_at,
        completed_at: task.completed_at,
        outcome: task.outcome,
    }
}
