//! The versioned API's authenticated part: owner sessions and invitations, the engineering
//! view of bugs, the commands people and the crew may send, and the concierge's outbox — and
//! the OpenAPI document generated from the same operation table the handlers enforce.

use crate::auth::{
    csrf_token, hash_secret, random_secret, Credential, INVITE_TTL_MS, SESSION_TTL_MS,
};
use crate::clock::now_ms;
use crate::service::commands::run_command;
use crate::service::forge::{self as forge_service, FixRequest, HeadBody};
use crate::web::ops::openapi_document;
use crate::web::session::{refuse_cross_site, session_cookie, session_cookie_header};
use crate::web::AppState;
use crate::web::ClientAddr;
use crate::web::LimitedBody;
use crate::web::Refused;
use crate::web::{guard, json_body, respond};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::workflow::Command;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Instant;
use store::{ConfirmOutcome, InviteOutcome, NewOwner, OwnerAccount};

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
        let client = crate::web::client_key_of(&state, addr, &headers);
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
    addr: crate::web::ClientAddr,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        refuse_cross_site(&headers)?;
        let accept: Accept = json_body(&body)?;
        let client = crate::web::client_key_of(&state, addr, &headers);
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
            .map_err(Refused::internal)?
            .map_err(Refused::internal)?;
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

#[derive(Deserialize)]
struct NoteBody {
    note: String,
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
        let actor = credential.actor();
        match op_id {
            "submitFix" => {
                let fix: FixRequest = json_body(&body)?;
                let recorded = forge_service::submit_fix(&state, &id, fix).await?;
                return Ok(Json(recorded).into_response());
            }
            "proposeReproduction" => return crate::rerun::propose(&state, &id, &body).await,
            "merge" => {
                let merge: HeadBody = json_body(&body)?;
                let head = forge_service::parse_sha(&merge.head)?;
                let merged = forge_service::merge(&state, &id, head, &actor).await?;
                let mut response = Json(merged.recorded).into_response();
                if let Ok(value) = HeaderValue::from_str(merged.merge_commit.as_str()) {
                    response.headers_mut().insert("x-r2r-merge-commit", value);
                }
                return Ok(response);
            }
            "approve" => {
                let approve: HeadBody = json_body(&body)?;
                let head = forge_service::parse_sha(&approve.head)?;
                let recorded = forge_service::approve(&state, &id, head, &actor).await?;
                return Ok(Json(recorded).into_response());
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
        let recorded = run_command(&state, &id, command, &actor).await?;
        Ok(Json(recorded).into_response())
    }
    .await;
    respond(result)
}

// ---------------------------------------------------------------------------------------------
// OpenAPI

/// `GET /api/openapi.json`.
pub async fn openapi() -> Json<Value> {
    Json(openapi_document())
}
