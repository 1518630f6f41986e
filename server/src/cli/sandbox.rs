//! `r2r sandbox run`: one command under the sandbox's exact limits, the outcome as JSON —
//! for operators checking a host, and for tests.

use clap::{Args, Subcommand};
use sandbox::{ReadOnlyMount, SandboxJob};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// `r2r sandbox …`
#[derive(Subcommand, Debug)]
pub enum SandboxCommand {
    /// Run CMD in the sandbox (no network, read-only root and snapshot, tmpfs /work and /tmp,
    /// uid 10001, no capabilities, no-new-privileges, 384 MiB, 0.75 CPU, 96 processes, a
    /// deadline) and print the outcome as JSON. Exits 0 when the command ran, whatever its
    /// own exit code; 2 when the sandbox could not run it.
    Run(RunArgs),
}

/// Arguments of `r2r sandbox run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// `docker` (Engine API, local image R2R_SANDBOX_IMAGE) or `bwrap` (bubblewrap + cgroups,
    /// as root).
    #[arg(long, default_value = "docker")]
    backend: sandbox::Backend,
    /// Directory shown read-only at /snapshot.
    #[arg(long, value_name = "DIR")]
    snapshot: PathBuf,
    /// Wall-clock deadline in seconds (1–3600).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    timeout: u64,
    /// Extra read-only mount HOST_DIR:TARGET (repeatable), e.g. a toolchain.
    #[arg(long = "mount", value_name = "HOST:TARGET")]
    mounts: Vec<String>,
    /// Environment variable KEY=VALUE (repeatable); nothing else is passed in but PATH,
    /// HOME=/work, TMPDIR=/tmp and LANG.
    #[arg(long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// Also print the captured output in the JSON (default: only its size).
    #[arg(long)]
    output: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

/// Runs `r2r sandbox …`.
pub async fn run(command: SandboxCommand, image: &str) -> anyhow::Result<ExitCode> {
    let SandboxCommand::Run(args) = command;
    let snapshot = args
        .snapshot
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("--snapshot {} is invalid: {e}", args.snapshot.display()))?;
    let mut job = SandboxJob::new(snapshot, args.command, Duration::from_secs(args.timeout));
    for mount in &args.mounts {
        let Some((host, target)) = mount.split_once(':') else {
            anyhow::bail!("--mount {mount:?} is invalid: expected HOST_DIR:TARGET");
        };
        job.mounts.push(ReadOnlyMount {
            host: PathBuf::from(host),
            target: PathBuf::from(target),
        });
    }
    for pair in &args.env {
        let Some((key, value)) = pair.split_once('=') else {
            anyhow::bail!("--env {pair:?} is invalid: expected KEY=VALUE");
        };
        job.env.retain(|(k, _)| k != key);
        job.env.push((key.to_owned(), value.to_owned()));
    }
    if let Err(error) = job.validate() {
        anyhow::bail!("{error}");
    }
    let backend = match sandbox::connect(args.backend, image).await {
        Ok(backend) => backend,
        Err(error) => {
            eprintln!("{error}");
            return Ok(ExitCode::from(2));
        }
    };
    match backend.run(&job).await {
        Ok(outcome) => {
            let mut json = serde_json::json!({
                "backend": outcome.backend,
                "exit_code": outcome.exit_code,
                "timed_out": outcome.timed_out,
                "oom_killed": outcome.oom_killed,
                "duration_ms": outcome.duration_ms,
                "stdout_bytes": outcome.stdout.len(),
                "stderr_bytes": outcome.stderr.len(),
            });
            if args.output {
                json["stdout"] = outcome.stdout.into();
                json["stderr"] = outcome.stderr.into();
            }
            println!("{json}");
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("{error}");
            Ok(ExitCode::from(2))
        }
    }
}

/// `r2r sandbox …`, with the image from `R2R_SANDBOX_IMAGE` (or the local default).
pub async fn command(
    env_file: &std::path::Path,
    command: SandboxCommand,
) -> anyhow::Result<ExitCode> {
    let env = crate::config::Environment::load(env_file)?;
    let image = env.sandbox_image();
    run(command, &image).await
}
