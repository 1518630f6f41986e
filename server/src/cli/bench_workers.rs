//! `r2r bench workers`: sandbox jobs per second through the desk's queue with N worker hosts.
//! A desk starts in this process with `R2R_SANDBOX_RUNNER=workers`; N `r2r sandbox worker`
//! processes (this binary) claim from it over HTTP, each with its own token; the desk's own
//! queued sandbox (the code every measurement goes through) submits the jobs, a few more at
//! once than there are workers so that none idles. Each job runs a small command on a small
//! snapshot, so the figure is the queue's and the sandbox's cost per job, not a test suite's.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::DatabaseUrl;

/// The figures.
#[derive(Debug)]
pub struct WorkersBench {
    /// Backend of the queue.
    pub storage: &'static str,
    /// Worker processes.
    pub workers: usize,
    /// Jobs timed.
    pub jobs: usize,
    /// Wall time for all of them.
    pub elapsed: Duration,
    /// Median time from queueing a job to having its outcome.
    pub p50: Duration,
    /// Jobs each worker finished.
    pub per_worker: Vec<(String, i64)>,
}

/// Runs the benchmark against an empty database at `url`.
pub async fn workers(
    url: &DatabaseUrl,
    workers: usize,
    jobs: usize,
    backend: sandbox::Backend,
) -> anyhow::Result<WorkersBench> {
    let mut config = crate::config::Config::from_env(&Default::default(), Some("127.0.0.1:0"))?;
    config.database_url = url.clone();
    config.crew = crate::config::CrewMode::Off;
    config.sandbox_backend = None;
    config.sandbox_workers = Some(Duration::from_secs(60));
    let running = crate::start::start(&config).await?;
    let store = running.store.clone();
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    for n in 1..=workers {
        let name = format!("bench-{n}");
        let token = crate::auth::new_worker_token();
        if !store
            .add_sandbox_worker(
                &name,
                &crate::auth::hash_secret(&token),
                crate::clock::now_ms(),
            )
            .await?
        {
            anyhow::bail!("the database already has a worker {name}: point --database-url at a scratch database");
        }
        children.push(
            tokio::process::Command::new(&exe)
                .args([
                    "--env-file",
                    "/dev/null",
                    "sandbox",
                    "worker",
                    "--desk",
                    &running.base,
                    "--idle",
                    "50",
                    "--backend",
                    backend.as_str(),
                ])
                .env("R2R_SANDBOX_WORKER_TOKEN", token)
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .kill_on_drop(true)
                .spawn()?,
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for child in &mut children {
        if let Some(status) = child.try_wait()? {
            anyhow::bail!("a worker process stopped at once ({status}); see its message above");
        }
    }
    let result = submit(&store, jobs, workers).await;
    for child in &mut children {
        let _ = child.kill().await;
    }
    let per_worker = store
        .sandbox_workers()
        .await?
        .into_iter()
        .map(|w| (w.name, w.jobs_done))
        .collect();
    let storage = store.backend().as_str();
    running.stop().await;
    let (elapsed, p50) = result?;
    Ok(WorkersBench {
        storage,
        workers,
        jobs,
        elapsed,
        p50,
        per_worker,
    })
}

async fn submit(
    store: &store::Store,
    jobs: usize,
    workers: usize,
) -> anyhow::Result<(Duration, Duration)> {
    let snapshot = tempfile::tempdir()?;
    std::fs::write(snapshot.path().join("data.txt"), "x".repeat(64 * 1024))?;
    sandbox::share_read_only(snapshot.path())?;
    let job = sandbox::SandboxJob::new(
        snapshot.path(),
        vec![
            "/bin/sh".into(),
            "-c".into(),
            "wc -c /snapshot/data.txt".into(),
        ],
        Duration::from_secs(30),
    );
    // The queue's own throughput: each job once (a confirmed test run costs two of these).
    let queue: Arc<dyn sandbox::Sandbox> = Arc::new(crate::sandbox_queue::QueuedSandbox::new(
        store.clone(),
        Duration::from_secs(60),
        crate::sandbox_queue::Confirm::Never,
    ));
    // Warm-up (each worker's sandbox, the connections): not timed.
    for _ in 0..workers {
        let outcome = queue.run(&job).await?;
        anyhow::ensure!(
            outcome.exit_code == Some(0),
            "the warm-up job failed: {}",
            outcome.stderr
        );
    }
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut submitters = Vec::new();
    for _ in 0..(workers * 2) {
        let (queue, job, next) = (queue.clone(), job.clone(), next.clone());
        submitters.push(tokio::spawn(async move {
            let mut times = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < jobs {
                let at = Instant::now();
                let outcome = queue.run(&job).await?;
                anyhow::ensure!(
                    outcome.exit_code == Some(0) && outcome.stdout.contains("65536"),
                    "a job did not run as asked: {outcome:?}"
                );
                times.push(at.elapsed());
            }
            Ok(times)
        }));
    }
    let mut times = Vec::new();
    for submitter in submitters {
        times.extend(submitter.await??);
    }
    let elapsed = started.elapsed();
    times.sort();
    let p50 = times.get(times.len() / 2).copied().unwrap_or_default();
    Ok((elapsed, p50))
}
