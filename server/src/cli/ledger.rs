//! `r2r ledger verify`: recompute every bug's and the owners' hash chains.
use super::load_config;
use clap::Subcommand;
use std::path::Path;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum LedgerCommand {
    /// Recompute every bug's hash chain (DATABASE_URL). Exits 0 when intact; otherwise 1,
    /// naming the first broken event.
    Verify,
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

/// Runs `r2r ledger …`.
pub async fn command(env_file: &Path, command: LedgerCommand) -> anyhow::Result<ExitCode> {
    match command {
        LedgerCommand::Verify => ledger_verify(env_file).await,
    }
}
