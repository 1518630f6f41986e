//! The Docker backend, through the Engine API (bollard): create, start, wait with a
//! deadline, kill, read the state (exit code, OOM), read the logs, remove — every container
//! is removed, whatever happened. Killing a `docker run` client would not stop a container;
//! the API does. Every container carries the label [`LABEL`] and the time by which it is over
//! ([`DEADLINE_LABEL`]); one left behind by a process that died with it (`kill -9`) is removed
//! by the next backend to connect, or after the next run, once that time has passed.

use crate::isolated::{
    millis, Capped, Sandbox, SandboxError, SandboxJob, SANDBOX_UID, SNAPSHOT_DIR, WORK_DIR,
};
use crate::RunOutcome;
use async_trait::async_trait;
use bollard::container::LogOutput;
use bollard::models::{ContainerCreateBody, HostConfig, HostConfigLogConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, KillContainerOptionsBuilder, ListContainersOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use bollard::Docker;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::time::Instant;

const BACKEND: &str = "docker";

/// The label every sandbox container carries.
pub const LABEL: &str = "r2r.sandbox";

/// The label with the time (ms since the epoch) after which the container is certainly
/// abandoned: its start, its deadline and [`ABANDON_GRACE_MS`].
pub const DEADLINE_LABEL: &str = "r2r.sandbox.over-at";

/// The label of a service's container (a released program, which has no deadline): the
/// process that owns it, as `<pid>:<start time>`. A sweep removes it once that process is
/// gone (a desk killed with `kill -9` leaves no release running behind it).
pub const OWNER_LABEL: &str = "r2r.sandbox.owner";

/// This process as an owner: its pid and its start time (clock ticks since boot), so a later
/// process that reuses the pid is not taken for it.
fn owner_stamp() -> String {
    let pid = std::process::id();
    format!("{pid}:{}", start_time(pid).unwrap_or(0))
}

/// A process's start time (field 22 of `/proc/<pid>/stat`).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) may hold spaces and parentheses: count after the last `)`.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the owner a label names is still running.
fn owner_alive(stamp: &str) -> bool {
    let Some((pid, started)) = stamp.split_once(':') else {
        return false;
    };
    let (Ok(pid), Ok(started)) = (pid.parse::<u32>(), started.parse::<u64>()) else {
        return false;
    };
    start_time(pid) == Some(started)
}

/// Time past a container's deadline before a sweep removes it (the runner kills it at the
/// deadline and removes it at once, unless it died).
pub const ABANDON_GRACE_MS: u64 = 60_000;

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The default local image (built by `scripts/sandbox-host.sh`).
pub const DEFAULT_IMAGE: &str = "r2r-sandbox-base:local";

/// Runs jobs as containers of a local image.
#[derive(Debug, Clone)]
pub struct DockerSandbox {
    docker: Docker,
    image: String,
}

fn failed(reason: impl std::fmt::Display) -> SandboxError {
    SandboxError::Failed {
        backend: BACKEND,
        reason: reason.to_string(),
    }
}

impl DockerSandbox {
    /// Connects to the local engine (`DOCKER_HOST` or the default socket), agrees on an API
    /// version, and checks that `image` exists locally (nothing is ever pulled).
    pub async fn connect(image: &str) -> Result<Self, SandboxError> {
        let unavailable = |reason: String| SandboxError::Unavailable {
            backend: BACKEND,
            reason,
        };
        let docker = Docker::connect_with_defaults()
            .map_err(|e| unavailable(format!("cannot open the Docker socket: {e}")))?
            .negotiate_version()
            .await
            .map_err(|e| {
                unavailable(format!(
                    "the engine does not answer ({e}); start it with ./scripts/sandbox-host.sh"
                ))
            })?;
        docker.inspect_image(image).await.map_err(|e| {
            unavailable(format!(
                "image {image} is not present locally ({e}); build it with ./scripts/sandbox-host.sh"
            ))
        })?;
        let sandbox = DockerSandbox {
            docker,
            image: image.to_owned(),
        };
        sandbox.sweep().await;
        Ok(sandbox)
    }

    /// Removes every sandbox container whose time is over (see [`DEADLINE_LABEL`]), or that
    /// carries the label without a readable time; the number removed. Containers of runs still
    /// in progress — here or in another process on this engine — are left alone. Failures are
    /// logged, never raised: a sweep is housekeeping.
    pub async fn sweep(&self) -> usize {
        let filters = HashMap::from([("label", vec![LABEL])]);
        let listed = self
            .docker
            .list_containers(Some(
                ListContainersOptionsBuilder::default()
                    .all(true)
                    .filters(&filters)
                    .build(),
            ))
            .await;
        let containers = match listed {
            Ok(containers) => containers,
            Err(error) => {
                tracing::warn!(%error, "sandbox containers not listed");
                return 0;
            }
        };
        let now = epoch_ms();
        let mut removed = 0;
        for container in containers {
            let labels = container.labels.as_ref();
            let owner = labels.and_then(|labels| labels.get(OWNER_LABEL));
            let over_at = labels
                .and_then(|labels| labels.get(DEADLINE_LABEL))
                .and_then(|at| at.parse::<u64>().ok());
            let keep = match owner {
                // A service lives as long as the process that owns it.
                Some(owner) => owner_alive(owner),
                None => over_at.is_some_and(|at| at > now),
            };
            if keep {
                continue;
            }
            let Some(id) = container.id else { continue };
            match self
                .docker
                .remove_container(
                    &id,
                    Some(RemoveContainerOptionsBuilder::default().force(true).build()),
                )
                .await
            {
                Ok(()) => {
                    removed += 1;
                    tracing::info!(container = %id, "abandoned sandbox container removed");
                }
                Err(error) => {
                    tracing::warn!(container = %id, %error, "abandoned sandbox container not removed")
                }
            }
        }
        removed
    }

    fn container(&self, job: &SandboxJob, service: bool) -> ContainerCreateBody {
        let limits = &job.limits;
        let mut binds = vec![format!("{}:{SNAPSHOT_DIR}:ro", job.snapshot.display())];
        // With the network disabled Docker leaves /etc/hosts empty: the desk's own.
        if let Ok(hosts) = crate::isolated::etc_hosts() {
            binds.push(format!("{}:/etc/hosts:ro", hosts.display()));
        }
        binds.extend(
            job.mounts
                .iter()
                .map(|m| format!("{}:{}:ro", m.host.display(), m.target.display())),
        );
        if let Some(output) = &job.output {
            binds.push(format!(
                "{}:{}:rw",
                output.display(),
                crate::isolated::OUTPUT_DIR
            ));
        }
        let tmpfs = HashMap::from([
            (
                WORK_DIR.to_owned(),
                format!(
                    "rw,exec,nosuid,nodev,size={},uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0700",
                    limits.work_bytes
                ),
            ),
            (
                "/tmp".to_owned(),
                format!(
                    "rw,nosuid,nodev,size={},uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0700",
                    limits.tmp_bytes
                ),
            ),
        ]);
        let memory = i64::try_from(limits.memory_bytes).unwrap_or(i64::MAX);
        let over_at = epoch_ms()
            .saturating_add(u64::try_from(job.deadline.as_millis()).unwrap_or(u64::MAX))
            .saturating_add(ABANDON_GRACE_MS);
        ContainerCreateBody {
            labels: Some({
                let mut labels = HashMap::from([
                    (LABEL.to_owned(), "1".to_owned()),
                    (DEADLINE_LABEL.to_owned(), over_at.to_string()),
                ]);
                if service {
                    labels.insert(OWNER_LABEL.to_owned(), owner_stamp());
                }
                labels
            }),
            image: Some(self.image.clone()),
            cmd: Some(job.command.clone()),
            entrypoint: Some(Vec::new()),
            env: Some(job.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            user: Some(format!("{SANDBOX_UID}:{SANDBOX_UID}")),
            working_dir: Some(WORK_DIR.to_owned()),
            network_disabled: Some(true),
            hostname: Some("sandbox".to_owned()),
            host_config: Some(HostConfig {
                network_mode: Some("none".to_owned()),
                readonly_rootfs: Some(true),
                binds: Some(binds),
                tmpfs: Some(tmpfs),
                cap_drop: Some(vec!["ALL".to_owned()]),
                security_opt: Some(vec!["no-new-privileges".to_owned()]),
                privileged: Some(false),
                memory: Some(memory),
                memory_swap: Some(memory),
                nano_cpus: Some(i64::from(limits.cpu_millis) * 1_000_000),
                pids_limit: Some(i64::from(limits.pids)),
                ipc_mode: Some("private".to_owned()),
                init: Some(false),
                // Logs stay small on the host's disk whatever the job prints.
                log_config: Some(HostConfigLogConfig {
                    typ: Some("json-file".to_owned()),
                    config: Some(HashMap::from([
                        (
                            "max-size".to_owned(),
                            format!("{}", limits.output_bytes * 4),
                        ),
                        ("max-file".to_owned(), "1".to_owned()),
                    ])),
                }),
                ..HostConfig::default()
            }),
            ..ContainerCreateBody::default()
        }
    }

    async fn run_created(
        &self,
        id: &str,
        job: &SandboxJob,
        started: Instant,
        service: Option<(
            tokio::sync::oneshot::Sender<u32>,
            tokio::sync::oneshot::Receiver<()>,
        )>,
    ) -> Result<RunOutcome, SandboxError> {
        self.docker
            .start_container(id, None)
            .await
            .map_err(|e| failed(format!("start: {e}")))?;
        let (on_start, stop) = match service {
            Some((on_start, stop)) => (Some(on_start), Some(stop)),
            None => (None, None),
        };
        let is_service = on_start.is_some();
        if let Some(on_start) = on_start {
            // The container's first process, seen from the host: inside its network namespace.
            let pid = self
                .docker
                .inspect_container(id, None)
                .await
                .map_err(|e| failed(format!("inspect: {e}")))?
                .state
                .and_then(|state| state.pid)
                .and_then(|pid| u32::try_from(pid).ok())
                .filter(|pid| *pid > 0);
            if let Some(pid) = pid {
                let _ = on_start.send(pid);
            }
        }
        // Asked after the start, for "not running": a job that has already exited answers at
        // once. (Asking for "next-exit" before the start does not help: bollard sends the
        // request only when the stream is first polled, after the start, so a job that exited
        // in between was waited for until its deadline. Seen in CI: a 10 ms job, 120 s.)
        let mut wait = Box::pin(
            self.docker.wait_container(
                id,
                Some(
                    WaitContainerOptionsBuilder::default()
                        .condition("not-running")
                        .build(),
                ),
            ),
        );
        let waited = if is_service {
            tokio::select! {
                next = wait.next() => Ok(next),
                () = crate::isolated::stopped(stop) => Err(()),
            }
        } else {
            tokio::time::timeout(job.deadline, wait.next())
                .await
                .map_err(|_| ())
        };
        let cut_short = match waited {
            Err(()) => true,
            // A non-zero exit arrives as this error; the state read below has the code.
            Ok(Some(Err(bollard::errors::Error::DockerContainerWaitError { .. }))) => false,
            Ok(Some(Err(e))) => return Err(failed(format!("wait: {e}"))),
            Ok(Some(Ok(_)) | None) => false,
        };
        let timed_out = cut_short && !is_service;
        if cut_short {
            // SIGKILL to the container kills every process in it.
            let _ = self
                .docker
                .kill_container(
                    id,
                    Some(
                        KillContainerOptionsBuilder::default()
                            .signal("KILL")
                            .build(),
                    ),
                )
                .await;
            let _ = tokio::time::timeout(std::time::Duration::from_secs(10), wait.next()).await;
        }
        let duration_ms = millis(started.elapsed());
        let state = self
            .docker
            .inspect_container(id, None)
            .await
            .map_err(|e| failed(format!("inspect: {e}")))?
            .state
            .unwrap_or_default();
        let mut stdout = Capped::default();
        let mut stderr = Capped::default();
        let mut logs = self.docker.logs(
            id,
            Some(
                LogsOptionsBuilder::default()
                    .stdout(true)
                    .stderr(true)
                    .follow(false)
                    .build(),
            ),
        );
        while let Some(chunk) = logs.next().await {
            match chunk {
                Ok(LogOutput::StdOut { message }) | Ok(LogOutput::Console { message }) => {
                    stdout.push(&message, job.limits.output_bytes)
                }
                Ok(LogOutput::StdErr { message }) => stderr.push(&message, job.limits.output_bytes),
                Ok(LogOutput::StdIn { .. }) => {}
                Err(e) => return Err(failed(format!("logs: {e}"))),
            }
        }
        Ok(RunOutcome {
            exit_code: if cut_short {
                None
            } else {
                state.exit_code.and_then(|c| i32::try_from(c).ok())
            },
            timed_out,
            oom_killed: state.oom_killed.unwrap_or(false),
            duration_ms,
            backend: BACKEND,
            workers: Vec::new(),
            confirmation: None,
            stdout: stdout.text(),
            stderr: stderr.text(),
        })
    }
}

/// Removes (force: kills first) the container of a run dropped before its end.
struct Orphan {
    docker: Option<Docker>,
    name: String,
}

impl Drop for Orphan {
    fn drop(&mut self) {
        let Some(docker) = self.docker.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let name = std::mem::take(&mut self.name);
        runtime.spawn(async move {
            let removed = docker
                .remove_container(
                    &name,
                    Some(RemoveContainerOptionsBuilder::default().force(true).build()),
                )
                .await;
            match removed {
                Ok(()) => tracing::info!(container = %name, "removed the container of a run whose caller went away"),
                Err(error) => tracing::warn!(container = %name, %error, "the container of an abandoned run was not removed"),
            }
        });
    }
}

#[async_trait]
impl Sandbox for DockerSandbox {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    async fn run(&self, job: &SandboxJob) -> Result<RunOutcome, SandboxError> {
        self.run_with(job, None).await
    }

    async fn serve(
        &self,
        job: &SandboxJob,
        started: tokio::sync::oneshot::Sender<u32>,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) -> Result<RunOutcome, SandboxError> {
        self.run_with(job, Some((started, stop))).await
    }
}

impl DockerSandbox {
    /// Runs `job`; as a service (given how to say it started and when to stop) without a
    /// deadline, and owned by this process.
    async fn run_with(
        &self,
        job: &SandboxJob,
        service: Option<(
            tokio::sync::oneshot::Sender<u32>,
            tokio::sync::oneshot::Receiver<()>,
        )>,
    ) -> Result<RunOutcome, SandboxError> {
        job.validate()?;
        let name = format!("r2r-sandbox-{:016x}", rand::random::<u64>());
        let started = Instant::now();
        self.docker
            .create_container(
                Some(CreateContainerOptionsBuilder::default().name(&name).build()),
                self.container(job, service.is_some()),
            )
            .await
            .map_err(|e| failed(format!("create: {e}")))?;
        // A run whose caller went away (its future dropped mid-run) still has its container
        // killed and removed: it would otherwise run on past the desk's bound.
        let mut orphan = Orphan {
            docker: Some(self.docker.clone()),
            name: name.clone(),
        };
        let outcome = self.run_created(&name, job, started, service).await;
        orphan.docker = None;
        // Removed whatever happened (force also kills a container still running).
        let removed = self
            .docker
            .remove_container(
                &name,
                Some(RemoveContainerOptionsBuilder::default().force(true).build()),
            )
            .await;
        if let Err(error) = removed {
            tracing::warn!(container = %name, %error, "sandbox container not removed");
        }
        // And whatever a process that died left behind.
        self.sweep().await;
        outcome
    }
}
