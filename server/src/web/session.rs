//! Owners' session cookies and the cross-site refusal for sign-in, sign-out and invitations.

use super::{AppState, Refused};
use crate::auth::{SESSION_COOKIE, SESSION_TTL_MS};
use axum::http::{HeaderMap, HeaderValue, StatusCode};

pub fn session_cookie_header(state: &AppState, value: &str, max_age_s: i64) -> HeaderValue {
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

/// Refuses a request another site's page made (see [`crate::auth::cross_site`]).
pub fn refuse_cross_site(headers: &HeaderMap) -> Result<(), Refused> {
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
pub fn session_cookie(state: &AppState, session: &str) -> HeaderValue {
    session_cookie_header(state, session, SESSION_TTL_MS / 1000)
}
