//! `/api/v1/session`, `/api/v1/me` and `/api/v1/owners…`: owners sign in and out, invite
//! and confirm other owners.

use crate::auth::{csrf_token, hash_secret, Credential};
use crate::error::Kind;
use crate::service::owners::*;
use crate::web::session::{refuse_cross_site, session_cookie, session_cookie_header};
use crate::web::AppState;
use crate::web::ClientAddr;
use crate::web::LimitedBody;
use crate::web::Op;
use crate::web::Refused;
use crate::web::{guard, json_body, respond};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Sessions and invitations

#[derive(Deserialize)]
struct Login {
    email: String,
    password: String,
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

/// `DELETE /api/v1/session`.
pub async fn logout(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::Logout)?;
        if let Credential::Owner { session, account } = &credential {
            state.store.delete_session(&hash_secret(session)).await?;
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
        guard(&state, &credential, &headers, Op::Me)?;
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
        guard(&state, &credential, &headers, Op::Invite)?;
        let Credential::Owner { account, .. } = &credential else {
            return Err(Refused::new(Kind::Forbidden, "forbidden", "owners only"));
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

/// `GET /api/v1/owners`.
pub async fn list_owners(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::ListOwners)?;
        let owners = state.store.owner_listing().await?;
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
        guard(&state, &credential, &headers, Op::ConfirmOwner)?;
        let Credential::Owner { account, .. } = &credential else {
            return Err(Refused::new(Kind::Forbidden, "forbidden", "owners only"));
        };
        confirm_owner(&state, account, &id).await?;
        Ok(Json(json!({"id": id, "status": "active"})))
    }
    .await;
    respond(result)
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

// ---------------------------------------------------------------------------------------------
// Bugs

// ---------------------------------------------------------------------------------------------
// OpenAPI
