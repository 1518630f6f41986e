//! `r2r demo …` on the command line: its subcommands and how each runs (the demo's parts are
//! in [`super::demo`], [`super::demo_drive`] and [`super::demo_run`]).

use super::{configured, load_config};
use crate::config::Environment;
use anyhow::Context;
use clap::Subcommand;
use sandbox::Verdict;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Subcommand, Debug)]
pub enum DemoCommand {
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
        sandbox: Option<crate::cli::demo::Place>,
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
        /// `question`: propose the measured failing test; `review`: open `--branch` of the
        /// local forge as the draft (scripted); `release`: fix, merge and deploy.
        #[arg(long, value_enum)]
        to: crate::cli::demo_drive::Stage,
        /// With `--to review`: the pushed branch of the local forge (R2R_LOCAL_FORGE).
        #[arg(long)]
        branch: Option<String>,
        /// The ShopLite crate folder.
        #[arg(long, default_value = "shoplite", value_name = "DIR")]
        shoplite: PathBuf,
    },
}

async fn demo_reproduce(
    shoplite: &std::path::Path,
    fixed: bool,
    timeout: u64,
    runner: &crate::cli::demo::Runner,
) -> anyhow::Result<ExitCode> {
    let target = if fixed {
        "ShopLite with the fix applied"
    } else {
        "the shipped ShopLite"
    };
    println!(
        "Running {} against {target} (cargo test, offline, {timeout} s limit)…",
        crate::cli::demo::REGRESSION_TEST_NAME
    );
    let run = crate::cli::demo::reproduce(shoplite, fixed, Duration::from_secs(timeout), runner)
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

/// Runs `r2r demo …`.
pub async fn command(env_file: &Path, command: DemoCommand) -> anyhow::Result<ExitCode> {
    match command {
        DemoCommand::Reproduce {
            fixed,
            shoplite,
            timeout,
            sandbox,
        } => {
            let env = Environment::load(env_file)?;
            let place = match sandbox {
                Some(place) => place,
                None => configured(&env)?.map_or(
                    crate::cli::demo::Place::Sandbox(sandbox::Backend::Docker),
                    crate::cli::demo::Place::Sandbox,
                ),
            };
            let image = env.sandbox_image();
            let runner = crate::cli::demo::Runner::connect(place, &image)
                .await
                .context("the sandbox is not available (./scripts/sandbox-host.sh prepares this host, or pass --sandbox host)")?;
            demo_reproduce(&shoplite, fixed, timeout, &runner).await
        }
        DemoCommand::Run { sandbox, shoplite } => {
            let env = Environment::load(env_file)?;
            if !shoplite.join("src/lib.rs").is_file() {
                anyhow::bail!(
                    "--shoplite {}: no ShopLite crate there (run from the repository root or pass --shoplite DIR)",
                    shoplite.display()
                );
            }
            let options = crate::cli::demo_run::RunOptions {
                sandbox: match sandbox {
                    Some(backend) => backend,
                    None => configured(&env)?.unwrap_or(sandbox::Backend::Docker),
                },
                image: env.sandbox_image(),
                shoplite,
                leptos_toml: env.leptos_toml(),
            };
            let timeline = crate::cli::demo_run::run(&options).await;
            print!("{}", timeline.render(options.sandbox.as_str()));
            Ok(if timeline.held() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        DemoCommand::Drive {
            bug,
            to,
            shoplite,
            branch,
        } => {
            let config = load_config(env_file, None)?;
            let store = store::Store::connect(&config.database_url).await?;
            store.migrate().await?;
            let forge = config
                .local_forge
                .as_ref()
                .map(|path| forge::LocalForge::new(path, &config.local_forge_branch));
            let review = forge.as_ref().zip(branch.as_deref());
            crate::cli::demo_drive::drive(
                &store,
                &bug,
                to,
                &shoplite,
                &config.policy,
                (config.sandbox_backend, &config.sandbox_image),
                review,
            )
            .await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
