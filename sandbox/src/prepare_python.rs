//! Preparing a Python project's PyPI dependencies: what the project itself declares for its
//! tests — `pyproject.toml`'s `[project] dependencies`, its test extras and dependency groups
//! (`test`, `tests`, `testing`, `dev`), and its requirements files (`requirements.txt`, and
//! the `requirements*.txt` or `requirements/*.txt` whose name says test — a plain test file
//! over its pinned variants — or, without one, dev) — installed
//! as wheels only (`--only-binary=:all:`: nothing's setup script runs) into a folder of their
//! own, which the sandbox mounts read-only and puts on `PYTHONPATH`. The cache key is the
//! SHA-256 of the requirement list and the host's Python version; the versions pip chose are
//! kept beside the wheels (`locked.txt`), so every run of that list sees the same ones.
//!
//! Refused with the reason: a requirement from git, a URL or a local path, an editable
//! install, another index, a requirements file outside the repository. A package with no
//! wheel is named by pip's own words.

use crate::prepare::{
    hex, last_said, one_prepare, publish, size_of, DepsCache, Ecosystem, PrepareError, Prepared,
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

/// The extras a requirement line asks of the project itself (`-e .[socks]`, `.`,
/// `--editable ./[a,b]`): its own dependencies, which the desk reads from its
/// `pyproject.toml` instead of installing it. `None` for any other line.
fn own_extras(line: &str) -> Option<Vec<String>> {
    let line = line.split(" #").next().unwrap_or_default().trim();
    let rest = line
        .strip_prefix("--editable")
        .or_else(|| line.strip_prefix("-e"))
        .map_or(line, str::trim_start);
    let rest = rest.strip_prefix("./").or_else(|| rest.strip_prefix('.'))?;
    if rest.is_empty() {
        return Some(Vec::new());
    }
    let extras = rest.strip_prefix('[')?.strip_suffix(']')?;
    Some(
        extras
            .split(',')
            .map(|e| e.trim().to_ascii_lowercase())
            .filter(|e| !e.is_empty())
            .collect(),
    )
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
    extras: &mut Vec<String>,
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
            requirements_file(tree, &included.to_string_lossy(), depth + 1, out, extras)?;
            continue;
        }
        if let Some(asked) = own_extras(line) {
            extras.extend(asked);
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
/// Which requirements files to install, of those found: the runtime ones
/// (`requirements.txt`, `requirements/base.txt`) and the test ones, where a plain test file
/// (`requirements-test.txt`, `requirements/tests.txt`, `…testing.txt`) wins over its
/// variants (`tests-min.txt`, `tests-dev.txt`: other pins of the same list, not more of
/// it), and a dev file (`requirements-dev.txt`, `requirements/dev.txt`: often docs and
/// typing too) is read only when there is no test file at all. Without a plain test file
/// the first variant by name is read.
fn chosen_requirements(files: Vec<String>) -> Vec<String> {
    let stem = |file: &str| {
        let name = file.rsplit('/').next().unwrap_or(file).to_ascii_lowercase();
        let name = name.strip_suffix(".txt").unwrap_or(&name).to_owned();
        name.strip_prefix("requirements")
            .unwrap_or(&name)
            .trim_matches(|c| c == '-' || c == '_' || c == '.')
            .to_owned()
    };
    let runtime = |file: &str| matches!(stem(file).as_str(), "" | "base");
    let plain_test = |file: &str| matches!(stem(file).as_str(), "test" | "tests" | "testing");
    let test = |file: &str| stem(file).contains("test");
    let plain: Vec<&String> = files.iter().filter(|f| plain_test(f)).collect();
    let variants: Vec<&String> = files.iter().filter(|f| test(f) && !plain_test(f)).collect();
    let tests: Vec<&String> = if !plain.is_empty() {
        plain
    } else if let Some(first) = variants.first() {
        vec![*first]
    } else {
        files.iter().filter(|f| !runtime(f)).collect()
    };
    files
        .iter()
        .filter(|f| runtime(f) || tests.contains(f))
        .cloned()
        .collect()
}

pub fn declared(tree: &Path) -> Result<(Vec<String>, bool), PrepareError> {
    let mut found = Vec::new();
    // The extras of the project's own optional dependencies read (its test ones, and those
    // its requirements files ask of it with `-e .[…]`).
    let mut optional: Option<toml::Table> = None;
    let mut own_name = None;
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
        own_name = project
            .and_then(|p| p.get("name"))
            .and_then(toml::Value::as_str)
            .map(normalized);
        let mut lines = strings(project.and_then(|p| p.get("dependencies")));
        if let Some(extras) = project
            .and_then(|p| p.get("optional-dependencies"))
            .and_then(toml::Value::as_table)
        {
            for name in TEST_NAMES {
                lines.extend(strings(extras.get(name)));
            }
            optional = Some(extras.clone());
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
    let mut asked = Vec::new();
    for file in chosen_requirements(files) {
        requirements_file(tree, &file, 0, &mut found, &mut asked)?;
    }
    for extra in asked {
        let lines = optional
            .as_ref()
            .and_then(|table| {
                table
                    .iter()
                    .find(|(name, _)| normalized(name) == normalized(&extra))
            })
            .and_then(|(_, list)| list.as_array())
            .into_iter()
            .flatten()
            .filter_map(toml::Value::as_str);
        for line in lines {
            if let Some(line) = requirement(line, "pyproject.toml")? {
                found.push(line);
            }
        }
    }
    // The project asking for itself (`name[extra]` in its own extras) is its own tree, never
    // a released copy from PyPI.
    if let Some(own) = &own_name {
        found.retain(|line| &normalized(requirement_name(line)) != own);
    }
    found.sort();
    found.dedup();
    let src_layout = tree.join("src").is_dir() && !tree.join("src/__init__.py").exists();
    Ok((found, src_layout))
}

/// A package name as PyPI compares it (PEP 503: case and runs of `-_.` do not matter).
fn normalized(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The package a requirement line names (`Foo[bar]>=1; python_version<"3.12"` → `Foo`).
fn requirement_name(line: &str) -> &str {
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(line.len());
    &line[..end]
}

/// The versions a TOML lockfile of the project's own (`uv.lock`, `poetry.lock`, `pdm.lock`)
/// pins for packages from a registry, as pip constraints (`name==version`), and the file
/// they came from. A package the lock holds at two versions (one a Python version) is not
/// pinned; nor is anything from git, a URL or a path.
pub fn lock_pins(tree: &Path) -> Result<Option<(String, Vec<String>)>, PrepareError> {
    for file in ["uv.lock", "poetry.lock", "pdm.lock"] {
        let path = tree.join(file);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() || !meta.is_file() {
            return Err(refuse(format!(
                "{file} is not a regular file; the desk reads only regular files"
            )));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| refuse(format!("{file} cannot be read: {e}")))?;
        let doc: toml::Table = text
            .parse()
            .map_err(|e| refuse(format!("{file} is not valid TOML: {e}")))?;
        let mut versions: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
            Default::default();
        for package in doc
            .get("package")
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(toml::Value::as_table)
        {
            let (Some(name), Some(version)) = (
                package.get("name").and_then(toml::Value::as_str),
                package.get("version").and_then(toml::Value::as_str),
            ) else {
                continue;
            };
            // uv: `source = { registry = … }`; poetry: no source, or a `legacy` index; pdm: none.
            let from_registry = match package.get("source") {
                None => true,
                Some(toml::Value::Table(source)) => {
                    source.contains_key("registry")
                        || source.get("type").and_then(toml::Value::as_str) == Some("legacy")
                }
                Some(_) => false,
            };
            let clean = |text: &str| {
                text.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | '!'))
                    && !text.is_empty()
            };
            if from_registry && clean(name) && clean(version) {
                versions
                    .entry(normalized(name))
                    .or_default()
                    .insert(version.to_owned());
            }
        }
        let pins = versions
            .into_iter()
            .filter_map(|(name, versions)| {
                (versions.len() == 1)
                    .then(|| format!("{name}=={}", versions.first().unwrap_or(&String::new())))
            })
            .collect();
        return Ok(Some((file.to_owned(), pins)));
    }
    Ok(None)
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
        let pins = lock_pins(tree)?;
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
        for pin in pins.iter().flat_map(|(_, pins)| pins) {
            hasher.update(b"\0pin:");
            hasher.update(pin.as_bytes());
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
        // The project's lockfile decides the versions of what it pins.
        let constraints = staged.join("constraints.txt");
        let pinned = pins.as_ref().map(|(file, pins)| (file.clone(), pins.len()));
        std::fs::write(
            &constraints,
            pins.map(|(_, pins)| pins.join("\n") + "\n")
                .unwrap_or_default(),
        )
        .map_err(cache_error)?;
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
                .arg("-c")
                .arg(&constraints)
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
                return Err(PrepareError::Failed(format!(
                    "pip could not install the project's test dependencies as wheels{}: {}",
                    pinned
                        .as_ref()
                        .map_or(String::new(), |(file, count)| format!(
                            " at the {count} versions {file} pins"
                        )),
                    last_said(&output.stderr, 4)
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
            lock = pinned.as_ref().map_or("none", |(file, _)| file.as_str()),
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
    fn a_plain_test_requirements_file_wins_over_its_variants_and_dev_files() {
        // Flask's layout: the variants pin other versions of the same list (the oldest
        // supported, the development heads from git); dev.txt adds docs and typing.
        let dir = tree(&[
            ("pyproject.toml", "[project]\nname = \"flask\"\n"),
            ("requirements/tests.txt", "pytest==8.3.3\n"),
            ("requirements/tests-min.txt", "blinker==1.9.0\n"),
            (
                "requirements/tests-dev.txt",
                "https://github.com/pallets/werkzeug/archive/refs/heads/main.tar.gz\n",
            ),
            ("requirements/dev.txt", "sphinx==8.0\n"),
            ("requirements/docs.txt", "alabaster==1.0.0\n"),
        ]);
        assert_eq!(declared(dir.path()).unwrap().0, ["pytest==8.3.3"]);
        // No plain test file: the first variant; no test file at all: the dev ones.
        assert_eq!(
            chosen_requirements(vec![
                "requirements-test-min.txt".into(),
                "requirements-tests-latest.txt".into(),
                "requirements.txt".into(),
            ]),
            ["requirements-test-min.txt", "requirements.txt"]
        );
        assert_eq!(
            chosen_requirements(vec![
                "requirements-dev.txt".into(),
                "requirements.txt".into()
            ]),
            ["requirements-dev.txt", "requirements.txt"]
        );
        assert_eq!(
            chosen_requirements(vec![
                "requirements/base.txt".into(),
                "requirements/dev.txt".into(),
                "requirements/testing.txt".into(),
            ]),
            ["requirements/base.txt", "requirements/testing.txt"]
        );
    }

    #[test]
    fn sources_other_than_released_pypi_packages_are_refused() {
        for bad in [
            "git+https://example.org/x.git",
            "x @ https://example.org/x.whl",
            // The project itself (`-e .`) is read from its pyproject.toml; another is refused.
            "-e ./other-project",
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

    #[test]
    fn the_project_asking_for_itself_reads_its_own_extras() {
        for (line, extras) in [
            ("-e .", Some(vec![])),
            ("-e .[socks]", Some(vec!["socks"])),
            ("--editable ./[Brotli, cli]", Some(vec!["brotli", "cli"])),
            (".[http2]  # the client", Some(vec!["http2"])),
            ("-e ../other", None),
            ("-e git+https://x/y", None),
            ("requests", None),
        ] {
            let extras =
                extras.map(|e: Vec<&str>| e.into_iter().map(str::to_owned).collect::<Vec<_>>());
            assert_eq!(own_extras(line), extras, "{line}");
        }
        let dir = tree(&[
            (
                "pyproject.toml",
                "[project]\nname = \"Http_X\"\ndependencies = [\"idna\"]\n\
                 [project.optional-dependencies]\nsocks = [\"socksio==1.*\"]\nhttp2 = [\"h2>=3\"]\n\
                 all = [\"http-x[socks,http2]\"]\n",
            ),
            ("requirements.txt", "-e .[socks,all]\npytest>=8\n"),
        ]);
        let (found, _) = declared(dir.path()).unwrap();
        assert_eq!(
            found,
            ["idna", "pytest>=8", "socksio==1.*"],
            "its own name is never asked of PyPI"
        );
        // Another project's path is still refused.
        let dir = tree(&[("requirements.txt", "-e ../sibling\n")]);
        assert!(declared(dir.path()).is_err());
    }

    #[test]
    fn a_lockfile_pins_what_it_holds_from_a_registry_once() {
        let uv = tree(&[(
            "uv.lock",
            "version = 1\n\
             [[package]]\nname = \"Pytest\"\nversion = \"8.3.4\"\nsource = { registry = \"https://pypi.org/simple\" }\n\
             [[package]]\nname = \"numpy\"\nversion = \"2.0.2\"\nsource = { registry = \"https://pypi.org/simple\" }\n\
             [[package]]\nname = \"numpy\"\nversion = \"2.3.1\"\nsource = { registry = \"https://pypi.org/simple\" }\n\
             [[package]]\nname = \"flask\"\nversion = \"3.2.0\"\nsource = { editable = \".\" }\n\
             [[package]]\nname = \"werk\"\nversion = \"1.0\"\nsource = { git = \"https://x/werk\" }\n\
             [[package]]\nname = \"bad; rm -rf\"\nversion = \"1\"\n",
        )]);
        assert_eq!(
            lock_pins(uv.path()).unwrap(),
            Some(("uv.lock".to_owned(), vec!["pytest==8.3.4".to_owned()]))
        );
        let poetry = tree(&[(
            "poetry.lock",
            "[[package]]\nname = \"attrs\"\nversion = \"23.1.0\"\n\
             [[package]]\nname = \"local\"\nversion = \"0.1\"\n[package.source]\ntype = \"directory\"\nurl = \"../local\"\n",
        )]);
        assert_eq!(
            lock_pins(poetry.path()).unwrap().unwrap().1,
            ["attrs==23.1.0"]
        );
        assert_eq!(lock_pins(tree(&[("README", "")]).path()).unwrap(), None);
        let broken = tree(&[("uv.lock", "[[package]\n")]);
        assert!(lock_pins(broken.path()).is_err());
    }
}
