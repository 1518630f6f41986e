//! The listener: HTTP/1.1 connections under [`HttpLimits`]. A client gets the configured time
//! to send a request's headers — counted from the connection's start or the previous answer,
//! so an idle keep-alive connection is closed too — and its body ([`BodyTimeout`], answered
//! 408); at most `max_connections` are open at once, and one more is closed at once. Stalled
//! or idle clients therefore cannot pile up and hold the desk.

use super::extract::BodyTimeout;
use crate::config::HttpLimits;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tower::ServiceExt;

/// How long a stopping desk waits for answers in progress before it closes their connections.
const DRAIN: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` under `limits` until `stop` turns true; then stops accepting and
/// lets answers in progress finish (at most [`DRAIN`]).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: HttpLimits,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let app = app.layer(axum::Extension(BodyTimeout(limits.body_timeout)));
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut refused_since_said = 0u64;
    let mut stopping = Box::pin(async move {
        let _ = stop.wait_for(|stop| *stop).await;
    });
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: say so, breathe, go on.
                    tracing::warn!(%error, "a connection could not be accepted");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stopping => break,
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            drop(stream);
            refused_since_said += 1;
            if refused_since_said == 1 || refused_since_said.is_power_of_two() {
                tracing::warn!(
                    limit = limits.max_connections,
                    refused = refused_since_said,
                    "connection closed: R2R_MAX_CONNECTIONS are open"
                );
            }
            continue;
        };
        refused_since_said = 0;
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            app.clone().oneshot(request.map(Body::new))
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _slot = slot;
            if let Err(error) = connection.await {
                tracing::debug!(%peer, %error, "connection ended");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("answers still in progress after {DRAIN:?}; their connections are closed");
    }
}
