//! A Rust crate with registry dependencies and no lockfile, as a team's repository often is:
//! prepare fetches its crates once (the only step that reaches crates.io), and the networkless
//! sandbox then builds and tests it offline from the read-only cache — a failing assertion is a
//! reproduction, the fixed code passes, and the lockfile the desk generated is the one every run
//! sees. A git source is refused with its reason before anything is fetched.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use sandbox::{share_read_only, DepsCache, PrepareError, Profile, Sandbox, Toolchains, Verdict};
use std::path::Path;
use std::time::Duration;

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Whether the test command requires the sandbox (then its absence fails the test).
fn required() -> bool {
    std::env::var("R2R_SANDBOX_REQUIRED").is_ok_and(|v| v == "1")
}

/// The backend's sandbox; `None` (said) when it is missing and not required.
async fn sandbox_or_skip(backend: sandbox::Backend) -> Option<Box<dyn Sandbox>> {
    let image = std::env::var("R2R_SANDBOX_IMAGE")
        .unwrap_or_else(|_| sandbox::docker::DEFAULT_IMAGE.to_owned());
    match sandbox::connect(backend, &image).await {
        Ok(sandbox) => Some(sandbox),
        Err(error) if !required() => {
            eprintln!("SKIPPED the {backend} prepare runs: {error}");
            None
        }
        Err(error) => panic!("{error}"),
    }
}

/// A crate formatting prices with `itoa` and keeping line items in a `smallvec`, tested with
/// `pretty_assertions` (a dev-dependency): three registry crates and what they pull in.
fn priced_crate(root: &Path, fixed: bool) {
    write(
        root,
        "Cargo.toml",
        "[package]\nname = \"till\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nitoa = \"1\"\nsmallvec = \"1\"\n\n\
         [dev-dependencies]\npretty_assertions = \"1\"\n\n[workspace]\n",
    );
    let cents = if fixed { "cents % 100" } else { "cents / 100" };
    write(
        root,
        "src/lib.rs",
        &format!(
            "use smallvec::SmallVec;\n\n\
             pub fn price(cents: u64) -> String {{\n\
             \x20   let mut whole = itoa::Buffer::new();\n\
             \x20   let mut part = itoa::Buffer::new();\n\
             \x20   let part = part.format({cents});\n\
             \x20   format!(\"{{}}.{{:0>2}}\", whole.format(cents / 100), part)\n\
             }}\n\n\
             pub fn lines(items: &[u64]) -> SmallVec<[String; 4]> {{\n\
             \x20   items.iter().map(|c| price(*c)).collect()\n\
             }}\n"
        ),
    );
    write(
        root,
        "tests/price.rs",
        "use pretty_assertions::assert_eq;\n\n#[test]\nfn cents_are_shown_after_the_point() {\n    assert_eq!(till::price(1234), \"12.34\", \"shown price\");\n    assert_eq!(till::lines(&[5]).len(), 1);\n}\n",
    );
}

async fn prepared_crate_runs_offline(backend: sandbox::Backend) {
    let required = required();
    let Some(sandbox) = sandbox_or_skip(backend).await else {
        return;
    };
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = DepsCache::new(cache_dir.path(), 2 << 30);
    let toolchains = Toolchains::detect();
    let test = "cents_are_shown_after_the_point";

    let buggy = tempfile::tempdir().unwrap();
    priced_crate(buggy.path(), false);
    let started = std::time::Instant::now();
    let prepared = match cache.prepare_rust(buggy.path()).await {
        Ok(prepared) => prepared,
        Err(PrepareError::Failed(why)) if !required => {
            eprintln!("SKIPPED the {backend} prepare runs: crates.io not reachable: {why}");
            return;
        }
        Err(error) => panic!("{error}"),
    };
    eprintln!(
        "[{backend}] prepared {} crates, {} bytes, in {} ms",
        prepared.crates,
        prepared.bytes,
        started.elapsed().as_millis()
    );
    assert!(prepared.generated && !prepared.reused);
    assert!(prepared.crates >= 4, "{prepared:?}");
    assert!(
        !buggy.path().join("Cargo.lock").exists(),
        "prepare never writes into the tree it reads"
    );
    prepared.install_lockfile(buggy.path()).unwrap();
    let lock = std::fs::read_to_string(buggy.path().join("Cargo.lock")).unwrap();
    assert!(lock.contains("name = \"itoa\""), "{lock}");

    let run = |dir: &Path, prepared: &sandbox::Prepared| {
        share_read_only(dir).unwrap();
        let mut job = Profile::Rust
            .job(
                dir,
                Some("tests/price.rs"),
                &toolchains,
                Duration::from_secs(300),
            )
            .unwrap();
        prepared.attach(&mut job);
        job
    };
    let outcome = sandbox.run(&run(buggy.path(), &prepared)).await.unwrap();
    let verdict = Profile::Rust.classify(&outcome, test);
    assert!(
        matches!(&verdict, Verdict::Reproduced { assertion, .. } if assertion.contains("shown price")),
        "{backend}: {verdict:?}\n{}\n{}",
        outcome.stdout,
        outcome.stderr
    );
    eprintln!(
        "[{backend}] reproduction with registry crates in {} ms",
        outcome.duration_ms
    );

    // The fix: same manifests, so the same key, the same generated lockfile, nothing fetched.
    let fixed = tempfile::tempdir().unwrap();
    priced_crate(fixed.path(), true);
    let again = cache.prepare_rust(fixed.path()).await.unwrap();
    assert!(again.reused && again.generated);
    assert_eq!(again.key, prepared.key);
    again.install_lockfile(fixed.path()).unwrap();
    assert_eq!(
        std::fs::read_to_string(fixed.path().join("Cargo.lock")).unwrap(),
        lock
    );
    let outcome = sandbox.run(&run(fixed.path(), &again)).await.unwrap();
    assert_eq!(
        Profile::Rust.classify(&outcome, test),
        Verdict::Passed { test: test.into() },
        "{backend}: {}",
        outcome.stderr
    );
    // The fix's own checks see the same prepared crates (clippy builds them): a formatted,
    // lint-clean crate with registry dependencies passes both.
    for (name, mut job) in Profile::Rust
        .checks(
            fixed.path(),
            &["src/lib.rs"],
            &toolchains,
            Duration::from_secs(300),
        )
        .unwrap()
    {
        again.attach(&mut job);
        let outcome = sandbox.run(&job).await.unwrap();
        assert_eq!(
            outcome.exit_code,
            Some(0),
            "{backend}: the {name} check failed on a clean crate:\n{}\n{}",
            outcome.stdout,
            outcome.stderr
        );
    }

    // Without the prepared crates the sandbox has no way to them: the run fails to build
    // (never reads as a reproduction).
    let bare = Profile::Rust
        .job(
            fixed.path(),
            Some("tests/price.rs"),
            &toolchains,
            Duration::from_secs(300),
        )
        .unwrap();
    let outcome = sandbox.run(&bare).await.unwrap();
    assert!(
        !matches!(
            Profile::Rust.classify(&outcome, test),
            Verdict::Reproduced { .. } | Verdict::Passed { .. }
        ),
        "{backend}: {}",
        outcome.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_runs_a_prepared_crate_offline() {
    prepared_crate_runs_offline(sandbox::Backend::Docker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bwrap_runs_a_prepared_crate_offline() {
    prepared_crate_runs_offline(sandbox::Backend::Bwrap).await;
}

#[tokio::test]
async fn a_git_dependency_is_refused_before_anything_is_fetched() {
    let tree = tempfile::tempdir().unwrap();
    write(
        tree.path(),
        "Cargo.toml",
        "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ny = { git = \"https://example.invalid/y\" }\n",
    );
    write(tree.path(), "src/lib.rs", "");
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = DepsCache::new(cache_dir.path(), 1 << 30);
    let error = cache.prepare_rust(tree.path()).await.unwrap_err();
    assert!(matches!(error, PrepareError::Refused(_)), "{error}");
    assert!(error.to_string().contains("from git"), "{error}");
    // Nothing was fetched or kept.
    assert!(!cache_dir.path().join("cargo").exists());
}

/// A Python package in a `src/` layout whose tests need a newer pytest than the sandbox's
/// own, a pytest plugin and a runtime dependency from PyPI: prepared as wheels (no setup
/// script runs), then measured with no network, the project's pinned pytest taking the place
/// of the sandbox's.
async fn prepared_python_runs_offline(backend: sandbox::Backend) {
    let required = required();
    let Some(sandbox) = sandbox_or_skip(backend).await else {
        return;
    };
    let project = |fixed: bool| {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "pyproject.toml",
            "[project]\nname = \"till\"\nversion = \"0.1\"\ndependencies = [\"attrs>=23\"]\n\n\
             [project.optional-dependencies]\ntest = [\"pytest>=8\", \"pytest-timeout\"]\n\n\
             [tool.pytest.ini_options]\ntestpaths = [\"tests\"]\naddopts = \"--timeout=60\"\n",
        );
        let cents = if fixed { "cents % 100" } else { "cents // 100" };
        write(
            dir.path(),
            "src/till/__init__.py",
            &format!("import attrs\n\n@attrs.define\nclass Price:\n    cents: int\n\n    def shown(self):\n        cents = self.cents\n        return f\"{{cents // 100}}.{{{cents}:02d}}\"\n"),
        );
        write(
            dir.path(),
            "tests/test_price.py",
            "import pytest\nfrom till import Price\n\n\ndef test_cents_follow_the_point():\n    assert int(pytest.__version__.split('.')[0]) >= 8\n    assert Price(1234).shown() == \"12.34\", \"shown price\"\n",
        );
        dir
    };
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = DepsCache::new(cache_dir.path(), 2 << 30);
    let toolchains = Toolchains::detect();
    let test = "test_cents_follow_the_point";
    let buggy = project(false);
    let prepared = match cache.prepare_python(buggy.path(), None).await {
        Ok(prepared) => prepared,
        Err(PrepareError::Failed(why)) if !required => {
            eprintln!("SKIPPED the {backend} Python prepare runs: PyPI not reachable: {why}");
            return;
        }
        Err(error) => panic!("{error}"),
    };
    assert_eq!(
        prepared.ecosystem,
        sandbox::Ecosystem::Python { src_layout: true }
    );
    let pins = std::fs::read_to_string(&prepared.lockfile).unwrap();
    assert!(
        pins.contains("attrs==") && pins.contains("pytest_timeout=="),
        "{pins}"
    );
    let run = |dir: &Path, prepared: &sandbox::Prepared| {
        share_read_only(dir).unwrap();
        let mut job = Profile::Python
            .job(
                dir,
                Some("tests/test_price.py"),
                &toolchains,
                Duration::from_secs(120),
            )
            .unwrap();
        prepared.attach(&mut job);
        job
    };
    let outcome = sandbox.run(&run(buggy.path(), &prepared)).await.unwrap();
    let verdict = Profile::Python.classify(&outcome, test);
    assert!(
        matches!(&verdict, Verdict::Reproduced { assertion, .. } if assertion.contains("shown price")),
        "{backend}: {verdict:?}\n{}\n{}",
        outcome.stdout,
        outcome.stderr
    );
    let fixed = project(true);
    let again = cache.prepare_python(fixed.path(), None).await.unwrap();
    assert!(again.reused && again.key == prepared.key);
    let outcome = sandbox.run(&run(fixed.path(), &again)).await.unwrap();
    assert_eq!(
        Profile::Python.classify(&outcome, test),
        Verdict::Passed { test: test.into() },
        "{backend}: {}",
        outcome.stderr
    );
    // Without the prepared wheels, `attrs` is missing: an import error, never a reproduction.
    let bare = Profile::Python
        .job(
            buggy.path(),
            Some("tests/test_price.py"),
            &toolchains,
            Duration::from_secs(120),
        )
        .unwrap();
    let outcome = sandbox.run(&bare).await.unwrap();
    assert!(
        !matches!(
            Profile::Python.classify(&outcome, test),
            Verdict::Reproduced { .. } | Verdict::Passed { .. }
        ),
        "{backend}: {}",
        outcome.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_runs_a_prepared_python_package_offline() {
    prepared_python_runs_offline(sandbox::Backend::Docker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bwrap_runs_a_prepared_python_package_offline() {
    prepared_python_runs_offline(sandbox::Backend::Bwrap).await;
}

/// A Node package whose code needs an npm dependency: `npm ci --ignore-scripts` prepares it
/// once at its lockfile's versions, and `node --test` in the networkless sandbox finds it as
/// the run's `node_modules`: the buggy code reproduces on its assertion, the fixed code
/// passes, and without the prepared packages the run is an error, never a reproduction.
async fn prepared_node_runs_offline(backend: sandbox::Backend, pnpm: bool) {
    let required = required();
    let Some(sandbox) = sandbox_or_skip(backend).await else {
        return;
    };
    let project = |fixed: bool| {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "package.json",
            r#"{"name":"till","version":"1.0.0","private":true,"devDependencies":{"is-number":"7.0.0"}}"#,
        );
        let cents = if fixed {
            "cents % 100"
        } else {
            "Math.floor(cents / 100)"
        };
        write(
            dir.path(),
            "lib/price.js",
            &format!(
                "const isNumber = require('is-number');\n\
                 exports.shown = (cents) => {{\n  if (!isNumber(cents)) throw new Error('not a number');\n  \
                 return Math.floor(cents / 100) + '.' + String({cents}).padStart(2, '0');\n}};\n"
            ),
        );
        write(
            dir.path(),
            "test/price.test.js",
            "const test = require('node:test');\nconst assert = require('node:assert');\n\
             const { shown } = require('../lib/price');\n\n\
             test('cents follow the point', () => {\n  assert.strictEqual(shown(1234), '12.34', 'shown price');\n});\n",
        );
        // The lockfile, as the team would commit it: npm's, or pnpm's alone.
        let locked = if pnpm {
            std::process::Command::new("npm")
                .args([
                    "exec",
                    "--yes",
                    "--package=pnpm@9",
                    "--",
                    "pnpm",
                    "install",
                    "--lockfile-only",
                    "--ignore-scripts",
                ])
                .current_dir(dir.path())
                .output()
        } else {
            std::process::Command::new("npm")
                .args([
                    "install",
                    "--package-lock-only",
                    "--ignore-scripts",
                    "--no-audit",
                    "--no-fund",
                ])
                .current_dir(dir.path())
                .output()
        };
        if pnpm {
            assert!(!dir.path().join("package-lock.json").exists());
        }
        (dir, locked)
    };
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = DepsCache::new(cache_dir.path(), 2 << 30);
    let toolchains = Toolchains::detect();
    let test = "cents follow the point";
    let (buggy, locked) = project(false);
    match locked {
        Ok(output) if output.status.success() => {}
        other if !required => {
            eprintln!(
                "SKIPPED the {backend} Node prepare runs: no lockfile could be made: {other:?}"
            );
            return;
        }
        other => panic!("{other:?}"),
    }
    let prepared = match cache.prepare_node(buggy.path()).await {
        Ok(prepared) => prepared,
        Err(PrepareError::Failed(why)) if !required => {
            eprintln!("SKIPPED the {backend} Node prepare runs: npm not reachable: {why}");
            return;
        }
        Err(error) => panic!("{error}"),
    };
    assert_eq!(prepared.ecosystem, sandbox::Ecosystem::Node);
    assert!(prepared.crates >= 1 && !prepared.reused, "{prepared:?}");
    assert!(prepared.vendor.join("is-number/index.js").is_file());
    let run = |dir: &Path, prepared: Option<&sandbox::Prepared>| {
        share_read_only(dir).unwrap();
        let mut job = Profile::NodeTest
            .job(
                dir,
                Some("test/price.test.js"),
                &toolchains,
                Duration::from_secs(120),
            )
            .unwrap();
        if let Some(prepared) = prepared {
            prepared.attach(&mut job);
        }
        job
    };
    let outcome = sandbox
        .run(&run(buggy.path(), Some(&prepared)))
        .await
        .unwrap();
    let verdict = Profile::NodeTest.classify(&outcome, test);
    assert!(
        matches!(&verdict, Verdict::Reproduced { assertion, .. } if assertion.contains("shown price")),
        "{backend}: {verdict:?}\n{}\n{}",
        outcome.stdout,
        outcome.stderr
    );
    let (fixed, _) = project(true);
    let again = cache.prepare_node(fixed.path()).await.unwrap();
    assert!(
        again.reused && again.key == prepared.key,
        "the same lockfile: the same entry"
    );
    let outcome = sandbox.run(&run(fixed.path(), Some(&again))).await.unwrap();
    assert_eq!(
        Profile::NodeTest.classify(&outcome, test),
        Verdict::Passed { test: test.into() },
        "{backend}: {}",
        outcome.stderr
    );
    // Without the prepared packages `is-number` is missing: an error, never a reproduction.
    let outcome = sandbox.run(&run(buggy.path(), None)).await.unwrap();
    assert!(
        !matches!(
            Profile::NodeTest.classify(&outcome, test),
            Verdict::Reproduced { .. } | Verdict::Passed { .. }
        ),
        "{backend}: {}",
        outcome.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_runs_a_prepared_node_package_offline() {
    prepared_node_runs_offline(sandbox::Backend::Docker, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bwrap_runs_a_package_prepared_from_a_pnpm_lockfile_offline() {
    prepared_node_runs_offline(sandbox::Backend::Bwrap, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bwrap_runs_a_prepared_node_package_offline() {
    prepared_node_runs_offline(sandbox::Backend::Bwrap, false).await;
}
