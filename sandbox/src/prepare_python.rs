//! Preparing a Python project's PyPI dependencies: what the project itself declares for its
//! tests — `pyproject.toml`'s `[project] dependencies`, its test extras and dependency groups
//! (`test`, `tests`, `testing`, `dev`), and its requirements files (`requirements.txt`, and
//! any `requirements*.txt` or `requirements/*.txt` whose name says test or dev) — installed
//! as wheels only (`--only-binary=:all:`: nothing's setup script runs) into a folder of their
//! own, which the sandbox mounts read-only and puts on `PYTHONPATH`. The cache key is the
//! SHA-256 of the requirement list and the host's Python version; the versions pip chose are
//! kept beside the wheels (`locked.txt`), so every run of that list sees the same ones.
//!
//! Refused with the reason: a requirement from git, a URL or a local path, an editable
//! install, another index, a requirements file outside the repository. A package with no
//! wheel is named by pip's own words.

use crate::prepare::{
    hex, one_prepare, publish, size_of, DepsCache, Ecosystem, PrepareError, Prepared,
};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::{Duration, Instant};

/// The extras and dependency groups read as the project's test dependencies.
const TEST_NAMES: [&str; 4] = ["test", "tests", "testing", "dev"];
/// The longest a prepare may take.
const DEADLINE: Duration = Duration::from_secs(600);

fn refuse(why: String) -> PrepareError {
    PrepareError::Refused(why)
}

/// Checks one requirement line and gives it back trimmed (`None` for a comment or a blank).
fn requirement(line: &str, from: &str) -> Result<Option<String>, PrepareError> {
    let line = line.split(" #").next().unwrap_or_default().trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let lower = line.to_ascii_lowercase();
    let refused = lower.starts_with("-e")
        || lower.starts_with("--editable")
        || lower.starts_with("--index-url")
        || lower.starts_with("-i ")
        || lower.starts_with("--extra-index-url")
        || lower.starts_with("--find-links")
        || lower.starts_with("-f ")
        || lower.contains("git+")
        || lower.contains("://")
        || lower.contains(" @ ")
        || lower.starts_with("file:")
        || lower.starts_with('.')
        || lower.starts_with('/');
    if refused {
        return Err(refuse(format!(
            "{from} asks for {line:?}: the desk installs only released packages from PyPI (no git, URL, local path, editable install or other index)"
        )));
    }
    if line.starts_with('-') {
        // Options such as `--only-binary` or `--pre` are the desk's to choose.
        return Ok(None);
    }
    Ok(Some(line.to_owned()))
}

/// The requirement lines of requirements file `relative` (following `-r`/`-c` includes
/// inside the tree, at most 8 deep).
fn requirements_file(
    tree: &Path,
    relative: &str,
    depth: usize,
    out: &mut Vec<String>,
) -> Result<(), PrepareError> {
    if depth > 8 || relative.contains("..") || relative.starts_with('/') {
        return Err(refuse(format!(
            "{relative}: a requirements file outside the repository (or included too deep)"
        )));
    }
    let path = tree.join(relative);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(refuse(format!(
            "{relative} is a symbolic link; the desk reads only regular files"
        )));
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| refuse(format!("{relative} cannot be read: {e}")))?;
    let folder = Path::new(relative).parent().unwrap_or(Path::new(""));
    for line in text.lines() {
        let trimmed = line.trim();
        let include = trimmed
            .strip_prefix("-r ")
            .or_else(|| trimmed.strip_prefix("--requirement "))
            .or_else(|| trimmed.strip_prefix("-c "))
            .or_else(|| trimmed.strip_prefix("--constraint "));
        if let Some(included) = include {
            let included = folder.join(included.trim());
            requirements_file(tree, &included.to_string_lossy(), depth + 1, out)?;
            continue;
        }
        if let Some(line) = requirement(line, relative)? {
            out.push(line);
        }
    }
    Ok(())
}

/// The project's own name and version (`[project]`; a version its build computes — from git
/// tags, say — reads as `tag_version`, the nearest tag's, or `0+desk` without one), so its
/// tests can ask `importlib.metadata` about it as an installed copy would answer.
fn own_name(tree: &Path, tag_version: Option<&str>) -> Option<(String, String)> {
    let text = std::fs::read_to_string(tree.join("pyproject.toml")).ok()?;
    let doc: toml::Table = text.parse().ok()?;
    let project = doc.get("project")?.as_table()?;
    let name = project.get("name")?.as_str()?;
    let clean = |text: &str| -> String {
        text.chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
            .take(100)
            .collect()
    };
    let version = project
        .get("version")
        .and_then(toml::Value::as_str)
        .map_or_else(|| clean(tag_version.unwrap_or("0+desk")), clean);
    let name = clean(name);
    (!name.is_empty() && !version.is_empty()).then_some((name, version))
}

/// What the project declares for its tests, in a stable order, and whether it keeps its
/// package under `src/`.
pub fn declared(tree: &Path) -> Result<(Vec<String>, bool), PrepareError> {
    let mut found = Vec::new();
    let pyproject = tree.join("pyproject.toml");
    if std::fs::symlink_metadata(&pyproject).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(refuse(
            "pyproject.toml is a symbolic link; the desk reads only regular files".to_owned(),
        ));
    }
    if let Ok(text) = std::fs::read_to_string(&pyproject) {
        let doc: toml::Table = text
            .parse()
            .map_err(|e| refuse(format!("pyproject.toml is not valid TOML: {e}")))?;
        let strings = |value: Option<&toml::Value>| -> Vec<String> {
            value
                .and_then(toml::Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let project = doc.get("project").and_then(toml::Value::as_table);
        let mut lines = strings(project.and_then(|p| p.get("dependencies")));
        if let Some(extras) = project
            .and_then(|p| p.get("optional-dependencies"))
            .and_then(toml::Value::as_table)
        {
            for name in TEST_NAMES {
                lines.extend(strings(extras.get(name)));
            }
        }
        if let Some(groups) = doc.get("dependency-groups").and_then(toml::Value::as_table) {
            let mut seen = std::collections::BTreeSet::new();
            let mut wanted: Vec<String> = TEST_NAMES.iter().map(|n| (*n).to_owned()).collect();
            while let Some(name) = wanted.pop() {
                if !seen.insert(name.clone()) {
                    continue;
                }
                for entry in groups
                    .get(&name)
                    .and_then(toml::Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match entry {
                        toml::Value::String(line) => lines.push(line.clone()),
                        toml::Value::Table(table) => {
                            if let Some(other) =
                                table.get("include-group").and_then(toml::Value::as_str)
                            {
                                wanted.push(other.to_owned());
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        for line in lines {
            if let Some(line) = requirement(&line, "pyproject.toml")? {
                found.push(line);
            }
        }
    }
    let mut files: Vec<String> = Vec::new();
    for folder in ["", "requirements"] {
        let Ok(entries) = std::fs::read_dir(tree.join(folder)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let lower = name.to_ascii_lowercase();
            let wanted = lower.ends_with(".txt")
                && (lower == "requirements.txt"
                    || (folder.is_empty()
                        && lower.starts_with("requirements")
                        && (lower.contains("test") || lower.contains("dev")))
                    || (!folder.is_empty()
                        && (lower.contains("test")
                            || lower.contains("dev")
                            || lower == "base.txt")));
            if wanted {
                files.push(if folder.is_empty() {
                    name
                } else {
                    format!("{folder}/{name}")
                });
            }
        }
    }
    files.sort();
    for file in files {
        requirements_file(tree, &file, 0, &mut found)?;
    }
    found.sort();
    found.dedup();
    let src_layout = tree.join("src").is_dir() && !tree.join("src/__init__.py").exists();
    Ok((found, src_layout))
}

/// The host's `python3 -V` ("Python 3.11.7").
async fn python_version() -> Result<String, PrepareError> {
    let output = tokio::process::Command::new("python3")
        .arg("-V")
        .output()
        .await
        .map_err(|e| PrepareError::Failed(format!("python3 could not start: {e}")))?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

impl DepsCache {
    /// Prepares the Python test dependencies of the project whose tree is `tree`. Runs
    /// nothing of the project's and no package's setup script (wheels only). `tag_version`:
    /// the version of the nearest git tag, for a project whose build computes its version
    /// from tags (the tree has no `.git`); the cache entry holds until the next tag.
    pub async fn prepare_python(
        &self,
        tree: &Path,
        tag_version: Option<&str>,
    ) -> Result<Prepared, PrepareError> {
        let (requirements, src_layout) = declared(tree)?;
        let own = own_name(tree, tag_version);
        let version = python_version().await?;
        let mut hasher = Sha256::new();
        hasher.update(version.as_bytes());
        if let Some((name, own_version)) = &own {
            hasher.update(format!("\0own:{name}=={own_version}").as_bytes());
        }
        for line in &requirements {
            hasher.update([0]);
            hasher.update(line.as_bytes());
        }
        let key = hex(&hasher.finalize());
        let _one = one_prepare(&format!("python:{key}")).await;
        let done = self.root().join("python").join(&key);
        let prepared = |reused: bool| {
            let (crates, bytes) = size_of(&done.join("site"));
            Prepared {
                ecosystem: Ecosystem::Python { src_layout },
                key: key.clone(),
                vendor: done.join("site"),
                lockfile: done.join("locked.txt"),
                generated: true,
                crates,
                bytes,
                reused,
            }
        };
        if done.join("site").is_dir() && done.join("locked.txt").is_file() {
            let _ = std::fs::write(done.join("used"), b"");
            return Ok(prepared(true));
        }
        let started = Instant::now();
        let cache_error = |e: std::io::Error| PrepareError::Cache(e.to_string());
        let work = self.scratch("python")?;
        let (staged, neutral) = (work.path().join("staged"), work.path().join("neutral"));
        std::fs::create_dir_all(staged.join("site")).map_err(cache_error)?;
        std::fs::create_dir_all(&neutral).map_err(cache_error)?;
        let list = staged.join("requirements.txt");
        std::fs::write(&list, requirements.join("\n") + "\n").map_err(cache_error)?;
        if !requirements.is_empty() {
            let mut command = tokio::process::Command::new("python3");
            command
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--no-input",
                    "--no-compile",
                    "--no-warn-script-location",
                    "--only-binary=:all:",
                    "--target",
                ])
                .arg(staged.join("site"))
                .arg("-r")
                .arg(&list)
                .current_dir(&neutral)
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", &neutral)
                .env("PIP_CONFIG_FILE", "/dev/null")
                .env("PIP_NO_CACHE_DIR", "1")
                .env("PYTHONNOUSERSITE", "1")
                .kill_on_drop(true)
                .stdin(std::process::Stdio::null());
            if let Some(root) = std::env::var_os("PYENV_ROOT") {
                command.env("PYENV_ROOT", root);
            }
            let output = tokio::time::timeout(DEADLINE, command.output())
                .await
                .map_err(|_| {
                    PrepareError::Failed(format!("pip took longer than {} s", DEADLINE.as_secs()))
                })?
                .map_err(|e| PrepareError::Failed(format!("pip could not start: {e}")))?;
            if !output.status.success() {
                let stderr = String::from_utf8_lossy(&output.stderr);
                let lines: Vec<&str> = stderr
                    .lines()
                    .filter(|l| !l.trim().is_empty() && !l.contains("[notice]"))
                    .collect();
                return Err(PrepareError::Failed(format!(
                    "pip could not install the project's test dependencies as wheels: {}",
                    lines[lines.len().saturating_sub(4)..].join("\n")
                )));
            }
        }
        // The project itself, as an install of it would show it to `importlib.metadata` (its
        // code stays where it is: the run's copy of the tree, on `PYTHONPATH`).
        if let Some((name, own_version)) = &own {
            let info = staged.join("site").join(format!(
                "{}-{own_version}.dist-info",
                name.replace('-', "_")
            ));
            std::fs::create_dir_all(&info).map_err(cache_error)?;
            std::fs::write(
                info.join("METADATA"),
                format!("Metadata-Version: 2.1\nName: {name}\nVersion: {own_version}\n"),
            )
            .map_err(cache_error)?;
            std::fs::write(info.join("INSTALLER"), "r2r\n").map_err(cache_error)?;
        }
        // The versions pip chose, from what it installed.
        let mut pins: Vec<String> = std::fs::read_dir(staged.join("site"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let stem = name.strip_suffix(".dist-info")?;
                let (package, version) = stem.rsplit_once('-')?;
                Some(format!("{package}=={version}"))
            })
            .collect();
        pins.sort();
        std::fs::write(staged.join("locked.txt"), pins.join("\n") + "\n").map_err(cache_error)?;
        publish(&staged, &done, "site")?;
        tracing::info!(
            key = %key,
            packages = pins.len(),
            ms = started.elapsed().as_millis() as u64,
            "python dependencies prepared"
        );
        drop(work);
        self.evict("python", &key);
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
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn a_version_computed_at_build_time_reads_as_the_nearest_tags() {
        let dynamic = tree(&[(
            "pyproject.toml",
            "[project]\nname = \"attrs\"\ndynamic = [\"version\"]\n",
        )]);
        assert_eq!(
            own_name(dynamic.path(), Some("25.3.0")),
            Some(("attrs".to_owned(), "25.3.0".to_owned()))
        );
        assert_eq!(
            own_name(dynamic.path(), None),
            Some(("attrs".to_owned(), "0+desk".to_owned()))
        );
        // A version written in the file wins over any tag.
        let fixed = tree(&[(
            "pyproject.toml",
            "[project]\nname = \"click\"\nversion = \"8.2.0\"\n",
        )]);
        assert_eq!(
            own_name(fixed.path(), Some("9.9.9")),
            Some(("click".to_owned(), "8.2.0".to_owned()))
        );
    }

    #[test]
    fn the_projects_own_test_declarations_are_read() {
        let dir = tree(&[
            (
                "pyproject.toml",
                "[project]\nname = \"p\"\ndependencies = [\"attrs>=22\"]\n[project.optional-dependencies]\ntest = [\"pytest>=7\"]\ndocs = [\"sphinx\"]\n[dependency-groups]\ndev = [{include-group = \"lint\"}, \"coverage\"]\nlint = [\"ruff\"]\n",
            ),
            ("requirements/tests.txt", "-r base.txt\nhypothesis==6.0  # property tests\n"),
            ("requirements/base.txt", "# base\nidna\n"),
            ("src/p/__init__.py", ""),
        ]);
        let (found, src) = declared(dir.path()).unwrap();
        assert_eq!(
            found,
            [
                "attrs>=22",
                "coverage",
                "hypothesis==6.0",
                "idna",
                "pytest>=7",
                "ruff"
            ]
        );
        assert!(src, "src/ without an __init__.py is a src layout");
    }

    #[test]
    fn sources_other_than_released_pypi_packages_are_refused() {
        for bad in [
            "git+https://example.org/x.git",
            "x @ https://example.org/x.whl",
            "-e .",
            "--index-url https://mirror.example/simple",
            "./local",
            "file:///tmp/x",
        ] {
            let dir = tree(&[("requirements.txt", bad)]);
            let why = declared(dir.path()).unwrap_err().to_string();
            assert!(why.contains("only released packages"), "{bad}: {why}");
        }
        let dir = tree(&[("requirements-test.txt", "-r ../../etc/passwd\n")]);
        assert!(declared(dir.path())
            .unwrap_err()
            .to_string()
            .contains("outside the repository"));
        let dir = tree(&[("pyproject.toml", "[project\n")]);
        assert!(declared(dir.path())
            .unwrap_err()
            .to_string()
            .contains("not valid TOML"));
    }
}
