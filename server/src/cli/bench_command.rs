//! `r2r bench …` on the command line: its subcommands and how each runs (the benchmarks
//! themselves are in [`super::bench`] and the other `bench_*` modules).

use super::SharedData;
use crate::config::Environment;
use anyhow::Context;
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

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
