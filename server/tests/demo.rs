//! `r2r demo reproduce`: the shipped ShopLite fails its coupon test; the fixed one passes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use futures_util::FutureExt;

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
    for file in [
        "regressions/coupon_save300.rs",
        "src/main.rs",
        "COMMIT",
        ".gitattributes",
    ] {
        std::fs::copy(
            common::repo_root().join("shoplite").join(file),
            shop.join(file),
        )
        .unwrap();
    }
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

/// The seeded ShopLite repository builds a shop that says exactly which commit it was built
/// from — taken from `git archive` of that commit, never from an argument — and serves the
/// cart total over HTTP.
#[tokio::test]
async fn shoplite_built_from_an_archive_of_a_commit_serves_the_shop_and_names_that_commit() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("shoplite.git");
    server::cli::demo_run::seed_forge(&common::repo_root().join("shoplite"), &bare)
        .await
        .unwrap();
    let commit = common::git(&bare, &["rev-parse", "refs/heads/main"]);
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let archive = std::process::Command::new("git")
        .arg("-C")
        .arg(&bare)
        .args(["archive", "--format=tar", &commit])
        .output()
        .unwrap();
    assert!(archive.status.success());
    let mut untar = std::process::Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(&tree)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    untar
        .stdin
        .take()
        .unwrap()
        .write_all(&archive.stdout)
        .unwrap();
    assert!(untar.wait().unwrap().success());
    assert_eq!(
        std::fs::read_to_string(tree.join("COMMIT")).unwrap().trim(),
        commit,
        "git archive fills in the commit"
    );
    let build = std::process::Command::new("cargo")
        .args(["build", "--offline", "--quiet", "--bin", "shoplite"])
        .current_dir(&tree)
        .env("CARGO_TARGET_DIR", dir.path().join("target"))
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let mut shop = std::process::Command::new(dir.path().join("target/debug/shoplite"))
        .args(["--addr", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(shop.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let base = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    let health: serde_json::Value = reqwest::get(format!("{base}/api/health"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let page = reqwest::get(format!("{base}/?price=200&qty=1&coupon=SAVE300"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    shop.kill().unwrap();
    let _ = shop.wait();
    assert_eq!(health["service"], "shoplite");
    assert_eq!(health["commit"], commit.as_str());
    assert_eq!(health["status"], "ok");
    // The shipped shop still has its seeded bug: the reporter would see it here.
    assert!(page.contains("Payable: <strong>−₹100"), "{page}");
}

/// Docker is required under the test command; elsewhere its absence is said and skipped.
async fn docker_available() -> bool {
    let ok = std::env::var("R2R_SANDBOX_REQUIRED").as_deref() == Ok("1")
        || sandbox::connect(sandbox::Backend::Docker, sandbox::docker::DEFAULT_IMAGE)
            .await
            .is_ok();
    if !ok {
        eprintln!("SKIPPED: no Docker sandbox here (./scripts/sandbox-host.sh prepares one)");
    }
    ok
}

/// Polls `check` every half second for at most `seconds`.
async fn eventually<F, Fut>(seconds: u64, what: &str, mut check: F) -> serde_json::Value
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<serde_json::Value>>,
{
    let until = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(
            std::time::Instant::now() < until,
            "{what} did not happen within {seconds} s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// With `R2R_DEPLOY=on` every new head of the forge's default branch is built in the sandbox,
/// started on its own port, served at `/live/shoplite` and recorded by the recorder; a head
/// that does not build leaves the last good release live and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deployer_releases_each_new_head_and_keeps_the_last_good_one_when_a_build_fails() {
    if !docker_available().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("shoplite.git");
    server::cli::demo_run::seed_forge(&common::repo_root().join("shoplite"), &bare)
        .await
        .unwrap();
    let shipped = common::git(&bare, &["rev-parse", "refs/heads/main"]);
    let recorder = server::cli::setup::new_role_token(domain::Role::Recorder);
    let releases = dir.path().join("releases");
    let server = common::start_server_with(
        &format!("sqlite://{}/desk.db", dir.path().display()),
        &[
            ("R2R_LOCAL_FORGE", bare.to_str().unwrap()),
            ("R2R_DEPLOY", "on"),
            ("R2R_DEPLOY_DIR", releases.to_str().unwrap()),
            ("R2R_SANDBOX_BACKEND", "docker"),
            ("R2R_RECORDER_TOKEN", recorder.as_str()),
        ],
    );
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let health = || {
        let request = client.get(format!("{base}/live/shoplite/api/health"));
        async move {
            let answer = request.send().await.ok()?;
            answer.json::<serde_json::Value>().await.ok()
        }
    };
    let release = || {
        let request = client
            .get(format!("{base}/api/v1/crew"))
            .bearer_auth(&recorder);
        async move {
            let answer: serde_json::Value = request.send().await.ok()?.json().await.ok()?;
            Some(answer["release"].clone())
        }
    };

    // The shipped head is built, started, served at the public address and recorded.
    let live = eventually(240, "the first release", || async {
        health().await.filter(|h| h["commit"] == shipped.as_str())
    })
    .await;
    assert_eq!(live["service"], "shoplite");
    let page = client
        .get(format!(
            "{base}/live/shoplite?price=200&qty=1&coupon=SAVE300"
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("Payable: <strong>−₹100"), "{page}");
    let recorded = eventually(60, "the recorder's record", || async {
        release()
            .await
            .filter(|r| r["step"] == "live" && r["commit"] == shipped.as_str())
    })
    .await;
    assert!(
        recorded["detail"]
            .as_str()
            .unwrap()
            .contains("recorded as shoplite-"),
        "{recorded}"
    );

    // A head that does not build: the shipped release stays live, and the desk says why.
    let work = dir.path().join("work");
    common::git(
        dir.path(),
        &["clone", "--quiet", bare.to_str().unwrap(), "work"],
    );
    common::write(&work, "src/main.rs", "fn main() { this is not rust }\n");
    common::git(
        &work,
        &["commit", "--quiet", "-am", "A change that does not build"],
    );
    common::git(&work, &["push", "--quiet", "origin", "main"]);
    let broken = common::git(&work, &["rev-parse", "HEAD"]);
    let failed = eventually(240, "the failed release", || async {
        release()
            .await
            .filter(|r| r["step"] == "failed" && r["commit"] == broken.as_str())
    })
    .await;
    assert!(
        failed["detail"].as_str().unwrap().contains("the build of"),
        "{failed}"
    );
    assert_eq!(failed["live"], shipped.as_str());
    let still = health().await.unwrap();
    assert_eq!(
        still["commit"],
        shipped.as_str(),
        "the last good release stays live"
    );
    // The owners are told, with the build's reason.
    let store = store::Store::connect(
        &store::DatabaseUrl::parse(&format!("sqlite://{}/desk.db", dir.path().display())).unwrap(),
    )
    .await
    .unwrap();
    let told = store
        .outbox_job(&format!("release_failed:{broken}"))
        .await
        .unwrap()
        .expect("no owners' notice of the failed release");
    assert_eq!(told.kind, "notify_owners_release_failed");
    assert!(
        told.payload["reason"].contains("the build of"),
        "{:?}",
        told.payload
    );
    drop(server);
}

/// Fault injection (127.0.0.1 only, bounded): the desk is killed with SIGKILL while its
/// deployer builds a release, and started again on the same database and forge. The new desk
/// builds the head again, serves it at `/live/shoplite` and the recorder records it: a
/// release cut short is redone, not lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_desk_killed_while_it_deploys_releases_the_head_after_a_restart() {
    if !docker_available().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("shoplite.git");
    server::cli::demo_run::seed_forge(&common::repo_root().join("shoplite"), &bare)
        .await
        .unwrap();
    let shipped = common::git(&bare, &["rev-parse", "refs/heads/main"]);
    let recorder = server::cli::setup::new_role_token(domain::Role::Recorder);
    let releases = dir.path().join("releases");
    let url = format!("sqlite://{}/desk.db", dir.path().display());
    let env = [
        ("R2R_LOCAL_FORGE", bare.to_str().unwrap()),
        ("R2R_DEPLOY", "on"),
        ("R2R_DEPLOY_DIR", releases.to_str().unwrap()),
        ("R2R_SANDBOX_BACKEND", "docker"),
        ("R2R_RECORDER_TOKEN", recorder.as_str()),
    ];
    let client = reqwest::Client::new();
    let release_of = |base: String| {
        let request = client
            .get(format!("{base}/api/v1/crew"))
            .bearer_auth(&recorder);
        async move {
            let answer: serde_json::Value = request.send().await.ok()?.json().await.ok()?;
            Some(answer["release"].clone())
        }
    };
    let server = common::start_server_with(&url, &env);
    let base = server.base.clone();
    let step = eventually(120, "the deployer to start on the head", || {
        release_of(base.clone()).map(|r| {
            r.filter(|r| {
                r["commit"] == shipped.as_str()
                    && ["building", "starting", "checking"]
                        .contains(&r["step"].as_str().unwrap_or(""))
            })
        })
    })
    .await;
    drop(server); // SIGKILL mid-release
    eprintln!("killed while {}", step["step"]);
    let server = common::start_server_with(&url, &env);
    let base = server.base.clone();
    let recorded = eventually(240, "the release after the restart", || {
        release_of(base.clone())
            .map(|r| r.filter(|r| r["step"] == "live" && r["commit"] == shipped.as_str()))
    })
    .await;
    assert!(
        recorded["detail"]
            .as_str()
            .unwrap()
            .contains("recorded as shoplite-"),
        "{recorded}"
    );
    let health: serde_json::Value = client
        .get(format!("{base}/live/shoplite/api/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["commit"], shipped.as_str());
    drop(server);
}
