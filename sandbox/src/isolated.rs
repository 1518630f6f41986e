//! What every isolating backend promises, and the job it runs.
//!
//! Both backends ([`crate::docker::DockerSandbox`] and [`crate::bwrap::BwrapSandbox`]) run
//! one command with: no network (a fresh network namespace with nothing but `lo`), a
//! read-only root, the repository snapshot read-only at `/snapshot`, writable tmpfs at
//! `/work` (exec allowed) and `/tmp`, uid/gid 10001, every capability dropped,
//! no-new-privileges, 384 MiB of memory without swap, 0.75 CPU, 96 processes, a wall-clock
//! deadline that kills every process of the run, and exactly the environment the job names.
//! Nothing of the host is visible but read-only system directories and the read-only mounts
//! the job lists (a toolchain); no sockets, no credentials, no host variables.

use crate::RunOutcome;
use async_trait::async_trait;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The uid and gid every sandboxed process runs as.
pub const SANDBOX_UID: u32 = 10001;
/// Where the snapshot appears inside.
pub const SNAPSHOT_DIR: &str = "/snapshot";
/// The writable work directory inside (tmpfs, exec allowed).
pub const WORK_DIR: &str = "/work";

/// Resource limits of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Memory, swap included, in bytes.
    pub memory_bytes: u64,
    /// CPU share in thousandths of one core.
    pub cpu_millis: u32,
    /// Most processes and threads at once.
    pub pids: u32,
    /// Size of the `/work` tmpfs.
    pub work_bytes: u64,
    /// Size of the `/tmp` tmpfs.
    pub tmp_bytes: u64,
    /// Most bytes kept of each of stdout and stderr (the rest is cut, and said so).
    pub output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 384 * 1024 * 1024,
            cpu_millis: 750,
            pids: 96,
            work_bytes: 256 * 1024 * 1024,
            tmp_bytes: 64 * 1024 * 1024,
            output_bytes: 1024 * 1024,
        }
    }
}

/// Where a job's writable output directory appears, when it has one.
pub const OUTPUT_DIR: &str = "/out";

/// The only names a run can resolve: itself and the loopback. Test suites that start a
/// server on "localhost" (Vite, test servers) find it by this file; nothing of the host's
/// `/etc/hosts` is shown.
pub const ETC_HOSTS: &str =
    "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n";

/// [`ETC_HOSTS`] in a file of this process that both backends mount read-only at
/// `/etc/hosts` (written once, readable by the run's user).
pub fn etc_hosts() -> Result<PathBuf, String> {
    static WRITTEN: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    WRITTEN
        .get_or_init(|| {
            use std::os::unix::fs::PermissionsExt;
            // A new folder of random name (never one someone else made first), kept for the
            // life of the process.
            let dir = tempfile::Builder::new()
                .prefix("r2r-etc-")
                .tempdir()
                .map(tempfile::TempDir::keep)
                .map_err(|e| format!("cannot write the runs' /etc/hosts: {e}"))?;
            let file = dir.join("hosts");
            std::fs::write(&file, ETC_HOSTS)
                .and_then(|()| {
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
                })
                .and_then(|()| {
                    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644))
                })
                .map(|()| file)
                .map_err(|e| format!("cannot write the runs' /etc/hosts: {e}"))
        })
        .clone()
}

/// A host directory shown read-only inside (a toolchain, say).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOnlyMount {
    /// Absolute host path.
    pub host: PathBuf,
    /// Absolute path inside.
    pub target: PathBuf,
}

/// One command to run in isolation.
#[derive(Clone, Debug)]
pub struct SandboxJob {
    /// Host directory shown read-only at `/snapshot`.
    pub snapshot: PathBuf,
    /// The command and its arguments (`argv[0]` is looked up on the job's `PATH`).
    pub command: Vec<String>,
    /// The complete environment.
    pub env: Vec<(String, String)>,
    /// Extra read-only mounts.
    pub mounts: Vec<ReadOnlyMount>,
    /// A host directory shown writable at `/out`, for a build's artifact (nothing else of
    /// the host is ever writable). The caller makes it writable for uid 10001 inside a
    /// parent only it can enter, so nobody else can swap the artifact.
    pub output: Option<PathBuf>,
    /// Wall-clock limit for the whole run.
    pub deadline: Duration,
    /// Resource limits.
    pub limits: Limits,
}

impl SandboxJob {
    /// A job running `command` on `snapshot` with the default limits and a `PATH`-only
    /// environment.
    pub fn new(snapshot: impl Into<PathBuf>, command: Vec<String>, deadline: Duration) -> Self {
        SandboxJob {
            snapshot: snapshot.into(),
            command,
            env: vec![
                ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
                ("HOME".into(), WORK_DIR.into()),
                ("TMPDIR".into(), "/tmp".into()),
                ("LANG".into(), "C.UTF-8".into()),
            ],
            mounts: Vec::new(),
            output: None,
            deadline,
            limits: Limits::default(),
        }
    }

    /// Checks the job before anything starts.
    pub fn validate(&self) -> Result<(), SandboxError> {
        let invalid = |why: String| Err(SandboxError::InvalidJob(why));
        if self.command.is_empty() || self.command[0].is_empty() {
            return invalid("the command is empty".into());
        }
        if self.command.iter().any(|a| a.contains('\0')) {
            return invalid("an argument contains a NUL byte".into());
        }
        if !self.snapshot.is_absolute() || !self.snapshot.is_dir() {
            return invalid(format!(
                "the snapshot {} is not an existing absolute directory",
                self.snapshot.display()
            ));
        }
        for (key, value) in &self.env {
            if key.is_empty()
                || key.contains('=')
                || key.contains('\0')
                || value.contains('\0')
                || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return invalid(format!("{key:?} is not an environment variable name"));
            }
        }
        for mount in &self.mounts {
            if !mount.host.is_absolute() || !mount.host.exists() {
                return invalid(format!(
                    "mount source {} is not an existing absolute path",
                    mount.host.display()
                ));
            }
            let target = mount.target.to_string_lossy();
            let reserved = [SNAPSHOT_DIR, WORK_DIR, "/tmp", "/proc", "/dev", "/sys"];
            if !mount.target.is_absolute()
                || target.contains("..")
                || target.contains(':')
                || target.contains(',')
                || mount.target == Path::new("/")
                || reserved.iter().any(|r| mount.target.starts_with(r))
            {
                return invalid(format!(
                    "mount target {target} is not allowed (absolute, outside {reserved:?})"
                ));
            }
        }
        if self.deadline.is_zero() || self.deadline > Duration::from_secs(3600) {
            return invalid("the deadline must be between 1 ms and one hour".into());
        }
        Ok(())
    }
}

/// Why a job could not be run at all (as opposed to an outcome: a failing, timed-out or
/// killed run is an outcome).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The backend is not usable on this host.
    #[error("the {backend} sandbox is not available: {reason}")]
    Unavailable {
        /// `docker` or `bwrap`.
        backend: &'static str,
        /// Why, and what to do.
        reason: String,
    },
    /// The job is malformed.
    #[error("invalid sandbox job: {0}")]
    InvalidJob(String),
    /// The backend failed while running it.
    #[error("the {backend} sandbox failed: {reason}")]
    Failed {
        /// `docker` or `bwrap`.
        backend: &'static str,
        /// What failed.
        reason: String,
    },
}

/// An isolating backend.
#[async_trait]
pub trait Sandbox: Send + Sync + std::fmt::Debug {
    /// `docker` or `bwrap`: the label every outcome carries.
    fn backend(&self) -> &'static str;

    /// Runs the job under the limits; returns what happened.
    async fn run(&self, job: &SandboxJob) -> Result<RunOutcome, SandboxError>;

    /// Runs the job as a long-lived service (a released program): the same isolation and
    /// limits, but no deadline of its own. Once it runs, `started` receives the host pid of a
    /// process inside its network namespace (so its owner can reach the loopback port it
    /// listens on, and nothing else can); it runs until `stop` fires or its sender is dropped
    /// (or it exits by itself), then every process of it is killed. Returns what happened.
    /// A runner that cannot hold a service on this host says so.
    async fn serve(
        &self,
        job: &SandboxJob,
        started: tokio::sync::oneshot::Sender<u32>,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) -> Result<RunOutcome, SandboxError> {
        let _ = (job, started, stop);
        Err(SandboxError::Unavailable {
            backend: self.backend(),
            reason: "this runner cannot hold a released service on this host".into(),
        })
    }
}

/// Resolves when `stop` fires or its sender is gone; never, when there is none.
pub(crate) async fn stopped(stop: Option<tokio::sync::oneshot::Receiver<()>>) {
    match stop {
        Some(stop) => {
            let _ = stop.await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// Keeps at most `limit` bytes of a stream, noting how much was cut.
#[derive(Debug, Default)]
pub(crate) struct Capped {
    bytes: Vec<u8>,
    dropped: usize,
}

impl Capped {
    pub(crate) fn push(&mut self, chunk: &[u8], limit: usize) {
        let room = limit.saturating_sub(self.bytes.len());
        let take = room.min(chunk.len());
        self.bytes.extend_from_slice(&chunk[..take]);
        self.dropped += chunk.len() - take;
    }

    pub(crate) fn text(self) -> String {
        let mut text = String::from_utf8_lossy(&self.bytes).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!("\n[r2r: {} more bytes cut]\n", self.dropped));
        }
        text
    }
}

pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> SandboxJob {
        SandboxJob::new(
            std::env::temp_dir(),
            vec!["true".into()],
            Duration::from_secs(5),
        )
    }

    #[test]
    fn malformed_jobs_are_refused_before_anything_runs() {
        assert!(job().validate().is_ok());
        let mut empty = job();
        empty.command.clear();
        assert!(empty.validate().is_err());
        let mut relative = job();
        relative.snapshot = PathBuf::from("snapshot");
        assert!(relative.validate().is_err());
        let mut bad_env = job();
        bad_env.env.push(("A=B".into(), "x".into()));
        assert!(bad_env.validate().is_err());
        for target in ["/work/x", "/snapshot", "relative", "/", "/opt/a:b", "/tmp"] {
            let mut mount = job();
            mount.mounts.push(ReadOnlyMount {
                host: std::env::temp_dir(),
                target: target.into(),
            });
            assert!(mount.validate().is_err(), "{target}");
        }
        let mut forever = job();
        forever.deadline = Duration::from_secs(7200);
        assert!(forever.validate().is_err());
    }

    #[test]
    fn output_is_capped_and_the_cut_is_said() {
        let mut capped = Capped::default();
        capped.push(b"hello ", 8);
        capped.push(b"world", 8);
        assert_eq!(capped.text(), "hello wo\n[r2r: 3 more bytes cut]\n");
    }
}
