//! `r2r token rotate`: replace a role's bearer token (the old one stops working at once).
use super::load_config;
use clap::Subcommand;
use std::path::Path;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
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

/// Runs `r2r token …`.
pub async fn command(env_file: &Path, command: TokenCommand) -> anyhow::Result<ExitCode> {
    match command {
        TokenCommand::Rotate { role } => {
            let config = load_config(env_file, None)?;
            let store = store::Store::connect(&config.database_url).await?;
            store.migrate().await?;
            let token = crate::cli::setup::new_role_token(role);
            store
                .set_role_token_hash(
                    role.as_str(),
                    &crate::auth::hash_secret(&token),
                    crate::clock::now_ms(),
                    false,
                )
                .await?;
            crate::cli::setup::set_variable(env_file, role.token_variable(), &token)?;
            println!("{}={token}", role.token_variable());
            println!(
                "The {role} token was replaced: the old one no longer works. The new one is in {} and shown here once.",
                env_file.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
