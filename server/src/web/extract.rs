//! Request extractors: the client's address (for rate limits) and a body of bounded size.

use super::{AppState, Refused, ReporterDesk};
use crate::ratelimit::client_key;
use app::dto::limits;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Request, StatusCode};
use std::net::SocketAddr;

/// The client's address as the listener saw it (absent in in-process tests).
#[derive(Clone, Copy, Debug)]
pub struct ClientAddr(pub Option<SocketAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientAddr(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|info| info.0),
        ))
    }
}

/// A request body of at most [`limits::BODY_BYTES`]; a larger one is refused with a JSON
/// error (413) before anything reads it.
#[derive(Debug)]
pub struct LimitedBody(pub Bytes);

impl<S: Send + Sync> axum::extract::FromRequest<S> for LimitedBody {
    type Rejection = Refused;
    async fn from_request(request: Request<Body>, _: &S) -> Result<Self, Self::Rejection> {
        axum::body::to_bytes(request.into_body(), limits::BODY_BYTES)
            .await
            .map(LimitedBody)
            .map_err(|_| {
                Refused::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too_large",
                    format!(
                        "The request is larger than {} KiB; shorten the text (see the per-field limits).",
                        limits::BODY_BYTES / 1024
                    ),
                )
            })
    }
}

/// The rate-limit key of the client making a request.
pub fn client_key_of(state: &AppState, addr: ClientAddr, headers: &HeaderMap) -> String {
    client_of(&state.reporter, addr, headers)
}

pub fn client_of(desk: &ReporterDesk, addr: ClientAddr, headers: &HeaderMap) -> String {
    if desk.trust_forwarded_for {
        let forwarded = headers
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .and_then(|v| v.trim().parse().ok());
        if let Some(ip) = forwarded {
            return client_key(ip);
        }
    }
    addr.0
        .map_or_else(|| "unknown".to_owned(), |a| client_key(a.ip()))
}

impl FromRequestParts<AppState> for crate::auth::Credential {
    type Rejection = Refused;
    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        crate::auth::credential_of(&state.store, &parts.headers)
            .await
            .map_err(Refused::storage)
    }
}
