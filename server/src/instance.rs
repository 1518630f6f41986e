//! Asking a released instance: one HTTP/1.1 GET over a connection opened inside the
//! instance's own network namespace ([`sandbox::NetnsDialer`]). The instance listens on its
//! private loopback at the address its project's launch names ([`domain::launch::Launch`],
//! `127.0.0.1:8080` by default); nothing else can reach it, and it can reach nothing.

use axum::body::Bytes;
use axum::http::{header, HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Empty, Limited};
use std::time::Duration;

/// The most of one answer the desk reads.
pub const ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// How long one question may take, connection included.
const ASK_TIMEOUT: Duration = Duration::from_secs(10);

/// What an instance answered.
#[derive(Debug)]
pub struct Answer {
    /// Its status.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body (at most [`ANSWER_BYTES`]).
    pub body: Bytes,
}

/// `GET path_and_query` (starting with `/`) of the instance behind `dialer`, listening at
/// `address` inside its namespace.
pub async fn get(
    dialer: &sandbox::NetnsDialer,
    address: std::net::SocketAddr,
    path_and_query: &str,
) -> Result<Answer, String> {
    tokio::time::timeout(ASK_TIMEOUT, ask(dialer, address, path_and_query))
        .await
        .map_err(|_| format!("no answer within {} s", ASK_TIMEOUT.as_secs()))?
}

async fn ask(
    dialer: &sandbox::NetnsDialer,
    address: std::net::SocketAddr,
    path_and_query: &str,
) -> Result<Answer, String> {
    let stream = dialer
        .dial(address, ASK_TIMEOUT)
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| format!("cannot speak HTTP: {e}"))?;
    let driver = tokio::spawn(connection);
    let request = Request::get(path_and_query)
        .header(header::HOST, address.to_string())
        .header(header::CONNECTION, "close")
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("bad request: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("no answer: {e}"))?;
    let (parts, body) = response.into_parts();
    let body = Limited::new(body, ANSWER_BYTES)
        .collect()
        .await
        .map_err(|e| format!("the answer broke off or was too large: {e}"))?
        .to_bytes();
    driver.abort();
    Ok(Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}
