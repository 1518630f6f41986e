//! The `r2r` command line. Every subcommand has `--help`.

use crate::config::{Config, Environment};
use anyhow::Context;
use clap::{Parser, Subcommand};
use sandbox::Verdict;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Reporter-to-Release: a bug desk where the reporter has the last word.
#[derive(Parser, Debug)]
#[command(name = "r2r", version, about, long_about = None)]
struct Cli {
    /// File with KEY=VALUE settings read before the environment (the environment wins).
    #[arg(long, global = true, default_value = ".env.local", value_name = "FILE")]
    env_file: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write .env.local with fresh secrets (role tokens, webhook secret, session key, first
    /// owner). Never overwrites a secret that exists; says what it kept.
    Setup {
        /// Email of the first owner account.
        #[arg(long, default_value = "owner@localhost", value_name = "EMAIL")]
        owner_email: String,
    },
    /// Run the desk: apply migrations, then serve the site and the API.
    Serve {
        /// Address to listen on (overrides R2R_ADDR; default 127.0.0.1:3000). Port 0 picks a
        /// free port; the chosen address is printed.
        #[arg(long, value_name = "HOST:PORT")]
        addr: Option<String>,
    },
    /// Apply database migrations and exit.
    Migrate,
    /// The ShopLite demo target.
    Demo {
        #[command(subcommand)]
        command: DemoCommand,
    },
    /// The audit ledger.
    Ledger {
        #[command(subcommand)]
        command: LedgerCommand,
    },
    /// The airlock that every report passes before anything else reads it.
    Airlock {
        #[command(subcommand)]
        command: AirlockCommand,
    },
    /// Duplicate clustering.
    Cluster {
        #[command(subcommand)]
        command: ClusterCommand,
    },
    /// Benchmarks that print figures (never run as tests).
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// The recorder: prove an exact commit is live, then record it.
    Recorder {
        #[command(subcommand)]
        command: RecorderCommand,
    },
    /// The roles' bearer tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// The engineering crew, talking to the desk only over its HTTP API with role tokens.
    Crew {
        #[command(subcommand)]
        command: CrewCommand,
    },
    /// The concierge: notifications to reporters (tracking page, email) and owners (webhook).
    Concierge {
        #[command(subcommand)]
        command: crate::concierge::ConciergeCommand,
    },
    /// The sandbox the crew's code runs in.
    Sandbox {
        #[command(subcommand)]
        command: crate::sandbox_cli::SandboxCommand,
    },
    /// Reports the airlock set aside (metadata only: their text was never kept).
    Quarantine {
        #[command(subcommand)]
        command: QuarantineCommand,
    },
}

#[derive(Subcommand, Debug)]
enum RecorderCommand {
    /// Check that both URLs serve exactly SHA (and are the same deployment), check again,
    /// then record the deployment with the desk (R2R_RECORDER_TOKEN). Exits 1 with the reason
    /// on any failure, recording nothing.
    Verify {
        /// The commit that must be live (40 or 64 hex characters).
        #[arg(long)]
        sha: String,
        /// The deployment's immutable URL.
        #[arg(long, value_name = "URL")]
        url: String,
        /// The public URL that must resolve to the same deployment.
        #[arg(long, value_name = "URL")]
        public_url: String,
        /// The service name the health answers must carry.
        #[arg(long, default_value = app::dto::SERVICE_NAME)]
        project: String,
        /// The desk that records it.
        #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:3000")]
        desk: String,
        /// The deployment id to record with the desk (default: verify-<first 12 of the sha>).
        #[arg(long)]
        deployment: Option<String>,
        /// Where to record it: `desk` (local forge: the desk's API with R2R_RECORDER_TOKEN) or
        /// `github` (a `verify:production` deployment and success status through
        /// R2R_GITHUB_API_URL with R2R_GITHUB_TOKEN; the signed webhook moves the ledger).
        #[arg(long, default_value = "desk", value_parser = ["desk", "github"])]
        record_with: String,
        /// The GitHub repository (`owner/name`), with `--record-with github`.
        #[arg(long)]
        repository: Option<String>,
        /// The GitHub environment (default: R2R_PRODUCTION_ENVIRONMENT or `production`).
        #[arg(long)]
        environment: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
enum CrewCommand {
    /// The reproducer, once: read the bug's clean dossiers, ask the configured model
    /// (R2R_MODEL_PROVIDER) for one failing test with spend reserved first, and propose it;
    /// the desk re-runs it in its own sandbox and records it only if it fails on an
    /// assertion. Uses R2R_REPRODUCER_TOKEN. Exits 1 with the reason otherwise.
    Reproduce {
        /// The bug.
        #[arg(long)]
        bug: String,
        /// The desk.
        #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:3000")]
        desk: String,
    },
    /// The fixer, for a bug whose reproduction a reporter confirmed: starts the fix, asks the
    /// configured model for whole files (spend reserved first) and submits them; the desk runs
    /// the suite, formatter and linter in its sandbox and opens the draft pull request, or
    /// counts a failed attempt (two, then a person). Uses R2R_FIXER_TOKEN. Exits 1 unless a
    /// draft pull request was opened.
    Fix {
        /// The bug.
        #[arg(long)]
        bug: String,
        /// The desk.
        #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:3000")]
        desk: String,
    },
    /// The whole crew as a service until Ctrl-C: manager, reproducer, fixer and reviewer,
    /// each with its own token (R2R_MANAGER_TOKEN, …), heartbeats every 20 s, hand-offs as
    /// tasks recorded by the desk. `r2r serve` runs the same crew in-process when
    /// R2R_MODEL_PROVIDER is set.
    Run {
        /// The desk.
        #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:3000")]
        desk: String,
        /// How often the roles look for work, in milliseconds.
        #[arg(long, default_value_t = 2_000, value_name = "MS")]
        poll_ms: u64,
    },
}

/// A crew role's desk client and the configured model, from the env file.
fn crew_role(
    env_file: &std::path::Path,
    desk: &str,
    token_variable: &str,
) -> anyhow::Result<(
    crew::desk::Desk,
    Box<dyn crew::ModelProvider>,
    crew::reproducer::TokenPrices,
)> {
    if !(desk.starts_with("http://") || desk.starts_with("https://")) {
        anyhow::bail!("--desk is invalid: expected an http(s) URL, got {desk:?}");
    }
    let env = Environment::load(env_file)?;
    let Some(token) = env.get(token_variable).map(str::to_owned) else {
        anyhow::bail!("{token_variable} is not set (r2r setup writes it to .env.local)");
    };
    let (model, prices) = crew::config::provider_from(|name| env.get(name).map(str::to_owned))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((crew::desk::Desk::new(desk, &token)?, model, prices))
}

#[derive(Subcommand, Debug)]
enum TokenCommand {
    /// Replace a role's token: the old one stops working at once (running servers check the
    /// database), the new one is written to the env file and printed once.
    Rotate {
        /// concierge, manager, reproducer, fixer, reviewer or recorder.
        #[arg(long, value_parser = parse_role)]
        role: domain::Role,
    },
}

fn parse_role(text: &str) -> Result<domain::Role, String> {
    domain::Role::ALL
        .into_iter()
        .find(|r| r.as_str() == text.trim())
        .ok_or_else(|| {
            format!(
                "unknown role {text:?}; one of: {}",
                domain::Role::ALL.map(|r| r.as_str()).join(", ")
            )
        })
}

#[derive(Subcommand, Debug)]
enum QuarantineCommand {
    /// The newest quarantined reports: id, time, component, families hit, contact.
    List {
        /// How many.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
    },
    /// Send the reporter a message; it appears on their tracking page.
    Message {
        /// The report id.
        #[arg(long)]
        report: String,
        /// The owner writing (an email address).
        #[arg(long, value_name = "EMAIL")]
        from: String,
        /// The message.
        #[arg(long)]
        text: String,
    },
}

#[derive(Subcommand, Debug)]
enum LedgerCommand {
    /// Recompute every bug's hash chain (DATABASE_URL). Exits 0 when intact; otherwise 1,
    /// naming the first broken event.
    Verify,
}

#[derive(Subcommand, Debug)]
enum AirlockCommand {
    /// Read JSON lines {"title", "body", "component"} on stdin; write one JSON line per input:
    /// {"quarantined", "families", "dossier"}. Same code path as intake.
    Scan,
    /// Measure detection on every attack set under the shared data (each payload wrapped six
    /// ways in a bug report) and false positives on every benign set, with the shipped
    /// classifier and with one retrained without each source.
    Eval {
        #[command(flatten)]
        data: SharedData,
        /// Exit 1 when any attack source's detection rate (percent) is below this.
        #[arg(long, value_name = "PERCENT", value_parser = percent)]
        require_detection: Option<f64>,
        /// Exit 1 when any benign source's false-positive rate (percent) is above this.
        #[arg(long, value_name = "PERCENT", value_parser = percent)]
        allow_false_positives: Option<f64>,
    },
    /// Train the classifier from every source under the shared data and write its weights
    /// (the file shipped as domain/src/airlock/model.bin).
    Train {
        #[command(flatten)]
        data: SharedData,
        /// Where to write the model.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
}

/// The sandbox backend `R2R_SANDBOX_BACKEND` names (unset: none named here).
fn configured(env: &Environment) -> anyhow::Result<Option<sandbox::Backend>> {
    env.get("R2R_SANDBOX_BACKEND")
        .map(|text| {
            text.parse::<sandbox::Backend>()
                .map_err(|e| anyhow::anyhow!("R2R_SANDBOX_BACKEND: {e}"))
        })
        .transpose()
}

/// The shared test-data folder, for the commands that measure on it.
#[derive(clap::Args, Debug)]
struct SharedData {
    /// The shared test-data folder.
    #[arg(
        long,
        env = "R2R_SHARED_DATA",
        default_value = "../shared/data",
        value_name = "DIR"
    )]
    data: PathBuf,
}

/// A percentage between 0 and 100.
fn percent(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if (0.0..=100.0).contains(&value) => Ok(value),
        _ => Err(format!(
            "expected a percentage between 0 and 100, got {text:?}"
        )),
    }
}

#[derive(Subcommand, Debug)]
enum ClusterCommand {
    /// Precision and recall of the join rule on the shared duplicate pairs.
    Eval {
        #[command(flatten)]
        data: SharedData,
    },
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
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
    },
    /// Airlock MB/s against a bare RegexSet pass over the same shared corpus.
    Airlock {
        #[command(flatten)]
        data: SharedData,
        /// Passes over the corpus.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=1000))]
        passes: u16,
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

#[derive(Subcommand, Debug)]
enum DemoCommand {
    /// Run ShopLite's coupon regression test. Exits 1 when the test fails on its assertion
    /// (the bug is reproduced), 0 when it passes, 2 when the run proves nothing.
    Reproduce {
        /// Run against a scratch copy with the fix applied.
        #[arg(long)]
        fixed: bool,
        /// The ShopLite crate folder.
        #[arg(long, default_value = "shoplite", value_name = "DIR")]
        shoplite: PathBuf,
        /// Wall-clock limit for the test run, in seconds.
        #[arg(long, default_value_t = 300, value_name = "SECS")]
        timeout: u64,
        /// Where the test runs: `docker` or `bwrap` (the sandbox), or `host` (trusted code,
        /// no isolation; labelled so). Default: R2R_SANDBOX_BACKEND, else docker.
        #[arg(long)]
        sandbox: Option<crate::demo::Place>,
    },
    /// The whole loop on ShopLite in one process, as a controlled acceptance run: a fresh
    /// SQLite desk, a local forge, the sandbox, the crew's roles with the scripted model, an
    /// owner's approval and merge, the recorder, the reporter's last word. Prints a timeline
    /// with each step's duration; exits 0 only if every step held.
    Run {
        /// The sandbox: `docker` or `bwrap`. Default: R2R_SANDBOX_BACKEND, else docker.
        #[arg(long)]
        sandbox: Option<sandbox::Backend>,
        /// The ShopLite crate folder.
        #[arg(long, default_value = "shoplite", value_name = "DIR")]
        shoplite: PathBuf,
    },
    /// Move a ShopLite bug through the crew's and people's steps (measured reproduction,
    /// scripted fix, review, merge and deployment) so its reporters get their questions.
    Drive {
        /// The bug id (shown to the reporter after filing).
        #[arg(long)]
        bug: String,
        /// `question`: propose the measured failing test; `release`: fix, merge and deploy.
        #[arg(long, value_enum)]
        to: crate::demo_drive::Stage,
        /// The ShopLite crate folder.
        #[arg(long, default_value = "shoplite", value_name = "DIR")]
        shoplite: PathBuf,
    },
}

/// Parses arguments and runs the chosen command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(70);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Setup { owner_email } => {
            let code = setup(&cli.env_file, &owner_email)?;
            setup_demo_forge(&cli.env_file).await?;
            Ok(code)
        }
        Command::Serve { addr } => {
            let config = load_config(&cli.env_file, addr.as_deref())?;
            crate::serve::serve(config).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate => {
            let config = load_config(&cli.env_file, None)?;
            let store = store::Store::connect(&config.database_url).await?;
            store.migrate().await?;
            let version = store.schema_version().await?.unwrap_or_default();
            println!(
                "migrations applied: {} schema at version {version}",
                store.backend().as_str()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo {
            command:
                DemoCommand::Reproduce {
                    fixed,
                    shoplite,
                    timeout,
                    sandbox,
                },
        } => {
            let env = Environment::load(&cli.env_file)?;
            let place = match sandbox {
                Some(place) => place,
                None => configured(&env)?.map_or(
                    crate::demo::Place::Sandbox(sandbox::Backend::Docker),
                    crate::demo::Place::Sandbox,
                ),
            };
            let image = env
                .get("R2R_SANDBOX_IMAGE")
                .unwrap_or(sandbox::docker::DEFAULT_IMAGE)
                .to_owned();
            let runner = crate::demo::Runner::connect(place, &image)
                .await
                .context("the sandbox is not available (./scripts/sandbox-host.sh prepares this host, or pass --sandbox host)")?;
            demo_reproduce(&shoplite, fixed, timeout, &runner).await
        }
        Command::Demo {
            command: DemoCommand::Run { sandbox, shoplite },
        } => {
            let env = Environment::load(&cli.env_file)?;
            if !shoplite.join("src/lib.rs").is_file() {
                anyhow::bail!(
                    "--shoplite {}: no ShopLite crate there (run from the repository root or pass --shoplite DIR)",
                    shoplite.display()
                );
            }
            let options = crate::demo_run::RunOptions {
                sandbox: match sandbox {
                    Some(backend) => backend,
                    None => configured(&env)?.unwrap_or(sandbox::Backend::Docker),
                },
                image: env
                    .get("R2R_SANDBOX_IMAGE")
                    .unwrap_or(sandbox::docker::DEFAULT_IMAGE)
                    .to_owned(),
                shoplite,
                leptos_toml: env
                    .get("R2R_LEPTOS_TOML")
                    .unwrap_or("Leptos.toml")
                    .to_owned(),
            };
            let timeline = crate::demo_run::run(&options).await;
            print!("{}", timeline.render(options.sandbox.as_str()));
            Ok(if timeline.held() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Demo {
            command: DemoCommand::Drive { bug, to, shoplite },
        } => {
            let config = load_config(&cli.env_file, None)?;
            let store = store::Store::connect(&config.database_url).await?;
            store.migrate().await?;
            crate::demo_drive::drive(
                &store,
                &bug,
                to,
                &shoplite,
                &config.policy,
                (config.sandbox_backend, &config.sandbox_image),
            )
            .await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Ledger {
            command: LedgerCommand::Verify,
        } => ledger_verify(&cli.env_file).await,
        Command::Airlock {
            command: AirlockCommand::Scan,
        } => {
            let stdin = std::io::stdin();
            let errors = crate::airlock_cli::scan(stdin.lock(), std::io::stdout().lock())?;
            if errors > 0 {
                eprintln!("error: {errors} input line(s) were not valid report objects");
                return Ok(ExitCode::from(1));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Airlock {
            command:
                AirlockCommand::Eval {
                    data,
                    require_detection,
                    allow_false_positives,
                },
        } => {
            let accuracy = crate::airlock_cli::evaluate(&data.data)?;
            print!("{accuracy}");
            let detection_ok =
                require_detection.is_none_or(|floor| accuracy.worst_detection() >= floor);
            let fp_ok = allow_false_positives
                .is_none_or(|ceiling| accuracy.worst_false_positives() <= ceiling);
            if detection_ok && fp_ok && accuracy.carrier_admitted && accuracy.shipped_reproduced {
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("error: the airlock missed its accuracy goals");
                Ok(ExitCode::from(1))
            }
        }
        Command::Airlock {
            command: AirlockCommand::Train { data, out },
        } => {
            let model = crate::airlock_cli::train_shipped(&data.data)?;
            let bytes = model.to_bytes();
            std::fs::write(&out, &bytes)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
            println!(
                "wrote {} ({} bytes, 2^{} buckets, threshold {:.4})",
                out.display(),
                bytes.len(),
                model.bits,
                model.threshold
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Cluster {
            command: ClusterCommand::Eval { data },
        } => {
            let figures = crate::cluster_cli::evaluate(&data.data)?;
            print!("{}", crate::cluster_cli::render(&figures));
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench {
            command:
                BenchCommand::Ledger {
                    writers,
                    commands,
                    database_url,
                },
        } => bench_ledger(writers, commands, database_url).await,
        Command::Bench {
            command:
                BenchCommand::Intake {
                    reports,
                    clients,
                    database_url,
                    raw_database_url,
                },
        } => {
            let scratch = tempfile::tempdir()?;
            let http = scratch_url(database_url, &scratch, "intake.db", "--database-url")?;
            let raw = scratch_url(raw_database_url, &scratch, "raw.db", "--raw-database-url")?;
            let figures =
                crate::bench_reporter::intake(&http, &raw, reports as usize, usize::from(clients))
                    .await?;
            print!("{figures}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Quarantine { command } => quarantine(&cli.env_file, command).await,
        Command::Crew {
            command: CrewCommand::Reproduce { bug, desk },
        } => {
            let (client, model, prices) = crew_role(&cli.env_file, &desk, "R2R_REPRODUCER_TOKEN")?;
            let hint = "The target is a Rust crate: put the test under tests/ as an integration test using the crate's public API.";
            match crew::reproducer::reproduce_once(&client, model.as_ref(), &prices, &bug, hint)
                .await
            {
                Ok(answer) => {
                    println!("{answer}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(error) => {
                    eprintln!("NOT PROPOSED: {error}");
                    Ok(ExitCode::from(1))
                }
            }
        }
        Command::Crew {
            command: CrewCommand::Run { desk, poll_ms },
        } => {
            if !(desk.starts_with("http://") || desk.starts_with("https://")) {
                anyhow::bail!("--desk is invalid: expected an http(s) URL, got {desk:?}");
            }
            if !(100..=600_000).contains(&poll_ms) {
                anyhow::bail!("--poll-ms is invalid: 100 to 600000, got {poll_ms}");
            }
            let env = Environment::load(&cli.env_file)?;
            let mut tokens = Vec::new();
            for role in domain::crew::CREW_ROLES {
                let Some(token) = env.get(role.token_variable()) else {
                    anyhow::bail!(
                        "{} is not set (r2r setup writes it to .env.local)",
                        role.token_variable()
                    );
                };
                tokens.push(token.to_owned());
            }
            let (model, prices) =
                crew::config::provider_from(|name| env.get(name).map(str::to_owned))
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
            let profile = env
                .get("R2R_TARGET_PROFILE")
                .and_then(sandbox::Profile::parse)
                .unwrap_or(sandbox::Profile::Rust);
            let settings = crew::service::CrewSettings {
                desk,
                manager: tokens[0].clone(),
                reproducer: tokens[1].clone(),
                fixer: tokens[2].clone(),
                reviewer: tokens[3].clone(),
                poll: std::time::Duration::from_millis(poll_ms),
                project_hint: crate::serve::project_hint(profile).to_owned(),
            };
            let crew = crew::service::spawn(settings, model.into(), prices)?;
            println!("crew running: manager, reproducer, fixer, reviewer (Ctrl-C stops it)");
            let _ = tokio::signal::ctrl_c().await;
            crew.stop();
            Ok(ExitCode::SUCCESS)
        }
        Command::Crew {
            command: CrewCommand::Fix { bug, desk },
        } => {
            let (client, model, prices) = crew_role(&cli.env_file, &desk, "R2R_FIXER_TOKEN")?;
            match crew::fixer::fix(&client, model.as_ref(), &prices, &bug).await {
                Ok(crew::fixer::FixOutcome::Drafted(answer)) => {
                    println!("{answer}");
                    Ok(ExitCode::SUCCESS)
                }
                Ok(crew::fixer::FixOutcome::Exhausted(answer)) => {
                    eprintln!("NO FIX: {}", answer["message"].as_str().unwrap_or_default());
                    Ok(ExitCode::from(1))
                }
                Err(error) => {
                    eprintln!("NO FIX: {error}");
                    Ok(ExitCode::from(1))
                }
            }
        }
        Command::Concierge { command } => crate::concierge::cli(&cli.env_file, command).await,
        Command::Sandbox { command } => {
            let env = Environment::load(&cli.env_file)?;
            let image = env
                .get("R2R_SANDBOX_IMAGE")
                .unwrap_or(sandbox::docker::DEFAULT_IMAGE)
                .to_owned();
            crate::sandbox_cli::run(command, &image).await
        }
        Command::Recorder {
            command:
                RecorderCommand::Verify {
                    sha,
                    url,
                    public_url,
                    project,
                    desk,
                    deployment,
                    record_with,
                    repository,
                    environment,
                },
        } => {
            let sha = domain::workflow::CommitSha::parse(&sha)
                .map_err(|e| anyhow::anyhow!("--sha is invalid: {e}"))?;
            for (flag, value) in [
                ("--url", &url),
                ("--public-url", &public_url),
                ("--desk", &desk),
            ] {
                if !(value.starts_with("http://") || value.starts_with("https://")) {
                    anyhow::bail!("{flag} is invalid: expected an http(s) URL, got {value:?}");
                }
            }
            let env = Environment::load(&cli.env_file)?;
            let expected = crate::recorder::Expected {
                sha,
                service: project,
            };
            let deployment =
                deployment.unwrap_or_else(|| format!("verify-{}", &expected.sha.as_str()[..12]));
            let github;
            let environment = environment
                .or_else(|| env.get("R2R_PRODUCTION_ENVIRONMENT").map(str::to_owned))
                .unwrap_or_else(|| "production".to_owned());
            let token;
            let publish = if record_with == "github" {
                let Some(repository) = repository.filter(|r| {
                    let mut parts = r.split('/');
                    matches!((parts.next(), parts.next(), parts.next()), (Some(o), Some(n), None) if !o.is_empty() && !n.is_empty())
                }) else {
                    anyhow::bail!("--repository is required with --record-with github, as owner/name");
                };
                let Some(github_token) = env.get("R2R_GITHUB_TOKEN") else {
                    anyhow::bail!("R2R_GITHUB_TOKEN is not set: the recorder needs a token allowed to create deployments");
                };
                let api_url = env
                    .get("R2R_GITHUB_API_URL")
                    .unwrap_or("https://api.github.com")
                    .trim()
                    .to_owned();
                if !(api_url.starts_with("https://") || api_url.starts_with("http://")) {
                    anyhow::bail!(
                        "R2R_GITHUB_API_URL is invalid: expected an http(s) URL, got {api_url:?}"
                    );
                }
                let config = crate::config::GitHubConfig {
                    webhook_secret: None,
                    repositories: vec![repository.clone()],
                    api_url,
                    token: Some(crate::secret::Secret::new(github_token.trim())),
                    production_environment: environment.clone(),
                };
                github = config.forge(&repository);
                crate::recorder::Publish::Forge {
                    forge: &github,
                    environment: &environment,
                }
            } else {
                let Some(recorder_token) = env.get("R2R_RECORDER_TOKEN").map(str::to_owned) else {
                    anyhow::bail!(
                        "R2R_RECORDER_TOKEN is not set (r2r setup writes it to .env.local)"
                    );
                };
                token = recorder_token;
                crate::recorder::Publish::Desk {
                    url: &desk,
                    token: &token,
                    deployment: &deployment,
                }
            };
            match crate::recorder::verify_and_record(&url, &public_url, &expected, publish).await {
                Ok(id) => {
                    println!("verified: {} serves {} at {url} and {public_url}; recorded as deployment {id}", expected.service, expected.sha);
                    Ok(ExitCode::SUCCESS)
                }
                Err(error) => {
                    eprintln!("NOT VERIFIED: {error}. Nothing was recorded.");
                    Ok(ExitCode::from(1))
                }
            }
        }
        Command::Token {
            command: TokenCommand::Rotate { role },
        } => {
            let config = load_config(&cli.env_file, None)?;
            let store = store::Store::connect(&config.database_url).await?;
            store.migrate().await?;
            let token = crate::setup::new_role_token(role);
            store
                .set_role_token_hash(
                    role.as_str(),
                    &crate::auth::hash_secret(&token),
                    crate::clock::now_ms(),
                    false,
                )
                .await?;
            crate::setup::set_variable(&cli.env_file, role.token_variable(), &token)?;
            println!("{}={token}", role.token_variable());
            println!(
                "The {role} token was replaced: the old one no longer works. The new one is in {} and shown here once.",
                cli.env_file.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench {
            command: BenchCommand::Airlock { data, passes },
        } => {
            let figures = crate::bench_reporter::airlock(&data.data, usize::from(passes))?;
            print!("{figures}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench {
            command: BenchCommand::Sandbox { runs, shoplite },
        } => {
            let env = Environment::load(&cli.env_file)?;
            let image = env
                .get("R2R_SANDBOX_IMAGE")
                .unwrap_or(sandbox::docker::DEFAULT_IMAGE)
                .to_owned();
            println!("ShopLite coupon reproduction (cargo test --test coupon_save300), {runs} runs each, first run not counted:");
            for backend in crate::demo::Place::ALL {
                let runner = match crate::demo::Runner::connect(backend, &image).await {
                    Ok(runner) => runner,
                    Err(error) => {
                        println!("  {backend:<7} unavailable: {error}");
                        continue;
                    }
                };
                let mut times = Vec::new();
                for run in 0..=runs {
                    let started = std::time::Instant::now();
                    let result =
                        crate::demo::reproduce(&shoplite, false, Duration::from_secs(300), &runner)
                            .await
                            .context("the reproduction could not run")?;
                    if !matches!(result.verdict, Verdict::Reproduced { .. }) {
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

async fn ledger_verify(env_file: &std::path::Path) -> anyhow::Result<ExitCode> {
    let config = load_config(env_file, None)?;
    let store = store::Store::connect(&config.database_url).await?;
    store.migrate().await?;
    match store.verify_ledger().await? {
        Ok(summary) => {
            println!(
                "ledger intact: {} bugs, {} events, {} owner events, every hash chain recomputed",
                summary.bugs, summary.events, summary.owner_events
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(broken) => {
            println!("LEDGER BROKEN: {broken}");
            Ok(ExitCode::from(1))
        }
    }
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
    let figures = crate::bench::ledger(&url, usize::from(writers), usize::from(commands)).await?;
    print!("{figures}");
    Ok(ExitCode::SUCCESS)
}

async fn quarantine(
    env_file: &std::path::Path,
    command: QuarantineCommand,
) -> anyhow::Result<ExitCode> {
    let config = load_config(env_file, None)?;
    let store = store::Store::connect(&config.database_url).await?;
    store.migrate().await?;
    match command {
        QuarantineCommand::List { limit } => {
            let queue = store.quarantine_queue(limit).await?;
            if queue.is_empty() {
                println!("no quarantined reports");
            }
            for report in queue {
                println!(
                    "{}  {}  {:<10}  families: {:<40}  contact: {}",
                    report.id,
                    app::net::format_time(report.created_at),
                    report.component,
                    report.families.join(","),
                    report.contact.as_deref().unwrap_or("-")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        QuarantineCommand::Message { report, from, text } => {
            if !crate::config::looks_like_email(&from) {
                anyhow::bail!("--from is invalid: expected an email address, got {from:?}");
            }
            let text = text.trim();
            if text.is_empty() || text.chars().count() > 4000 {
                anyhow::bail!("--text is invalid: write 1 to 4000 characters");
            }
            match store
                .add_report_message(&report, &from, text, crate::clock::now_ms())
                .await?
            {
                Some(seq) => {
                    println!("message {seq} recorded for report {report}; it shows on the reporter's tracking page");
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    eprintln!("error: no report {report}");
                    Ok(ExitCode::from(1))
                }
            }
        }
    }
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

fn load_config(env_file: &std::path::Path, addr: Option<&str>) -> anyhow::Result<Config> {
    let env = Environment::load(env_file)?;
    Ok(Config::from_env(&env, addr)?)
}

fn setup(env_file: &std::path::Path, owner_email: &str) -> anyhow::Result<ExitCode> {
    let report = crate::setup::run(env_file, owner_email)?;
    let path = env_file.display();
    for name in &report.generated {
        println!("generated {name}");
    }
    for name in &report.kept {
        println!("kept      {name} (already set in {path})");
    }
    match &report.owner_password {
        Some(password) => {
            println!();
            println!("First owner account: {owner_email}");
            println!("One-time password:   {password}");
            println!("This password is shown once and is not stored anywhere; only its hash is in {path}.");
        }
        None => println!(
            "\nThe first owner's password was printed when it was generated; it is not shown again."
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// The demo target: when no forge is configured, ShopLite goes into `data/shoplite.git` beside
/// the env file (a bare repository the desk's local forge serves) and `R2R_LOCAL_FORGE`
/// points at it.
async fn setup_demo_forge(env_file: &std::path::Path) -> anyhow::Result<()> {
    let env = Environment::load(env_file)?;
    if env.get("R2R_LOCAL_FORGE").is_some() || env.get("R2R_GITHUB_REPOSITORIES").is_some() {
        return Ok(());
    }
    let shoplite = std::path::Path::new("shoplite");
    if !shoplite.join("src/lib.rs").is_file() {
        println!("no shoplite/ folder here: the demo target was not set up (run setup from the repository root for it)");
        return Ok(());
    }
    // Beside the env file (the repository root for `.env.local`).
    let home = match env_file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.canonicalize()?,
        _ => std::env::current_dir()?,
    };
    let bare = home.join("data/shoplite.git");
    if !bare.join("HEAD").is_file() {
        std::fs::create_dir_all(bare.parent().unwrap_or(std::path::Path::new(".")))?;
        crate::demo_run::seed_forge(shoplite, &bare).await?;
        println!(
            "created   {} (ShopLite, the demo target, in a local forge)",
            bare.display()
        );
    }
    crate::setup::set_variable(env_file, "R2R_LOCAL_FORGE", &bare.display().to_string())?;
    println!("set       R2R_LOCAL_FORGE={}", bare.display());
    Ok(())
}

async fn demo_reproduce(
    shoplite: &std::path::Path,
    fixed: bool,
    timeout: u64,
    runner: &crate::demo::Runner,
) -> anyhow::Result<ExitCode> {
    let target = if fixed {
        "ShopLite with the fix applied"
    } else {
        "the shipped ShopLite"
    };
    println!(
        "Running {} against {target} (cargo test, offline, {timeout} s limit)…",
        crate::demo::REGRESSION_TEST_NAME
    );
    let run = crate::demo::reproduce(shoplite, fixed, Duration::from_secs(timeout), runner)
        .await
        .context("the demo could not run")?;
    let outcome = &run.outcome;
    println!(
        "runner: {} · exit {} · {} ms{}",
        outcome.backend,
        outcome
            .exit_code
            .map_or("none".to_owned(), |c| c.to_string()),
        outcome.duration_ms,
        if outcome.timed_out {
            " · timed out"
        } else {
            ""
        }
    );
    match &run.verdict {
        Verdict::Reproduced { test, assertion } => {
            println!("REPRODUCED: {test} failed on its assertion:\n{assertion}");
            Ok(ExitCode::from(1))
        }
        Verdict::Passed { test } => {
            println!("PASSED: {test} passes; the bug is not present.");
            Ok(ExitCode::SUCCESS)
        }
        Verdict::NotReproduced { reason } => {
            println!("NOT A REPRODUCTION: {reason:?}");
            eprintln!("{}", outcome.stderr);
            println!("{}", outcome.stdout);
            Ok(ExitCode::from(2))
        }
    }
}
