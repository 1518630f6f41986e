//! The crew's hand-offs and heartbeats over HTTP (rules in `domain::crew`), and the crew's
//! status for the desk: each role's last heartbeat, whether all four are connected, spend
//! against budget, recent tasks.

use crate::auth::Credential;
use crate::error::Kind;
use crate::service::crew::{parse_role, status_json, wire};
use crate::web::guard;
use crate::web::json_body;
use crate::web::respond;
use crate::web::AppState;
use crate::web::LimitedBody;
use crate::web::Op;
use crate::web::Refused;
use api_types::{Accepted, TaskList};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::crew::{self as rules, TaskFacts, TaskRefusal};
use domain::Role;
use serde::Deserialize;
use serde_json::json;
use store::CrewTask;

fn role_of(credential: &Credential) -> Result<Role, Refused> {
    match credential {
        Credential::Role(role) if role.is_crew() => Ok(*role),
        _ => Err(Refused::new(
            Kind::Forbidden,
            "forbidden_actor",
            "only the crew's roles hand off tasks",
        )),
    }
}

fn refused(refusal: TaskRefusal) -> Refused {
    let (status, code) = match refusal {
        TaskRefusal::BadAddress(_) => (Kind::Invalid, "invalid_address"),
        TaskRefusal::BadBody(_) => (Kind::Invalid, "invalid_body"),
        TaskRefusal::NotYours(_) => (Kind::Forbidden, "not_addressed_to_you"),
        TaskRefusal::BodyChanged => (Kind::Conflict, "body_mismatch"),
        TaskRefusal::AlreadyAccepted => (Kind::Conflict, "already_accepted"),
    };
    Refused::new(status, code, refusal.to_string())
}

fn short_text(text: &str, field: &str, max: usize) -> Result<String, Refused> {
    let text = text.trim();
    if text.is_empty() || text.chars().count() > max || text.chars().any(char::is_control) {
        return Err(Refused::new(
            Kind::Invalid,
            "invalid_field",
            format!("{field}: 1 to {max} characters, no control characters"),
        ));
    }
    Ok(text.to_owned())
}

fn unknown_task(id: &str) -> Refused {
    Refused::new(Kind::NotFound, "unknown_task", format!("No task {id}."))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Send {
    addressed_to: String,
    kind: String,
    #[serde(default)]
    bug: Option<String>,
    body: String,
    #[serde(default)]
    dedupe_key: Option<String>,
}

/// `POST /api/v1/crew/tasks`: a hand-off from the caller's role (201; 200 when the same
/// dedupe key was sent before, with the first task).
pub async fn send(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::SendTask)?;
        let sender = role_of(&credential)?;
        let asked: Send = json_body(&body)?;
        let addressed_to = parse_role(&asked.addressed_to)?;
        rules::check_new(sender, addressed_to, &asked.body).map_err(refused)?;
        let kind = short_text(&asked.kind, "kind", 40)?;
        let bug = asked
            .bug
            .as_deref()
            .map(|b| short_text(b, "bug", 100))
            .transpose()?;
        // No hand-off about a bug whose crew start a stranger's budget put off.
        if let Some(bug) = &bug {
            crate::service::reporter::crew_may_start(&state, bug).await?;
        }
        let id = format!(
            "task-{}-{:08x}",
            crate::clock::now_ms(),
            rand::random::<u32>()
        );
        let dedupe_key = match asked.dedupe_key.as_deref() {
            Some(key) => format!(
                "{}:{}",
                sender.as_str(),
                short_text(key, "dedupe_key", 200)?
            ),
            None => id.clone(),
        };
        let (task, fresh) = state
            .store
            .send_task(&CrewTask {
                id,
                dedupe_key,
                bug_id: bug,
                kind,
                sender: sender.as_str().into(),
                addressed_to: addressed_to.as_str().into(),
                body_sha256: rules::body_hash(&asked.body),
                body: asked.body,
                created_at: crate::clock::now_ms(),
                accepted_at: None,
                completed_at: None,
                outcome: None,
            })
            .await?;
        let status = if fresh {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        Ok::<_, Refused>((status, Json(wire(task))).into_response())
    }
    .await;
    respond(result)
}

/// `GET /api/v1/crew/tasks[?wait_ms=N]`: open tasks addressed to the caller's role; with
/// `wait_ms`, answered as soon as one is sent (or when the wait is over, with none).
pub async fn open(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::OpenTasks)?;
        let role = role_of(&credential)?;
        let wait = crate::web::wait::wait_of(query.as_deref())?;
        let tasks = crate::web::wait::until_found(
            state.store.work_added(),
            wait,
            |tasks: &Vec<store::crew::CrewTask>| !tasks.is_empty(),
            || async {
                state
                    .store
                    .open_tasks_for(role.as_str(), crate::clock::now_ms() - state.task_lease_ms)
                    .await
                    .map_err(Refused::storage)
            },
        )
        .await?
        .into_iter()
        .map(wire)
        .collect();
        Ok::<_, Refused>(Json(TaskList { tasks }))
    }
    .await;
    respond(result)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Accept {
    addressed_to: String,
    body_sha256: String,
}

async fn facts(state: &AppState, id: &str) -> Result<(CrewTask, TaskFacts), Refused> {
    let task = state
        .store
        .crew_task(id)
        .await?
        .ok_or_else(|| unknown_task(id))?;
    let facts = TaskFacts {
        sender: parse_role(&task.sender)?,
        addressed_to: parse_role(&task.addressed_to)?,
        body_sha256: task.body_sha256.clone(),
        accepted: rules::lease_held(
            task.accepted_at,
            task.completed_at.is_some(),
            crate::clock::now_ms(),
            state.task_lease_ms,
        ),
    };
    Ok((task, facts))
}

/// Only the role a task is addressed to may renew or complete it.
fn addressee_only(facts: &TaskFacts, caller: Role) -> Result<(), Refused> {
    if facts.addressed_to == caller {
        return Ok(());
    }
    Err(refused(TaskRefusal::NotYours(format!(
        "this task is addressed to the {}",
        facts.addressed_to.as_str()
    ))))
}

/// `POST /api/v1/crew/tasks/{id}/accept`: taken only by the addressee, naming itself and the
/// exact body's hash.
pub async fn accept(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::AcceptTask)?;
        let caller = role_of(&credential)?;
        let asked: Accept = json_body(&body)?;
        let named = parse_role(&asked.addressed_to)?;
        let (task, facts) = facts(&state, &id).await?;
        rules::check_accept(&facts, caller, named, asked.body_sha256.trim()).map_err(refused)?;
        let now = crate::clock::now_ms();
        if !state
            .store
            .accept_task(&id, now, now - state.task_lease_ms)
            .await?
        {
            return Err(refused(TaskRefusal::AlreadyAccepted));
        }
        Ok::<_, Refused>(Json(Accepted {
            accepted: true,
            task: wire(CrewTask {
                accepted_at: Some(now),
                ..task
            }),
            lease_ms: state.task_lease_ms,
        }))
    }
    .await;
    respond(result)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Complete {
    outcome: String,
    /// The acceptance the worker holds: when given, a worker whose lease another worker took
    /// over cannot complete the task (409 `not_open`).
    #[serde(default)]
    lease: Option<i64>,
}

/// `POST /api/v1/crew/tasks/{id}/complete`: the addressee says how its accepted task ended.
pub async fn complete(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::CompleteTask)?;
        let caller = role_of(&credential)?;
        let asked: Complete = json_body(&body)?;
        let outcome = short_text(&asked.outcome, "outcome", 300)?;
        let (_, facts) = facts(&state, &id).await?;
        addressee_only(&facts, caller)?;
        if !state
            .store
            .complete_task(&id, &outcome, crate::clock::now_ms(), asked.lease)
            .await
            ?
        {
            return Err(Refused::new(
                Kind::Conflict,
                "not_open",
                "only an accepted task that is not completed yet can be completed, by the worker that holds it",
            ));
        }
        Ok::<_, Refused>(Json(json!({"completed": true})))
    }
    .await;
    respond(result)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Renew {
    /// The acceptance time the worker holds (the task's `accepted_at` as it accepted it, or as
    /// the last renewal answered).
    lease: i64,
}

/// `POST /api/v1/crew/tasks/{id}/renew`: the worker still at a task keeps it — its lease
/// starts again now. Refused (409 `lease_lost`) once the task is completed or another worker
/// took it after the lease ran out: the caller must stop.
pub async fn renew(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::RenewTask)?;
        let caller = role_of(&credential)?;
        let asked: Renew = json_body(&body)?;
        let (_, facts) = facts(&state, &id).await?;
        addressee_only(&facts, caller)?;
        let now = crate::clock::now_ms();
        if !state
            .store
            .renew_task(&id, asked.lease, now)
            .await
            ?
        {
            return Err(Refused::new(
                Kind::Conflict,
                "lease_lost",
                "this task is completed, or was accepted again after its lease ran out: stop working on it",
            ));
        }
        Ok::<_, Refused>(Json(json!({"lease": now, "lease_ms": state.task_lease_ms})))
    }
    .await;
    respond(result)
}

/// `GET /api/v1/bugs/{id}/crew-step`: the crew's step for the bug in its state, the step's
/// tasks and the verdict the manager acts on (`domain::crew::step_verdict`, under
/// `R2R_CREW_RETRIES`): send a try, wait for one, or give the bug to a person.
pub async fn bug_step(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(bug): Path<String>,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::GetCrewStep)?;
        let step = crate::service::crew::crew_step(&state, &bug)
            .await?
            .ok_or_else(|| Refused::unknown_bug(&bug))?;
        Ok::<_, Refused>(Json(step))
    }
    .await;
    respond(result)
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Beat {
    #[serde(default)]
    detail: Option<String>,
}

/// `POST /api/v1/crew/heartbeat`: the caller's role is alive (and what it is doing).
pub async fn heartbeat(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::Heartbeat)?;
        let role = match credential {
            Credential::Role(Role::Recorder) => Role::Recorder,
            _ => role_of(&credential)?,
        };
        let beat: Beat = if body.is_empty() {
            Beat::default()
        } else {
            json_body(&body)?
        };
        let detail = match beat.detail.as_deref() {
            Some(detail) => short_text(detail, "detail", 200)?,
            None => "idle".into(),
        };
        state
            .store
            .heartbeat(role.as_str(), &detail, crate::clock::now_ms())
            .await?;
        Ok::<_, Refused>(Json(json!({"recorded": true})))
    }
    .await;
    respond(result)
}

/// `GET /api/v1/crew`.
pub async fn status(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::CrewStatus)?;
        Ok::<_, Refused>(Json(status_json(&state).await?))
    }
    .await;
    respond(result)
}
