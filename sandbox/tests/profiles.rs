//! Each profile runs for real inside each backend: a failing assertion in a new test is a
//! reproduction, the same test against the fixed code passes, a test that does not compile
//! proves nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use sandbox::{share_read_only, NotReproduced, Profile, Sandbox, Toolchains, Verdict};
use std::path::Path;
use std::time::Duration;

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn rust_project(root: &Path, fixed: bool, test: &str) {
    write(
        root,
        "Cargo.toml",
        "[package]\nname = \"cart\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    write(
        root,
        "Cargo.lock",
        "version = 4\n\n[[package]]\nname = \"cart\"\nversion = \"0.1.0\"\n",
    );
    let body = if fixed {
        "(subtotal - discount).max(0)"
    } else {
        "subtotal - discount"
    };
    write(
        root,
        "src/lib.rs",
        &format!("pub fn total(subtotal: i64, discount: i64) -> i64 {{ {body} }}\n"),
    );
    write(root, "tests/coupon.rs", test);
}

const RUST_TEST: &str = "#[test]\nfn coupon_never_makes_the_total_negative() {\n    assert_eq!(cart::total(200, 300), 0, \"payable total\");\n}\n";
const RUST_BROKEN: &str = "#[test]\nfn coupon_never_makes_the_total_negative() {\n    assert_eq!(cart::totl(200, 300), 0);\n}\n";

fn node_project(root: &Path) {
    write(
        root,
        "cart.mjs",
        "export function total(subtotal, discount) { return subtotal - discount; }\n",
    );
    write(
        root,
        "coupon.test.mjs",
        "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { total } from './cart.mjs';\n\ntest('a coupon never makes the total negative', () => {\n  assert.equal(total(200, 300), 0, 'payable total');\n});\n",
    );
}

async fn profiles(backend: sandbox::Backend) {
    let required = std::env::var("R2R_SANDBOX_REQUIRED").is_ok_and(|v| v == "1");
    let image = std::env::var("R2R_SANDBOX_IMAGE")
        .unwrap_or_else(|_| sandbox::docker::DEFAULT_IMAGE.to_owned());
    let sandbox: Box<dyn Sandbox> = match sandbox::connect(backend, &image).await {
        Ok(sandbox) => sandbox,
        Err(error) if !required => {
            eprintln!("SKIPPED the {backend} profile runs: {error}");
            return;
        }
        Err(error) => panic!("{error}"),
    };
    let toolchains = Toolchains::detect();
    let deadline = Duration::from_secs(240);
    let run = |dir: &Path, profile: Profile, file: &str| {
        share_read_only(dir).unwrap();
        profile.job(dir, Some(file), &toolchains, deadline).unwrap()
    };

    let test = "coupon_never_makes_the_total_negative";
    let buggy = tempfile::tempdir().unwrap();
    rust_project(buggy.path(), false, RUST_TEST);
    let outcome = sandbox
        .run(&run(buggy.path(), Profile::Rust, "tests/coupon.rs"))
        .await
        .unwrap();
    let verdict = Profile::Rust.classify(&outcome, test);
    assert!(
        matches!(&verdict, Verdict::Reproduced { assertion, .. } if assertion.contains("payable total")),
        "{backend}: {verdict:?}\n{}\n{}",
        outcome.stdout,
        outcome.stderr
    );
    eprintln!(
        "[{backend}] rust reproduction in {} ms",
        outcome.duration_ms
    );

    let fixed = tempfile::tempdir().unwrap();
    rust_project(fixed.path(), true, RUST_TEST);
    let outcome = sandbox
        .run(&run(fixed.path(), Profile::Rust, "tests/coupon.rs"))
        .await
        .unwrap();
    assert_eq!(
        Profile::Rust.classify(&outcome, test),
        Verdict::Passed { test: test.into() },
        "{backend}: {}",
        outcome.stderr
    );

    let broken = tempfile::tempdir().unwrap();
    rust_project(broken.path(), false, RUST_BROKEN);
    let outcome = sandbox
        .run(&run(broken.path(), Profile::Rust, "tests/coupon.rs"))
        .await
        .unwrap();
    assert_eq!(
        Profile::Rust.classify(&outcome, test),
        Verdict::NotReproduced {
            reason: NotReproduced::CompileError
        },
        "{backend}: {}",
        outcome.stderr
    );

    let node = tempfile::tempdir().unwrap();
    node_project(node.path());
    let outcome = sandbox
        .run(&run(node.path(), Profile::NodeTest, "coupon.test.mjs"))
        .await
        .unwrap();
    let verdict = Profile::NodeTest.classify(&outcome, "a coupon never makes the total negative");
    assert!(
        matches!(&verdict, Verdict::Reproduced { assertion, .. } if assertion.starts_with("payable total")),
        "{backend}: {verdict:?}\n{}\n{}",
        outcome.stdout,
        outcome.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_runs_each_profile() {
    profiles(sandbox::Backend::Docker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bwrap_runs_each_profile() {
    profiles(sandbox::Backend::Bwrap).await;
}
