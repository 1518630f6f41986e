//! The `r2r` command line. Every subcommand has `--help`.

pub mod airlock;
pub mod airlock_data;
pub mod bench;
pub mod bench_command;
pub mod bench_desk;
pub mod bench_pickup;
pub mod bench_reporter;
pub mod bench_workers;
pub mod cluster;
pub mod concierge;
pub mod crew;
pub mod crew_eval;
pub mod demo;
pub mod demo_command;
pub mod demo_drive;
pub mod demo_run;
pub mod ledger;
pub mod preflight;
pub mod project;
pub mod quarantine;
pub mod real_bugs;
pub mod real_bugs_run;
pub mod recorder;
pub mod sandbox;
pub mod sandbox_worker;
pub mod serve;
pub mod setup;
pub mod token;

use crate::config::{Config, Environment};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

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
        command: demo_command::DemoCommand,
    },
    /// The audit ledger.
    Ledger {
        #[command(subcommand)]
        command: ledger::LedgerCommand,
    },
    /// The airlock that every report passes before anything else reads it.
    Airlock {
        #[command(subcommand)]
        command: airlock::AirlockCommand,
    },
    /// Duplicate clustering.
    Cluster {
        #[command(subcommand)]
        command: cluster::ClusterCommand,
    },
    /// Benchmarks that print figures (never run as tests).
    Bench {
        #[command(subcommand)]
        command: bench_command::BenchCommand,
    },
    /// The recorder: prove an exact commit is live, then record it.
    Recorder {
        #[command(subcommand)]
        command: recorder::RecorderCommand,
    },
    /// The roles' bearer tokens.
    Token {
        #[command(subcommand)]
        command: token::TokenCommand,
    },
    /// The projects this desk serves beside the one its environment configures.
    Project {
        #[command(subcommand)]
        command: project::ProjectCommand,
    },
    /// The engineering crew, talking to the desk only over its HTTP API with role tokens.
    Crew {
        #[command(subcommand)]
        command: crew::CrewCommand,
    },
    /// The concierge: notifications to reporters (tracking page, email) and owners (webhook).
    Concierge {
        #[command(subcommand)]
        command: concierge::ConciergeCommand,
    },
    /// The sandbox the crew's code runs in.
    Sandbox {
        #[command(subcommand)]
        command: sandbox::SandboxCommand,
    },
    /// Reports the airlock set aside (metadata only: their text was never kept).
    Quarantine {
        #[command(subcommand)]
        command: quarantine::QuarantineCommand,
    },
}

/// The sandbox backend `R2R_SANDBOX_BACKEND` names (unset: none named here).
pub(crate) fn configured(env: &Environment) -> anyhow::Result<Option<::sandbox::Backend>> {
    env.get("R2R_SANDBOX_BACKEND")
        .map(|text| {
            text.parse::<::sandbox::Backend>()
                .map_err(|e| anyhow::anyhow!("R2R_SANDBOX_BACKEND: {e}"))
        })
        .transpose()
}

/// The shared test-data folder, for the commands that measure on it.
#[derive(clap::Args, Debug)]
pub struct SharedData {
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
pub(crate) fn percent(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if (0.0..=100.0).contains(&value) => Ok(value),
        _ => Err(format!(
            "expected a percentage between 0 and 100, got {text:?}"
        )),
    }
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
    let env_file = cli.env_file.as_path();
    match cli.command {
        Command::Setup { owner_email } => setup::command(env_file, &owner_email).await,
        Command::Serve { addr } => serve::serve(env_file, addr.as_deref()).await,
        Command::Migrate => serve::migrate(env_file).await,
        Command::Demo { command } => demo_command::command(env_file, command).await,
        Command::Ledger { command } => ledger::command(env_file, command).await,
        Command::Airlock { command } => airlock::command(env_file, command).await,
        Command::Cluster { command } => cluster::command(env_file, command).await,
        Command::Bench { command } => bench_command::command(env_file, command).await,
        Command::Recorder { command } => recorder::command(env_file, command).await,
        Command::Token { command } => token::command(env_file, command).await,
        Command::Project { command } => project::command(env_file, command).await,
        Command::Crew { command } => crew::command(env_file, command).await,
        Command::Concierge { command } => concierge::command(env_file, command).await,
        Command::Sandbox { command } => sandbox::command(env_file, command).await,
        Command::Quarantine { command } => quarantine::quarantine(env_file, command).await,
    }
}

pub(crate) fn load_config(
    env_file: &std::path::Path,
    addr: Option<&str>,
) -> anyhow::Result<Config> {
    let env = Environment::load(env_file)?;
    Ok(Config::from_env(&env, addr)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        // clap's own consistency check: names, flags, defaults and value parsers of every
        // subcommand.
        <Cli as clap::CommandFactory>::command().debug_assert();
    }

    #[test]
    fn every_subcommand_parses_its_documented_form() {
        for args in [
            &["r2r", "serve", "--addr", "127.0.0.1:0"][..],
            &["r2r", "setup", "--owner-email", "owner@example.org"],
            &["r2r", "migrate"],
            &["r2r", "ledger", "verify"],
            &["r2r", "airlock", "scan"],
            &["r2r", "token", "rotate", "--role", "fixer"],
            &["r2r", "crew", "run"],
            &["r2r", "concierge", "run", "--once"],
            &["r2r", "quarantine", "list"],
        ] {
            assert!(Cli::try_parse_from(args).is_ok(), "{args:?}");
        }
        assert!(Cli::try_parse_from(["r2r", "token", "rotate", "--role", "nobody"]).is_err());
        assert!(Cli::try_parse_from(["r2r", "no-such-command"]).is_err());
    }
}
