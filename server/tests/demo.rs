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
