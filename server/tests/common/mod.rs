//! Starting the real `r2r` binary for tests: a random port, a fresh database, no ambient
//! configuration.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod desk;

pub use desk::TestDesk;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The repository root (where `Leptos.toml` and `shoplite/` live).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// An `r2r` command with a clean configuration: no `.env.local`, no inherited R2R_* variables.
pub fn r2r(scratch: &std::path::Path) -> Command {
    r2r_with_env_file(&scratch.join("absent.env"))
}

/// An `r2r` command reading `env_file`, with no inherited R2R_* variables.
pub fn r2r_with_env_file(env_file: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_r2r"));
    command
        .current_dir(repo_root())
        .arg("--env-file")
        .arg(env_file);
    for (name, _) in std::env::vars() {
        if name.starts_with("R2R_") || name == "DATABASE_URL" {
            command.env_remove(name);
        }
    }
    command
}

/// A running server, killed on drop.
#[derive(Debug)]
pub struct RunningServer {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// Every line it wrote to stdout and stderr so far.
    pub logs: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    _scratch: tempfile::TempDir,
}

impl RunningServer {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the server and returns everything it logged.
    pub fn stop(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(Duration::from_millis(200));
        self.logs.lock().unwrap().clone()
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `r2r serve --addr 127.0.0.1:0` against `database_url` and waits for its address.
pub fn start_server(database_url: &str) -> RunningServer {
    start_server_with(database_url, &[])
}

/// Like [`start_server`], with extra environment variables.
pub fn start_server_with(database_url: &str, env: &[(&str, &str)]) -> RunningServer {
    let scratch = tempfile::tempdir().unwrap();
    let mut command = r2r(scratch.path());
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("DATABASE_URL", database_url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("start r2r serve");
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let logs = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let err_logs = std::sync::Arc::clone(&logs);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[r2r] {line}");
            err_logs.lock().unwrap().push(line);
        }
    });
    let out_logs = std::sync::Arc::clone(&logs);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            out_logs.lock().unwrap().push(line.clone());
            if let Some(rest) = line.strip_prefix("r2r listening on ") {
                let base = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let _ = sender.send(base);
            }
        }
    });
    let base = receiver
        .recv_timeout(Duration::from_secs(60))
        .expect("the server printed its address within 60 s");
    RunningServer {
        child,
        base,
        logs,
        _scratch: scratch,
    }
}

/// Runs `git` in `dir` as a test author, asserting success; returns its trimmed stdout.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.org"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Writes `text` to `dir/path`, creating folders.
pub fn write(dir: &std::path::Path, path: &str, text: &str) {
    let file = dir.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
}

/// A bare repository `dir/<name>.git` (default branch `main`) and a working clone
/// `dir/work` whose first commit holds what `fill` writes, pushed. Returns (bare, work).
pub async fn local_forge_with(
    dir: &std::path::Path,
    name: &str,
    fill: impl FnOnce(&std::path::Path),
) -> (PathBuf, PathBuf) {
    let bare = dir.join(format!("{name}.git"));
    forge::LocalForge::init(&bare, "main").await.unwrap();
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "--quiet", "--initial-branch", "main"]);
    git(&work, &["remote", "add", "origin", bare.to_str().unwrap()]);
    fill(&work);
    git(&work, &["add", "."]);
    git(&work, &["commit", "--quiet", "-m", name]);
    git(&work, &["push", "--quiet", "origin", "main"]);
    (bare, work)
}

/// Signs in; returns the session cookie pair and the CSRF token.
pub async fn sign_in(
    client: &reqwest::Client,
    base: &str,
    email: &str,
    password: &str,
) -> (String, String) {
    let response = client
        .post(format!("{base}/api/v1/session"))
        .json(&serde_json::json!({"email": email, "password": password}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    let body: serde_json::Value = response.json().await.unwrap();
    (pair, body["csrf_token"].as_str().unwrap().to_owned())
}

/// The first owner's address and password in [`owner_desk`].
pub const OWNER: &str = "owner@example.org";
/// See [`OWNER`].
pub const PASSWORD: &str = "correct horse battery staple";

/// A running desk on a fresh SQLite file with every role's token (also written to an env
/// file) and the first owner.
pub type OwnerDesk = TestDesk;

/// Starts an [`OwnerDesk`] with `extra` environment variables.
pub fn owner_desk(extra: &[(&str, &str)]) -> OwnerDesk {
    TestDesk::with().all_roles().owner().envs(extra).launch()
}

/// Files `report` (the JSON of `POST /api/v1/reports`) at the desk `base`: the bug it joined
/// and the reporter's capability (the tracking link's fragment).
pub async fn file_report(base: &str, report: serde_json::Value) -> (String, String) {
    let filed: serde_json::Value = reqwest::Client::new()
        .post(format!("{base}/api/v1/reports"))
        .json(&report)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let bug = filed["bug_id"].as_str().unwrap().to_owned();
    let capability = filed["tracking_link"]
        .as_str()
        .unwrap()
        .strip_prefix("/track#")
        .unwrap()
        .to_owned();
    (bug, capability)
}

/// Whether the Docker sandbox is here; says so and returns `false` when the test should skip
/// (never with `R2R_SANDBOX_REQUIRED=1`, where a missing sandbox fails the test instead).
pub async fn docker_here() -> bool {
    if std::env::var("R2R_SANDBOX_REQUIRED").as_deref() == Ok("1")
        || sandbox::connect(sandbox::Backend::Docker, sandbox::docker::DEFAULT_IMAGE)
            .await
            .is_ok()
    {
        return true;
    }
    eprintln!("SKIPPED: no Docker sandbox here (./scripts/sandbox-host.sh prepares one)");
    false
}

/// A tiny target crate whose `total` has no floor (a discount larger than the subtotal makes
/// it negative): what the sandbox tests reproduce, with no dependency to fetch.
pub fn cart_crate(work: &std::path::Path) {
    write(
        work,
        "Cargo.toml",
        "[package]\nname = \"cart\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    write(
        work,
        "Cargo.lock",
        "version = 4\n\n[[package]]\nname = \"cart\"\nversion = \"0.1.0\"\n",
    );
    write(
        work,
        "src/lib.rs",
        "pub fn total(subtotal: i64, discount: i64) -> i64 { subtotal - discount }\n",
    );
}

/// A local forge in `dir` holding ShopLite without its tests (the crew writes the test).
pub async fn shoplite_forge(dir: &std::path::Path) -> std::path::PathBuf {
    let (bare, _work) = local_forge_with(dir, "shoplite", |work| {
        server::cli::demo::prepare_scratch(&repo_root().join("shoplite"), work, false).unwrap();
        std::fs::remove_dir_all(work.join("tests")).unwrap();
    })
    .await;
    bare
}

/// Opens the draft pull request of the pushed `branch` on the local forge at `bare` and
/// records it on `bug` as the fixer's `SubmitFix` — what the desk does itself once a fix
/// candidate passed its own measurement (the API opens no draft for a branch the desk did not
/// commit). For tests that review and merge a hand-made change. Returns the head.
pub async fn open_measured_draft(
    database_url: &str,
    bare: &std::path::Path,
    bug: &str,
    branch: &str,
) -> String {
    use domain::workflow::{decide, Actor, Command, Evidence, Policy};
    use forge::Forge;
    let forge = forge::LocalForge::new(bare, "main");
    let draft = forge
        .open_draft(&forge::DraftRequest {
            branch: branch.to_owned(),
            title: format!("Fix {bug}"),
            body: "A hand-made change standing in for one the desk measured.".to_owned(),
        })
        .await
        .unwrap();
    let changed_paths = forge.changed_paths(&draft.head).await.unwrap();
    let store = store::Store::connect(&store::DatabaseUrl::parse(database_url).unwrap())
        .await
        .unwrap();
    let now = server::clock::now_ms();
    let command = Command::SubmitFix {
        number: draft.number,
        head: draft.head.clone(),
        changed_paths,
    };
    store
        .apply(bug, now, |b| {
            let policy = Policy {
                allowed_components: vec![b.component.clone()],
                ..Policy::default()
            };
            decide(
                b,
                &command,
                &Actor::Role {
                    role: domain::Role::Fixer,
                },
                &Evidence::default(),
                &policy,
                now,
            )
        })
        .await
        .unwrap();
    store.close().await;
    draft.head.as_str().to_owned()
}

/// A stored project's definition as the database holds it (JSON), read with the store.
pub async fn stored_project(database_url: &str, id: &str) -> serde_json::Value {
    let store = store::Store::connect(&store::DatabaseUrl::parse(database_url).unwrap())
        .await
        .unwrap();
    let stored = store.projects().await.unwrap();
    let project = stored
        .iter()
        .find(|p| p.id == id)
        .unwrap_or_else(|| panic!("no stored project {id}"));
    serde_json::from_str(&project.spec).unwrap()
}
