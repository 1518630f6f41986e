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
    /// Run sandbox jobs for a desk whose runs go to workers (`R2R_SANDBOX_RUNNER=workers`):
    /// claim the oldest waiting job over HTTP, run it in this host's sandbox, report the
    /// outcome; repeat. The token is this worker's own (`r2r sandbox add-worker`), read from
    /// R2R_SANDBOX_WORKER_TOKEN (environment or env file), never from the command line. This
    /// host needs no database access and no other credential.
    Worker(WorkerArgs),
    /// Add a worker host: prints its token once (only a hash is kept).
    AddWorker {
        /// The worker's name (letters, digits, '-', '_'; at most 40).
        #[arg(long)]
        name: String,
    },
    /// Revoke a worker's token at once.
    RevokeWorker {
        /// The worker's name.
        #[arg(long)]
        name: String,
    },
    /// Stop trusting a worker: its token ends at once, the jobs it holds go back to the
    /// queue, its name is never given again, and a running desk measures again (within
    /// seconds) every bug whose evidence it measured that is not merged yet.
    DistrustWorker {
        /// The worker's name.
        #[arg(long)]
        name: String,
    },
    /// List the worker hosts and the sandbox jobs waiting or running.
    Workers,
}

/// Arguments of `r2r sandbox worker`.
#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// The desk.
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:3000")]
    desk: String,
    /// This host's sandbox: `docker` or `bwrap`.
    #[arg(long, default_value = "docker")]
    backend: sandbox::Backend,
    /// How long to wait between claims when no job waits, in milliseconds (50–60,000).
    #[arg(long, default_value_t = 500, value_name = "MS", value_parser = clap::value_parser!(u64).range(50..=60_000))]
    idle: u64,
    /// Stop after this many jobs (default: run until stopped).
    #[arg(long, value_name = "N")]
    jobs: Option<u64>,
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

/// Runs `r2r sandbox run`.
pub async fn run(args: RunArgs, image: &str) -> anyhow::Result<ExitCode> {
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
    match command {
        SandboxCommand::Run(args) => run(args, &image).await,
        SandboxCommand::Worker(args) => {
            let Some(token) = env.get("R2R_SANDBOX_WORKER_TOKEN").map(str::trim) else {
                anyhow::bail!("R2R_SANDBOX_WORKER_TOKEN is not set: give this host the token `r2r sandbox add-worker` printed for it");
            };
            if !token.starts_with(crate::auth::WORKER_TOKEN_PREFIX) {
                anyhow::bail!(
                    "R2R_SANDBOX_WORKER_TOKEN is not a worker token (it starts r2r_worker_)"
                );
            }
            super::sandbox_worker::work(
                &args.desk,
                token,
                args.backend,
                &image,
                std::time::Duration::from_millis(args.idle),
                args.jobs,
            )
            .await
        }
        SandboxCommand::AddWorker { name } => {
            let valid = !name.is_empty()
                && name.len() <= 40
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !valid {
                anyhow::bail!(
                    "--name {name:?} is invalid: letters, digits, '-' and '_', at most 40"
                );
            }
            let store = workers_store(env_file).await?;
            let token = crate::auth::new_worker_token();
            let added = store
                .add_sandbox_worker(
                    &name,
                    &crate::auth::hash_secret(&token),
                    crate::clock::now_ms(),
                )
                .await?;
            if !added {
                anyhow::bail!(
                    "a worker named {name:?} exists already (revoke it, or choose another name)"
                );
            }
            println!("R2R_SANDBOX_WORKER_TOKEN={token}");
            println!("Worker {name} added. Its token is shown here once: put it in that host's environment (R2R_SANDBOX_WORKER_TOKEN) and run `r2r sandbox worker --desk URL` there.");
            Ok(ExitCode::SUCCESS)
        }
        SandboxCommand::RevokeWorker { name } => {
            let store = workers_store(env_file).await?;
            if !store
                .revoke_sandbox_worker(&name, crate::clock::now_ms())
                .await?
            {
                anyhow::bail!("no worker named {name:?} holds a token");
            }
            println!("Worker {name}'s token no longer works.");
            Ok(ExitCode::SUCCESS)
        }
        SandboxCommand::DistrustWorker { name } => {
            let store = workers_store(env_file).await?;
            if !store
                .distrust_sandbox_worker(&name, crate::clock::now_ms())
                .await?
            {
                anyhow::bail!("no worker named {name:?} that is not distrusted already");
            }
            let bugs = store.bugs_measured_by(&name).await?;
            println!(
                "Worker {name} is distrusted: its token no longer works and the jobs it held went back to the queue. {} bug(s) have evidence it measured; a running desk measures each again that is not merged yet (`r2r serve` does it within {} s).",
                bugs.len(),
                crate::workers::distrust::INTERVAL.as_secs()
            );
            Ok(ExitCode::SUCCESS)
        }
        SandboxCommand::Workers => {
            let store = workers_store(env_file).await?;
            let workers = store.sandbox_workers().await?;
            if workers.is_empty() {
                println!("No worker hosts (r2r sandbox add-worker --name NAME).");
            }
            for worker in workers {
                println!(
                    "{:<24} {:<8} jobs {:>6}  last claim {}",
                    worker.name,
                    if worker.distrusted_at.is_some() {
                        "distrust"
                    } else if worker.revoked_at.is_some() {
                        "revoked"
                    } else {
                        "active"
                    },
                    worker.jobs_done,
                    worker.last_seen_at.map_or("never".to_owned(), |at| format!(
                        "{} s ago",
                        (crate::clock::now_ms() - at) / 1000
                    )),
                );
            }
            for (purpose, worker, created) in store.sandbox_queue().await? {
                println!(
                    "job {purpose:<6} {} for {} s",
                    worker.map_or("waiting for a worker".to_owned(), |w| format!(
                        "running on {w}"
                    )),
                    (crate::clock::now_ms() - created) / 1000
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn workers_store(env_file: &std::path::Path) -> anyhow::Result<store::Store> {
    let config = super::load_config(env_file, None)?;
    let store = store::Store::connect(&config.database_url).await?;
    store.migrate().await?;
    Ok(store)
}
