//! The bubblewrap backend, for hosts without Docker.
//!
//! bwrap runs as root (it must: it reads a toolchain under `/root`, and a user namespace
//! started by root would map the sandbox's uid onto host root), builds a root from an empty
//! tmpfs with read-only `/usr` (and the `/bin`, `/lib*` links), a handful of `/etc` files the
//! linker and compilers need, the snapshot and the job's mounts, then remounts it read-only
//! and unshares network, PID, IPC, UTS and cgroup namespaces. Inside, `setpriv` drops to uid
//! and gid 10001 with no groups, an empty capability bounding set, no inheritable
//! capabilities and no-new-privileges before the job's command runs. Limits come from
//! cgroup v1 controllers (memory without swap, pids, CPU quota) that the process joins
//! before bwrap starts, so every descendant is counted, OOM kills are read from the memory
//! controller, and at the deadline — or when the command exits — every process left in the
//! run's cgroup is killed.

use crate::isolated::{
    millis, Capped, Sandbox, SandboxError, SandboxJob, SANDBOX_UID, SNAPSHOT_DIR, WORK_DIR,
};
use crate::RunOutcome;
use async_trait::async_trait;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

const BACKEND: &str = "bwrap";
const CONTROLLERS: [&str; 3] = ["memory", "pids", "cpu"];

/// Runs jobs under bubblewrap with cgroup v1 limits.
#[derive(Debug, Clone)]
pub struct BwrapSandbox {
    bwrap: PathBuf,
    setpriv: PathBuf,
    cgroup_root: PathBuf,
    /// The `/etc/hosts` every run sees: `localhost` on the loopback (test suites that start a
    /// server on "localhost" resolve it by this file), and nothing of the host's.
    etc_hosts: PathBuf,
}

fn failed(reason: impl std::fmt::Display) -> SandboxError {
    SandboxError::Failed {
        backend: BACKEND,
        reason: reason.to_string(),
    }
}

fn find(program: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/sbin", "/usr/local/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(program))
        .find(|path| path.is_file())
}

impl BwrapSandbox {
    /// Finds bwrap and setpriv and checks that this process may create cgroup v1 limits.
    pub fn detect() -> Result<Self, SandboxError> {
        let unavailable = |reason: String| SandboxError::Unavailable {
            backend: BACKEND,
            reason,
        };
        let bwrap = find("bwrap").ok_or_else(|| {
            unavailable("bwrap is not installed (apt-get install bubblewrap)".into())
        })?;
        let setpriv = find("setpriv")
            .ok_or_else(|| unavailable("setpriv is not installed (util-linux)".into()))?;
        if !nix::unistd::geteuid().is_root() {
            return Err(unavailable(
                "it must run as root to set cgroup limits and drop to uid 10001; use the docker backend otherwise".into(),
            ));
        }
        let cgroup_root = PathBuf::from("/sys/fs/cgroup");
        for controller in CONTROLLERS {
            let dir = cgroup_root.join(controller);
            if !dir.join("cgroup.procs").is_file() {
                return Err(unavailable(format!(
                    "the cgroup v1 {controller} controller is not mounted at {}",
                    dir.display()
                )));
            }
        }
        Ok(BwrapSandbox {
            bwrap,
            setpriv,
            cgroup_root,
            etc_hosts: crate::isolated::etc_hosts().map_err(failed)?,
        })
    }

    fn arguments(&self, job: &SandboxJob) -> Vec<String> {
        let mut args: Vec<String> = [
            "--die-with-parent",
            "--new-session",
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "sandbox",
            "--clearenv",
            "--tmpfs",
            "/",
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        .map(str::to_owned)
        .to_vec();
        for top in ["bin", "sbin", "lib", "lib32", "lib64", "libx32"] {
            let host = Path::new("/").join(top);
            if let Ok(target) = std::fs::read_link(&host) {
                args.extend([
                    "--symlink".into(),
                    target.to_string_lossy().into_owned(),
                    host.to_string_lossy().into_owned(),
                ]);
            } else if host.is_dir() {
                let path = host.to_string_lossy().into_owned();
                args.extend(["--ro-bind".into(), path.clone(), path]);
            }
        }
        args.extend(["--dir".into(), "/etc".into()]);
        // What compilers, linkers and `cc` alternatives need; nothing else of /etc.
        for file in ["alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d"] {
            let path = format!("/etc/{file}");
            args.extend(["--ro-bind-try".into(), path.clone(), path]);
        }
        args.extend([
            "--ro-bind".into(),
            self.etc_hosts.to_string_lossy().into_owned(),
            "/etc/hosts".into(),
        ]);
        args.extend([
            "--ro-bind".into(),
            job.snapshot.to_string_lossy().into_owned(),
            SNAPSHOT_DIR.into(),
        ]);
        for mount in &job.mounts {
            // Parents bwrap would create 0700 are made traversable first.
            let mut parents: Vec<&Path> = mount.target.ancestors().skip(1).collect();
            parents.reverse();
            for parent in parents.into_iter().filter(|p| *p != Path::new("/")) {
                args.extend([
                    "--perms".into(),
                    "0755".into(),
                    "--dir".into(),
                    parent.to_string_lossy().into_owned(),
                ]);
            }
            args.extend([
                "--ro-bind".into(),
                mount.host.to_string_lossy().into_owned(),
                mount.target.to_string_lossy().into_owned(),
            ]);
        }
        if let Some(output) = &job.output {
            args.extend([
                "--bind".into(),
                output.to_string_lossy().into_owned(),
                crate::isolated::OUTPUT_DIR.into(),
            ]);
        }
        for (dir, size) in [
            (WORK_DIR, job.limits.work_bytes),
            ("/tmp", job.limits.tmp_bytes),
        ] {
            args.extend([
                "--perms".into(),
                "1777".into(),
                "--size".into(),
                size.to_string(),
                "--tmpfs".into(),
                dir.into(),
            ]);
        }
        args.extend([
            "--proc".into(),
            "/proc".into(),
            "--dev".into(),
            "/dev".into(),
            "--remount-ro".into(),
            "/".into(),
            "--chdir".into(),
            WORK_DIR.into(),
        ]);
        for (key, value) in &job.env {
            args.extend(["--setenv".into(), key.clone(), value.clone()]);
        }
        let uid = SANDBOX_UID.to_string();
        args.extend([
            "--".into(),
            self.setpriv.to_string_lossy().into_owned(),
            "--reuid".into(),
            uid.clone(),
            "--regid".into(),
            uid,
            "--clear-groups".into(),
            "--inh-caps=-all".into(),
            "--bounding-set=-all".into(),
            "--no-new-privs".into(),
            "--".into(),
        ]);
        args.extend(job.command.iter().cloned());
        args
    }
}

/// One run's cgroups (one per controller), removed on drop.
#[derive(Debug)]
struct RunCgroups {
    dirs: Vec<PathBuf>,
}

impl RunCgroups {
    fn create(root: &Path, job: &SandboxJob) -> Result<Self, SandboxError> {
        let name = format!("r2r-sandbox/{:016x}", rand::random::<u64>());
        let mut groups = RunCgroups { dirs: Vec::new() };
        for controller in CONTROLLERS {
            let dir = root.join(controller).join(&name);
            std::fs::create_dir_all(&dir)
                .map_err(|e| failed(format!("cgroup {}: {e}", dir.display())))?;
            groups.dirs.push(dir);
        }
        let limits = &job.limits;
        let write = |dir: &Path, file: &str, value: String| {
            std::fs::write(dir.join(file), value)
                .map_err(|e| failed(format!("cgroup {}/{file}: {e}", dir.display())))
        };
        let memory = &groups.dirs[0];
        write(
            memory,
            "memory.limit_in_bytes",
            limits.memory_bytes.to_string(),
        )?;
        // No swap either, where swap accounting exists.
        if memory.join("memory.memsw.limit_in_bytes").exists() {
            write(
                memory,
                "memory.memsw.limit_in_bytes",
                limits.memory_bytes.to_string(),
            )?;
        }
        let _ = std::fs::write(memory.join("memory.swappiness"), "0");
        write(&groups.dirs[1], "pids.max", limits.pids.to_string())?;
        write(&groups.dirs[2], "cpu.cfs_period_us", "100000".into())?;
        write(
            &groups.dirs[2],
            "cpu.cfs_quota_us",
            (u64::from(limits.cpu_millis) * 100).to_string(),
        )?;
        Ok(groups)
    }

    fn pids(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = self
            .dirs
            .iter()
            .filter_map(|dir| std::fs::read_to_string(dir.join("cgroup.procs")).ok())
            .flat_map(|text| {
                text.lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect::<Vec<i32>>()
            })
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// SIGKILLs every process of the run until none is left (new forks are bounded by the
    /// pids limit).
    async fn kill_all(&self) -> bool {
        for _ in 0..200 {
            let pids = self.pids();
            if pids.is_empty() {
                return true;
            }
            for pid in pids {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.pids().is_empty()
    }

    fn oom_kills(&self) -> u64 {
        std::fs::read_to_string(self.dirs[0].join("memory.oom_control"))
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("oom_kill "))
                    .and_then(|n| n.trim().parse().ok())
            })
            .unwrap_or(0)
    }
}

impl Drop for RunCgroups {
    fn drop(&mut self) {
        for dir in &self.dirs {
            if let Err(error) = std::fs::remove_dir(dir) {
                tracing::warn!(dir = %dir.display(), %error, "sandbox cgroup not removed");
            }
        }
    }
}

async fn read_capped(pipe: Option<impl tokio::io::AsyncRead + Unpin>, limit: usize) -> String {
    let mut capped = Capped::default();
    if let Some(mut pipe) = pipe {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => capped.push(&buffer[..n], limit),
            }
        }
    }
    capped.text()
}

#[async_trait]
impl Sandbox for BwrapSandbox {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    async fn run(&self, job: &SandboxJob) -> Result<RunOutcome, SandboxError> {
        self.run_with(job, None, None).await
    }

    async fn serve(
        &self,
        job: &SandboxJob,
        started: tokio::sync::oneshot::Sender<u32>,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) -> Result<RunOutcome, SandboxError> {
        self.run_with(job, Some(started), Some(stop)).await
    }
}

/// The network namespace a process is in (`net:[inode]`), if it can be read.
fn netns_of(pid: &str) -> Option<std::ffi::OsString> {
    std::fs::read_link(format!("/proc/{pid}/ns/net"))
        .ok()
        .map(PathBuf::into_os_string)
}

impl BwrapSandbox {
    /// Runs `job`; as a service (`started` given) without a deadline, until `stop`.
    async fn run_with(
        &self,
        job: &SandboxJob,
        on_start: Option<tokio::sync::oneshot::Sender<u32>>,
        stop: Option<tokio::sync::oneshot::Receiver<()>>,
    ) -> Result<RunOutcome, SandboxError> {
        job.validate()?;
        let groups = RunCgroups::create(&self.cgroup_root, job)?;
        let started = Instant::now();
        // The shell joins the run's cgroups, then becomes bwrap: every descendant is counted.
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(r#"for d in "$1" "$2" "$3"; do echo $$ > "$d/cgroup.procs" || exit 125; done; shift 3; exec "$@""#)
            .arg("r2r-sandbox")
            .args(groups.dirs.iter())
            .arg(&self.bwrap)
            .args(self.arguments(job))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| failed(format!("cannot start bwrap: {e}")))?;
        let limit = job.limits.output_bytes;
        let stdout = tokio::spawn(read_capped(child.stdout.take(), limit));
        let stderr = tokio::spawn(read_capped(child.stderr.take(), limit));
        let service = on_start.is_some();
        if let Some(on_start) = on_start {
            // The first process of the run in a network namespace other than ours is inside.
            let ours = netns_of("self");
            let mut inside = None;
            for _ in 0..500 {
                inside = groups.pids().into_iter().find(|pid| {
                    netns_of(&pid.to_string()).is_some_and(|ns| Some(&ns) != ours.as_ref())
                });
                if inside.is_some() || child.try_wait().ok().flatten().is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            if let Some(pid) = inside.and_then(|pid| u32::try_from(pid).ok()) {
                let _ = on_start.send(pid);
            }
        }
        let waited = if service {
            tokio::select! {
                status = child.wait() => Ok(status),
                () = crate::isolated::stopped(stop) => Err(()),
            }
        } else {
            tokio::time::timeout(job.deadline, child.wait())
                .await
                .map_err(|_| ())
        };
        let timed_out = waited.is_err() && !service;
        // Deadline or not, nothing of the run survives it.
        let emptied = groups.kill_all().await;
        let waited_out = waited.is_err();
        let status = match waited {
            Ok(status) => Some(status.map_err(|e| failed(format!("wait: {e}")))?),
            Err(()) => {
                let _ = child.kill().await;
                None
            }
        };
        let duration_ms = millis(started.elapsed());
        if !emptied {
            return Err(failed("processes of the run could not be killed"));
        }
        let stdout = stdout.await.unwrap_or_default();
        let mut stderr = stderr.await.unwrap_or_default();
        let exit_code = status.and_then(|s| s.code());
        if exit_code == Some(125) && stderr.contains("cgroup.procs") {
            return Err(failed(format!(
                "could not join the run's cgroups: {stderr}"
            )));
        }
        let oom_killed = groups.oom_kills() > 0;
        if oom_killed {
            stderr.push_str("\n[r2r: killed for exceeding the memory limit]\n");
        }
        Ok(RunOutcome {
            exit_code: if waited_out { None } else { exit_code },
            timed_out,
            oom_killed,
            duration_ms,
            backend: BACKEND,
            workers: Vec::new(),
            confirmation: None,
            stdout,
            stderr,
        })
    }
}
