//! Request extractors: the client's address (for rate limits) and a body of bounded size.

use super::{AppState, Refused, ReporterDesk};
use crate::error::Kind;
use crate::ratelimit::client_key;
use app::dto::limits;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Request};
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

/// How long a request's body may take to arrive once its headers did (`R2R_BODY_TIMEOUT`):
/// put into every request's extensions by the listener ([`crate::start`]).
#[derive(Clone, Copy, Debug)]
pub struct BodyTimeout(pub std::time::Duration);

/// The body timeout when the listener set none (in-process tests).
pub const DEFAULT_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A request body of at most [`limits::BODY_BYTES`], arrived within the [`BodyTimeout`]. Each
/// failure has its own answer: 413 `too_large` only for size (a declared length over the
/// limit is refused before anything is read), 408 `body_timeout` for a body that is late,
/// 400 `unreadable_body` for one that is cut short or malformed (a connection closed mid-body,
/// a bad chunk).
#[derive(Debug)]
pub struct LimitedBody(pub Bytes);

enum BodyFault {
    TooLarge,
    Unreadable(String),
    /// Where the body goes (a file) would not take it.
    Unwritable(String),
}

fn unwritable(reason: &str) -> Refused {
    Refused::new(
        Kind::OutOfSpace,
        "body_unwritable",
        format!("The desk cannot keep the request body while it arrives ({reason}); nothing was recorded."),
    )
}

fn too_large(limit: usize) -> Refused {
    Refused::new(
        Kind::TooLarge,
        "too_large",
        format!(
            "The request is larger than {} KiB; shorten the text (see the per-field limits).",
            limit / 1024
        ),
    )
}

async fn read_limited<W>(body: Body, limit: usize, out: &mut W) -> Result<(), BodyFault>
where
    W: tokio::io::AsyncWrite + Unpin,
{
    use futures_util::StreamExt;
    use tokio::io::AsyncWriteExt;
    let mut stream = body.into_data_stream();
    let mut read = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| BodyFault::Unreadable(e.to_string()))?;
        read = read.saturating_add(chunk.len());
        if read > limit {
            return Err(BodyFault::TooLarge);
        }
        out.write_all(&chunk)
            .await
            .map_err(|e| BodyFault::Unwritable(e.to_string()))?;
    }
    out.flush()
        .await
        .map_err(|e| BodyFault::Unwritable(e.to_string()))
}

impl<S: Send + Sync> axum::extract::FromRequest<S> for LimitedBody {
    type Rejection = Refused;
    async fn from_request(request: Request<Body>, _: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = request.into_parts();
        read_body(&parts, body, limits::BODY_BYTES)
            .await
            .map(LimitedBody)
    }
}

/// Reads at most `limit` bytes of the body of the request `parts` heads as [`LimitedBody`]
/// does, with the same answers for a body too large, late or unreadable: for handlers that
/// are not axum extractors (the server functions' middleware).
pub async fn read_body(parts: &Parts, body: Body, limit: usize) -> Result<Bytes, Refused> {
    let mut read = Vec::new();
    read_body_into(parts, body, limit, &mut read).await?;
    Ok(Bytes::from(read))
}

/// [`read_body`] into a file, as the bytes arrive: a large body (a worker's outcome) is never
/// held in memory while it arrives. The file holds what was read, from its start.
pub async fn read_body_to_file(
    parts: &Parts,
    body: Body,
    limit: usize,
) -> Result<std::fs::File, Refused> {
    let unwritable = |e: std::io::Error| unwritable(&e.to_string());
    let mut file = tokio::fs::File::from_std(tempfile::tempfile().map_err(unwritable)?);
    read_body_into(parts, body, limit, &mut file).await?;
    let mut file = file.into_std().await;
    std::io::Seek::rewind(&mut file).map_err(unwritable)?;
    Ok(file)
}

async fn read_body_into<W>(
    parts: &Parts,
    body: Body,
    limit: usize,
    out: &mut W,
) -> Result<(), Refused>
where
    W: tokio::io::AsyncWrite + Unpin,
{
    let timeout = parts
        .extensions
        .get::<BodyTimeout>()
        .map_or(DEFAULT_BODY_TIMEOUT, |t| t.0);
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit));
    }
    match tokio::time::timeout(timeout, read_limited(body, limit, out)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(BodyFault::TooLarge)) => Err(too_large(limit)),
        Ok(Err(BodyFault::Unreadable(reason))) => Err(Refused::new(
            Kind::BadRequest,
            "unreadable_body",
            format!("The request body could not be read ({reason}): send it whole, once, with a correct length."),
        )),
        Ok(Err(BodyFault::Unwritable(reason))) => Err(unwritable(&reason)),
        Err(_) => Err(Refused::new(
            Kind::TimedOut,
            "body_timeout",
            format!(
                "The request body did not arrive within {} s of its headers (R2R_BODY_TIMEOUT); nothing was recorded.",
                timeout.as_secs()
            ),
        )),
    }
}

/// The rate-limit key of the client making a request.
pub fn client_key_of(state: &AppState, addr: ClientAddr, headers: &HeaderMap) -> String {
    client_of(&state.reporter, addr, headers)
}

/// The client's rate-limit key: the socket peer, or, when the peer is a trusted proxy
/// (`R2R_TRUSTED_PROXIES`), the right-most forwarded address that is not one.
pub fn client_of(desk: &ReporterDesk, addr: ClientAddr, headers: &HeaderMap) -> String {
    let Some(peer) = addr.0.map(|a| a.ip()) else {
        return "unknown".to_owned();
    };
    let forwarded = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok());
    client_key(desk.trusted_proxies.client(peer, forwarded))
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
