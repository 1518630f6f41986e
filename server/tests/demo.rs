//! `r2r demo reproduce`: the shipped ShopLite fails its coupon test; the fixed one passes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[test]
fn the_shipped_shop_fails_the_coupon_test_on_its_assertion_in_every_runner() {
    for runner in ["docker", "bwrap", "host"] {
        let scratch = tempfile::tempdir().unwrap();
        let output = common::r2r(scratch.path())
            .args(["demo", "reproduce", "--sandbox", runner])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{runner}: {stdout}{stderr}");
        assert!(stdout.contains("REPRODUCED"), "{stdout}");
        assert!(
            stdout.contains(&format!("runner: {runner} ")),
            "the evidence names its runner: {stdout}"
        );
        assert!(stdout.contains("left: Rupees(-100.0)"), "{stdout}");
        assert!(stdout.contains("right: Rupees(0.0)"), "{stdout}");
    }
}

#[test]
fn the_fixed_shop_passes_the_coupon_test() {
    let scratch = tempfile::tempdir().unwrap();
    let output = common::r2r(scratch.path())
        .args(["demo", "reproduce", "--fixed"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("PASSED"), "{stdout}");
}

#[test]
fn a_missing_shop_is_a_clear_error() {
    let scratch = tempfile::tempdir().unwrap();
    let output = common::r2r(scratch.path())
        .args(["demo", "reproduce", "--shoplite", "/nonexistent/shop"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/nonexistent/shop/src/lib.rs"), "{stderr}");
}

/// `r2r demo run`: every step of the loop, in both sandboxes, within the goals' reach.
#[test]
fn the_whole_loop_runs_as_a_controlled_acceptance_run_in_both_sandboxes() {
    for backend in ["docker", "bwrap"] {
        let scratch = tempfile::tempdir().unwrap();
        let output = common::r2r(scratch.path())
            .args(["demo", "run", "--sandbox", backend])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{backend}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.starts_with("CONTROLLED ACCEPTANCE RUN"), "{stdout}");
        assert!(stdout.contains(&format!("{backend} sandbox")), "{stdout}");
        assert!(stdout.contains("simulated demo"), "{stdout}");
        let steps: Vec<&str> = stdout
            .lines()
            .filter(|line| line.get(2..4) == Some(". "))
            .collect();
        assert_eq!(steps.len(), 15, "{stdout}");
        assert!(
            steps.iter().all(|line| line[4..].starts_with("ok")),
            "{stdout}"
        );
        for expected in [
            "draft PR #1 at ",
            "suite ",
            "format ",
            "lint ",
            "owner merges (real git merge)",
            "serves exactly ",
            "reporter confirms the fix",
            "confirmation → tested draft PR → merge: ",
            "merge → verified: ",
            "RESULT: every step held",
        ] {
            assert!(stdout.contains(expected), "{expected}: {stdout}");
        }
    }
}

/// A step that does not hold stops the run, says which, and exits 1: here the scripted
/// fixer meets a ShopLite whose pinning test is gone, so its script does not apply.
#[test]
fn a_step_that_does_not_hold_fails_the_run() {
    let scratch = tempfile::tempdir().unwrap();
    let shop = scratch.path().join("shop");
    let lib = std::fs::read_to_string(common::repo_root().join("shoplite/src/lib.rs")).unwrap();
    assert!(lib.contains(shoplite::seeded::BUG1_PIN));
    std::fs::create_dir_all(shop.join("src")).unwrap();
    std::fs::create_dir_all(shop.join("regressions")).unwrap();
    std::fs::write(
        shop.join("src/lib.rs"),
        lib.replace(shoplite::seeded::BUG1_PIN, ""),
    )
    .unwrap();
    std::fs::copy(
        common::repo_root().join("shoplite/regressions/coupon_save300.rs"),
        shop.join("regressions/coupon_save300.rs"),
    )
    .unwrap();
    let output = common::r2r(scratch.path())
        .args(["demo", "run", "--sandbox", "bwrap", "--shoplite"])
        .arg(&shop)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let failed: Vec<&str> = stdout.lines().filter(|l| l.contains(" FAIL ")).collect();
    assert_eq!(failed.len(), 1, "{stdout}");
    assert!(failed[0].contains("fix drafted"), "{stdout}");
    assert!(stdout.contains("RESULT: FAILED"), "{stdout}");
    assert!(stdout.contains("confirmation → tested draft PR → merge: did not complete"));

    let output = common::r2r(scratch.path())
        .args(["demo", "run", "--shoplite", "/nonexistent/shop"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no ShopLite crate there"));
}
