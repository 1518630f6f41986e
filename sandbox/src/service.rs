//! A released program held in the sandbox: the same isolation as every measurement (its own
//! unprivileged user, read-only root, no network but its own loopback, limits), for as long
//! as its owner keeps it. Nobody reaches it but through [`NetnsDialer`], which opens
//! connections from inside the service's own network namespace: the program listens on its
//! private loopback, and neither the host's loopback (the desk's API, PostgreSQL) nor any
//! other address is reachable from it.

use crate::{RunOutcome, Sandbox, SandboxError, SandboxJob};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// A running service; stopped (every process of it killed) by [`Service::stop`] or when
/// dropped.
#[derive(Debug)]
pub struct Service {
    netns_pid: u32,
    stop: Option<oneshot::Sender<()>>,
    ended: Option<tokio::task::JoinHandle<Result<RunOutcome, SandboxError>>>,
}

impl Service {
    /// Starts `job` as a service on `sandbox`; fails when it is not running within `within`
    /// (with what it printed, when it ended by itself).
    pub async fn start(
        sandbox: Arc<dyn Sandbox>,
        job: SandboxJob,
        within: Duration,
    ) -> Result<Service, SandboxError> {
        let backend = sandbox.backend();
        let failed = |reason: String| SandboxError::Failed { backend, reason };
        let (started, running) = oneshot::channel();
        let (stop, stopped) = oneshot::channel();
        let ended = tokio::spawn(async move { sandbox.serve(&job, started, stopped).await });
        match tokio::time::timeout(within, running).await {
            Ok(Ok(netns_pid)) => Ok(Service {
                netns_pid,
                stop: Some(stop),
                ended: Some(ended),
            }),
            Ok(Err(_)) => match ended.await {
                Ok(Ok(outcome)) => Err(failed(format!(
                    "it ended before it ran (exit {:?}): {}",
                    outcome.exit_code,
                    tail(&format!("{}{}", outcome.stdout, outcome.stderr))
                ))),
                Ok(Err(error)) => Err(error),
                Err(error) => Err(failed(format!("its run stopped: {error}"))),
            },
            Err(_) => {
                drop(stop);
                Err(failed(format!(
                    "it was not running within {} s",
                    within.as_secs()
                )))
            }
        }
    }

    /// The host pid of a process inside the service's network namespace.
    pub fn netns_pid(&self) -> u32 {
        self.netns_pid
    }

    /// Whether it still runs.
    pub fn is_running(&self) -> bool {
        self.ended
            .as_ref()
            .is_some_and(|ended| !ended.is_finished())
    }

    /// Stops it and returns what it printed (its exit, its output).
    pub async fn stop(mut self) -> Option<RunOutcome> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let ended = self.ended.take()?;
        ended.await.ok()?.ok()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        // The run's task kills and removes everything of it once told (or once the sender
        // is gone, which dropping it does).
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn tail(text: &str) -> String {
    let chars: Vec<char> = text.trim().chars().collect();
    chars[chars.len().saturating_sub(1_500)..].iter().collect()
}

type Dial = (
    SocketAddr,
    Duration,
    oneshot::Sender<std::io::Result<std::net::TcpStream>>,
);

/// Opens TCP connections from inside one network namespace (a service's), on a thread of
/// its own that entered it once; the rest of the process stays where it was. Entering needs
/// `CAP_SYS_ADMIN` (the desk runs as root where it runs its own sandbox). The thread ends
/// with the dialer.
#[derive(Debug)]
pub struct NetnsDialer {
    requests: std::sync::mpsc::Sender<Dial>,
}

impl NetnsDialer {
    /// A dialer inside the network namespace of host process `pid`.
    pub fn open(pid: u32) -> std::io::Result<NetnsDialer> {
        let namespace = std::fs::File::open(format!("/proc/{pid}/ns/net"))?;
        let (requests, incoming) = std::sync::mpsc::channel::<Dial>();
        let (entered, ready) = std::sync::mpsc::channel::<std::io::Result<()>>();
        std::thread::Builder::new()
            .name("r2r-netns-dialer".into())
            .spawn(move || {
                let joined = nix::sched::setns(&namespace, nix::sched::CloneFlags::CLONE_NEWNET)
                    .map_err(std::io::Error::from);
                let ok = joined.is_ok();
                let _ = entered.send(joined);
                if !ok {
                    return;
                }
                while let Ok((address, timeout, reply)) = incoming.recv() {
                    let _ = reply.send(std::net::TcpStream::connect_timeout(&address, timeout));
                }
            })?;
        ready.recv().map_err(|_| {
            std::io::Error::other("the dialer's thread ended before it entered the namespace")
        })??;
        Ok(NetnsDialer { requests })
    }

    /// A connection to `address` inside the namespace.
    pub async fn dial(
        &self,
        address: SocketAddr,
        timeout: Duration,
    ) -> std::io::Result<tokio::net::TcpStream> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send((address, timeout, reply))
            .map_err(|_| std::io::Error::other("the service's network is gone"))?;
        let stream = answer
            .await
            .map_err(|_| std::io::Error::other("the service's network is gone"))??;
        stream.set_nonblocking(true)?;
        tokio::net::TcpStream::from_std(stream)
    }
}
