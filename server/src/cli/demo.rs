//! `r2r demo …`: the ShopLite demo target.
//!
//! `reproduce` copies ShopLite into a scratch crate, adds the coupon regression test (and,
//! with `--fixed`, the fix), runs `cargo test` offline under a deadline — in the sandbox
//! (Docker or bubblewrap) by default, or on the host when asked — and judges the run.

use sandbox::{classify_cargo_test, run_on_host, Job, RunOutcome, Verdict};
use std::path::{Path, PathBuf};
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
