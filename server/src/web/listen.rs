//! The listener: HTTP/1.1 connections under [`HttpLimits`]. A client gets the configured time
//! to send a request's headers — counted from the connection's start or the previous answer,
//! so an idle keep-alive connection is closed too — and its body ([`BodyTimeout`], answered
//! 408); an answer it stops reading is given up once no byte of it could be written for the
//! body time ([`Stalling`]). At most `max_connections` are open at once, and at most
//! `max_connections_per_client` from one client address (a trusted proxy aside); one more is
//! closed at once. Stalled, idle or many connections from one address therefore cannot pile
//! up and hold the desk for others.

use super::extract::BodyTimeout;
use crate::config::HttpLimits;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
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
    trusted: crate::config::TrustedProxies,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let clients = Arc::new(Clients::new(limits.max_connections_per_client));
    let app = app.layer(axum::Extension(BodyTimeout(limits.body_timeout)));
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let refused = Arc::new(std::sync::atomic::AtomicU64::new(0));
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
        // A client address has its own share: at most `per_client` open, the rest closed at
        // once. A trusted proxy speaks for many clients.
        let own = if trusted.contains(peer.ip()) {
            None
        } else {
            match clients.turn_of(peer.ip()) {
                Some(turn) => Some(turn),
                None => {
                    drop(stream);
                    tracing::debug!(%peer, "connection closed: its address has R2R_MAX_CONNECTIONS_PER_CLIENT open");
                    continue;
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            app.clone().oneshot(request.map(Body::new))
        });
        let slots = Arc::clone(&slots);
        let watcher = graceful.watcher();
        let wait = limits.header_timeout;
        let stall = limits.body_timeout;
        let max_connections = limits.max_connections;
        let refused = Arc::clone(&refused);
        tokio::spawn(async move {
            let _turn = own;
            let Ok(_slot) = slots.try_acquire_owned() else {
                let count = refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                if count == 1 || count.is_power_of_two() {
                    tracing::warn!(
                        limit = max_connections,
                        refused = count,
                        "connection closed: R2R_MAX_CONNECTIONS are open"
                    );
                }
                return;
            };
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(wait)
                .serve_connection(TokioIo::new(Stalling::new(stream, stall)), service);
            if let Err(error) = watcher.watch(connection).await {
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

/// The connections open per client address, forgotten when an address's last one ends.
struct Clients {
    per_client: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One open connection of an address; given back when dropped.
struct Turn {
    clients: Arc<Clients>,
    ip: IpAddr,
}

impl Clients {
    fn new(per_client: usize) -> Clients {
        Clients {
            per_client: per_client.max(1),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// A turn for one more connection of `ip`, or none when it has its share open.
    fn turn_of(self: &Arc<Self>, ip: IpAddr) -> Option<Turn> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(ip).or_insert(0);
        if *count >= self.per_client {
            return None;
        }
        *count += 1;
        Some(Turn {
            clients: Arc::clone(self),
            ip,
        })
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut open = self.clients.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// A connection whose writes fail once none of an answer's bytes could be written for
/// `stall`: a client that stops reading cannot hold its connection (and its slots) forever.
struct Stalling<S> {
    inner: S,
    stall: Duration,
    since: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> Stalling<S> {
    fn new(inner: S, stall: Duration) -> Self {
        Stalling {
            inner,
            stall,
            since: None,
        }
    }

    /// A write's or flush's outcome: progress resets the clock; waiting past `stall` fails.
    fn judge<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        match polled {
            Poll::Pending if self.stalled(cx) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client stopped reading its answer",
            ))),
            Poll::Pending => Poll::Pending,
            ready => {
                self.since = None;
                ready
            }
        }
    }

    /// After a write that could not go on: whether it has waited too long.
    fn stalled(&mut self, cx: &mut Context<'_>) -> bool {
        let stall = self.stall;
        let since = self
            .since
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
        since.as_mut().poll(cx).is_ready()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Stalling<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Stalling<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.judge(cx, polled)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.judge(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn an_answer_nobody_reads_is_given_up_once_it_stalls() {
        let (near, _far) = tokio::io::duplex(64);
        let mut stalling = Stalling::new(near, Duration::from_millis(200));
        let started = std::time::Instant::now();
        // The reader never reads: the first 64 bytes fit, then the write waits and fails.
        let written = stalling.write_all(&[b'x'; 4096]).await;
        let error = written.unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_reader_that_keeps_up_is_never_cut_off() {
        let (near, mut far) = tokio::io::duplex(64);
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut far, &mut all)
                .await
                .map(|_| all.len())
        });
        let mut stalling = Stalling::new(near, Duration::from_millis(200));
        stalling.write_all(&[b'x'; 64 * 1024]).await.unwrap();
        stalling.shutdown().await.unwrap();
        drop(stalling);
        assert_eq!(reader.await.unwrap().unwrap(), 64 * 1024);
    }

    #[test]
    fn one_address_gets_its_share_and_nothing_more() {
        let clients = Arc::new(Clients::new(2));
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let turns: Vec<Turn> = (0..2).map(|_| clients.turn_of(ip).unwrap()).collect();
        assert!(clients.turn_of(ip).is_none(), "2 open at most");
        assert!(
            clients.turn_of("127.0.0.2".parse().unwrap()).is_some(),
            "another address has its own"
        );
        drop(turns);
        assert!(clients.turn_of(ip).is_some(), "given back when they end");
        assert!(clients.open.lock().unwrap().len() <= 2);
    }
}
