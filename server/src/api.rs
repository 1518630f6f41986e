//! The versioned API's authenticated part: owner sessions and invitations, the engineering
//! view of bugs, the commands people and the crew may send, and the concierge's outbox — and
//! the OpenAPI document generated from the same operation table the handlers enforce.

use crate::auth::{
    authorize, csrf_token, csrf_valid, hash_secret, random_secret, Credential, Principal, Realm,
    CSRF_HEADER, INVITE_TTL_MS, SESSION_COOKIE, SESSION_TTL_MS,
};
use crate::clock::now_ms;
use crate::http::AppState;
use crate::reporter::{no_store, ClientAddr, LimitedBody, Refused};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::workflow::{Actor, Command, CommitSha};
use domain::Role;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Instant;
use store::{ConfirmOutcome, InviteOutcome, NewOwner, OwnerAccount};

/// One operation of the API: the single source for routing checks and the OpenAPI document.
#[derive(Debug)]
pub struct Operation {
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

/// Every operation under `/api`.
pub const OPERATIONS: &[Operation] = &[
    Operation {
        id: "health",
        method: "GET",
        path: "/api/health",
        summary: "Service, version, commit and storage status",
        realm: Realm::Public,
        accepts: &[],
        reporter: false,
    },
    Operation {
        id: "openapi",
        method: "GET",
        path: "/api/openapi.json",
        summary: "This document",
        realm: Realm::Public,
        accepts: &[],
        reporter: false,
    },
    Operation {
        id: "components",
        method: "GET",
        path: "/api/v1/components",
        summary: "Components a report may name",
        realm: Realm::Public,
        accepts: &[],
        reporter: false,
    },
    Operation {
        id: "fileReport",
        method: "POST",
        path: "/api/v1/reports",
        summary: "File a bug report (answers with the private tracking link)",
        realm: Realm::Public,
        accepts: &[],
        reporter: false,
    },
    Operation {
        id: "track",
        method: "GET",
        path: "/api/v1/track",
        summary: "A reporter's own report and bug (X-R2R-Capability)",
        realm: Realm::Public,
        accepts: &[],
        reporter: true,
    },
    Operation {
        id: "answer",
        method: "POST",
        path: "/api/v1/track/answer",
        summary: "Answer one of the two questions (X-R2R-Capability)",
        realm: Realm::Public,
        accepts: &[],
        reporter: true,
    },
    Operation {
        id: "login",
        method: "POST",
        path: "/api/v1/session",
        summary: "Sign in as an owner: sets the session cookie, returns the CSRF token",
        realm: Realm::Public,
        accepts: &[],
        reporter: false,
    },
    Operation {
        id: "acceptInvite",
        method: "POST",
        path: "/api/v1/owners/accept",
        summary: "Create an owner account from an invitation",
        realm: Realm::Public,
        accepts: &[],
        reporter: false,
    },
    Operation {
        id: "logout",
        method: "DELETE",
        path: "/api/v1/session",
        summary: "Sign out (ends this session)",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        id: "me",
        method: "GET",
        path: "/api/v1/me",
        summary: "Who the credential names (and an owner's CSRF token)",
        realm: Realm::Engineering,
        accepts: CREW_AND_OWNERS,
        reporter: false,
    },
    Operation {
        id: "invite",
        method: "POST",
        path: "/api/v1/owners/invites",
        summary: "Invite another owner (a one-time link, valid 72 hours)",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        id: "listOwners",
        method: "GET",
        path: "/api/v1/owners",
        summary: "Every owner: who invited them, who confirmed them, who still waits",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        id: "confirmOwner",
        method: "POST",
        path: "/api/v1/owners/{id}/confirm",
        summary: "Confirm a pending owner (only an owner other than their inviter)",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        id: "listBugs",
        method: "GET",
        path: "/api/v1/bugs",
        summary: "Every bug with its state",
        realm: Realm::Engineering,
        accepts: CREW_AND_OWNERS,
        reporter: false,
    },
    Operation {
        id: "getBug",
        method: "GET",
        path: "/api/v1/bugs/{id}",
        summary: "One bug with its reports' redacted dossiers",
        realm: Realm::Engineering,
        accepts: CREW_AND_OWNERS,
        reporter: false,
    },
    Operation {
        id: "triage",
        method: "POST",
        path: "/api/v1/bugs/{id}/triage",
        summary: "Record the manager's triage",
        realm: Realm::Engineering,
        accepts: &[R(Role::Manager)],
        reporter: false,
    },
    Operation {
        id: "startFix",
        method: "POST",
        path: "/api/v1/bugs/{id}/fix/start",
        summary: "Start drafting the fix of a confirmed bug",
        realm: Realm::Engineering,
        accepts: &[R(Role::Manager), R(Role::Fixer)],
        reporter: false,
    },
    Operation {
        id: "startReproduction",
        method: "POST",
        path: "/api/v1/bugs/{id}/reproduction/start",
        summary: "Start writing the failing test",
        realm: Realm::Engineering,
        accepts: &[R(Role::Manager), R(Role::Reproducer)],
        reporter: false,
    },
    Operation {
        id: "reserveModelCall",
        method: "POST",
        path: "/api/v1/model-calls",
        summary: "Reserve a model call's worst-case cost against the budget before making it (429 when it does not fit)",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        id: "settleModelCall",
        method: "POST",
        path: "/api/v1/model-calls/{id}/settle",
        summary: "Settle a model call: its cost when it answered, its worst case when it timed out or dropped",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        id: "getSpend",
        method: "GET",
        path: "/api/v1/spend",
        summary: "The model budget and what is spent and reserved",
        realm: Realm::Engineering,
        accepts: CREW_AND_OWNERS,
        reporter: false,
    },
    Operation {
        id: "sendTask",
        method: "POST",
        path: "/api/v1/crew/tasks",
        summary: "Hand a task to another crew role (recorded with sender, addressee and the body's SHA-256; a repeated dedupe key returns the first task)",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        id: "openTasks",
        method: "GET",
        path: "/api/v1/crew/tasks",
        summary: "Open tasks addressed to the caller's role",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        id: "acceptTask",
        method: "POST",
        path: "/api/v1/crew/tasks/{id}/accept",
        summary: "Accept a task by naming its addressee and the exact body's hash",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        id: "completeTask",
        method: "POST",
        path: "/api/v1/crew/tasks/{id}/complete",
        summary: "Say how an accepted task ended",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        id: "heartbeat",
        method: "POST",
        path: "/api/v1/crew/heartbeat",
        summary: "The caller's crew role is alive (the crew is connected when all four are younger than 90 s)",
        realm: Realm::Engineering,
        accepts: CREW,
        reporter: false,
    },
    Operation {
        id: "crewStatus",
        method: "GET",
        path: "/api/v1/crew",
        summary: "Each crew role's heartbeat and connection, spend against budget, recent tasks",
        realm: Realm::Engineering,
        accepts: CREW_AND_OWNERS,
        reporter: false,
    },
    Operation {
        id: "proposeReproduction",
        method: "POST",
        path: "/api/v1/bugs/{id}/reproduction",
        summary: "Propose a new failing test; the desk re-runs it in its own sandbox and records it only if it fails on an assertion",
        realm: Realm::Engineering,
        accepts: &[R(Role::Reproducer)],
        reporter: false,
    },
    Operation {
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
        id: "approve",
        method: "POST",
        path: "/api/v1/bugs/{id}/approve",
        summary: "Approve the exact head commit of the fix",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        id: "reopen",
        method: "POST",
        path: "/api/v1/bugs/{id}/reopen",
        summary: "Send the bug back to the start of the loop",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        id: "submitFix",
        method: "POST",
        path: "/api/v1/bugs/{id}/fix",
        summary: "Open the draft pull request of a pushed branch on the local forge",
        realm: Realm::Engineering,
        accepts: &[R(Role::Fixer)],
        reporter: false,
    },
    Operation {
        id: "getFixContext",
        method: "GET",
        path: "/api/v1/bugs/{id}/fix/context",
        summary: "What a fix may be written from: the default branch's head, the allowed folders and their files, the confirmed test",
        realm: Realm::Engineering,
        accepts: &[R(Role::Fixer)],
        reporter: false,
    },
    Operation {
        id: "submitFixCandidate",
        method: "POST",
        path: "/api/v1/bugs/{id}/fix/candidate",
        summary: "Submit whole files for a fix; the desk runs the suite (with the confirmed test), formatter and linter in its sandbox, then opens the draft pull request or records a failed attempt",
        realm: Realm::Engineering,
        accepts: &[R(Role::Fixer)],
        reporter: false,
    },
    Operation {
        id: "getDiff",
        method: "GET",
        path: "/api/v1/bugs/{id}/diff",
        summary: "The fix's diff on the local forge",
        realm: Realm::Engineering,
        accepts: CREW_AND_OWNERS,
        reporter: false,
    },
    Operation {
        id: "merge",
        method: "POST",
        path: "/api/v1/bugs/{id}/merge",
        summary: "Merge the approved head into the default branch (local forge)",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
    Operation {
        id: "recordDeployment",
        method: "POST",
        path: "/api/v1/deployments",
        summary: "Record a verified deployment of a commit (local forge)",
        realm: Realm::Engineering,
        accepts: &[R(Role::Recorder)],
        reporter: false,
    },
    Operation {
        id: "claimNotifications",
        method: "POST",
        path: "/api/v1/outbox/concierge/claim",
        summary: "Lease the next notifications to deliver to reporters",
        realm: Realm::Concierge,
        accepts: &[R(Role::Concierge)],
        reporter: false,
    },
    Operation {
        id: "recordDelivery",
        method: "POST",
        path: "/api/v1/outbox/jobs/{key}/delivered",
        summary: "Record one channel a notification went through (inbox, email, webhook)",
        realm: Realm::Concierge,
        accepts: &[R(Role::Concierge)],
        reporter: false,
    },
    Operation {
        id: "failNotification",
        method: "POST",
        path: "/api/v1/outbox/jobs/{key}/fail",
        summary: "Report a failed delivery; the job returns after a backoff",
        realm: Realm::Concierge,
        accepts: &[R(Role::Concierge)],
        reporter: false,
    },
    Operation {
        id: "ackNotification",
        method: "POST",
        path: "/api/v1/outbox/jobs/{key}/ack",
        summary: "Confirm a delivered notification",
        realm: Realm::Concierge,
        accepts: &[R(Role::Concierge)],
        reporter: false,
    },
    Operation {
        id: "messageReporter",
        method: "POST",
        path: "/api/v1/reports/{id}/messages",
        summary: "Write to a report's reporter (tracking page, and email when they left an address)",
        realm: Realm::Engineering,
        accepts: &[Owner],
        reporter: false,
    },
];

/// The operation named `id`, if the table declares it.
pub(crate) fn operation(id: &str) -> Option<&'static Operation> {
    OPERATIONS.iter().find(|op| op.id == id)
}

/// Checks the credential against operation `id`; for an owner's session on a state-changing
/// method, also the CSRF token.
pub(crate) fn guard(
    state: &AppState,
    credential: &Credential,
    headers: &HeaderMap,
    id: &str,
) -> Result<(), Refused> {
    // A handler naming an operation the table does not declare is refused outright: a route
    // outside the table must never fall back to some other operation's rules.
    let Some(op) = operation(id) else {
        tracing::error!(
            operation = id,
            "a handler guards itself with an undeclared operation"
        );
        return Err(Refused::new(
            StatusCode::FORBIDDEN,
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
                StatusCode::FORBIDDEN,
                "csrf",
                "missing or wrong X-CSRF-Token: reload the page (or GET /api/v1/me) and try again",
            ));
        }
    }
    Ok(())
}

pub(crate) fn json_body<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Refused> {
    serde_json::from_slice(body).map_err(|error| {
        Refused::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            format!("The body does not match this operation: {error}."),
        )
    })
}

pub(crate) fn session_cookie_header(state: &AppState, value: &str, max_age_s: i64) -> HeaderValue {
    let secure = if state.auth.secure_cookies {
        "; Secure"
    } else {
        ""
    };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_s}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static(""))
}

// ---------------------------------------------------------------------------------------------
// Sessions and invitations

#[derive(Deserialize)]
struct Login {
    email: String,
    password: String,
}

async fn verify_password(hash: String, password: String) -> bool {
    tokio::task::spawn_blocking(move || {
        use argon2::password_hash::{PasswordHash, PasswordVerifier};
        PasswordHash::new(&hash)
            .map(|parsed| {
                argon2::Argon2::default()
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok()
            })
            .unwrap_or(false)
    })
    .await
    .unwrap_or(false)
}

/// `POST /api/v1/session`.
pub async fn login(
    State(state): State<AppState>,
    addr: ClientAddr,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        refuse_cross_site(&headers)?;
        let login: Login = json_body(&body)?;
        let client = crate::reporter::client_key_of(&state, addr, &headers);
        let (session, account) = sign_in(&state, &client, &login.email, login.password).await?;
        let csrf = csrf_token(state.auth.session_key.expose().as_bytes(), &session);
        let mut response = (
            StatusCode::CREATED,
            Json(json!({"owner": {"id": account.id, "email": account.email}, "csrf_token": csrf})),
        )
            .into_response();
        response
            .headers_mut()
            .insert(header::SET_COOKIE, session_cookie(&state, &session));
        Ok(response)
    }
    .await;
    respond(result)
}

/// Refuses a request another site's page made (see [`crate::auth::cross_site`]).
pub(crate) fn refuse_cross_site(headers: &HeaderMap) -> Result<(), Refused> {
    if crate::auth::cross_site(headers) {
        return Err(Refused::new(
            StatusCode::FORBIDDEN,
            "cross_site",
            "This request came from another site's page; sign in on this desk's own page.",
        ));
    }
    Ok(())
}

/// The `Set-Cookie` value of a new session.
pub(crate) fn session_cookie(state: &AppState, session: &str) -> HeaderValue {
    session_cookie_header(state, session, SESSION_TTL_MS / 1000)
}

/// Checks an owner's email and password (rate-limited per client and per email, timing
/// independent of whether the email exists) and opens a session: its secret and the owner.
pub(crate) async fn sign_in(
    state: &AppState,
    client: &str,
    email: &str,
    password: String,
) -> Result<(String, OwnerAccount), Refused> {
    let now = Instant::now();
    // One spelling of the address for the limits and the lookup alike.
    let email = store::owners::normalise_email(email);
    // Per client, per client and address, and — ten times looser — per address from every
    // client together: a stranger on one address runs into their own limits long before
    // they could lock an owner out, and guessing one owner's password from many addresses
    // still slows down.
    let limiter = &state.auth.login_limiter;
    limiter
        .check(&format!("ip:{client}"), now)
        .and_then(|()| limiter.check(&format!("pair:{client}|{email}"), now))
        .and_then(|()| {
            state
                .auth
                .address_limiter
                .check(&format!("email:{email}"), now)
        })
        .map_err(Refused::rate_limited)?;
    let account = state
        .store
        .owner_by_email(&email)
        .await
        .map_err(Refused::storage)?;
    // Verify against a real hash even for an unknown email, so timing says nothing.
    let hash = account.as_ref().map_or_else(
        || state.auth.dummy_password_hash.clone(),
        |a| a.password_hash.clone(),
    );
    let ok = verify_password(hash, password).await && account.is_some();
    let Some(account) = account.filter(|_| ok) else {
        tracing::info!("login refused");
        return Err(Refused::new(
            StatusCode::UNAUTHORIZED,
            "bad_credentials",
            "That email and password do not match an owner account.",
        ));
    };
    if !account.active {
        // Only someone who knows the password learns this.
        return Err(Refused::new(
            StatusCode::FORBIDDEN,
            "awaiting_confirmation",
            "This account waits for a second owner's confirmation: an owner other than the one who invited you must confirm it on the desk's Owners page.",
        ));
    }
    let session = random_secret(32);
    let now = now_ms();
    state
        .store
        .create_session(
            &hash_secret(&session),
            &account.id,
            now,
            now + SESSION_TTL_MS,
        )
        .await
        .map_err(Refused::storage)?;
    tracing::info!(owner = %account.id, "owner signed in");
    Ok((session, account))
}

/// Every API answer: the success or the refusal, never cached.
pub(crate) fn respond<T: IntoResponse>(result: Result<T, Refused>) -> Response {
    no_store(result.map_or_else(IntoResponse::into_response, IntoResponse::into_response))
}

/// `DELETE /api/v1/session`.
pub async fn logout(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "logout")?;
        if let Credential::Owner { session, account } = &credential {
            state
                .store
                .delete_session(&hash_secret(session))
                .await
                .map_err(Refused::storage)?;
            tracing::info!(owner = %account.id, "owner signed out");
        }
        let mut response = StatusCode::NO_CONTENT.into_response();
        response
            .headers_mut()
            .insert(header::SET_COOKIE, session_cookie_header(&state, "", 0));
        Ok::<_, Refused>(response)
    }
    .await;
    respond(result)
}

/// `GET /api/v1/me`.
pub async fn me(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "me")?;
        Ok::<_, Refused>(match &credential {
            Credential::Owner { account, session } => Json(json!({
                "kind": "owner",
                "id": account.id,
                "email": account.email,
                "csrf_token": csrf_token(state.auth.session_key.expose().as_bytes(), session),
            })),
            Credential::Role(role) => Json(json!({"kind": "role", "role": role.as_str()})),
            _ => Json(json!({})),
        })
    }
    .await;
    respond(result)
}

/// `POST /api/v1/owners/invites`.
pub async fn invite(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "invite")?;
        let Credential::Owner { account, .. } = &credential else {
            return Err(Refused::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "owners only",
            ));
        };
        let (link, expires_at) = create_invite(&state, account).await?;
        Ok((
            StatusCode::CREATED,
            Json(json!({"invite_link": link, "expires_at": expires_at})),
        )
            .into_response())
    }
    .await;
    respond(result)
}

/// A one-time invitation from `by`: its link (`/desk/invite#<secret>`; the desk keeps only
/// the secret's hash) and when it expires.
pub async fn create_invite(
    state: &AppState,
    by: &store::OwnerAccount,
) -> Result<(String, i64), Refused> {
    let token = random_secret(32);
    let now = now_ms();
    state
        .store
        .create_invite(&hash_secret(&token), &by.id, now, now + INVITE_TTL_MS)
        .await
        .map_err(Refused::storage)?;
    tracing::info!(owner = %by.id, "owner invitation created");
    Ok((format!("/desk/invite#{token}"), now + INVITE_TTL_MS))
}

#[derive(Deserialize)]
struct Accept {
    token: String,
    email: String,
    password: String,
}

/// Shortest owner password accepted.
pub const MIN_PASSWORD_CHARS: usize = 12;

/// `GET /api/v1/owners`.
pub async fn list_owners(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "listOwners")?;
        let owners = state
            .store
            .owner_listing()
            .await
            .map_err(Refused::storage)?;
        let owners: Vec<Value> = owners
            .into_iter()
            .map(|o| {
                json!({
                    "id": o.id, "email": o.email, "status": o.status,
                    "invited_by": o.invited_by, "confirmed_by": o.confirmed_by,
                    "created_at": o.created_at,
                })
            })
            .collect();
        Ok::<_, Refused>(Json(json!({"owners": owners})))
    }
    .await;
    respond(result)
}

/// `POST /api/v1/owners/{id}/confirm`.
pub async fn confirm_owner_route(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "confirmOwner")?;
        let Credential::Owner { account, .. } = &credential else {
            return Err(Refused::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "owners only",
            ));
        };
        confirm_owner(&state, account, &id).await?;
        Ok(Json(json!({"id": id, "status": "active"})))
    }
    .await;
    respond(result)
}

/// `account` confirms the pending owner `pending_id`: the one rule for the API and the desk.
pub(crate) async fn confirm_owner(
    state: &AppState,
    account: &OwnerAccount,
    pending_id: &str,
) -> Result<(), Refused> {
    let outcome = state
        .store
        .confirm_owner(pending_id, &account.id, now_ms())
        .await
        .map_err(Refused::storage)?;
    match outcome {
        ConfirmOutcome::Confirmed => {
            tracing::info!(owner = %pending_id, by = %account.id, "pending owner confirmed");
            Ok(())
        }
        ConfirmOutcome::NotPending => Err(Refused::new(
            StatusCode::NOT_FOUND,
            "not_pending",
            "No owner with this id waits for confirmation.",
        )),
        ConfirmOutcome::NeedsAnotherOwner => Err(Refused::new(
            StatusCode::FORBIDDEN,
            "needs_another_owner",
            "You invited this owner (or are them): an owner other than their inviter must confirm them, so one person can never make a second approving identity alone.",
        )),
        ConfirmOutcome::NotAnOwner => Err(Refused::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "Only an active owner can confirm another.",
        )),
    }
}

/// `POST /api/v1/owners/accept`.
pub async fn accept_invite(
    State(state): State<AppState>,
    addr: crate::reporter::ClientAddr,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        refuse_cross_site(&headers)?;
        let accept: Accept = json_body(&body)?;
        let client = crate::reporter::client_key_of(&state, addr, &headers);
        let (id, email, active) = accept_invitation(
            &state,
            &client,
            &accept.token,
            &accept.email,
            accept.password,
        )
        .await?;
        let status = if active { "active" } else { "pending" };
        Ok::<_, Refused>((
            StatusCode::CREATED,
            Json(json!({"id": id, "email": email, "status": status})),
        ))
    }
    .await;
    respond(result)
}

/// Creates the owner account an invitation allows: its id, email, and whether it is active
/// now (or waits for a second owner's confirmation). Attempts count against the client's
/// sign-in limit (each one hashes a password).
pub async fn accept_invitation(
    state: &AppState,
    client: &str,
    token: &str,
    email: &str,
    password: String,
) -> Result<(String, String, bool), Refused> {
    state
        .auth
        .login_limiter
        .check(&format!("invite:{client}"), Instant::now())
        .map_err(Refused::rate_limited)?;
    let accept = Accept {
        token: token.to_owned(),
        email: email.to_owned(),
        password,
    };
    {
        let mut fields = std::collections::BTreeMap::new();
        if !crate::config::looks_like_email(accept.email.trim()) {
            fields.insert("email".to_owned(), "expected an email address".to_owned());
        }
        if accept.password.chars().count() < MIN_PASSWORD_CHARS {
            fields.insert(
                "password".to_owned(),
                format!("at least {MIN_PASSWORD_CHARS} characters"),
            );
        }
        if !fields.is_empty() {
            let mut refused = Refused::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_account",
                "The account was not created.",
            );
            refused.fields_mut().extend(fields);
            return Err(refused);
        }
        let password = accept.password.clone();
        let hash = tokio::task::spawn_blocking(move || crate::setup::hash_password(&password))
            .await
            .map_err(Refused::storage)?
            .map_err(Refused::storage)?;
        let owner = NewOwner {
            id: format!("owner-{}", random_secret(12)),
            email: store::owners::normalise_email(&accept.email),
            password_hash: hash,
        };
        let outcome = state
            .store
            .accept_invite(&hash_secret(accept.token.trim()), &owner, now_ms())
            .await
            .map_err(Refused::storage)?;
        match outcome {
            InviteOutcome::Created => {
                tracing::info!(owner = %owner.id, "owner account created from an invitation");
                Ok((owner.id, owner.email, true))
            }
            InviteOutcome::AwaitingConfirmation => {
                tracing::info!(owner = %owner.id, "owner account created from an invitation; waits for a second owner's confirmation");
                Ok((owner.id, owner.email, false))
            }
            InviteOutcome::Unknown => Err(Refused::new(
                StatusCode::NOT_FOUND,
                "unknown_invite",
                "This invitation does not exist or has expired.",
            )),
            InviteOutcome::Used => Err(Refused::new(
                StatusCode::CONFLICT,
                "invite_used",
                "This invitation was already used.",
            )),
            InviteOutcome::EmailTaken => Err(Refused::new(
                StatusCode::CONFLICT,
                "email_taken",
                "An owner with this email exists.",
            )),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Bugs

/// `GET /api/v1/bugs`.
pub async fn list_bugs(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "listBugs")?;
        let mut bugs = Vec::new();
        for id in state.store.bug_ids().await.map_err(Refused::storage)? {
            if let Some(stored) = state.store.load_bug(&id).await.map_err(Refused::storage)? {
                let bug = stored.bug;
                bugs.push(json!({
                    "id": bug.id, "component": bug.component, "state": bug.state.as_str(),
                    "version": bug.version, "reports": bug.reports.len(),
                }));
            }
        }
        Ok::<_, Refused>(Json(json!({"bugs": bugs})))
    }
    .await;
    respond(result)
}

/// `GET /api/v1/bugs/{id}`.
pub async fn get_bug(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "getBug")?;
        let stored = state
            .store
            .load_bug(&id)
            .await
            .map_err(Refused::storage)?
            .ok_or_else(|| Refused::new(StatusCode::NOT_FOUND, "unknown_bug", format!("No bug {id}.")))?;
        let reports: Vec<Value> = state
            .store
            .reports_of_bug(&id)
            .await
            .map_err(Refused::storage)?
            .into_iter()
            .map(|r| json!({"id": r.id, "filed_at": r.created_at, "dossier": r.dossier, "repeat_of": r.repeat_of}))
            .collect();
        Ok::<_, Refused>(Json(json!({"bug": stored.bug, "reports": reports, "events": stored.event_count})))
    }
    .await;
    respond(result)
}

pub(crate) fn actor_of(credential: &Credential) -> Actor {
    match credential {
        Credential::Owner { account, .. } => crate::auth::owner_actor(account),
        Credential::Role(role) => Actor::Role { role: *role },
        _ => Actor::Anonymous,
    }
}

async fn run_command(
    state: &AppState,
    bug: &str,
    command: Command,
    actor: &Actor,
) -> Result<Response, Refused> {
    crate::forge_api::record(state, bug, command, actor, &Default::default()).await
}

#[derive(Deserialize)]
struct NoteBody {
    note: String,
}

#[derive(Deserialize)]
struct ApproveBody {
    head: String,
}

#[derive(Deserialize)]
struct ReopenBody {
    reason: String,
}

/// Longest advisory note (characters).
pub const MAX_NOTE_CHARS: usize = 4_000;

/// An advisory note as stored: model output passes the airlock's text filter like any
/// untrusted text — hostile text is refused, secrets and personal data are redacted.
fn screened_note(text: &str) -> Result<String, Refused> {
    let text = text.trim();
    let chars = text.chars().count();
    if chars == 0 || chars > MAX_NOTE_CHARS {
        return Err(Refused::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_note",
            format!("note: 1 to {MAX_NOTE_CHARS} characters (got {chars})"),
        ));
    }
    match domain::airlock::screen(text) {
        Ok((redacted, _)) => Ok(redacted),
        Err(families) => Err(Refused::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "note_quarantined",
            format!(
                "the airlock refused this note: it reads like {} — notes are model output and pass the same filter as reports",
                families
                    .iter()
                    .map(|f| format!("{f:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// A bug command (`/api/v1/bugs/{id}/…`), guarded as operation `op_id` of [`OPERATIONS`].
pub(crate) async fn bug_operation(
    state: AppState,
    credential: Credential,
    headers: HeaderMap,
    id: String,
    op_id: &str,
    body: axum::body::Bytes,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, op_id)?;
        let actor = actor_of(&credential);
        match op_id {
            "submitFix" => return crate::forge_api::submit_fix(&state, &id, &body).await,
            "proposeReproduction" => return crate::rerun::propose(&state, &id, &body).await,
            "merge" => return crate::forge_api::merge(&state, &id, &body, &actor).await,
            "approve" if state.local_forge.is_some() => {
                return crate::forge_api::approve(&state, &id, &body, &actor).await
            }
            _ => {}
        }
        let command = match op_id {
            "triage" => {
                let note: NoteBody = json_body(&body)?;
                Command::RecordTriage {
                    note: screened_note(&note.note)?,
                }
            }
            "addNote" => {
                let note: NoteBody = json_body(&body)?;
                Command::AddNote {
                    note: screened_note(&note.note)?,
                }
            }
            "approve" => {
                let approve: ApproveBody = json_body(&body)?;
                let head = CommitSha::parse(&approve.head).map_err(|e| {
                    Refused::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid_head",
                        e.to_string(),
                    )
                })?;
                Command::Approve { head }
            }
            "reopen" => {
                let reopen: ReopenBody = json_body(&body)?;
                Command::OwnerReopen {
                    reason: reopen.reason,
                }
            }
            "startFix" => Command::StartFix,
            "startReproduction" => Command::StartReproduction,
            other => {
                return Err(Refused::new(
                    StatusCode::FORBIDDEN,
                    "undeclared_operation",
                    format!("{other} is not a bug command."),
                ))
            }
        };
        run_command(&state, &id, command, &actor).await
    }
    .await;
    respond(result)
}

// ---------------------------------------------------------------------------------------------
// OpenAPI

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
            "reporterCapability": {"type": "apiKey", "in": "header", "name": app::dto::CAPABILITY_HEADER,
                "description": "The secret from the reporter's private link (#fragment)"},
        }},
    })
}

/// `GET /api/openapi.json`.
pub async fn openapi() -> Json<Value> {
    Json(openapi_document())
}

/// The method of an operation, for routing tables.
pub fn method_of(op: &Operation) -> Method {
    Method::from_bytes(op.method.as_bytes()).unwrap_or(Method::GET)
}
