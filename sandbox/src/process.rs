//! One command, a clean environment, a deadline that kills every process it started.

use serde::Serialize;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

/// A command to run.
#[derive(Clone, Debug)]
pub struct Job {
    /// Program to start (looked up on the job's `PATH`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Working directory.
    pub work_dir: PathBuf,
    /// The complete environment: nothing of the caller's is inherited.
    pub env: Vec<(String, String)>,
    /// Wall-clock limit for the whole run.
    pub deadline: Duration,
}

/// What happened.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct RunOutcome {
    /// Exit code, when the process exited by itself.
    pub exit_code: Option<i32>,
    /// Killed at the deadline.
    pub timed_out: bool,
    /// Killed for exceeding its memory limit.
    pub oom_killed: bool,
    /// Wall-clock time.
    pub duration_ms: u64,
    /// Which kind of sandbox produced this (`host`, `docker`, `bwrap`).
    pub backend: &'static str,
    /// Who ran it, when not this host: the worker hosts that measured it, the first runner
    /// and then the one that confirmed it, named by the desk from their tokens (never from
    /// what a worker says of itself). Empty: this host's own sandbox.
    pub workers: Vec<String>,
    /// The confirming worker's own run of the same job, when a second worker ran it: it told
    /// the same story (ending and failing tests); a caller that judges more of the output (a
    /// reproduction's assertion) judges this run too and believes neither when they differ.
    pub confirmation: Option<Box<RunOutcome>>,
    /// Captured standard output (lossy UTF-8).
    pub stdout: String,
    /// Captured standard error (lossy UTF-8).
    pub stderr: String,
}

/// Why a job could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The program could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Waiting on the process failed.
    #[error("lost track of the process: {0}")]
    Wait(#[source] std::io::Error),
}

/// Runs a job directly on this host, in its own process group, and kills the group at the
/// deadline. This limits time, not access: it is for trusted code such as the demo's own
/// regression test.
pub async fn run_on_host(job: &Job) -> Result<RunOutcome, RunError> {
    let started = Instant::now();
    let mut command = tokio::process::Command::new(&job.program);
    command
        .args(&job.args)
        .current_dir(&job.work_dir)
        .env_clear()
        .envs(job.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|source| RunError::Spawn {
        program: job.program.clone(),
        source,
    })?;
    let pid = child.id();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let read_out = async move {
        let mut buffer = Vec::new();
        if let Some(pipe) = stdout.as_mut() {
            let _ = pipe.read_to_end(&mut buffer).await;
        }
        buffer
    };
    let read_err = async move {
        let mut buffer = Vec::new();
        if let Some(pipe) = stderr.as_mut() {
            let _ = pipe.read_to_end(&mut buffer).await;
        }
        buffer
    };
    let output = tokio::spawn(async move { tokio::join!(read_out, read_err) });

    let (status, timed_out) = match tokio::time::timeout(job.deadline, child.wait()).await {
        Ok(status) => (Some(status.map_err(RunError::Wait)?), false),
        Err(_) => (None, true),
    };
    // Kill the whole group either way: a finished parent may leave children behind.
    if let Some(pid) = pid.and_then(|pid| i32::try_from(pid).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    if timed_out {
        let _ = child.wait().await;
    }
    let (out, err) = output.await.unwrap_or_default();
    Ok(RunOutcome {
        exit_code: status.and_then(|s| s.code()),
        timed_out,
        oom_killed: false,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        backend: "host",
        workers: Vec::new(),
        confirmation: None,
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, deadline: Duration) -> Job {
        Job {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            work_dir: std::env::temp_dir(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            deadline,
        }
    }

    #[tokio::test]
    async fn exit_codes_and_output_are_captured() {
        let outcome = run_on_host(&sh(
            "echo out; echo err >&2; exit 3",
            Duration::from_secs(10),
        ))
        .await
        .unwrap();
        assert_eq!(outcome.exit_code, Some(3));
        assert!(!outcome.timed_out);
        assert_eq!(outcome.stdout, "out\n");
        assert_eq!(outcome.stderr, "err\n");
        assert_eq!(outcome.backend, "host");
    }

    #[tokio::test]
    async fn the_environment_is_only_what_the_job_names() {
        std::env::set_var("R2R_SANDBOX_LEAK_CHECK", "leaked");
        let outcome = run_on_host(&sh("env", Duration::from_secs(10)))
            .await
            .unwrap();
        assert!(
            !outcome.stdout.contains("R2R_SANDBOX_LEAK_CHECK"),
            "{}",
            outcome.stdout
        );
        assert!(outcome.stdout.contains("PATH=/usr/bin:/bin"));
    }

    #[tokio::test]
    async fn the_deadline_kills_the_command_and_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survivor");
        // A background child that would write the marker after the deadline.
        let script = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let outcome = run_on_host(&sh(&script, Duration::from_millis(300)))
            .await
            .unwrap();
        assert!(outcome.timed_out);
        assert_eq!(outcome.exit_code, None);
        assert!(
            outcome.duration_ms < 5_000,
            "took {} ms",
            outcome.duration_ms
        );
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        assert!(!marker.exists(), "a child outlived the deadline");
    }

    #[tokio::test]
    async fn a_missing_program_is_an_error_not_an_outcome() {
        let mut job = sh("true", Duration::from_secs(1));
        job.program = "/nonexistent/program".into();
        assert!(matches!(
            run_on_host(&job).await,
            Err(RunError::Spawn { .. })
        ));
    }
}
