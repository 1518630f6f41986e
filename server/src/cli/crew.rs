//! `r2r crew …`: the engineering crew as HTTP clients of the desk, each role with its own token.
use crate::config::Environment;
use clap::Subcommand;
use std::path::Path;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum CrewCommand {
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
    /// How well the reproducer's context finds the code a bug lives in: for each case (a
    /// report in a user's words and the files its real fix changed) builds the context as the
    /// desk does and prints recall@1, recall@3, recall in the prompt and the prompt's tokens
    /// per target. Without options, the built-in sets (crew/eval/*.json) from the repository
    /// root: ShopLite's seeded bugs and bugs of this repository fixed in its history.
    Eval {
        /// A case file (JSON: {target, about, cases: [{bug, title, what_happened, expected,
        /// steps, fixed_files}]}).
        #[arg(long, value_name = "FILE")]
        cases: Option<std::path::PathBuf>,
        /// The target's git work tree the cases' paths are relative to.
        #[arg(long, value_name = "DIR")]
        repo: Option<std::path::PathBuf>,
        /// The test profile the context is written for.
        #[arg(long, default_value = "rust")]
        profile: String,
        /// Instead: carry real bugs of public repositories through a desk of their own each
        /// (the folder's *.json case files, e.g. crew/eval/real), with the oracle model double
        /// answering with the upstream test and fix; prints each case's furthest stage, the
        /// desk's reason and the time. Exits 0 when every case reached a measured fix.
        #[arg(long = "real-bugs", value_name = "DIR", conflicts_with_all = ["cases", "repo"], requires = "mirrors")]
        real_bugs: Option<std::path::PathBuf>,
        /// With --real-bugs: where the repositories were fetched (owner+name/repo,
        /// owner+name or name.git bare repositories). Their code is read, never committed.
        #[arg(long, value_name = "DIR", requires = "real_bugs")]
        mirrors: Option<std::path::PathBuf>,
        /// With --real-bugs: only this case (repeatable).
        #[arg(long = "case", value_name = "ID", requires = "real_bugs")]
        only: Vec<String>,
        /// With --real-bugs: the model R2R_MODEL_PROVIDER configures instead of the oracle.
        #[arg(long, requires = "real_bugs")]
        provider: bool,
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
    crew::guard::TokenPrices,
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

/// Runs `r2r crew …`.
pub async fn command(env_file: &Path, command: CrewCommand) -> anyhow::Result<ExitCode> {
    match command {
        CrewCommand::Reproduce { bug, desk } => {
            let (client, model, prices) = crew_role(env_file, &desk, "R2R_REPRODUCER_TOKEN")?;
            let env = Environment::load(env_file)?;
            let approach = crate::config::crew_approach(&env, env.target_profile()?)?;
            match crew::reproducer::reproduce(&client, model.as_ref(), &prices, &bug, &approach)
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
        CrewCommand::Run { desk, poll_ms } => {
            if !(desk.starts_with("http://") || desk.starts_with("https://")) {
                anyhow::bail!("--desk is invalid: expected an http(s) URL, got {desk:?}");
            }
            if !(100..=600_000).contains(&poll_ms) {
                anyhow::bail!("--poll-ms is invalid: 100 to 600000, got {poll_ms}");
            }
            let env = Environment::load(env_file)?;
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
            let profile = env.target_profile()?;
            let settings = crew::service::CrewSettings {
                desk,
                manager: tokens[0].clone(),
                reproducer: tokens[1].clone(),
                fixer: tokens[2].clone(),
                reviewer: tokens[3].clone(),
                poll: std::time::Duration::from_millis(poll_ms),
                approach: crate::config::crew_approach(&env, profile)?,
            };
            let crew = crew::service::spawn(settings, model.into(), prices)?;
            println!("crew running: manager, reproducer, fixer, reviewer (Ctrl-C stops it)");
            let _ = tokio::signal::ctrl_c().await;
            crew.stop();
            Ok(ExitCode::SUCCESS)
        }
        CrewCommand::Eval {
            real_bugs: Some(real_bugs),
            mirrors,
            only,
            provider,
            ..
        } => {
            super::real_bugs_run::command(super::real_bugs_run::RealBugOptions {
                cases: real_bugs,
                mirrors: mirrors.unwrap_or_default(),
                only,
                provider,
                env_file: env_file.to_owned(),
            })
            .await
        }
        CrewCommand::Eval {
            cases,
            repo,
            profile,
            ..
        } => {
            let Some(profile) = sandbox::Profile::parse(&profile) else {
                anyhow::bail!(
                    "--profile is invalid: rust, node, vitest, python, go or junit, got {profile:?}"
                );
            };
            super::crew_eval::run(cases, repo, profile.as_str())?;
            Ok(ExitCode::SUCCESS)
        }
        CrewCommand::Fix { bug, desk } => {
            let (client, model, prices) = crew_role(env_file, &desk, "R2R_FIXER_TOKEN")?;
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
    }
}
