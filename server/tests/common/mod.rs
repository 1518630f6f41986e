//! Starting the real `r2r` binary for tests: a random port, a fresh database, no ambient
//! configuration.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

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
    let mut command = Command::new(env!("CARGO_BIN_EXE_r2r"));
    command
        .current_dir(repo_root())
        .arg("--env-file")
        .arg(scratch.join("absent.env"));
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
    _scratch: tempfile::TempDir,
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `r2r serve --addr 127.0.0.1:0` against `database_url` and waits for its address.
pub fn start_server(database_url: &str) -> RunningServer {
    let scratch = tempfile::tempdir().unwrap();
    let mut child = r2r(scratch.path())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("DATABASE_URL", database_url)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start r2r serve");
    let stdout = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
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
        _scratch: scratch,
    }
}
