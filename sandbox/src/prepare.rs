//! Preparing a project's registry dependencies before any of its code runs: the one phase that
//! may reach a package registry, and it runs nothing of the project's (no build script, no
//! test, no configuration of the repository's own). What it fetches goes into a cache keyed by
//! the lockfile's SHA-256 (or, for a project without a lockfile, of its manifests, with the
//! lockfile the desk generated kept beside it), which the sandbox then mounts read-only at
//! [`RUST_VENDOR_DIR`] for a run with no network.
//!
//! Rust is prepared with `cargo vendor` from a neutral folder (cargo reads `.cargo/config.toml`
//! from its working folder, so the repository's own configuration is never read here) with a
//! throw-away `CARGO_HOME`; a `Cargo.lock` naming a git or another registry's source, and a
//! manifest with a path dependency outside the repository, are refused with that reason.
//! One prepare per key at a time, in this process and between processes (the finished folder
//! is renamed into place); the cache has a size cap and drops the least recently used.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where the vendored crates appear inside the sandbox.
pub const RUST_VENDOR_DIR: &str = "/deps/cargo/vendor";
/// Where a Python project's installed wheels appear inside the sandbox (on `PYTHONPATH`).
pub const PYTHON_SITE_DIR: &str = "/deps/py/site";

/// Which ecosystem's dependencies were prepared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ecosystem {
    /// Crates vendored from crates.io.
    Rust,
    /// Wheels from PyPI installed into a folder of their own; `src_layout` when the project's
    /// package lives under `src/` (then `src` goes on `PYTHONPATH` too).
    Python {
        /// Whether the project keeps its package under `src/`.
        src_layout: bool,
    },
    /// npm packages installed by `npm ci --ignore-scripts`, linked as the run's
    /// `node_modules`.
    Node,
}

/// The only package sources a `Cargo.lock` may name (crates.io, by git index or sparse).
const CRATES_IO: [&str; 2] = [
    "registry+https://github.com/rust-lang/crates.io-index",
    "sparse+https://index.crates.io/",
];

/// The longest a prepare may take (registry downloads included).
const PREPARE_DEADLINE: Duration = Duration::from_secs(600);

/// Why a project's dependencies could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The project declares a dependency the desk will not fetch (a git source, another
    /// registry, a path outside the repository).
    #[error("{0}")]
    Refused(String),
    /// The registry or the tool failed (a version the registry no longer serves, no
    /// network, a manifest cargo cannot read); its own words are kept.
    #[error("{0}")]
    Failed(String),
    /// The desk's cache folder could not be written.
    #[error("the dependency cache could not be written: {0}")]
    Cache(String),
}

/// A project's prepared dependencies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// Which ecosystem.
    pub ecosystem: Ecosystem,
    /// The cache key (hex SHA-256 of the lockfile, or of the manifests when the desk
    /// generated the lockfile).
    pub key: String,
    /// The vendored crates, mounted read-only at [`RUST_VENDOR_DIR`].
    pub vendor: PathBuf,
    /// The lockfile the runs use.
    pub lockfile: PathBuf,
    /// Whether the desk generated the lockfile (the project has none).
    pub generated: bool,
    /// How many crates were vendored.
    pub crates: usize,
    /// Their size on disk.
    pub bytes: u64,
    /// Whether this call found them already prepared.
    pub reused: bool,
}

impl Prepared {
    /// Mounts the vendored crates into `job` (read-only); the Rust profile's scripts use
    /// them whenever they are there. A crate with no registry dependency needs no mount.
    pub fn attach(&self, job: &mut crate::SandboxJob) {
        if self.crates == 0 {
            return;
        }
        let target = match self.ecosystem {
            Ecosystem::Rust => RUST_VENDOR_DIR,
            Ecosystem::Python { src_layout } => {
                // Relative entries resolve in the run's copy of the tree (its working folder).
                let path = if src_layout {
                    format!("src:{PYTHON_SITE_DIR}")
                } else {
                    PYTHON_SITE_DIR.to_owned()
                };
                job.env.retain(|(name, _)| name != "PYTHONPATH");
                job.env.push(("PYTHONPATH".into(), path));
                PYTHON_SITE_DIR
            }
            Ecosystem::Node => crate::prepare_node::NODE_MODULES_DIR,
        };
        job.mounts.push(crate::ReadOnlyMount {
            host: self.vendor.clone(),
            target: PathBuf::from(target),
        });
    }

    /// Puts the lockfile the desk generated into `tree` (a snapshot without one), so the
    /// baseline, the reproduction and the fix see the same versions. A project's own
    /// lockfile is left as it is.
    pub fn install_lockfile(&self, tree: &Path) -> std::io::Result<()> {
        if self.generated && self.ecosystem == Ecosystem::Rust {
            // A new file only: never through a link the tree holds (a dangling
            // `Cargo.lock -> /anywhere` would otherwise be written on the host).
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(tree.join("Cargo.lock"))?;
            std::io::Write::write_all(&mut file, &std::fs::read(&self.lockfile)?)?;
        }
        Ok(())
    }
}

/// The desk's dependency cache: one folder per key under `root`, at most `cap_bytes` in all.
#[derive(Clone, Debug)]
pub struct DepsCache {
    root: PathBuf,
    cap_bytes: u64,
}

/// Held while one key is prepared: one prepare per key in this process (other processes
/// are kept apart by the rename in [`publish`]).
pub(crate) async fn one_prepare(key: &str) -> tokio::sync::OwnedMutexGuard<()> {
    type Locks =
        std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<tokio::sync::Mutex<()>>>>;
    static LOCKS: std::sync::OnceLock<Locks> = std::sync::OnceLock::new();
    let lock = {
        let mut locks = LOCKS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        std::sync::Arc::clone(locks.entry(key.to_owned()).or_default())
    };
    lock.lock_owned().await
}

/// Makes the finished `staged` folder the cache entry `done` (readable by the sandbox's user,
/// marked as just used). Another process may have finished the same key meanwhile: its
/// folder (holding `ready`) stands.
pub(crate) fn publish(staged: &Path, done: &Path, ready: &str) -> Result<(), PrepareError> {
    let cache_error = |e: std::io::Error| PrepareError::Cache(e.to_string());
    std::fs::write(staged.join("used"), b"").map_err(cache_error)?;
    crate::share_read_only(staged).map_err(cache_error)?;
    if std::fs::rename(staged, done).is_err() && !done.join(ready).is_dir() {
        return Err(PrepareError::Cache(format!(
            "could not move the prepared dependencies to {}",
            done.display()
        )));
    }
    Ok(())
}

/// A package tool's last `n` words on stderr worth showing: no blank lines, none of its
/// `[notice]` or `npm notice` chatter.
pub(crate) fn last_said(stderr: &[u8], n: usize) -> String {
    let stderr = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("[notice]") && !l.starts_with("npm notice"))
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every `Cargo.toml` under `tree` (not under `target/` or a hidden folder), sorted.
fn manifests(tree: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        if depth > 8 {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() && !name.starts_with('.') && name != "target" {
                walk(&path, depth + 1, out);
            } else if kind.is_file() && name == "Cargo.toml" {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(tree, 0, &mut out);
    out.sort();
    out
}

/// Refuses a lockfile naming a source other than crates.io.
pub fn check_lockfile(text: &str) -> Result<(), PrepareError> {
    let mut package = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("name = ") {
            package = name.trim_matches('"').to_owned();
        }
        let Some(source) = line.strip_prefix("source = ") else {
            continue;
        };
        let source = source.trim_matches('"');
        if !CRATES_IO.contains(&source) {
            let kind = if source.starts_with("git+") {
                "a git repository"
            } else {
                "a registry other than crates.io"
            };
            return Err(PrepareError::Refused(format!(
                "Cargo.lock takes {package} from {kind} ({source}); the desk fetches only from crates.io, so vendor it into the repository or publish it"
            )));
        }
    }
    Ok(())
}

/// Refuses a manifest whose dependency lives outside the repository (`path = "../…"`
/// leaving `tree`) or in git (`git = …`).
fn check_manifests(tree: &Path, manifests: &[PathBuf]) -> Result<(), PrepareError> {
    for manifest in manifests {
        let text = std::fs::read_to_string(manifest).unwrap_or_default();
        let shown = manifest
            .strip_prefix(tree)
            .unwrap_or(manifest)
            .display()
            .to_string();
        let folder = manifest.parent().unwrap_or(tree);
        for line in text.lines() {
            for (key, rest) in [("path", "path"), ("git", "git")]
                .iter()
                .filter_map(|(k, _)| {
                    let at = line.find(&format!("{k} = \""))?;
                    let before = line[..at].chars().last();
                    // `path = "…"` itself or `{ path = "…" }`, never `xpath = …`.
                    (before.is_none() || before.is_some_and(|c| c == ' ' || c == '{' || c == ','))
                        .then(|| {
                            (
                                *k,
                                line[at + k.len() + 4..]
                                    .split('"')
                                    .next()
                                    .unwrap_or_default(),
                            )
                        })
                })
            {
                if key == "git" {
                    return Err(PrepareError::Refused(format!(
                        "{shown} takes a dependency from git ({rest}); the desk fetches only from crates.io"
                    )));
                }
                let mut resolved = folder.to_path_buf();
                for part in Path::new(rest).components() {
                    match part {
                        std::path::Component::ParentDir => {
                            resolved.pop();
                        }
                        std::path::Component::Normal(p) => resolved.push(p),
                        std::path::Component::RootDir => resolved = PathBuf::from("/"),
                        _ => {}
                    }
                }
                if !resolved.starts_with(tree) {
                    return Err(PrepareError::Refused(format!(
                        "{shown} names a path dependency outside the repository ({rest}); the desk sees only the repository"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Runs `cargo` from the neutral folder `neutral` with a private `CARGO_HOME` and nothing of
/// the desk's environment but `PATH`.
pub(crate) async fn cargo(
    neutral: &Path,
    home: &Path,
    args: &[&str],
) -> Result<String, PrepareError> {
    let mut command = tokio::process::Command::new("cargo");
    command
        .args(args)
        .current_dir(neutral)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CARGO_HOME", home)
        .env("CARGO_TERM_COLOR", "never")
        .env("CARGO_NET_RETRY", "2")
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null());
    if let Some(rustup) = std::env::var_os("RUSTUP_HOME") {
        command.env("RUSTUP_HOME", rustup);
    } else if let Some(home) = std::env::var_os("HOME") {
        command.env("RUSTUP_HOME", Path::new(&home).join(".rustup"));
    }
    let output = tokio::time::timeout(PREPARE_DEADLINE, command.output())
        .await
        .map_err(|_| {
            PrepareError::Failed(format!(
                "cargo {} took longer than {} s",
                args.first().unwrap_or(&""),
                PREPARE_DEADLINE.as_secs()
            ))
        })?
        .map_err(|e| PrepareError::Failed(format!("cargo could not start: {e}")))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        let tail = cargo_said(&stderr, neutral.parent().unwrap_or(neutral));
        return Err(PrepareError::Failed(format!(
            "cargo {} failed: {tail}",
            args.first().unwrap_or(&"")
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// cargo's reason, as the desk passes it on: its last lines without progress ("Updating …",
/// "Locking …") and with the desk's own scratch folder (`scratch`) shown as "the repository".
fn cargo_said(stderr: &str, scratch: &Path) -> String {
    let tree = scratch.join("tree");
    let (tree, scratch) = (tree.to_string_lossy(), scratch.to_string_lossy());
    let lines: Vec<String> = stderr
        .lines()
        .map(str::trim_end)
        .filter(|line| {
            let word = line.trim_start().split(' ').next().unwrap_or_default();
            !line.trim().is_empty()
                && !matches!(
                    word,
                    "Updating" | "Locking" | "Downloading" | "Downloaded" | "Adding" | "Vendoring"
                )
        })
        .map(|line| {
            line.replace(tree.as_ref(), "the repository")
                .replace(scratch.as_ref(), "the desk's scratch folder")
        })
        .collect();
    lines[lines.len().saturating_sub(6)..].join("\n")
}

pub(crate) fn size_of(dir: &Path) -> (usize, u64) {
    fn walk(dir: &Path, bytes: &mut u64) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => walk(&entry.path(), bytes),
                Ok(kind) if kind.is_file() => {
                    *bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
                }
                _ => {}
            }
        }
    }
    let crates = std::fs::read_dir(dir)
        .map(|d| d.flatten().count())
        .unwrap_or(0);
    let mut bytes = 0;
    walk(dir, &mut bytes);
    (crates, bytes)
}

impl DepsCache {
    /// A cache under `root` (made absolute against the working folder: the sandbox mounts
    /// from it) holding at most `cap_bytes`.
    pub fn new(root: impl Into<PathBuf>, cap_bytes: u64) -> Self {
        let root = root.into();
        DepsCache {
            root: std::path::absolute(&root).unwrap_or(root),
            cap_bytes,
        }
    }

    /// Where it lives.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Prepares the Rust dependencies of the project whose tree is `tree` (its workspace
    /// root's `Cargo.toml` at the top). Runs nothing of the project's.
    pub async fn prepare_rust(&self, tree: &Path) -> Result<Prepared, PrepareError> {
        for name in ["Cargo.toml", "Cargo.lock"] {
            if std::fs::symlink_metadata(tree.join(name)).is_ok_and(|m| m.file_type().is_symlink())
            {
                return Err(PrepareError::Refused(format!(
                    "the repository's {name} is a symbolic link; the desk reads only regular files"
                )));
            }
        }
        if !tree.join("Cargo.toml").is_file() {
            return Err(PrepareError::Refused(
                "the repository has no Cargo.toml at its top".to_owned(),
            ));
        }
        let manifests = manifests(tree);
        check_manifests(tree, &manifests)?;
        let lock = std::fs::read_to_string(tree.join("Cargo.lock")).ok();
        let generated = lock.is_none();
        let key = match &lock {
            Some(text) => {
                check_lockfile(text)?;
                hex(&Sha256::digest(text.as_bytes()))
            }
            None => {
                let mut hasher = Sha256::new();
                hasher.update(b"generated:");
                for manifest in &manifests {
                    let relative = manifest.strip_prefix(tree).unwrap_or(manifest);
                    hasher.update(relative.to_string_lossy().as_bytes());
                    hasher.update([0]);
                    hasher.update(std::fs::read(manifest).unwrap_or_default());
                    hasher.update([0]);
                }
                hex(&hasher.finalize())
            }
        };
        let _one = one_prepare(&format!("cargo:{key}")).await;
        let done = self.root.join("cargo").join(&key);
        let prepared = |reused: bool| {
            let (crates, bytes) = size_of(&done.join("vendor"));
            Prepared {
                ecosystem: Ecosystem::Rust,
                key: key.clone(),
                vendor: done.join("vendor"),
                lockfile: done.join("Cargo.lock"),
                generated,
                crates,
                bytes,
                reused,
            }
        };
        if done.join("vendor").is_dir() && done.join("Cargo.lock").is_file() {
            // Touched on use: the cache drops the least recently used first.
            let _ = std::fs::write(done.join("used"), b"");
            return Ok(prepared(true));
        }
        let started = Instant::now();
        let cache_error = |e: std::io::Error| PrepareError::Cache(e.to_string());
        let work = self.scratch("cargo")?;
        // A copy of the manifests and sources cargo reads (never the tree itself: a generated
        // lockfile must not land in the measured snapshot by accident).
        let copy = work.path().join("tree");
        copy_tree(tree, &copy).map_err(cache_error)?;
        let (neutral, home) = (work.path().join("neutral"), work.path().join("cargo-home"));
        std::fs::create_dir_all(&neutral).map_err(cache_error)?;
        std::fs::create_dir_all(&home).map_err(cache_error)?;
        let manifest = copy.join("Cargo.toml");
        let manifest = manifest.to_string_lossy();
        if generated {
            cargo(
                &neutral,
                &home,
                &["generate-lockfile", "--manifest-path", &manifest],
            )
            .await?;
            let text = std::fs::read_to_string(copy.join("Cargo.lock")).map_err(cache_error)?;
            check_lockfile(&text)?;
        }
        let staged = work.path().join("staged");
        std::fs::create_dir_all(&staged).map_err(cache_error)?;
        let vendor = staged.join("vendor");
        cargo(
            &neutral,
            &home,
            &[
                "vendor",
                "--locked",
                "--versioned-dirs",
                "--manifest-path",
                &manifest,
                &vendor.to_string_lossy(),
            ],
        )
        .await?;
        // A crate with no registry dependency vendors nothing (and cargo makes no folder).
        std::fs::create_dir_all(&vendor).map_err(cache_error)?;
        std::fs::copy(copy.join("Cargo.lock"), staged.join("Cargo.lock")).map_err(cache_error)?;
        publish(&staged, &done, "vendor")?;
        let (crates, bytes) = size_of(&done.join("vendor"));
        tracing::info!(
            key = %key,
            crates,
            bytes,
            generated,
            ms = started.elapsed().as_millis() as u64,
            "rust dependencies prepared"
        );
        drop(work);
        self.evict("cargo", &key);
        Ok(prepared(false))
    }

    /// A scratch folder inside `ecosystem`'s folder of the cache (so the finished entry is
    /// renamed into place on the same file system); it goes when dropped.
    pub(crate) fn scratch(&self, ecosystem: &str) -> Result<tempfile::TempDir, PrepareError> {
        let cache_error = |e: std::io::Error| PrepareError::Cache(e.to_string());
        std::fs::create_dir_all(self.root.join(ecosystem)).map_err(cache_error)?;
        sweep_stale_scratch(&self.root.join(ecosystem));
        tempfile::Builder::new()
            .prefix(".preparing-")
            .tempdir_in(self.root.join(ecosystem))
            .map_err(cache_error)
    }

    /// Drops the least recently used entries of `ecosystem`'s folder (never `keep`) until
    /// the cache fits its cap.
    pub(crate) fn evict(&self, ecosystem: &str, keep: &str) {
        let folder = self.root.join(ecosystem);
        let mut entries: Vec<(std::time::SystemTime, String, u64)> = std::fs::read_dir(&folder)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') {
                    return None;
                }
                let used = std::fs::metadata(entry.path().join("used"))
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                Some((used, name, size_of(&entry.path()).1))
            })
            .collect();
        let mut total: u64 = entries.iter().map(|(_, _, bytes)| bytes).sum();
        entries.sort();
        for (_, name, bytes) in entries {
            if total <= self.cap_bytes {
                break;
            }
            if name == keep {
                continue;
            }
            if std::fs::remove_dir_all(folder.join(&name)).is_ok() {
                tracing::info!(key = %name, bytes, "dependency cache entry dropped (least recently used)");
                total = total.saturating_sub(bytes);
            }
        }
    }
}

/// Copies `from` to `to` (regular files and folders; symlinks are left out, and `target/`
/// and `.git/` are not copied).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if name != "target" && name != ".git" {
                copy_tree(&entry.path(), &to.join(&name))?;
            }
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(&name))?;
        }
    }
    Ok(())
}

/// How old a scratch folder of a prepare must be to be known abandoned: longer than any
/// prepare may take (each of its commands is bounded by [`PREPARE_DEADLINE`]).
const STALE_SCRATCH: Duration = Duration::from_secs(3_600);

/// Removes the scratch folders (`.preparing-*`) in `folder` that a prepare killed mid-way
/// (kill -9, a lost machine) left behind: those untouched for [`STALE_SCRATCH`]. A prepare
/// still running, in this process or another, is never that old. Best effort: what cannot
/// be removed is left for the next sweep.
fn sweep_stale_scratch(folder: &Path) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(".preparing-") {
            continue;
        }
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age > STALE_SCRATCH);
        // Never through a link: only a real folder of ours is removed.
        let folder_of_ours = entry.file_type().is_ok_and(|t| t.is_dir());
        if stale && folder_of_ours {
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => tracing::info!(
                    folder = %entry.path().display(),
                    "removed the scratch folder of an abandoned prepare"
                ),
                Err(error) => tracing::warn!(
                    folder = %entry.path().display(),
                    %error,
                    "cannot remove the scratch folder of an abandoned prepare"
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_scratch_of_an_abandoned_prepare_is_swept_and_a_live_one_kept() {
        let cache = DepsCache::new(tempfile::tempdir().unwrap().keep(), 1 << 30);
        let folder = cache.root().join("cargo");
        std::fs::create_dir_all(folder.join(".preparing-old/tree")).unwrap();
        std::fs::create_dir_all(folder.join(".preparing-recent")).unwrap();
        std::fs::create_dir_all(folder.join("0123abcd/vendor")).unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(2 * 3_600);
        for name in [".preparing-old", "0123abcd"] {
            std::fs::File::open(folder.join(name))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let fresh = cache.scratch("cargo").unwrap();
        assert!(!folder.join(".preparing-old").exists(), "abandoned: swept");
        assert!(
            folder.join(".preparing-recent").exists(),
            "may be live: kept"
        );
        assert!(
            folder.join("0123abcd/vendor").exists(),
            "entries are not scratch"
        );
        assert!(fresh.path().exists());
        std::fs::remove_dir_all(cache.root()).unwrap();
    }

    #[test]
    fn a_lockfile_is_refused_for_any_source_but_crates_io() {
        let ok = "[[package]]\nname = \"itoa\"\nversion = \"1.0.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n\n[[package]]\nname = \"me\"\nversion = \"0.1.0\"\n";
        assert!(check_lockfile(ok).is_ok());
        assert!(check_lockfile(&ok.replace(
            "registry+https://github.com/rust-lang/crates.io-index",
            "sparse+https://index.crates.io/"
        ))
        .is_ok());
        let git = ok.replace(
            "registry+https://github.com/rust-lang/crates.io-index",
            "git+https://example.org/x.git#abc",
        );
        let why = check_lockfile(&git).unwrap_err().to_string();
        assert!(
            why.contains("itoa") && why.contains("git repository"),
            "{why}"
        );
        let other = ok.replace(
            "registry+https://github.com/rust-lang/crates.io-index",
            "registry+https://my.registry/index",
        );
        assert!(check_lockfile(&other)
            .unwrap_err()
            .to_string()
            .contains("other than crates.io"));
    }

    #[test]
    fn cargos_words_lose_progress_lines_and_the_desks_own_paths() {
        let scratch = Path::new("/var/cache/r2r/cargo/.preparing-abc");
        let said = cargo_said(
            "    Updating crates.io index\nerror: no matching package named `nope` found\nrequired by package `x v0.1.0 (/var/cache/r2r/cargo/.preparing-abc/tree)`\n",
            scratch,
        );
        assert!(
            !said.contains("Updating") && !said.contains("/var/cache"),
            "{said}"
        );
        assert!(
            said.contains("no matching package named `nope`") && said.contains("(the repository)"),
            "{said}"
        );
    }

    #[tokio::test]
    async fn a_linked_manifest_or_lockfile_is_refused_and_never_written_through() {
        let tree = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = tree.path();
        std::fs::write(
            root.join("Cargo.toml"),
            "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
        )
        .unwrap();
        let target = outside.path().join("planted");
        std::os::unix::fs::symlink(&target, root.join("Cargo.lock")).unwrap();
        let cache = DepsCache::new(outside.path().join("cache"), 1 << 30);
        let why = cache.prepare_rust(root).await.unwrap_err().to_string();
        assert!(why.contains("Cargo.lock is a symbolic link"), "{why}");
        // Even handed a generated lockfile, installing it never follows the link.
        let lockfile = outside.path().join("generated.lock");
        std::fs::write(&lockfile, "version = 4\n").unwrap();
        let prepared = Prepared {
            ecosystem: Ecosystem::Rust,
            key: "k".into(),
            vendor: outside.path().to_path_buf(),
            lockfile,
            generated: true,
            crates: 0,
            bytes: 0,
            reused: false,
        };
        assert!(prepared.install_lockfile(root).is_err());
        assert!(!target.exists(), "nothing was written through the link");
    }

    #[test]
    fn manifests_may_not_reach_outside_the_repository_or_into_git() {
        let tree = tempfile::tempdir().unwrap();
        let root = tree.path();
        std::fs::create_dir_all(root.join("inner")).unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            "[dependencies]\ninner = { path = \"inner\" }\nxpath = \"1\"\n",
        )
        .unwrap();
        std::fs::write(root.join("inner/Cargo.toml"), "[dependencies]\n").unwrap();
        assert!(check_manifests(root, &manifests(root)).is_ok());
        std::fs::write(
            root.join("inner/Cargo.toml"),
            "[dependencies]\nfar = { path = \"../../far\" }\n",
        )
        .unwrap();
        let why = check_manifests(root, &manifests(root))
            .unwrap_err()
            .to_string();
        assert!(
            why.contains("outside the repository") && why.contains("inner/Cargo.toml"),
            "{why}"
        );
        std::fs::write(
            root.join("inner/Cargo.toml"),
            "[dependencies]\nx = { git = \"https://example.org/x\" }\n",
        )
        .unwrap();
        assert!(check_manifests(root, &manifests(root))
            .unwrap_err()
            .to_string()
            .contains("from git"));
    }
}
