//! `r2r serve` and `r2r migrate`.

use super::load_config;
use std::path::Path;
use std::process::ExitCode;

/// `r2r serve`: the desk with every worker its configuration asks for, until interrupted.
pub async fn serve(env_file: &Path, addr: Option<&str>) -> anyhow::Result<ExitCode> {
    let config = load_config(env_file, addr)?;
    crate::start::serve(config).await?;
    Ok(ExitCode::SUCCESS)
}

/// `r2r migrate`: apply the database migrations and exit.
pub async fn migrate(env_file: &Path) -> anyhow::Result<ExitCode> {
    let config = load_config(env_file, None)?;
    let store = store::Store::connect(&config.database_url).await?;
    store.migrate().await?;
    let version = store.schema_version().await?.unwrap_or_default();
    println!(
        "migrations applied: {} schema at version {version}",
        store.backend().as_str()
    );
    Ok(ExitCode::SUCCESS)
}
