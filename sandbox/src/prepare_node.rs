//! Preparing a Node project's npm dependencies: `npm ci --ignore-scripts` (no lifecycle script
//! of any package runs, nor anything of the project's) on a folder holding only the project's
//! `package.json` and its lockfile, at the lockfile's exact versions. The result is kept in the
//! cache under the SHA-256 of the two files and the host's Node version; the sandbox mounts it
//! read-only at [`NODE_MODULES_DIR`] and the Node profiles link it as the run's
//! `node_modules`.
//!
//! A `pnpm-lock.yaml` (without an npm lockfile) is installed the same way by its own client:
//! pnpm, of the major `packageManager` names (or the one that writes the lockfile's
//! version), itself fetched from the npm registry by `npm exec`, with `--frozen-lockfile
//! --ignore-scripts` and a flat (hoisted) `node_modules`.
//!
//! Refused with the reason: dependencies without either lockfile (a yarn or bun lockfile is
//! named), an npm lockfile older than npm 7's, and any package the lockfile resolves from
//! somewhere other than the npm registry (git, a URL, a local path, a workspace link).

use crate::prepare::{
    hex, last_said, one_prepare, publish, size_of, DepsCache, Ecosystem, PrepareError, Prepared,
};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::{Duration, Instant};

/// Where a Node project's installed packages appear inside the sandbox.
pub const NODE_MODULES_DIR: &str = "/deps/node/node_modules";
/// The only place a lockfile may resolve a package from.
const NPM_REGISTRY: &str = "https://registry.npmjs.org/";
/// The longest a prepare may take.
const DEADLINE: Duration = Duration::from_secs(600);
/// The most bytes of a manifest or lockfile read.
const MOST_BYTES: u64 = 64 << 20;

fn refuse(why: String) -> PrepareError {
    PrepareError::Refused(why)
}

/// A regular file of the tree, read whole (at most [`MOST_BYTES`]); `None` when absent.
fn regular(tree: &Path, name: &str) -> Result<Option<Vec<u8>>, PrepareError> {
    let path = tree.join(name);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return Ok(None);
    };
    if !meta.is_file() {
        return Err(refuse(format!(
            "{name} is not a regular file; the desk reads only regular files"
        )));
    }
    if meta.len() > MOST_BYTES {
        return Err(refuse(format!(
            "{name} is larger than {} MB",
            MOST_BYTES >> 20
        )));
    }
    std::fs::read(&path)
        .map(Some)
        .map_err(|e| refuse(format!("{name} cannot be read: {e}")))
}

/// A Node project's `package.json`, its lockfile's name, and the lockfile.
pub type Declared = (Vec<u8>, String, Vec<u8>);

/// What a Node project asks to have installed: its `package.json` and lockfile (name and
/// bytes), or `None` when it declares no dependency. Checks every package the lockfile
/// resolves comes from the npm registry.
pub fn declared(tree: &Path) -> Result<Option<Declared>, PrepareError> {
    let Some(manifest) = regular(tree, "package.json")? else {
        return Ok(None);
    };
    let package: serde_json::Value = serde_json::from_slice(&manifest)
        .map_err(|e| refuse(format!("package.json is not valid JSON: {e}")))?;
    let declares = ["dependencies", "devDependencies", "optionalDependencies"]
        .iter()
        .any(|field| {
            package
                .get(field)
                .and_then(serde_json::Value::as_object)
                .is_some_and(|deps| !deps.is_empty())
        });
    if !declares {
        return Ok(None);
    }
    let mut lock = None;
    for name in ["npm-shrinkwrap.json", "package-lock.json"] {
        if let Some(bytes) = regular(tree, name)? {
            lock = Some((name.to_owned(), bytes));
            break;
        }
    }
    if lock.is_none() {
        if let Some(bytes) = regular(tree, PNPM_LOCK)? {
            pnpm_registry_only(&bytes)?;
            pnpm_version(&package, &bytes)?;
            return Ok(Some((manifest, PNPM_LOCK.to_owned(), bytes)));
        }
    }
    let Some((lock_name, lock_bytes)) = lock else {
        let other = ["yarn.lock", "bun.lockb", "bun.lock"]
            .into_iter()
            .find(|name| tree.join(name).is_file());
        return Err(refuse(match other {
            Some(name) => format!(
                "its lockfile is {name}; the desk installs from a package-lock.json (npm ci) or a pnpm-lock.yaml (pnpm) only"
            ),
            None => "no package-lock.json or pnpm-lock.yaml: the desk installs a Node project's dependencies only at its lockfile's versions".to_owned(),
        }));
    };
    let lockfile: serde_json::Value = serde_json::from_slice(&lock_bytes)
        .map_err(|e| refuse(format!("{lock_name} is not valid JSON: {e}")))?;
    let Some(packages) = lockfile
        .get("packages")
        .and_then(serde_json::Value::as_object)
    else {
        return Err(refuse(format!(
            "{lock_name} is from before npm 7 (lockfileVersion 1); the desk reads version 2 or 3"
        )));
    };
    for (path, entry) in packages {
        if path.is_empty() {
            continue;
        }
        if entry.get("link").and_then(serde_json::Value::as_bool) == Some(true) {
            return Err(refuse(format!(
                "{lock_name} links {path} (a workspace or a local folder); the desk installs registry packages only"
            )));
        }
        match entry.get("resolved").and_then(serde_json::Value::as_str) {
            Some(resolved) if !resolved.starts_with(NPM_REGISTRY) => {
                return Err(refuse(format!(
                    "{lock_name} resolves {path} from {resolved:?}; the desk installs only from the npm registry"
                )));
            }
            _ => {}
        }
    }
    Ok(Some((manifest, lock_name, lock_bytes)))
}

/// pnpm's lockfile.
const PNPM_LOCK: &str = "pnpm-lock.yaml";

/// Refuses a pnpm lockfile that resolves a package from anywhere but the npm registry: a
/// tarball URL, a git repository, or a local folder or file.
fn pnpm_registry_only(lock: &[u8]) -> Result<(), PrepareError> {
    let text = String::from_utf8_lossy(lock);
    // A key of a resolution, not part of a package's name (`get-pkg-repo: 4.2.1`).
    let key = |line: &str, key: &str| {
        line.starts_with(key)
            || line.contains(&format!(" {key}"))
            || line.contains(&format!("{{{key}"))
    };
    for line in text.lines() {
        let trimmed = line.trim();
        let elsewhere = key(trimmed, "tarball:")
            || key(trimmed, "type: git")
            || key(trimmed, "repo:")
            || trimmed.contains(": link:")
            || trimmed.contains(": file:");
        if elsewhere && !trimmed.contains(NPM_REGISTRY) {
            return Err(refuse(format!(
                "{PNPM_LOCK} resolves a package from elsewhere ({}); the desk installs only from the npm registry",
                trimmed.chars().take(120).collect::<String>()
            )));
        }
    }
    Ok(())
}

/// The pnpm that reads the lockfile: the newest release of the major `packageManager` names
/// (`pnpm@7.27.0`: 7 — a major keeps its lockfile format, and its later releases run on
/// newer Node: 7.27 cannot fetch on Node 20), else of the major that writes the lockfile's
/// version (5.x: 7, 6.x: 8, 9.x: 9). Anything else is refused by name.
fn pnpm_version(package: &serde_json::Value, lock: &[u8]) -> Result<String, PrepareError> {
    if let Some(named) = package
        .get("packageManager")
        .and_then(serde_json::Value::as_str)
        .and_then(|m| m.strip_prefix("pnpm@"))
    {
        let version = named.split('+').next().unwrap_or(named);
        let major = version.split('.').next().unwrap_or_default();
        if !major.is_empty() && version.chars().all(|c| c.is_ascii_digit() || c == '.') {
            return Ok(major.to_owned());
        }
        return Err(refuse(format!(
            "packageManager names pnpm@{named}; the desk reads a plain version such as 9.15.0"
        )));
    }
    let text = String::from_utf8_lossy(lock);
    let declared = text
        .lines()
        .find_map(|l| l.strip_prefix("lockfileVersion:"))
        .map(|v| v.trim().trim_matches(|c| c == '\'' || c == '"').to_owned())
        .unwrap_or_default();
    match declared.split('.').next() {
        Some("5") => Ok("7".to_owned()),
        Some("6") => Ok("8".to_owned()),
        Some("9") => Ok("9".to_owned()),
        _ => Err(refuse(format!(
            "{PNPM_LOCK} has lockfileVersion {declared:?}; the desk reads versions 5, 6 and 9"
        ))),
    }
}

/// The host's `node --version` ("v20.20.2").
async fn node_version() -> Result<String, PrepareError> {
    let output = tokio::process::Command::new("node")
        .arg("--version")
        .output()
        .await
        .map_err(|e| PrepareError::Failed(format!("node could not start: {e}")))?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

impl DepsCache {
    /// Prepares the npm dependencies of the Node project whose tree is `tree`. Runs no
    /// package's install script and nothing of the project's. A project that declares no
    /// dependency needs nothing (an empty result, nothing mounted).
    pub async fn prepare_node(&self, tree: &Path) -> Result<Prepared, PrepareError> {
        let declared = declared(tree)?;
        let version = node_version().await?;
        let mut hasher = Sha256::new();
        hasher.update(version.as_bytes());
        if let Some((manifest, name, lock)) = &declared {
            for part in [manifest.as_slice(), name.as_bytes(), lock.as_slice()] {
                hasher.update([0]);
                hasher.update(part);
            }
        }
        let key = hex(&hasher.finalize());
        let done = self.root().join("node").join(&key);
        let prepared = |reused: bool| {
            let (packages, bytes) = size_of(&done.join("node_modules"));
            Prepared {
                ecosystem: Ecosystem::Node,
                key: key.clone(),
                vendor: done.join("node_modules"),
                lockfile: done.join("package-lock.json"),
                generated: false,
                crates: packages,
                bytes,
                reused,
            }
        };
        let Some((manifest, lock_name, lock)) = declared else {
            return Ok(Prepared {
                crates: 0,
                ..prepared(true)
            });
        };
        let _one = one_prepare(&format!("node:{key}")).await;
        if done.join("node_modules").is_dir() {
            let _ = std::fs::write(done.join("used"), b"");
            return Ok(prepared(true));
        }
        let started = Instant::now();
        let cache_error = |e: std::io::Error| PrepareError::Cache(e.to_string());
        let work = self.scratch("node")?;
        let (staged, project, home) = (
            work.path().join("staged"),
            work.path().join("project"),
            work.path().join("home"),
        );
        for folder in [&staged, &project, &home] {
            std::fs::create_dir_all(folder).map_err(cache_error)?;
        }
        std::fs::write(home.join("npmrc"), b"").map_err(cache_error)?;
        std::fs::write(project.join("package.json"), &manifest).map_err(cache_error)?;
        std::fs::write(project.join(&lock_name), &lock).map_err(cache_error)?;
        let mut command = tokio::process::Command::new("npm");
        let tool = if lock_name == PNPM_LOCK {
            // The lockfile's own client, itself a package of the npm registry, run by npm:
            // a flat (hoisted) node_modules, no package's install script.
            let package: serde_json::Value = serde_json::from_slice(&manifest).unwrap_or_default();
            let version = pnpm_version(&package, &lock)?;
            command.args([
                "exec",
                "--yes",
                &format!("--package=pnpm@{version}"),
                "--",
                "pnpm",
                "install",
                "--frozen-lockfile",
                "--ignore-scripts",
                "--config.node-linker=hoisted",
                "--config.confirmModulesPurge=false",
                "--reporter=append-only",
            ]);
            command
                .arg(format!(
                    "--store-dir={}",
                    work.path().join("store").display()
                ))
                .env("npm_config_store_dir", work.path().join("store"));
            format!("pnpm {version}")
        } else {
            command.args([
                "ci",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ]);
            "npm ci".to_owned()
        };
        command
            .current_dir(&project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("npm_config_cache", home.join("cache"))
            // No user or project configuration: the user's is an empty file of the scratch.
            .env("npm_config_userconfig", home.join("npmrc"))
            .env("npm_config_registry", NPM_REGISTRY)
            .env("npm_config_update_notifier", "false")
            .kill_on_drop(true)
            .stdin(std::process::Stdio::null());
        let output = tokio::time::timeout(DEADLINE, command.output())
            .await
            .map_err(|_| {
                PrepareError::Failed(format!("{tool} took longer than {} s", DEADLINE.as_secs()))
            })?
            .map_err(|e| PrepareError::Failed(format!("npm could not start: {e}")))?;
        if !output.status.success() {
            let said = if output.stderr.iter().any(|b| !b.is_ascii_whitespace()) {
                &output.stderr
            } else {
                &output.stdout
            };
            return Err(PrepareError::Failed(format!(
                "{tool} could not install the project's dependencies: {}",
                last_said(said, 4)
            )));
        }
        std::fs::rename(project.join("node_modules"), staged.join("node_modules"))
            .map_err(cache_error)?;
        // Kept under one name whichever client's it is: the lockfile the versions came from.
        std::fs::write(staged.join("package-lock.json"), &lock).map_err(cache_error)?;
        publish(&staged, &done, "node_modules")?;
        tracing::info!(
            key = %key,
            ms = started.elapsed().as_millis() as u64,
            "node dependencies prepared"
        );
        drop(work);
        self.evict("node", &key);
        Ok(prepared(false))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            std::fs::write(dir.path().join(path), text).unwrap();
        }
        dir
    }

    const MANIFEST: &str = r#"{"devDependencies":{"is-number":"7.0.0"}}"#;

    #[test]
    fn a_pnpm_lockfile_is_read_with_its_own_clients_version_and_registry_only() {
        let lock = "lockfileVersion: '9.0'\n\nimporters:\n  .:\n    devDependencies:\n      is-number:\n        specifier: 7.0.0\n        version: 7.0.0\n\npackages:\n  is-number@7.0.0:\n    resolution: {integrity: sha512-x}\n";
        let good = tree(&[("package.json", MANIFEST), ("pnpm-lock.yaml", lock)]);
        assert_eq!(declared(good.path()).unwrap().unwrap().1, "pnpm-lock.yaml");
        let manifest: serde_json::Value = serde_json::from_str(MANIFEST).unwrap();
        assert_eq!(pnpm_version(&manifest, lock.as_bytes()).unwrap(), "9");
        for (version, major) in [("5.4", "7"), ("'6.0'", "8"), ("\"6.1\"", "8")] {
            let other = format!("lockfileVersion: {version}\n");
            assert_eq!(pnpm_version(&manifest, other.as_bytes()).unwrap(), major);
        }
        assert!(pnpm_version(&manifest, b"lockfileVersion: '4.0'\n").is_err());
        // The project's own pin's major wins; a hash after it is dropped; anything odd is refused.
        let pinned: serde_json::Value =
            serde_json::from_str(r#"{"packageManager":"pnpm@8.6.12+sha256.abc"}"#).unwrap();
        assert_eq!(pnpm_version(&pinned, lock.as_bytes()).unwrap(), "8");
        let odd: serde_json::Value =
            serde_json::from_str(r#"{"packageManager":"pnpm@latest; rm -rf /"}"#).unwrap();
        assert!(pnpm_version(&odd, lock.as_bytes()).is_err());
        // Names that hold the words are names, not sources.
        let named = format!("{lock}  get-pkg-repo@4.2.1:\n    resolution: {{integrity: sha512-y}}\n  x-tarball: 1.0.0\n");
        let good = tree(&[("package.json", MANIFEST), ("pnpm-lock.yaml", &named)]);
        assert!(declared(good.path()).is_ok());
        // A package from a tarball URL, git or a local folder: refused before anything runs.
        for elsewhere in [
            "    resolution: {tarball: https://example.org/x.tgz}\n",
            "    resolution: {commit: abc, repo: https://github.com/a/x, type: git}\n",
            "        version: link:../x\n",
            "        version: file:../x.tgz\n",
        ] {
            let bad = tree(&[
                ("package.json", MANIFEST),
                ("pnpm-lock.yaml", &format!("{lock}{elsewhere}")),
            ]);
            let Err(PrepareError::Refused(why)) = declared(bad.path()) else {
                panic!("{elsewhere}: not refused");
            };
            assert!(why.contains("only from the npm registry"), "{why}");
        }
        // Yarn is named, not guessed at.
        let yarn = tree(&[("package.json", MANIFEST), ("yarn.lock", "")]);
        let Err(PrepareError::Refused(why)) = declared(yarn.path()) else {
            panic!("yarn.lock: not refused");
        };
        assert!(why.contains("yarn.lock"), "{why}");
    }

    #[test]
    fn only_a_registry_lockfile_is_installed_from() {
        let none = tree(&[("package.json", r#"{"name":"x"}"#)]);
        assert!(
            declared(none.path()).unwrap().is_none(),
            "no dependency: nothing"
        );
        let good = tree(&[
            ("package.json", MANIFEST),
            (
                "package-lock.json",
                r#"{"lockfileVersion":3,"packages":{"":{},"node_modules/is-number":{"version":"7.0.0","resolved":"https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz"}}}"#,
            ),
        ]);
        assert_eq!(
            declared(good.path()).unwrap().unwrap().1,
            "package-lock.json"
        );
        for (files, says) in [
            (vec![("package.json", MANIFEST)], "no package-lock.json"),
            (
                vec![("package.json", MANIFEST), ("pnpm-lock.yaml", "")],
                "pnpm-lock.yaml has lockfileVersion",
            ),
            (
                vec![
                    ("package.json", MANIFEST),
                    (
                        "package-lock.json",
                        r#"{"lockfileVersion":1,"dependencies":{}}"#,
                    ),
                ],
                "lockfileVersion 1",
            ),
            (
                vec![
                    ("package.json", MANIFEST),
                    (
                        "package-lock.json",
                        r#"{"lockfileVersion":3,"packages":{"node_modules/x":{"resolved":"git+ssh://git@github.com/a/x.git"}}}"#,
                    ),
                ],
                "only from the npm registry",
            ),
            (
                vec![
                    ("package.json", MANIFEST),
                    (
                        "package-lock.json",
                        r#"{"lockfileVersion":3,"packages":{"node_modules/y":{"resolved":"https://registry.npmjs.org.evil.example/y.tgz"}}}"#,
                    ),
                ],
                "only from the npm registry",
            ),
            (
                vec![
                    ("package.json", MANIFEST),
                    (
                        "package-lock.json",
                        r#"{"lockfileVersion":3,"packages":{"node_modules/w":{"link":true,"resolved":"packages/w"}}}"#,
                    ),
                ],
                "links node_modules/w",
            ),
            (vec![("package.json", "{not json")], "not valid JSON"),
        ] {
            let dir = tree(&files);
            let why = declared(dir.path()).unwrap_err().to_string();
            assert!(why.contains(says), "{files:?}: {why}");
        }
        let linked = tree(&[("package.json", MANIFEST)]);
        std::os::unix::fs::symlink("/etc/passwd", linked.path().join("package-lock.json")).unwrap();
        assert!(declared(linked.path())
            .unwrap_err()
            .to_string()
            .contains("regular file"));
    }
}
