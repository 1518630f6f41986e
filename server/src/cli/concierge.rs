//! `r2r concierge run`: the concierge as its own process, a client of the desk's API with its
//! own token.

use crate::config::{Environment, NotifyConfig};
use crate::workers::concierge::{run, Concierge};
use std::time::Duration;

/// `r2r concierge …`.
#[derive(clap::Subcommand, Debug)]
pub enum ConciergeCommand {
    /// Deliver notifications until interrupted (or one round with --once).
    Run {
        /// The desk's base URL.
        #[arg(long, default_value = "http://127.0.0.1:3000")]
        desk: String,
        /// How long an idle round waits at the desk for a job (a new job is picked up at
        /// once; one whose retry time came, within this), and the pause after a failed
        /// round, in milliseconds.
        #[arg(long, default_value_t = 2_000)]
        poll_ms: u64,
        /// One round, print what it did, exit (non-zero if a delivery failed).
        #[arg(long)]
        once: bool,
    },
}

/// Runs `r2r concierge`.
pub async fn command(
    env_file: &std::path::Path,
    command: ConciergeCommand,
) -> anyhow::Result<std::process::ExitCode> {
    let ConciergeCommand::Run {
        desk,
        poll_ms,
        once,
    } = command;
    if !(desk.starts_with("http://") || desk.starts_with("https://")) {
        anyhow::bail!("--desk is invalid: expected an http(s) URL, got {desk:?}");
    }
    if !(100..=600_000).contains(&poll_ms) {
        anyhow::bail!("--poll-ms is invalid: 100 to 600000, got {poll_ms}");
    }
    let env = Environment::load(env_file)?;
    let variable = domain::Role::Concierge.token_variable();
    let Some(token) = env.get(variable) else {
        anyhow::bail!("{variable} is not set (r2r setup writes it to .env.local)");
    };
    let notify = NotifyConfig::from_env(&env)?;
    let concierge = Concierge::new(&desk, token, &notify)?;
    if once {
        let round = concierge.round().await?;
        println!(
            "leased {}, delivered {} channel(s), done {}, failed {}",
            round.leased, round.delivered, round.done, round.failed
        );
        return Ok(if round.failed == 0 {
            std::process::ExitCode::SUCCESS
        } else {
            std::process::ExitCode::FAILURE
        });
    }
    println!(
        "concierge running (inbox{}{}; Ctrl-C stops it)",
        if notify.smtp_url.is_some() {
            ", email"
        } else {
            ""
        },
        if notify.webhook_url.is_some() {
            ", webhook"
        } else {
            ""
        }
    );
    tokio::select! {
        () = run(concierge, Duration::from_millis(poll_ms)) => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(std::process::ExitCode::SUCCESS)
}
