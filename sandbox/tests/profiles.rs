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

fn python_project(root: &Path, fixed: bool, test: &str) {
    let body = if fixed {
        "max(subtotal - discount, 0)"
    } else {
        "subtotal - discount"
    };
    write(
        root,
        "cart/__init__.py",
        &format!("def total(subtotal, discount):\n    return {body}\n"),
    );
    write(root, "tests/test_coupon.py", test);
}

const PYTHON_TEST: &str = "from cart import total\n\n\ndef test_coupon_never_negative():\n    assert total(200, 300) == 0, \"payable total\"\n";
const PYTHON_BROKEN: &str = "from cart import totl\n\n\ndef test_coupon_never_negative():\n    assert totl(200, 300) == 0\n";

fn go_project(root: &Path, fixed: bool, test: &str) {
    write(root, "go.mod", "module example.com/shop\n\ngo 1.19\n");
    let body = if fixed {
        "if discount > subtotal {\n\t\treturn 0\n\t}\n\treturn subtotal - discount"
    } else {
        "return subtotal - discount"
    };
    write(
        root,
        "cart/cart.go",
        &format!("package cart\n\n// Total is what the customer pays.\nfunc Total(subtotal, discount int) int {{\n\t{body}\n}}\n"),
    );
    write(root, "cart/coupon_test.go", test);
}

const GO_TEST: &str = "package cart\n\nimport \"testing\"\n\nfunc TestCouponNeverNegative(t *testing.T) {\n\tif got := Total(200, 300); got != 0 {\n\t\tt.Errorf(\"payable total: Total(200, 300) = %d, want 0\", got)\n\t}\n}\n";
const GO_BROKEN: &str = "package cart\n\nimport \"testing\"\n\nfunc TestCouponNeverNegative(t *testing.T) {\n\tif Totl(200, 300) != 0 {\n\t\tt.Error(\"negative\")\n\t}\n}\n";

/// Runs `file` of the project in `dir` under `profile` and judges it for `test`.
async fn judge(
    sandbox: &dyn Sandbox,
    dir: &Path,
    profile: Profile,
    file: &str,
    test: &str,
) -> (Verdict, sandbox::RunOutcome) {
    share_read_only(dir).unwrap();
    let job = profile
        .job(
            dir,
            Some(file),
            &Toolchains::detect(),
            Duration::from_secs(240),
        )
        .unwrap();
    let outcome = sandbox.run(&job).await.unwrap();
    (profile.classify(&outcome, test), outcome)
}

/// Writes a project of one profile, buggy or fixed, with the given test file.
type Project<'a> = &'a dyn Fn(&Path, bool, &str);

/// One profile's case: profile, test file, test name, project, a good test, a test that
/// does not load, and the words the assertion must carry.
type Language<'a> = (
    Profile,
    &'a str,
    &'a str,
    Project<'a>,
    &'a str,
    &'a str,
    &'a str,
);

/// Python, Go and the generic JUnit profile: a reproduction, a pass on the fixed code, and a
/// test that does not load, each judged from the real runner's output.
async fn more_languages(sandbox: &dyn Sandbox, backend: sandbox::Backend) {
    let cases: [Language; 3] = [
        (
            Profile::Python,
            "tests/test_coupon.py",
            "test_coupon_never_negative",
            &python_project,
            PYTHON_TEST,
            PYTHON_BROKEN,
            "payable total",
        ),
        (
            Profile::Go,
            "cart/coupon_test.go",
            "TestCouponNeverNegative",
            &go_project,
            GO_TEST,
            GO_BROKEN,
            "payable total: Total(200, 300) = -100, want 0",
        ),
        (
            Profile::Junit,
            "tests/test_coupon.py",
            "test_coupon_never_negative",
            &|root: &Path, fixed: bool, test: &str| {
                python_project(root, fixed, test);
                write(
                    root,
                    sandbox::profile::JUNIT_SCRIPT,
                    "#!/bin/sh\n# Any runner that writes JUnit XML into $R2R_JUNIT_DIR will do.\nexec python3 -m pytest -q -p no:cacheprovider --junitxml=\"$R2R_JUNIT_DIR/suite.xml\" \"$@\"\n",
                );
            },
            PYTHON_TEST,
            PYTHON_BROKEN,
            "payable total",
        ),
    ];
    for (profile, file, test, project, good, broken, message) in cases {
        let buggy = tempfile::tempdir().unwrap();
        project(buggy.path(), false, good);
        let (verdict, outcome) = judge(sandbox, buggy.path(), profile, file, test).await;
        assert!(
            matches!(&verdict, Verdict::Reproduced { assertion, .. } if assertion.contains(message)),
            "{backend} {profile:?}: {verdict:?}\n{}\n{}",
            outcome.stdout,
            outcome.stderr
        );
        eprintln!(
            "[{backend}] {} reproduction in {} ms",
            profile.as_str(),
            outcome.duration_ms
        );
        let fixed = tempfile::tempdir().unwrap();
        project(fixed.path(), true, good);
        let (verdict, outcome) = judge(sandbox, fixed.path(), profile, file, test).await;
        assert_eq!(
            verdict,
            Verdict::Passed { test: test.into() },
            "{backend} {profile:?}: {}\n{}",
            outcome.stdout,
            outcome.stderr
        );
        let wrong = tempfile::tempdir().unwrap();
        project(wrong.path(), false, broken);
        let (verdict, outcome) = judge(sandbox, wrong.path(), profile, file, test).await;
        assert_eq!(
            verdict,
            Verdict::NotReproduced {
                reason: NotReproduced::CompileError
            },
            "{backend} {profile:?}: {}\n{}",
            outcome.stdout,
            outcome.stderr
        );
        // The fix checks run on the fixed code: green there, red on a file that does not
        // parse or is not formatted.
        let toolchains = Toolchains::detect();
        let changed: &[&str] = match profile {
            Profile::Go => &["cart/cart.go"],
            _ => &["cart/__init__.py"],
        };
        for (name, job) in profile
            .checks(fixed.path(), changed, &toolchains, Duration::from_secs(240))
            .unwrap()
        {
            let outcome = sandbox.run(&job).await.unwrap();
            assert_eq!(
                outcome.exit_code,
                Some(0),
                "{backend} {profile:?} {name}: {}\n{}",
                outcome.stdout,
                outcome.stderr
            );
        }
        let unparsable = tempfile::tempdir().unwrap();
        project(unparsable.path(), true, good);
        let (path, text) = match profile {
            Profile::Go => (
                "cart/cart.go",
                "package cart\nfunc Total(a,b int) int { return a-b }\n",
            ),
            _ => (
                "cart/__init__.py",
                "def total(subtotal, discount:\n    return 0\n",
            ),
        };
        write(unparsable.path(), path, text);
        share_read_only(unparsable.path()).unwrap();
        let checks = profile
            .checks(
                unparsable.path(),
                changed,
                &toolchains,
                Duration::from_secs(240),
            )
            .unwrap();
        if profile != Profile::Junit {
            assert!(!checks.is_empty(), "{profile:?} checks nothing");
        }
        for (name, job) in checks.into_iter().take(1) {
            let outcome = sandbox.run(&job).await.unwrap();
            assert_ne!(
                outcome.exit_code,
                Some(0),
                "{backend} {profile:?} {name} passed bad code"
            );
        }
    }
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

    more_languages(sandbox.as_ref(), backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_runs_each_profile() {
    profiles(sandbox::Backend::Docker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bwrap_runs_each_profile() {
    profiles(sandbox::Backend::Bwrap).await;
}
