//! The operation table: every `/api` operation's method, path, realm and the principals it
//! accepts. The router builds every `/api` route from it, [`guard`] authorises with it, and
//! the OpenAPI document is generated from it — one source, so a route cannot exist outside
//! the rules.

use super::{AppState, Refused};
use crate::auth::{
    authorize, csrf_valid, Credential, Principal, Realm, CSRF_HEADER, SESSION_COOKIE,
};
use crate::error::Kind;
use axum::http::{HeaderMap, Method};
use domain::Role;
use serde_json::{json, Value};

/// Every `/api` operation by name: routes are bound to handlers, and handlers guarded, by these
/// (never by a string); the table below gives each its method, path and rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Health,
    OpenApi,
    Components,
    FileReport,
    Track,
    Answer,
    Login,
    AcceptInvite,
    Logout,
    Me,
    Invite,
    ListOwners,
    ConfirmOwner,
    RollBack,
    ListBugs,
    GetBug,
    Triage,
    StartFix,
    StartReproduction,
    ReserveModelCall,
    SettleModelCall,
    GetSpend,
    SendTask,
    OpenTasks,
    AcceptTask,
    RenewTask,
    GetCrewStep,
    CompleteTask,
    Heartbeat,
    CrewStatus,
    ProposeReproduction,
    AddNote,
    Approve,
    Reopen,
    Retry,
    MarkDuplicate,
    Promote,
    TakeOver,
    HandToHuman,
    GetReproductionContext,
    GetFixContext,
    SubmitFixCandidate,
    GetDiff,
    Merge,
    RecordDeployment,
    ClaimNotifications,
    RecordDelivery,
    FailNotification,
    AckNotification,
    ClaimSandboxJob,
    RenewSandboxJob,
    FinishSandboxJob,
    MessageReporter,
}

impl Op {
    /// Every operation, in the table's order.
    pub const ALL: &'static [Op] = &[
        Op::Health,
        Op::OpenApi,
        Op::Components,
        Op::FileReport,
        Op::Track,
        Op::Answer,
        Op::Login,
        Op::AcceptInvite,
        Op::Logout,
        Op::Me,
        Op::Invite,
        Op::ListOwners,
        Op::ConfirmOwner,
        Op::RollBack,
        Op::ListBugs,
        Op::GetBug,
        Op::Triage,
        Op::StartFix,
        Op::StartReproduction,
        Op::ReserveModelCall,
        Op::SettleModelCall,
        Op::GetSpend,
        Op::SendTask,
        Op::OpenTasks,
        Op::AcceptTask,
        Op::RenewTask,
        Op::GetCrewStep,
        Op::CompleteTask,
        Op::Heartbeat,
        Op::CrewStatus,
        Op::ProposeReproduction,
        Op::AddNote,
        Op::Approve,
        Op::Reopen,
        Op::Retry,
        Op::MarkDuplicate,
        Op::Promote,
        Op::TakeOver,
        Op::HandToHuman,
        Op::GetReproductionContext,
        Op::GetFixContext,
        Op::SubmitFixCandidate,
        Op::GetDiff,
        Op::Merge,
        Op::RecordDeployment,
        Op::ClaimNotifications,
        Op::RecordDelivery,
        Op::FailNotification,
        Op::AckNotification,
        Op::ClaimSandboxJob,
        Op::RenewSandboxJob,
        Op::FinishSandboxJob,
        Op::MessageReporter,
    ];

    /// Its entry in the operation table (`None` only if the table forgot it, which a test
    /// rules out).
    pub fn spec(self) -> Option<&'static Operation> {
        OPERATIONS.iter().find(|entry| entry.op == self)
    }
}

/// One operation of the API: the single source for routing checks and the OpenAPI document.
#[derive(Debug)]
pub struct Operation {
    /// Which operation.
    pub op: Op,
    /// `operationId`.
    pub id: &'static str,
    /// HTTP method.
    pub method: &'static str,
    /// Path template (`{id}` parameters).
    pub path: &'static str,
    /// What it does.
    pub summary: &'static str,
    /// Where its credentials come from.
    pub realm: Realm,
    /// Who may call it (empty for public operations).
    pub accepts: &'static [Principal],
    /// Reporter operations: the capability header, and 404 for a wrong or missing one.
    pub reporter: bool,
}

use Principal::{Owner, Role as R};

const CREW_AND_OWNERS: &[Principal] = &[
    Owner,
    R(Role::Manager),
    R(Role::Reproducer),
    R(Role::Fixer),
    R(Role::Reviewer),
    R(Role::Recorder),
];

const CREW: &[Principal] = &[
    R(Role::Manager),
    R(Role::Reproducer),
    R(Role::Fixer),
    R(Role::Reviewer),
];

/// The crew's four roles and owners.
const CREW_OR_OWNER: &[Principal] = &[
    Owner,
    R(Role::Manager),
    R(Role::Reproducer),
    R(Role::Fixer),
    R(Role::Reviewer),
];

/// The roles whose heartbeats the crew page shows: the crew's four and the recorder.
const BEATING: &[Principal] = &[
    R(Role::Manager),
    R(Role::Reproducer),
    R(Role::Fixer),
    R(Role::Reviewer),
    R(Role::Recorder),
];

/// Every operation under `/api`.
pub const OPERATIONS: &[Operation] = &[
    Operation {
        op: Op::Health,
        id: "health",
        method: "GET",
        path: "/api/health",
        summary: "Service, version, commit and storage status",
        realm: Realm::Public,
        accepts: &[],
        reporter: false,
    },
    Operation {
        op: Op::OpenApi,
        id: "openapi",
        method: "GET",
        path: "/api/openapi.json",
        summary: "This document",
        realm: Realm::Public,
        accepts: &[],
        reporter: false,
    },
    Operation {
        op: Op::Components,
        id: "components",
        method: "GET",
        path: "/api/v1/components",
        summary: "Components a report may name",
        realm: Realm::Public,
        accepts: &[],
        reporter: false,
    },
    Operation {
        op: Op::FileReport,
        id: "fileReport",
        method: "POST",
        path: "/api/v1/reports",
        summary: "File a bug report (answers with the private tracking link)",
        realm: Realm::Public,
        accepts: &[],
        reporter: false,
    },
    Operation {
        op: Op::Track,
        id: "track",
        method: "GET",
        path: "/api/v1/track",
        summary: "A reporter's own report and bug (X-R2R-Capability)",
        realm: Realm::Public,
        accepts: &[],
        reporter: true,
    },
    Operation {
        op: Op::Answer,
        id: "answer",
        method: "POST",
        path: "/api/v1/track/answer",
        summary: "Answer one of the two questions (X-R2R-Capability)",
        realm: Realm::Public,
        accepts: &[],
        reporter: true,
    },
    Operation {
        op: Op::Login,
        id: "login",
        method: "POST",
        path: "/api/v1/session",
        summary: "Sign in as an owner: sets the session cookie, returns the CSRF token",
        realm: Realm::Public,
        accepts: &[],
        reporter: false,
    },
    Operation {
        op: Op::AcceptInvite,
        id: "acceptInvite",
        method: "POST",
        path: "/api/v1/owners/accept",
        summary: "Create an owner account from an invitation",
        realm: Realm::Public,
        accepts: &[],
        reporter: false,
    },
    Operation {
        op: Op::Logout,
        id: "logout",
        method: "DELETE",
        path: "/api/v1/session",
        summary: "Sign out (ends this session)",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        op: Op::Me,
        id: "me",
        method: "GET",
        path: "/api/v1/me",
        summary: "Who the credential names (and an owner's CSRF token)",
        realm: Realm::Engineering,
        accepts: CREW_AND_OWNERS,
        reporter: false,
    },
    Operation {
        op: Op::Invite,
        id: "invite",
        method: "POST",
        path: "/api/v1/owners/invites",
        summary: "Invite another owner (a one-time link, valid 72 hours)",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        op: Op::ListOwners,
        id: "listOwners",
        method: "GET",
        path: "/api/v1/owners",
        summary: "Every owner: who invited them, who confirmed them, who still waits",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        op: Op::ConfirmOwner,
        id: "confirmOwner",
        method: "POST",
        path: "/api/v1/owners/{id}/confirm",
        summary: "Confirm a pending owner (only an owner other than their inviter)",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        op: Op::RollBack,
        id: "rollBack",
        method: "POST",
        path: "/api/v1/releases/{service}/rollback",
        summary: "Serve an earlier recorded release of a service again (owners): the bugs whose fix it lacks go back to merged and nobody is asked about them",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        op: Op::ListBugs,
        id: "listBugs",
        method: "GET",
        path: "/api/v1/bugs",
        summary: "Every bug with its state (?after=FINGERPRINT&wait_ms=N: answered once the list changed, at most 25 s)",
        realm: Realm::Engineering,
        accepts: CREW_AND_OWNERS,
        reporter: false,
    },
    Operation {
        op: Op::GetBug,
        id: "getBug",
        method: "GET",
        path: "/api/v1/bugs/{id}",
        summary: "One bug with its reports' redacted dossiers",
        realm: Realm::Engineering,
        accepts: CREW_AND_OWNERS,
        reporter: false,
    },
    Operation {
        op: Op::Triage,
        id: "triage",
        method: "POST",
        path: "/api/v1/bugs/{id}/triage",
        summary: "Record the manager's triage",
        realm: Realm::Engineering,
        accepts: &[R(Role::Manager)],
        reporter: false,
    },
    Operation {
        op: Op::StartFix,
        id: "startFix",
        method: "POST",
        path: "/api/v1/bugs/{id}/fix/start",
        summary: "Start drafting the fix of a confirmed bug",
        realm: Realm::Engineering,
        accepts: &[R(Role::Manager), R(Role::Fixer)],
        reporter: false,
    },
    Operation {
        op: Op::StartReproduction,
        id: "startReproduction",
        method: "POST",
        path: "/api/v1/bugs/{id}/reproduction/start",
        summary: "Start writing the failing test",
        realm: Realm::Engineering,
        accepts: &[R(Role::Manager), R(Role::Reproducer)],
        reporter: false,
    },
    Operation {
        op: Op::ReserveModelCall,
        id: "reserveModelCall",
        method: "POST",
        path: "/api/v1/model-calls",
        summary: "Reserve a model call's worst-case cost against the budget before making it (429 when it does not fit)",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        op: Op::SettleModelCall,
        id: "settleModelCall",
        method: "POST",
        path: "/api/v1/model-calls/{id}/settle",
        summary: "Settle a model call: its cost when it answered, its worst case when it timed out or dropped",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        op: Op::GetSpend,
        id: "getSpend",
        method: "GET",
        path: "/api/v1/spend",
        summary: "The model budget and what is spent and reserved",
        realm: Realm::Engineering,
        accepts: CREW_AND_OWNERS,
        reporter: false,
    },
    Operation {
        op: Op::SendTask,
        id: "sendTask",
        method: "POST",
        path: "/api/v1/crew/tasks",
        summary: "Hand a task to another crew role (recorded with sender, addressee and the body's SHA-256; a repeated dedupe key returns the first task)",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        op: Op::OpenTasks,
        id: "openTasks",
        method: "GET",
        path: "/api/v1/crew/tasks",
        summary: "Open tasks addressed to the caller's role (?wait_ms=N: answered as soon as one is sent, at most 25 s)",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        op: Op::AcceptTask,
        id: "acceptTask",
        method: "POST",
        path: "/api/v1/crew/tasks/{id}/accept",
        summary: "Accept a task by naming its addressee and the exact body's hash",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        op: Op::RenewTask,
        id: "renewTask",
        method: "POST",
        path: "/api/v1/crew/tasks/{id}/renew",
        summary: "Keep an accepted task: its lease starts again now (409 lease_lost once another worker took it or it is completed)",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        op: Op::GetCrewStep,
        id: "getCrewStep",
        method: "GET",
        path: "/api/v1/bugs/{id}/crew-step",
        summary: "The crew's step for a bug in its state, its tasks, and what the manager is to do: send a try, wait, or give the bug to a person",
        realm: Realm::Engineering,
        accepts: CREW_OR_OWNER,
        reporter: false,
    },
    Operation {
        op: Op::CompleteTask,
        id: "completeTask",
        method: "POST",
        path: "/api/v1/crew/tasks/{id}/complete",
        summary: "Say how an accepted task ended",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        op: Op::Heartbeat,
        id: "heartbeat",
        method: "POST",
        path: "/api/v1/crew/heartbeat",
        summary: "The caller's role is alive (the crew is connected when its four are younger than 90 s; the recorder's is shown beside them)",
        realm: Realm::Engineering,
        accepts: BEATING,
        reporter: false,
    },
    Operation {
        op: Op::CrewStatus,
        id: "crewStatus",
        method: "GET",
        path: "/api/v1/crew",
        summary: "Each crew role's heartbeat and connection, spend against budget, recent tasks",
        realm: Realm::Engineering,
        accepts: CREW_AND_OWNERS,
        reporter: false,
    },
    Operation {
        op: Op::ProposeReproduction,
        id: "proposeReproduction",
        method: "POST",
        path: "/api/v1/bugs/{id}/reproduction",
        summary: "Propose a new failing test; the desk re-runs it in its own sandbox and records it only if it fails on an assertion",
        realm: Realm::Engineering,
        accepts: &[R(Role::Reproducer)],
        reporter: false,
    },
    Operation {
        op: Op::AddNote,
        id: "addNote",
        method: "POST",
        path: "/api/v1/bugs/{id}/notes",
        summary: "Add an advisory note (never a decision)",
        realm: Realm::Engineering,
        accepts: &[
            R(Role::Manager),
            R(Role::Reproducer),
            R(Role::Fixer),
            R(Role::Reviewer),
        ],
        reporter: false,
    },
    Operation {
        op: Op::Approve,
        id: "approve",
        method: "POST",
        path: "/api/v1/bugs/{id}/approve",
        summary: "Approve the exact head commit of the fix",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        op: Op::Reopen,
        id: "reopen",
        method: "POST",
        path: "/api/v1/bugs/{id}/reopen",
        summary: "Send the bug back to the start of the loop",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        op: Op::Retry,
        id: "retry",
        method: "POST",
        path: "/api/v1/bugs/{id}/retry",
        summary: "Give a bug that needs a person back to the crew, at the stage it reached",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        op: Op::MarkDuplicate,
        id: "markDuplicate",
        method: "POST",
        path: "/api/v1/bugs/{id}/duplicate",
        summary: "Merge this bug into another (the same bug in other words): its reports join that bug",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        op: Op::Promote,
        id: "promote",
        method: "POST",
        path: "/api/v1/bugs/{id}/promote",
        summary: "Vouch for a bug no reporter confirmed yet: its crew work starts now, paid from the confirmed bugs' share",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        op: Op::TakeOver,
        id: "takeOver",
        method: "POST",
        path: "/api/v1/bugs/{id}/take-over",
        summary: "Take a bug away from the crew: it waits for a person",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        op: Op::HandToHuman,
        id: "handToHuman",
        method: "POST",
        path: "/api/v1/bugs/{id}/hand-to-human",
        summary: "The crew cannot go on with the bug: hand it to a person, with the reason",
        realm: Realm::Engineering,
        accepts: &[R(Role::Manager), R(Role::Reproducer), R(Role::Fixer)],
        reporter: false,
    },
    Operation {
        op: Op::GetReproductionContext,
        id: "getReproductionContext",
        method: "GET",
        path: "/api/v1/bugs/{id}/reproduction/context",
        summary: "What a reproduction may be written from: the project's map, the files closest to the reports' words within a budget, the package tests import, the round's attempts",
        realm: Realm::Engineering,
        accepts: &[R(Role::Reproducer)],
        reporter: false,
    },
    Operation {
        op: Op::GetFixContext,
        id: "getFixContext",
        method: "GET",
        path: "/api/v1/bugs/{id}/fix/context",
        summary: "What a fix may be written from: the default branch's head, the allowed folders and their files, the confirmed test",
        realm: Realm::Engineering,
        accepts: &[R(Role::Fixer)],
        reporter: false,
    },
    Operation {
        op: Op::SubmitFixCandidate,
        id: "submitFixCandidate",
        method: "POST",
        path: "/api/v1/bugs/{id}/fix/candidate",
        summary: "Submit whole files for a fix; the desk runs the suite (with the confirmed test), formatter and linter in its sandbox, then opens the draft pull request or records a failed attempt",
        realm: Realm::Engineering,
        accepts: &[R(Role::Fixer)],
        reporter: false,
    },
    Operation {
        op: Op::GetDiff,
        id: "getDiff",
        method: "GET",
        path: "/api/v1/bugs/{id}/diff",
        summary: "The fix's diff on the local forge",
        realm: Realm::Engineering,
        accepts: CREW_AND_OWNERS,
        reporter: false,
    },
    Operation {
        op: Op::Merge,
        id: "merge",
        method: "POST",
        path: "/api/v1/bugs/{id}/merge",
        summary: "Merge the approved head into the default branch (local forge)",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        op: Op::RecordDeployment,
        id: "recordDeployment",
        method: "POST",
        path: "/api/v1/deployments",
        summary: "Record a verified deployment of a commit (local forge)",
        realm: Realm::Engineering,
        accepts: &[R(Role::Recorder)],
        reporter: false,
    },
    Operation {
        op: Op::ClaimNotifications,
        id: "claimNotifications",
        method: "POST",
        path: "/api/v1/outbox/concierge/claim",
        summary: "Lease the next notifications to deliver to reporters (?wait_ms=N: answered as soon as one is queued, at most 25 s)",
        realm: Realm::Concierge,
        accepts: &[R(Role::Concierge)],
        reporter: false,
    },
    Operation {
        op: Op::RecordDelivery,
        id: "recordDelivery",
        method: "POST",
        path: "/api/v1/outbox/jobs/{key}/delivered",
        summary: "Record one channel a notification went through (inbox, email, webhook)",
        realm: Realm::Concierge,
        accepts: &[R(Role::Concierge)],
        reporter: false,
    },
    Operation {
        op: Op::FailNotification,
        id: "failNotification",
        method: "POST",
        path: "/api/v1/outbox/jobs/{key}/fail",
        summary: "Report a failed delivery; the job returns after a backoff",
        realm: Realm::Concierge,
        accepts: &[R(Role::Concierge)],
        reporter: false,
    },
    Operation {
        op: Op::AckNotification,
        id: "ackNotification",
        method: "POST",
        path: "/api/v1/outbox/jobs/{key}/ack",
        summary: "Confirm a delivered notification",
        realm: Realm::Concierge,
        accepts: &[R(Role::Concierge)],
        reporter: false,
    },
    Operation {
        op: Op::ClaimSandboxJob,
        id: "claimSandboxJob",
        method: "POST",
        path: "/api/v1/sandbox/jobs/claim",
        summary: "A sandbox worker leases the oldest waiting sandbox job (204 when none waits; ?wait_ms=N waits for one, at most 25 s)",
        realm: Realm::SandboxWorker,
        accepts: &[Principal::Worker],
        reporter: false,
    },
    Operation {
        op: Op::RenewSandboxJob,
        id: "renewSandboxJob",
        method: "POST",
        path: "/api/v1/sandbox/jobs/{key}/renew",
        summary: "A sandbox worker extends the lease of the job it runs",
        realm: Realm::SandboxWorker,
        accepts: &[Principal::Worker],
        reporter: false,
    },
    Operation {
        op: Op::FinishSandboxJob,
        id: "finishSandboxJob",
        method: "POST",
        path: "/api/v1/sandbox/jobs/{key}/outcome",
        summary: "A sandbox worker reports the outcome of the job it ran",
        realm: Realm::SandboxWorker,
        accepts: &[Principal::Worker],
        reporter: false,
    },
    Operation {
        op: Op::MessageReporter,
        id: "messageReporter",
        method: "POST",
        path: "/api/v1/reports/{id}/messages",
        summary: "Write to a report's reporter (tracking page, and email when they left an address)",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
];

/// Checks the credential against operation `op`; for an owner's session on a state-changing
/// method, also the CSRF token.
pub fn guard(
    state: &AppState,
    credential: &Credential,
    headers: &HeaderMap,
    op: Op,
) -> Result<(), Refused> {
    // A handler naming an operation the table does not declare is refused outright: a route
    // outside the table must never fall back to some other operation's rules.
    let Some(op) = op.spec() else {
        tracing::error!(
            operation = ?op,
            "a handler guards itself with an undeclared operation"
        );
        return Err(Refused::new(
            Kind::Forbidden,
            "undeclared_operation",
            "This operation is not declared in the desk's operation table, so nobody may call it.",
        ));
    };
    authorize(credential, op.realm, op.accepts)
        .map_err(|(status, code, message)| Refused::new(status, code, message))?;
    if let Credential::Owner { session, .. } = credential {
        let unsafe_method = !matches!(op.method, "GET" | "HEAD" | "OPTIONS");
        let presented = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
        if unsafe_method
            && !csrf_valid(
                state.auth.session_key.expose().as_bytes(),
                session,
                presented,
            )
        {
            return Err(Refused::new(
                Kind::Forbidden,
                "csrf",
                "missing or wrong X-CSRF-Token: reload the page (or GET /api/v1/me) and try again",
            ));
        }
    }
    Ok(())
}

/// The OpenAPI 3.1 document: every operation with the credentials it accepts as `security`
/// (none for public ones) and its realm as `x-r2r-realm`.
pub fn openapi_document() -> Value {
    let mut paths = serde_json::Map::new();
    for op in OPERATIONS {
        let security: Vec<Value> = if op.reporter {
            vec![json!({"reporterCapability": []})]
        } else {
            op.accepts
                .iter()
                .map(|p| match p {
                    Principal::Owner => json!({"ownerSession": []}),
                    Principal::Role(role) => json!({"roleToken": [role.as_str()]}),
                    Principal::Worker => json!({"workerToken": []}),
                })
                .collect()
        };
        let parameters: Vec<Value> = op
            .path
            .split('/')
            .filter_map(|part| part.strip_prefix('{').and_then(|p| p.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let mut operation = json!({
            "operationId": op.id,
            "summary": op.summary,
            "security": security,
            "x-r2r-realm": if op.reporter { "reporter" } else { op.realm.as_str() },
            "responses": {
                "200": {"description": "Done"},
                "401": {"description": "No credential for this part of the desk"},
                "403": {"description": "A valid credential without this power (or a missing CSRF token)"},
            },
        });
        if !parameters.is_empty() {
            operation["parameters"] = Value::Array(parameters);
        }
        if op.method != "GET" {
            operation["requestBody"] = json!({"required": false, "content": {"application/json": {"schema": {"type": "object"}}}});
        }
        let entry = paths.entry(op.path.to_owned()).or_insert_with(|| json!({}));
        entry[op.method.to_lowercase()] = operation;
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Reporter-to-Release", "version": crate::build_info::VERSION},
        "paths": paths,
        "components": {"securitySchemes": {
            "ownerSession": {"type": "apiKey", "in": "cookie", "name": SESSION_COOKIE,
                "description": "An owner's session; state-changing calls also need the X-CSRF-Token header"},
            "roleToken": {"type": "http", "scheme": "bearer",
                "description": "A role's token r2r_<role>_<hex>; the security entry lists the roles"},
            "workerToken": {"type": "http", "scheme": "bearer",
                "description": "A sandbox worker host's own token r2r_worker_<hex> (r2r sandbox add-worker)"},
            "reporterCapability": {"type": "apiKey", "in": "header", "name": app::dto::CAPABILITY_HEADER,
                "description": "The secret from the reporter's private link (#fragment)"},
        }},
    })
}

/// The method of an operation, for routing tables.
pub fn method_of(op: &Operation) -> Method {
    Method::from_bytes(op.method.as_bytes()).unwrap_or(Method::GET)
}
