//! Owners' session cookies and the cross-site refusal for sign-in, sign-out and invitations.

use super::{AppState, Refused};
use crate::auth::{SESSION_COOKIE, SESSION_TTL_MS};
use crate::error::Kind;
use axum::http::{HeaderMap, HeaderValue};

pub fn session_cookie_header(state: &AppState, value: &str, max_age_s: i64) -> HeaderValue {
    owner_cookie_header(state, SESSION_COOKIE, "/", value, max_age_s)
}

/// The `Set-Cookie` value of one of the owners' cookies: `name=value` under `path`, HttpOnly,
/// SameSite=Strict, `Secure` when the desk is served over HTTPS, for `max_age_s` (0 clears it).
pub fn owner_cookie_header(
    state: &AppState,
    name: &str,
    path: &str,
    value: &str,
    max_age_s: i64,
) -> HeaderValue {
    let secure = if state.auth.secure_cookies {
        "; Secure"
    } else {
        ""
    };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path={path}; HttpOnly; SameSite=Strict; Max-Age={max_age_s}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Refuses a request another site's page made (see [`crate::auth::cross_site`]).
pub fn refuse_cross_site(headers: &HeaderMap) -> Result<(), Refused> {
    if crate::auth::cross_site(headers) {
        return Err(Refused::new(
            Kind::Forbidden,
            "cross_site",
            "This request came from another site's page; sign in on this desk's own page.",
        ));
    }
    Ok(())
}

/// The `Set-Cookie` value of a new session.
pub fn session_cookie(state: &AppState, session: &str) -> HeaderValue {
    session_cookie_header(state, session, SESSION_TTL_MS / 1000)
}
