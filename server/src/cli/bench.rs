//! `r2r bench ledger`: ledger throughput with per-bug rows against the seed design (the whole
//! workspace as one JSON document written by compare-and-swap), same database, same run.

use super::SharedData;
use crate::clock::now_ms;
use crate::config::Environment;
use anyhow::Context;
use clap::Subcommand;
use domain::workflow::{decide, Actor, Bug, Command, EventDraft, Evidence, Policy};
use domain::Role;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use store::{DatabaseUrl, Store};

/// One workload's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Commands applied.
    pub commands: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Lost compare-and-swaps that were retried.
    pub retries: u64,
}

impl Figures {
    /// Commands per second.
    pub fn rate(&self) -> f64 {
        self.commands as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Both workloads and their ratio.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerBench {
    /// Storage backend name.
    pub storage: &'static str,
    /// Writers.
    pub writers: usize,
    /// Commands per writer.
    pub commands: usize,
    /// This design: one row per bug.
    pub per_bug: Figures,
    /// The seed design: one JSON document.
    pub one_document: Figures,
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The database already holds bugs: the benchmark writes its own and must not mix them in.
    #[error("the benchmark needs an empty database, and this one holds {0} bugs; point --database-url at a scratch database")]
    NotEmpty(usize),
    /// A store failure.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// A ledger failure.
    #[error(transparent)]
    Apply(#[from] store::ApplyError),
    /// A task panicked or was cancelled.
    #[error("a writer failed: {0}")]
    Writer(String),
}

fn note(
    bug: &Bug,
    n: usize,
    now: i64,
) -> Result<domain::workflow::Decision, domain::workflow::Refusal> {
    decide(
        bug,
        &Command::AddNote {
            note: format!("note-{n}"),
        },
        &Actor::Role {
            role: Role::Reviewer,
        },
        &Evidence::default(),
        &Policy::default(),
        now,
    )
}

/// The seed design's document: every bug and every event of the workspace.
#[derive(Serialize, Deserialize, Default)]
struct Workspace {
    bugs: BTreeMap<String, Bug>,
    events: Vec<EventDraft>,
}

async fn per_bug(store: &Store, writers: usize, commands: usize) -> Result<Figures, BenchError> {
    let now = now_ms();
    for writer in 0..writers {
        store
            .create_bug(
                &Bug::open(&format!("bench-{writer}"), "shoplite", "r"),
                &[],
                &[],
                now,
            )
            .await?;
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut retries = 0u64;
            for n in 0..commands {
                let applied = store
                    .apply(&format!("bench-{writer}"), now, |bug| note(bug, n, now))
                    .await?;
                retries += u64::from(applied.attempts - 1);
            }
            Ok::<u64, BenchError>(retries)
        }));
    }
    collect(tasks, writers * commands, started).await
}

async fn one_document(
    store: &Store,
    writers: usize,
    commands: usize,
) -> Result<Figures, BenchError> {
    let now = now_ms();
    let mut workspace = Workspace::default();
    for writer in 0..writers {
        let id = format!("doc-{writer}");
        workspace
            .bugs
            .insert(id.clone(), Bug::open(&id, "shoplite", "r"));
    }
    let initial =
        serde_json::to_string(&workspace).map_err(|e| BenchError::Writer(e.to_string()))?;
    store.bench_document_reset(&initial).await?;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let id = format!("doc-{writer}");
            let mut retries = 0u64;
            for n in 0..commands {
                let mut attempt = 0u32;
                loop {
                    let (version, text) = store.bench_document_read().await?;
                    let mut workspace: Workspace = serde_json::from_str(&text)
                        .map_err(|e| BenchError::Writer(e.to_string()))?;
                    let bug = workspace
                        .bugs
                        .get(&id)
                        .cloned()
                        .ok_or_else(|| BenchError::Writer(id.clone()))?;
                    let decision =
                        note(&bug, n, now).map_err(|e| BenchError::Writer(e.to_string()))?;
                    workspace.events.extend(decision.events);
                    workspace.bugs.insert(id.clone(), decision.bug);
                    let text = serde_json::to_string(&workspace)
                        .map_err(|e| BenchError::Writer(e.to_string()))?;
                    if store.bench_document_swap(version, &text).await? {
                        break;
                    }
                    retries += 1;
                    attempt += 1;
                    // The same full-jitter backoff the ledger uses, so only the design differs.
                    let ceiling = 1_000u64 << attempt.min(8);
                    let wait = rand::Rng::gen_range(&mut rand::thread_rng(), ceiling / 4..=ceiling);
                    tokio::time::sleep(Duration::from_micros(wait)).await;
                }
            }
            Ok::<u64, BenchError>(retries)
        }));
    }
    collect(tasks, writers * commands, started).await
}

type Writer = tokio::task::JoinHandle<Result<u64, BenchError>>;

/// Waits for every writer and sums the races they lost.
async fn collect(
    tasks: Vec<Writer>,
    commands: usize,
    started: Instant,
) -> Result<Figures, BenchError> {
    let mut retries = 0;
    for task in tasks {
        retries += task
            .await
            .map_err(|e| BenchError::Writer(e.to_string()))??;
    }
    Ok(Figures {
        commands: commands as u64,
        elapsed: started.elapsed(),
        retries,
    })
}

/// Runs both workloads on `url` (which must hold no bugs).
pub async fn ledger(
    url: &DatabaseUrl,
    writers: usize,
    commands: usize,
) -> Result<LedgerBench, BenchError> {
    let store = Store::connect(url).await?;
    store.migrate().await?;
    let existing = store.bug_ids().await?.len();
    if existing > 0 {
        return Err(BenchError::NotEmpty(existing));
    }
    let per_bug = per_bug(&store, writers, commands).await?;
    let one_document = one_document(&store, writers, commands).await?;
    Ok(LedgerBench {
        storage: store.backend().as_str(),
        writers,
        commands,
        per_bug,
        one_document,
    })
}

impl std::fmt::Display for LedgerBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let line = |f: &mut std::fmt::Formatter<'_>, name: &str, figures: &Figures| {
            writeln!(
                f,
                "  {name:<34} {:>9.0} commands/s  ({} commands in {:.2} s, {} lost races retried)",
                figures.rate(),
                figures.commands,
                figures.elapsed.as_secs_f64(),
                figures.retries
            )
        };
        writeln!(
            f,
            "ledger benchmark · {} · {} writers × {} commands (each writer on its own bug)",
            self.storage, self.writers, self.commands
        )?;
        line(f, "per-bug rows (this design)", &self.per_bug)?;
        line(f, "one JSON document (seed design)", &self.one_document)?;
        writeln!(
            f,
            "  {:<34} {:>9.1}×",
            "ratio",
            self.per_bug.rate() / self.one_document.rate().max(1e-9)
        )
    }
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Ledger commands/s with concurrent writers on distinct bugs, against the seed design
    /// (one JSON document per workspace, compare-and-swap), on the same database.
    Ledger {
        /// Concurrent writers.
        #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=1024))]
        writers: u16,
        /// Commands per writer.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=10_000))]
        commands: u16,
        /// A scratch database holding no bugs (default: a temporary SQLite file).
        #[arg(long, value_name = "URL")]
        database_url: Option<String>,
    },
    /// Reports/s filed over HTTP (airlock, clustering, ledger commit) against bare
    /// single-transaction inserts into the same kind of database.
    Intake {
        /// Reports to file.
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        reports: u32,
        /// Concurrent clients.
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
        clients: u16,
        /// Scratch database for the HTTP run (default: a temporary SQLite file).
        #[arg(long, value_name = "URL")]
        database_url: Option<String>,
        /// A second scratch database for the baseline (default: a temporary SQLite file).
        #[arg(long, value_name = "URL")]
        raw_database_url: Option<String>,
        /// Open bugs to file first, untimed (a backlog whose titles share the timed reports'
        /// words): intake's cost should not grow with it.
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100_000))]
        open_bugs: u32,
    },
    /// The owners' desk as the backlog grows: `GET /desk` latency and size with this many
    /// bugs, and the server's CPU while live pages are open and nothing changes.
    Desk {
        /// Bugs to file first (untimed).
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        bugs: u32,
        /// Dashboard loads to time.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=10_000))]
        loads: u16,
        /// Live pages to hold open while nothing changes.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=1000))]
        streams: u16,
        /// Seconds each idle window lasts.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=600))]
        window: u16,
        /// A scratch database holding no bugs (default: a temporary SQLite file).
        #[arg(long, value_name = "URL")]
        database_url: Option<String>,
    },
    /// Airlock MB/s against a bare RegexSet pass over the same shared corpus.
    Airlock {
        #[command(flatten)]
        data: SharedData,
        /// Passes over the corpus.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=1000))]
        passes: u16,
    },
    /// Sandbox jobs per second through the desk's queue with N `r2r sandbox worker`
    /// processes (a desk in this process with R2R_SANDBOX_RUNNER=workers).
    Workers {
        /// Worker processes.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
        workers: u16,
        /// Jobs to time.
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        jobs: u32,
        /// The workers' sandbox.
        #[arg(long, default_value = "bwrap")]
        backend: sandbox::Backend,
        /// A scratch database (default: a temporary SQLite file).
        #[arg(long, value_name = "URL")]
        database_url: Option<String>,
    },
    /// How soon an idle crew worker, waiting at the desk (long polling), has a task the
    /// manager sends: through one server on SQLite, across two servers on PostgreSQL.
    Pickup {
        /// Tasks to time.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        tasks: u32,
        /// A scratch database (default: a temporary SQLite file).
        #[arg(long, value_name = "URL")]
        database_url: Option<String>,
    },
    /// ShopLite's reproduction (cargo test of the coupon regression) timed bare on the host
    /// and in each sandbox backend; prints the median and spread of each.
    Sandbox {
        /// Runs per runner.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=100))]
        runs: u16,
        /// The ShopLite crate folder.
        #[arg(long, default_value = "shoplite", value_name = "DIR")]
        shoplite: PathBuf,
    },
}

async fn bench_ledger(
    writers: u16,
    commands: u16,
    database_url: Option<String>,
) -> anyhow::Result<ExitCode> {
    let scratch = tempfile::tempdir()?;
    let url = match database_url {
        Some(text) => store::DatabaseUrl::parse(&text)
            .map_err(|e| anyhow::anyhow!("--database-url is invalid: {e}"))?,
        None => store::DatabaseUrl::Sqlite {
            path: scratch.path().join("bench.db").display().to_string(),
        },
    };
    let figures =
        crate::cli::bench::ledger(&url, usize::from(writers), usize::from(commands)).await?;
    print!("{figures}");
    Ok(ExitCode::SUCCESS)
}

fn scratch_url(
    given: Option<String>,
    scratch: &tempfile::TempDir,
    file: &str,
    flag: &str,
) -> anyhow::Result<store::DatabaseUrl> {
    match given {
        Some(text) => {
            store::DatabaseUrl::parse(&text).map_err(|e| anyhow::anyhow!("{flag} is invalid: {e}"))
        }
        None => Ok(store::DatabaseUrl::Sqlite {
            path: scratch.path().join(file).display().to_string(),
        }),
    }
}

/// Runs `r2r bench …`.
pub async fn command(env_file: &Path, command: BenchCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Ledger {
            writers,
            commands,
            database_url,
        } => bench_ledger(writers, commands, database_url).await,
        BenchCommand::Intake {
            reports,
            clients,
            database_url,
            raw_database_url,
            open_bugs,
        } => {
            let scratch = tempfile::tempdir()?;
            let http = scratch_url(database_url, &scratch, "intake.db", "--database-url")?;
            let raw = scratch_url(raw_database_url, &scratch, "raw.db", "--raw-database-url")?;
            let figures = crate::cli::bench_reporter::intake(
                &http,
                &raw,
                reports as usize,
                usize::from(clients),
                open_bugs as usize,
            )
            .await?;
            print!("{figures}");
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Desk {
            bugs,
            loads,
            streams,
            window,
            database_url,
        } => {
            let scratch = tempfile::tempdir()?;
            let url = scratch_url(database_url, &scratch, "desk.db", "--database-url")?;
            let figures = crate::cli::bench_desk::desk(
                &url,
                bugs as usize,
                usize::from(loads),
                usize::from(streams),
                std::time::Duration::from_secs(u64::from(window)),
            )
            .await?;
            print!("{figures}");
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Airlock { data, passes } => {
            let figures = crate::cli::bench_reporter::airlock(&data.data, usize::from(passes))?;
            print!("{figures}");
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Workers {
            workers,
            jobs,
            backend,
            database_url,
        } => {
            let scratch = tempfile::tempdir()?;
            let url = scratch_url(database_url, &scratch, "workers.db", "--database-url")?;
            let figures = crate::cli::bench_workers::workers(
                &url,
                usize::from(workers),
                jobs as usize,
                backend,
            )
            .await?;
            println!(
                "sandbox jobs through the queue ({}, {} sandbox): {} worker(s), {} jobs in {:.2} s = {:.1} jobs/s; queue to outcome p50 {} ms; per worker: {}",
                figures.storage,
                backend,
                figures.workers,
                figures.jobs,
                figures.elapsed.as_secs_f64(),
                figures.jobs as f64 / figures.elapsed.as_secs_f64().max(1e-9),
                figures.p50.as_millis(),
                figures
                    .per_worker
                    .iter()
                    .map(|(name, done)| format!("{name} {done}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Pickup {
            tasks,
            database_url,
        } => {
            let scratch = tempfile::tempdir()?;
            let url = scratch_url(database_url, &scratch, "pickup.db", "--database-url")?;
            let figures = crate::cli::bench_pickup::pickup(&url, tasks as usize).await?;
            let at = |q: f64| {
                let index = ((figures.times.len() as f64 - 1.0) * q).round() as usize;
                figures
                    .times
                    .get(index)
                    .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
            };
            println!(
                "task pick-up by an idle worker ({}, {} server(s)): {} tasks; p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
                figures.storage,
                figures.servers,
                figures.times.len(),
                at(0.5),
                at(0.95),
                at(1.0)
            );
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Sandbox { runs, shoplite } => {
            let env = Environment::load(env_file)?;
            let image = env.sandbox_image();
            println!("ShopLite coupon reproduction (cargo test --test coupon_save300), {runs} runs each, first run not counted:");
            for backend in crate::cli::demo::Place::ALL {
                let runner = match crate::cli::demo::Runner::connect(backend, &image).await {
                    Ok(runner) => runner,
                    Err(error) => {
                        println!("  {backend:<7} unavailable: {error}");
                        continue;
                    }
                };
                let mut times = Vec::new();
                for run in 0..=runs {
                    let started = std::time::Instant::now();
                    let result = crate::cli::demo::reproduce(
                        &shoplite,
                        false,
                        Duration::from_secs(300),
                        &runner,
                    )
                    .await
                    .context("the reproduction could not run")?;
                    if !matches!(result.verdict, ::sandbox::Verdict::Reproduced { .. }) {
                        anyhow::bail!(
                            "{backend}: expected a reproduction, got {:?}",
                            result.verdict
                        );
                    }
                    if run > 0 {
                        times.push(started.elapsed().as_millis());
                    }
                }
                times.sort_unstable();
                println!(
                    "  {backend:<7} median {:>6} ms   min {:>6} ms   max {:>6} ms",
                    times[times.len() / 2],
                    times[0],
                    times[times.len() - 1]
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
