//! `r2r demo reproduce`: the shipped ShopLite fails its coupon test; the fixed one passes.

use crate::common;

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
    std::fs::create_dir_all(shop.join("static")).unwrap();
    for file in [
        "regressions/coupon_save300.rs",
        "src/main.rs",
        "static/shop.css",
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
            // Its own port, arguments and environment: the desk dials 9090 inside the
            // program's namespace, and the program sees the two variables, nothing else.
            ("R2R_DEPLOY_PORT", "9090"),
            ("R2R_DEPLOY_ARGS", "--addr 127.0.0.1:{port}"),
            ("R2R_DEPLOY_ENV", "SHOP_NOTE=launch-env-ok; TZ=UTC"),
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
    assert!(
        recorded["detail"]
            .as_str()
            .unwrap()
            .contains("1 asset(s) served as built"),
        "the shop's stylesheet was checked: {recorded}"
    );

    // The immutable address answers for exactly that commit, through the desk's proxy; any
    // other commit there is nobody.
    let immutable: serde_json::Value = client
        .get(format!("{base}/release/shoplite/{shipped}/api/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(immutable["commit"], shipped.as_str());
    assert_eq!(immutable["instance"], live["instance"], "the same instance");
    let other = client
        .get(format!(
            "{base}/release/shoplite/{}/api/health",
            "0".repeat(40)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
    // The releases are the desk's alone: another local account cannot enter the folder, so it
    // cannot swap an artifact between its build and its start; the artifact's hash was kept.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&releases).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the release folder");
    let swap = std::process::Command::new("setpriv")
        .args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            "sh",
            "-c",
        ])
        .arg(format!(
            "echo swapped > {}/{shipped}/shoplite",
            releases.display()
        ))
        .output()
        .unwrap();
    assert!(!swap.status.success(), "another account wrote the artifact");
    let kept = std::fs::read_to_string(releases.join(&shipped).join("shoplite.sha256")).unwrap();
    assert!(
        recorded["detail"]
            .as_str()
            .unwrap()
            .contains(kept.split_whitespace().next().unwrap()),
        "{recorded}: {kept}"
    );

    let work = dir.path().join("work");
    common::git(
        dir.path(),
        &["clone", "--quiet", bare.to_str().unwrap(), "work"],
    );

    // A head on which the project's own suite fails is held back: never built or served, the
    // shipped release stays live, and the desk names the failing test in the runner's words.
    common::write(
        &work,
        "tests/release_gate.rs",
        "#[test]\nfn totals_never_go_below_zero() {\n    assert_eq!(1 + 1, 3, \"red on purpose\");\n}\n",
    );
    common::git(&work, &["add", "-A"]);
    common::git(&work, &["commit", "--quiet", "-m", "A red suite"]);
    common::git(&work, &["push", "--quiet", "origin", "main"]);
    let red = common::git(&work, &["rev-parse", "HEAD"]);
    let held = eventually(240, "the held release", || async {
        release()
            .await
            .filter(|r| r["step"] == "held" && r["commit"] == red.as_str())
    })
    .await;
    let said = held["detail"].as_str().unwrap();
    assert!(said.starts_with("release held: "), "{held}");
    assert!(said.contains("totals_never_go_below_zero"), "{held}");
    assert_eq!(held["live"], shipped.as_str());
    assert_eq!(health().await.unwrap()["commit"], shipped.as_str());
    assert!(!releases.join(&red).exists(), "a held head is never built");
    common::git(&work, &["rm", "--quiet", "tests/release_gate.rs"]);
    common::git(&work, &["commit", "--quiet", "-m", "Green again"]);

    // A head that does not build cannot pass its suite either: held, with the compiler's
    // words; the shipped release stays live.
    common::write(&work, "src/main.rs", "fn main() { this is not rust }\n");
    common::git(
        &work,
        &["commit", "--quiet", "-am", "A change that does not build"],
    );
    common::git(&work, &["push", "--quiet", "origin", "main"]);
    let broken = common::git(&work, &["rev-parse", "HEAD"]);
    let failed = eventually(240, "the held release", || async {
        release()
            .await
            .filter(|r| r["step"] == "held" && r["commit"] == broken.as_str())
    })
    .await;
    let said = failed["detail"].as_str().unwrap();
    assert!(said.contains("its suite did not pass"), "{failed}");
    assert!(said.contains("error"), "{failed}");
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
        told.payload["reason"].contains("its suite did not pass"),
        "{:?}",
        told.payload
    );
    let told = store
        .outbox_job(&format!("release_failed:{red}"))
        .await
        .unwrap()
        .expect("no owners' notice of the held release");
    assert!(
        told.payload["reason"].contains("totals_never_go_below_zero"),
        "{:?}",
        told.payload
    );

    // A released program is untrusted code: one that goes looking for the desk's database, its
    // data folder, its process, its API and its environment finds none of them, yet serves.
    let database = dir.path().join("desk.db");
    let planted = dir.path().join("planted-by-release");
    let desk_port = base.rsplit(':').next().unwrap().to_owned();
    let main = std::fs::read_to_string(common::repo_root().join("shoplite/src/main.rs")).unwrap();
    let arm = "\"/\" => (\"200 OK\", \"text/html; charset=utf-8\", page(query)),";
    assert!(
        main.contains(arm),
        "ShopLite's routes changed; update the probe"
    );
    let css_arm = "include_str!(\"../static/shop.css\").to_owned()";
    assert!(
        main.contains(css_arm),
        "ShopLite's stylesheet route changed; update the probe"
    );
    let hostile = main.replace(
        arm,
        &format!("{arm}\n        \"/probe\" => (\"200 OK\", \"text/plain\", probe()),"),
    ) + &format!(
        r#"
fn probe() -> String {{
    let mut out = String::new();
    for path in [{database:?}, "/proc/{desk_pid}/environ", "/var/run/docker.sock"] {{
        match std::fs::read(path) {{
            Ok(bytes) => out.push_str(&format!("READ {{path}} {{}}\n", bytes.len())),
            Err(error) => out.push_str(&format!("DENIED {{path}} {{error}}\n")),
        }}
    }}
    match std::fs::write({planted:?}, "x") {{
        Ok(()) => out.push_str("WROTE the desk's folder\n"),
        Err(error) => out.push_str(&format!("DENIED write {{error}}\n")),
    }}
    for port in [{desk_port}, 5432] {{
        let address: std::net::SocketAddr = format!("127.0.0.1:{{port}}").parse().unwrap();
        match std::net::TcpStream::connect_timeout(&address, std::time::Duration::from_secs(1)) {{
            Ok(_) => out.push_str(&format!("CONNECTED {{port}}\n")),
            Err(error) => out.push_str(&format!("REFUSED {{port}} {{error}}\n")),
        }}
    }}
    for (name, _) in std::env::vars() {{
        out.push_str(&format!("ENV {{name}}\n"));
    }}
    out.push_str(&format!("UID {{}}\n", std::fs::read_to_string("/proc/self/status").unwrap_or_default().lines().find(|l| l.starts_with("Uid:")).unwrap_or("")));
    out
}}
"#,
        desk_pid = server.pid(),
    );
    common::write(&work, "src/main.rs", &hostile);
    common::git(
        &work,
        &["commit", "--quiet", "-am", "A program that looks around"],
    );
    common::git(&work, &["push", "--quiet", "--force", "origin", "main"]);
    let looking = common::git(&work, &["rev-parse", "HEAD"]);
    eventually(240, "the hostile release to go live", || async {
        health().await.filter(|h| h["commit"] == looking.as_str())
    })
    .await;
    let found = client
        .get(format!("{base}/live/shoplite/probe"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(found.contains("DENIED"), "{found}");
    for escaped in ["READ ", "WROTE", "CONNECTED"] {
        assert!(!found.contains(escaped), "{escaped}: {found}");
    }
    let names: Vec<&str> = found
        .lines()
        .filter_map(|l| l.strip_prefix("ENV "))
        .collect();
    assert!(
        names.iter().all(|n| [
            "PATH",
            "HOME",
            "TMPDIR",
            "LANG",
            "HOSTNAME",
            "SHOP_NOTE",
            "TZ"
        ]
        .contains(n)),
        "only a bare environment and the launch's own: {names:?}"
    );
    assert!(
        names.contains(&"SHOP_NOTE") && names.contains(&"TZ"),
        "the launch's environment reached the program: {names:?}"
    );
    assert!(found.contains("UID Uid:\t10001"), "{found}");
    assert!(!planted.exists());
    // A release that serves another stylesheet than the one its build hashed from its tree
    // is refused by the recorder: the release before it is live again at once, and the
    // refused one is never offered or started again.
    common::write(
        &work,
        "src/main.rs",
        &hostile.replace(css_arm, "\"body { display: none }\".to_owned()"),
    );
    common::git(&work, &["commit", "--quiet", "-am", "Another stylesheet"]);
    common::git(&work, &["push", "--quiet", "origin", "main"]);
    let tampered = common::git(&work, &["rev-parse", "HEAD"]);
    let refused = eventually(240, "the recorder's refusal", || async {
        release().await.filter(|r| {
            r["commit"] == tampered.as_str()
                && r["detail"]
                    .as_str()
                    .is_some_and(|d| d.contains("not released"))
        })
    })
    .await;
    let detail = refused["detail"].as_str().unwrap();
    assert!(
        detail.contains("asset static/shop.css")
            && detail.contains("manifest")
            && detail.contains("previous release stays live"),
        "{refused}"
    );
    assert_eq!(
        health().await.map(|h| h["commit"].clone()),
        Some(serde_json::Value::from(looking.as_str())),
        "the release before it serves again"
    );
    assert!(releases.join(&tampered).join("shoplite.refused").exists());
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
                    && ["testing", "building", "starting", "checking"]
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

/// Two desk servers on one PostgreSQL: one deployer for the service between them (a
/// leadership in the database, renewed by the leader's heartbeat). The leader builds and
/// serves the release; the other builds nothing and answers `/live/shoplite` by asking the
/// leader. Killed, the leader's leadership runs out within seconds and the other server
/// releases the head itself and serves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_database_share_one_deployer_and_both_serve_live() {
    if !docker_available().await || std::env::var("R2R_TEST_POSTGRES_URL").is_err() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("shoplite.git");
    server::cli::demo_run::seed_forge(&common::repo_root().join("shoplite"), &bare)
        .await
        .unwrap();
    let shipped = common::git(&bare, &["rev-parse", "refs/heads/main"]);
    let recorder = server::cli::setup::new_role_token(domain::Role::Recorder);
    let database = store::testing::fresh_postgres().await;
    let store::DatabaseUrl::Postgres { url } = &database else {
        unreachable!()
    };
    let env = |releases: &std::path::Path| {
        vec![
            (
                "R2R_LOCAL_FORGE".to_owned(),
                bare.to_str().unwrap().to_owned(),
            ),
            ("R2R_DEPLOY".to_owned(), "on".to_owned()),
            (
                "R2R_DEPLOY_DIR".to_owned(),
                releases.to_str().unwrap().to_owned(),
            ),
            ("R2R_SANDBOX_BACKEND".to_owned(), "docker".to_owned()),
            (
                "R2R_RECORDER_TOKEN".to_owned(),
                recorder.as_str().to_owned(),
            ),
        ]
    };
    let start = |releases: std::path::PathBuf| {
        let env = env(&releases);
        let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        common::start_server_with(url, &pairs)
    };
    let client = reqwest::Client::new();
    let health_of = |base: String| {
        let request = client.get(format!("{base}/live/shoplite/api/health"));
        let shipped = shipped.clone();
        async move {
            let answer: serde_json::Value = request.send().await.ok()?.json().await.ok()?;
            (answer["commit"] == shipped.as_str()).then_some(answer)
        }
    };
    let (first_dir, second_dir) = (dir.path().join("releases-a"), dir.path().join("releases-b"));
    let first = start(first_dir.clone());
    eventually(180, "the first server's release", || {
        health_of(first.base.clone())
    })
    .await;
    let second = start(second_dir.clone());
    // The second server answers /live through the leader, and builds nothing of its own.
    eventually(60, "the live release through the second server", || {
        health_of(second.base.clone())
    })
    .await;
    // The shop's front page travels too; a path that climbs out of the release does not.
    let front = client
        .get(format!("{}/live/shoplite", second.base))
        .send()
        .await
        .unwrap();
    assert_eq!(front.status(), 200);
    let answer = client
        .get(format!(
            "{}/live/shoplite/..%2F..%2Fapi%2Fhealth",
            second.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 404);
    // As sent, not as a client library would tidy it.
    for climb in ["../../api/health", "%2E%2E/%2E%2E/report", "./x"] {
        use std::io::{Read, Write};
        let address = second.base.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        write!(
            stream,
            "GET /live/shoplite/{climb} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 404"), "{climb}: {answer}");
    }
    let store = store::Store::connect(&database).await.unwrap();
    let leader = store
        .leader_of("deployer:shoplite", server::clock::now_ms())
        .await
        .unwrap()
        .expect("a leader");
    assert_eq!(leader.address, first.base);
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert!(
        !second_dir.join("live").exists(),
        "the second server released nothing while the first led"
    );
    assert_eq!(
        store
            .live_instances(server::clock::now_ms() - 10_000)
            .await
            .unwrap()
            .len(),
        2
    );

    // The leader dies: the other server takes the deployer over and serves the release.
    let killed_at = std::time::Instant::now();
    drop(first);
    eventually(180, "the release served by the second server alone", || {
        health_of(second.base.clone())
    })
    .await;
    let leader = store
        .leader_of("deployer:shoplite", server::clock::now_ms())
        .await
        .unwrap()
        .expect("a leader");
    assert_eq!(leader.address, second.base);
    assert!(second_dir.join("live").exists());
    eprintln!(
        "the second server served the release {:.1} s after the leader was killed",
        killed_at.elapsed().as_secs_f64()
    );
    drop(second);
}

/// A project added with `r2r project add --deploy SERVICE` gets a deployer of its own beside
/// the environment's (which deploys nothing here): its branch's head is built, served at
/// `/live/<service>` and recorded as that project's; a bug of the project that an owner merges
/// is released and recorded, and the bug moves to `deployed`. The command line refuses a
/// service for a project that is not Rust and a service another project already has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_that_names_a_service_is_released_and_its_merged_bug_goes_live() {
    use domain::workflow::{decide, Actor, Command, Evidence, Policy, Reproduction, Rerun};
    use domain::Role;
    use serde_json::{json, Value};
    if !docker_available().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("shop.git");
    server::cli::demo_run::seed_forge(&common::repo_root().join("shoplite"), &bare)
        .await
        .unwrap();
    let shipped = common::git(&bare, &["rev-parse", "refs/heads/main"]);
    let releases = dir.path().join("releases");
    let desk = common::owner_desk(&[
        ("R2R_DEPLOY_DIR", releases.to_str().unwrap()),
        ("R2R_SANDBOX_BACKEND", "docker"),
    ]);
    let base = desk.server.base.clone();
    let token = |role: Role| desk.tokens[&role].clone();
    let client = reqwest::Client::new();

    let env_file = dir.path().join("project.env");
    std::fs::write(&env_file, format!("DATABASE_URL={}\n", desk.database_url)).unwrap();
    let project = |args: &[&str]| {
        let output = common::r2r_with_env_file(&env_file)
            .arg("project")
            .args(args)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr),
        )
    };
    let (code, said) = project(&[
        "add",
        "--id",
        "shop",
        "--components",
        "shop",
        "--profile",
        "rust",
        "--deploy",
        "shoplite",
        "--forge",
        bare.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("released at /live/shoplite"), "{said}");
    let other = dir.path().join("other.git");
    forge::LocalForge::init(&other, "main").await.unwrap();
    for (args, words) in [
        (
            vec!["--profile", "python", "--deploy", "tally"],
            "--deploy: the deployer builds Rust projects only",
        ),
        (
            vec!["--profile", "rust", "--deploy", "shoplite"],
            "--deploy: /live/shoplite is already the project \"shop\"'s service",
        ),
        (
            vec!["--profile", "rust", "--deploy", "Shop Lite"],
            "--deploy: expected a service name",
        ),
    ] {
        let mut all = vec![
            "add",
            "--id",
            "other",
            "--components",
            "other",
            "--forge",
            other.to_str().unwrap(),
        ];
        all.extend(args);
        let (code, said) = project(&all);
        assert_eq!(code, Some(1), "{said}");
        assert!(said.contains(words), "{words}: {said}");
    }

    // The project's head: built, served, recorded as the project's.
    let health = || {
        let request = client.get(format!("{base}/live/shoplite/api/health"));
        async move { request.send().await.ok()?.json::<Value>().await.ok() }
    };
    let board = || {
        let request = client
            .get(format!("{base}/api/v1/crew"))
            .bearer_auth(token(Role::Recorder));
        async move {
            let answer: Value = request.send().await.ok()?.json().await.ok()?;
            answer["releases"]
                .as_array()?
                .iter()
                .find(|r| r["project"] == "shop")
                .cloned()
        }
    };
    eventually(240, "the project's first release", || async {
        health().await.filter(|h| h["commit"] == shipped.as_str())
    })
    .await;
    let recorded = eventually(60, "the recorder's record of it", || async {
        board()
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
    assert_eq!(recorded["service"], "shoplite");

    // An owner changes the launch to one the program refuses: the deployer starts again with
    // it, the program does not start, and the release keeps being served as it was started
    // before, saying why; the launch corrected, it is served with it.
    let (code, said) = project(&[
        "edit",
        "--id",
        "shop",
        "--launch-args=--no-such-flag {addr}",
    ]);
    assert_eq!(code, Some(0), "{said}");
    let kept = eventually(120, "the refused launch said on the board", || async {
        board().await.filter(|r| {
            r["detail"]
                .as_str()
                .is_some_and(|d| d.contains("new launch does not start it"))
        })
    })
    .await;
    assert_eq!(kept["commit"], shipped.as_str(), "{kept}");
    assert_eq!(
        health().await.map(|h| h["commit"].clone()),
        Some(Value::from(shipped.as_str())),
        "still served"
    );
    let (code, said) = project(&["edit", "--id", "shop", "--launch-args=--addr {addr}"]);
    assert_eq!(code, Some(0), "{said}");
    eventually(120, "the corrected launch", || async {
        board()
            .await
            .filter(|r| r["step"] == "live" && r["commit"] == shipped.as_str())
    })
    .await;

    // A bug of the project, reproduced (the engine's evidence as the desk's re-run gives it),
    // confirmed by its reporter, fixed on a branch, approved and merged by an owner.
    let (bug, capability) = common::file_report(
        &base,
        json!({"component": "shop", "title": "The cart page has no heading", "what_happened": "no heading", "expected": "a heading", "steps": "open the cart"}),
    )
    .await;
    let post = |path: String, bearer: String, body: Value| {
        let request = client
            .post(format!("{base}{path}"))
            .bearer_auth(bearer)
            .json(&body);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let (status, answer) = post(
        format!("/api/v1/bugs/{bug}/reproduction/start"),
        token(Role::Manager),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let store = store::Store::connect(&store::DatabaseUrl::parse(&desk.database_url).unwrap())
        .await
        .unwrap();
    let now = server::clock::now_ms();
    store
        .apply(&bug, now, |b| {
            let evidence = Evidence {
                rerun: Some(Rerun::Reproduced),
                ..Evidence::default()
            };
            let reproduction = Reproduction {
                id: "run-1".into(),
                test_path: "tests/heading.rs".into(),
                test_sha256: "6".repeat(64),
                assertion: "no <h1> on the cart page".into(),
                summary: None,
            };
            let policy = Policy {
                allowed_components: vec!["shop".into()],
                ..Policy::default()
            };
            decide(
                b,
                &Command::ProposeReproduction { reproduction },
                &Actor::Role {
                    role: Role::Reproducer,
                },
                &evidence,
                &policy,
                now,
            )
        })
        .await
        .unwrap();
    let tracking: Value = client
        .get(format!("{base}/api/v1/track"))
        .header("x-r2r-capability", &capability)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let answered = client
        .post(format!("{base}/api/v1/track/answer"))
        .header("x-r2r-capability", &capability)
        .json(&json!({"request_id": tracking["question"]["request_id"], "kind": "reproduction", "yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let (status, answer) = post(
        format!("/api/v1/bugs/{bug}/fix/start"),
        token(Role::Fixer),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    common::git(
        dir.path(),
        &["clone", "--quiet", bare.to_str().unwrap(), "work"],
    );
    let work = dir.path().join("work");
    common::git(&work, &["checkout", "--quiet", "-b", "fix/heading"]);
    let lib = std::fs::read_to_string(work.join("src/lib.rs")).unwrap();
    std::fs::write(
        work.join("src/lib.rs"),
        format!("{lib}\n// The cart page names itself.\n"),
    )
    .unwrap();
    common::git(&work, &["commit", "--quiet", "-am", "Name the cart page"]);
    common::git(&work, &["push", "--quiet", "origin", "fix/heading"]);
    let head = common::git(&work, &["rev-parse", "HEAD"]);
    let opened = common::open_measured_draft(&desk.database_url, &bare, &bug, "fix/heading").await;
    assert_eq!(opened, head);
    let (cookie, csrf) = common::sign_in(&client, &base, common::OWNER, common::PASSWORD).await;
    let owner_post = |path: String| {
        let request = client
            .post(format!("{base}{path}"))
            .header("cookie", &cookie)
            .header("x-csrf-token", &csrf)
            .json(&json!({"head": head}));
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let merge = response
                .headers()
                .get("x-r2r-merge-commit")
                .map(|v| v.to_str().unwrap().to_owned());
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
                merge,
            )
        }
    };
    let (status, answer, _) = owner_post(format!("/api/v1/bugs/{bug}/approve")).await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer, merge) = owner_post(format!("/api/v1/bugs/{bug}/merge")).await;
    assert_eq!(
        (status, answer["state"].as_str()),
        (200, Some("merged")),
        "{answer}"
    );
    let merge = merge.unwrap();

    // The project's deployer releases the merge; its recorder records it as the project's.
    let view = eventually(240, "the merged bug to be deployed", || {
        let request = client
            .get(format!("{base}/api/v1/bugs/{bug}"))
            .bearer_auth(token(Role::Manager));
        async move {
            let view: Value = request.send().await.ok()?.json().await.ok()?;
            (view["bug"]["state"] == "deployed").then_some(view)
        }
    })
    .await;
    assert_eq!(health().await.unwrap()["commit"], merge.as_str(), "{view}");
    // A deployment is one project's: an unknown one is refused by name.
    let (status, answer) = post(
        "/api/v1/deployments".into(),
        token(Role::Recorder),
        json!({"deployment": "x-1", "commit": merge, "project": "nope"}),
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (404, Some("unknown_project")),
        "{answer}"
    );
}

/// A head that lands while the crew's measurement holds the only sandbox slot is released
/// once the slot is free (a release waits its turn; it was refused after 2 s and never tried
/// again, so the merge was never released).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_that_lands_while_the_sandbox_is_busy_is_released_when_it_is_free() {
    use domain::Role;
    use serde_json::{json, Value};
    if !docker_available().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("shoplite.git");
    server::cli::demo_run::seed_forge(&common::repo_root().join("shoplite"), &bare)
        .await
        .unwrap();
    let shipped = common::git(&bare, &["rev-parse", "refs/heads/main"]);
    let recorder = server::cli::setup::new_role_token(Role::Recorder);
    let reproducer = server::cli::setup::new_role_token(Role::Reproducer);
    let releases = dir.path().join("releases");
    let server = common::start_server_with(
        &format!("sqlite://{}/desk.db", dir.path().display()),
        &[
            ("R2R_LOCAL_FORGE", bare.to_str().unwrap()),
            ("R2R_DEPLOY", "on"),
            ("R2R_DEPLOY_DIR", releases.to_str().unwrap()),
            ("R2R_SANDBOX_BACKEND", "docker"),
            ("R2R_SANDBOX_CONCURRENCY", "1"),
            ("R2R_RECORDER_TOKEN", recorder.as_str()),
            ("R2R_REPRODUCER_TOKEN", reproducer.as_str()),
        ],
    );
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let live_commit = || {
        let request = client.get(format!("{base}/live/shoplite/api/health"));
        async move {
            let health: Value = request.send().await.ok()?.json().await.ok()?;
            health["commit"].as_str().map(str::to_owned)
        }
    };
    eventually(240, "the first release", || async {
        live_commit()
            .await
            .filter(|c| *c == shipped)
            .map(Value::String)
    })
    .await;

    // A measurement that holds the only slot for about 20 s.
    let (bug, _) = common::file_report(&base, json!({"component": "shoplite", "title": "The shop is slow to total a cart", "what_happened": "slow", "expected": "fast", "steps": "add a line"})).await;
    let started = client
        .post(format!("{base}/api/v1/bugs/{bug}/reproduction/start"))
        .bearer_auth(&reproducer)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), 200);
    let slow = "#[test]\nfn totals_in_time() {\n    std::thread::sleep(std::time::Duration::from_secs(20));\n    assert_eq!(1, 2, \"too slow\");\n}\n";
    let proposal = tokio::spawn(
        client
            .post(format!("{base}/api/v1/bugs/{bug}/reproduction"))
            .bearer_auth(&reproducer)
            .json(&json!({"test_path": "tests/slow_total.rs", "test_name": "totals_in_time", "test_source": slow}))
            .send(),
    );
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;

    // A new head lands meanwhile.
    common::git(
        dir.path(),
        &["clone", "--quiet", bare.to_str().unwrap(), "work"],
    );
    let work = dir.path().join("work");
    let lib = std::fs::read_to_string(work.join("src/lib.rs")).unwrap();
    std::fs::write(work.join("src/lib.rs"), format!("{lib}\n// A note.\n")).unwrap();
    common::git(&work, &["commit", "--quiet", "-am", "A note"]);
    common::git(&work, &["push", "--quiet", "origin", "main"]);
    let head = common::git(&work, &["rev-parse", "HEAD"]);
    eventually(
        240,
        "the new head's release after the measurement",
        || async {
            live_commit()
                .await
                .filter(|c| *c == head)
                .map(Value::String)
        },
    )
    .await;
    let answer = proposal.await.unwrap().unwrap();
    assert!(
        [200, 422].contains(&answer.status().as_u16()),
        "the measurement ended: {}",
        answer.status()
    );
}
