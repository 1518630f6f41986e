//! `r2r demo …`: the ShopLite demo target.
//!
//! `reproduce` copies ShopLite into a scratch crate, adds the coupon regression test (and,
//! with `--fixed`, the fix), runs `cargo test` offline under a deadline — in the sandbox
//! (Docker or bubblewrap) by default, or on the host when asked — and judges the run.

use super::{configured, load_config};
use crate::config::Environment;
use anyhow::Context;
use clap::Subcommand;
use sandbox::{classify_cargo_test, run_on_host, Job, RunOutcome, Verdict};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The regression test's file, relative to the ShopLite crate.
pub const REGRESSION_TEST_FILE: &str = "regressions/coupon_save300.rs";
/// The regression test's name.
pub const REGRESSION_TEST_NAME: &str = "save300_on_a_200_rupee_cart_is_free_not_negative";

/// Why the demo could not run.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// A file of the ShopLite source is missing or unreadable.
    #[error("cannot read {path}: {source} (run r2r from the repository root or pass --shoplite)")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The scratch crate could not be written.
    #[error("cannot prepare the scratch crate: {0}")]
    Scratch(#[source] std::io::Error),
    /// The fix no longer applies to ShopLite's source.
    #[error(
        "the fix does not apply: ShopLite's source no longer contains the seeded bug's marker"
    )]
    FixDoesNotApply,
    /// cargo could not be started.
    #[error(transparent)]
    Run(#[from] sandbox::process::RunError),
    /// The sandbox could not run the test.
    #[error(transparent)]
    Sandbox(#[from] sandbox::SandboxError),
}

/// Where the demo's regression test runs.
#[derive(Debug)]
pub enum Runner {
    /// Directly on the host with a clean environment and a deadline (trusted code only;
    /// labelled `host` in the evidence).
    Host,
    /// Inside an isolating backend.
    Isolated(Box<dyn sandbox::Sandbox>),
}

/// Where a demo run may take place: on the host (trusted code) or in a sandbox backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// On the host, labelled `host`.
    Host,
    /// In a sandbox backend.
    Sandbox(sandbox::Backend),
}

impl Place {
    /// Every place, host first.
    pub const ALL: [Place; 3] = [
        Place::Host,
        Place::Sandbox(sandbox::Backend::Bwrap),
        Place::Sandbox(sandbox::Backend::Docker),
    ];
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Host => f.pad("host"),
            Place::Sandbox(backend) => f.pad(backend.as_str()),
        }
    }
}

impl std::str::FromStr for Place {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "host" => Ok(Place::Host),
            other => other
                .parse()
                .map(Place::Sandbox)
                .map_err(|_| format!("expected docker, bwrap or host, got {text:?}")),
        }
    }
}

impl Runner {
    /// Connects to `place`; Docker uses the local `image`.
    pub async fn connect(place: Place, image: &str) -> Result<Runner, DemoError> {
        match place {
            Place::Host => Ok(Runner::Host),
            Place::Sandbox(backend) => {
                Ok(Runner::Isolated(sandbox::connect(backend, image).await?))
            }
        }
    }
}

/// The result of one reproduction run.
#[derive(Debug)]
pub struct Reproduction {
    /// What the runner did.
    pub outcome: RunOutcome,
    /// What the run proves.
    pub verdict: Verdict,
}

fn read(path: &Path) -> Result<String, DemoError> {
    std::fs::read_to_string(path).map_err(|source| DemoError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Applies the fix for seeded bug 1 to ShopLite's `lib.rs` text.
pub fn apply_fix(lib_rs: &str) -> Result<String, DemoError> {
    shoplite::seeded::fix_bug1(lib_rs).ok_or(DemoError::FixDoesNotApply)
}

/// Writes a standalone copy of ShopLite with the regression test into `scratch`.
pub fn prepare_scratch(shoplite: &Path, scratch: &Path, fixed: bool) -> Result<(), DemoError> {
    let lib = read(&shoplite.join("src/lib.rs"))?;
    let lib = if fixed { apply_fix(&lib)? } else { lib };
    let test = read(&shoplite.join(REGRESSION_TEST_FILE))?;
    let write = |relative: &str, text: &str| -> Result<(), DemoError> {
        let path = scratch.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(DemoError::Scratch)?;
        }
        std::fs::write(path, text).map_err(DemoError::Scratch)
    };
    // An empty [workspace] table keeps cargo from looking for a parent workspace.
    write(
        "Cargo.toml",
        "[package]\nname = \"shoplite\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )?;
    write(
        "Cargo.lock",
        "version = 4\n\n[[package]]\nname = \"shoplite\"\nversion = \"0.1.0\"\n",
    )?;
    write("src/lib.rs", &lib)?;
    // The shop as a service, and the file `git archive` fills in with the commit it builds.
    write("src/main.rs", &read(&shoplite.join("src/main.rs"))?)?;
    write("COMMIT", &read(&shoplite.join("COMMIT"))?)?;
    write(".gitattributes", &read(&shoplite.join(".gitattributes"))?)?;
    // Its one static asset: served as it is, checked by the recorder against the build's
    // manifest.
    write("static/shop.css", &read(&shoplite.join("static/shop.css"))?)?;
    write("tests/coupon_save300.rs", &test)?;
    Ok(())
}

/// The environment cargo needs, and nothing else of ours.
fn cargo_env(scratch: &Path) -> Vec<(String, String)> {
    let mut env = vec![
        (
            "CARGO_TARGET_DIR".to_owned(),
            scratch.join("target").display().to_string(),
        ),
        ("CARGO_TERM_COLOR".to_owned(), "never".to_owned()),
        ("RUST_BACKTRACE".to_owned(), "0".to_owned()),
    ];
    for name in [
        "PATH",
        "HOME",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "RUSTUP_TOOLCHAIN",
    ] {
        if let Ok(value) = std::env::var(name) {
            env.push((name.to_owned(), value));
        }
    }
    env
}

/// Runs ShopLite's coupon regression test against the shipped or the fixed shop.
pub async fn reproduce(
    shoplite: &Path,
    fixed: bool,
    deadline: Duration,
    runner: &Runner,
) -> Result<Reproduction, DemoError> {
    let scratch = tempfile::tempdir().map_err(DemoError::Scratch)?;
    prepare_scratch(shoplite, scratch.path(), fixed)?;
    if let Runner::Isolated(sandbox) = runner {
        sandbox::share_read_only(scratch.path()).map_err(DemoError::Scratch)?;
        let job = sandbox::Profile::Rust.job(
            scratch.path(),
            Some("tests/coupon_save300.rs"),
            &sandbox::Toolchains::detect(),
            deadline,
        )?;
        let outcome = sandbox.run(&job).await?;
        let verdict = classify_cargo_test(&outcome, REGRESSION_TEST_NAME);
        return Ok(Reproduction { outcome, verdict });
    }
    let job = Job {
        program: "cargo".to_owned(),
        args: ["test", "--offline", "--locked", "--test", "coupon_save300"]
            .map(str::to_owned)
            .to_vec(),
        work_dir: PathBuf::from(scratch.path()),
        env: cargo_env(scratch.path()),
        deadline,
    };
    let outcome = run_on_host(&job).await?;
    let verdict = classify_cargo_test(&outcome, REGRESSION_TEST_NAME);
    Ok(Reproduction { outcome, verdict })
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_is_the_host_or_a_backend_and_reads_back_as_it_is_written() {
        for place in Place::ALL {
            assert_eq!(place.to_string().parse::<Place>().unwrap(), place);
        }
        assert_eq!(format!("{:<7}|", Place::Host), "host   |");
        let error = "vm".parse::<Place>().unwrap_err();
        assert!(error.contains("docker, bwrap or host"), "{error}");
    }

    fn shoplite_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shoplite")
    }

    #[test]
    fn the_fix_applies_exactly_once_to_the_shipped_shop() {
        let lib = std::fs::read_to_string(shoplite_dir().join("src/lib.rs")).unwrap();
        let fixed = apply_fix(&lib).unwrap();
        assert!(!fixed.contains(shoplite::seeded::BUG1_MARKER));
        assert!(fixed.contains("discount.min("));
        assert!(matches!(apply_fix(&fixed), Err(DemoError::FixDoesNotApply)));
    }

    #[test]
    fn a_missing_shoplite_folder_is_a_clear_error() {
        let scratch = tempfile::tempdir().unwrap();
        let error = prepare_scratch(Path::new("/nonexistent"), scratch.path(), false).unwrap_err();
        assert!(
            error.to_string().contains("/nonexistent/src/lib.rs"),
            "{error}"
        );
    }
}
