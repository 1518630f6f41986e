//! What a repository is, read from its tree before anything of it runs: its ecosystem and so
//! the profile its suite runs under, its lockfile, the toolchain versions it pins, the
//! folders a fix may change, where its tests live, and what the desk cannot do for it yet.
//! An owner confirms or overrides each (`r2r project detect`, `r2r project add --from-git`);
//! nothing here is trusted to run.

use crate::Profile;
use std::path::Path;

/// The most bytes of a manifest read.
const MANIFEST_BYTES: u64 = 1 << 20;

/// What [`detect`] found, each part with the file it was read from.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Detection {
    /// The profile its suite runs under, when one fits.
    pub profile: Option<Profile>,
    /// The file that decided it (`Cargo.toml`, `pyproject.toml` …).
    pub manifest: Option<String>,
    /// The lockfile the dependencies are prepared from, when the repository has one.
    pub lockfile: Option<String>,
    /// Toolchain versions the repository asks for, each with where it says so.
    pub toolchain: Vec<String>,
    /// Folders a fix may change, each ending in `/`.
    pub fix_paths: Vec<String>,
    /// Folders its tests live in, each ending in `/` (the profile's patterns decide where a
    /// proposed test may go; these say where the existing ones are).
    pub test_folders: Vec<String>,
    /// Subfolders with a project of their own (a monorepo's members outside a workspace).
    pub subprojects: Vec<String>,
    /// What the desk cannot do for this repository yet, in plain words.
    pub limits: Vec<String>,
}

/// Reads the tree at `root` (a checkout or an exported snapshot).
pub fn detect(root: &Path) -> Detection {
    let tree = Tree { root };
    let mut found = Detection::default();
    if tree.is_file("Cargo.toml") {
        rust(&tree, &mut found);
    } else if tree.is_file("pyproject.toml")
        || tree.is_file("setup.py")
        || tree.is_file("setup.cfg")
    {
        python(&tree, &mut found);
    } else if tree.is_file("go.mod") {
        go(&tree, &mut found);
    } else if tree.is_file("package.json") {
        node(&tree, &mut found);
    } else if tree.is_file("pom.xml")
        || tree.is_file("build.gradle")
        || tree.is_file("build.gradle.kts")
    {
        found.manifest = Some(
            if tree.is_file("pom.xml") {
                "pom.xml"
            } else {
                "build.gradle"
            }
            .to_owned(),
        );
        found.profile = Some(Profile::Junit);
        found.fix_paths = tree.folders(&["src/main/"]);
        found.test_folders = tree.folders(&["src/test/"]);
        if !tree.is_file(crate::profile::JUNIT_SCRIPT) {
            found.limits.push(format!(
                "a JVM project runs through its own {} script (which writes JUnit XML); the repository has none, and its build tool's dependencies are not prepared",
                crate::profile::JUNIT_SCRIPT
            ));
        }
    }
    found.subprojects = subprojects(&tree, found.manifest.is_some());
    if found.manifest.is_none() {
        found.limits.push(if found.subprojects.is_empty() {
            "no Cargo.toml, pyproject.toml, setup.py, go.mod, package.json or pom.xml at the root: no profile fits".to_owned()
        } else {
            format!(
                "no project at the root; the desk runs a suite at the root only, and these folders hold projects: {}",
                found.subprojects.join(", ")
            )
        });
    }
    found
}

fn rust(tree: &Tree, found: &mut Detection) {
    found.manifest = Some("Cargo.toml".to_owned());
    found.profile = Some(Profile::Rust);
    let manifest = tree.toml("Cargo.toml");
    if manifest.is_none() {
        found.limits.push(
            "Cargo.toml does not read as TOML: no package or workspace member found".to_owned(),
        );
    }
    found.lockfile = tree.first_file(&["Cargo.lock"]);
    if found.lockfile.is_none() {
        found.limits.push(
            "no Cargo.lock: the desk generates one when it prepares the dependencies and keeps it"
                .to_owned(),
        );
    }
    for pin in ["rust-toolchain.toml", "rust-toolchain"] {
        if let Some(text) = tree.text(pin) {
            // `rust-toolchain` may be the channel alone; the TOML form may name none.
            let channel = match text.parse::<toml::Table>() {
                Ok(table) => table
                    .get("toolchain")
                    .and_then(|t| t.get("channel")?.as_str().map(str::to_owned)),
                Err(_) => text.lines().next().map(|l| l.trim().to_owned()),
            };
            found.toolchain.push(match channel {
                Some(channel) if !channel.is_empty() => {
                    format!("rust {channel} ({pin}; the sandbox runs the host's)")
                }
                _ => format!("rust, no channel named ({pin}: its components or targets only)"),
            });
        }
    }
    let package = manifest.as_ref().and_then(|m| m.get("package"));
    // `rust-version` of the package, or of the workspace (`rust-version.workspace = true`).
    let workspace_version = manifest.as_ref().and_then(|m| {
        m.get("workspace")?
            .get("package")?
            .get("rust-version")?
            .as_str()
    });
    if let Some(version) = package
        .and_then(|p| p.get("rust-version"))
        .and_then(|v| v.as_str())
        .or(workspace_version)
    {
        found
            .toolchain
            .push(format!("rust ≥ {version} (Cargo.toml rust-version)"));
    }
    let members: Vec<String> = manifest
        .as_ref()
        .and_then(|m| m.get("workspace")?.get("members")?.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str())
        .flat_map(|member| tree.expand(member))
        .collect();
    let mut roots: Vec<String> = Vec::new();
    if package.is_some() {
        roots.push(String::new());
    }
    roots.extend(
        members
            .into_iter()
            .map(|m| format!("{}/", m.trim_end_matches('/'))),
    );
    for root in &roots {
        found
            .fix_paths
            .extend(tree.folders(&[&format!("{root}src/")]));
        found
            .test_folders
            .extend(tree.folders(&[&format!("{root}tests/")]));
    }
}

fn python(tree: &Tree, found: &mut Detection) {
    found.manifest = tree.first_file(&["pyproject.toml", "setup.cfg", "setup.py"]);
    found.profile = Some(Profile::Python);
    found.lockfile = tree.first_file(&[
        "uv.lock",
        "poetry.lock",
        "pdm.lock",
        "Pipfile.lock",
        "requirements-dev.txt",
        "requirements/test.txt",
        "requirements-test.txt",
        "requirements.txt",
    ]);
    let pyproject = tree.toml("pyproject.toml");
    let requires = pyproject.as_ref().and_then(|p| {
        p.get("project")?
            .get("requires-python")?
            .as_str()
            .map(str::to_owned)
    });
    if let Some(requires) = requires {
        found.toolchain.push(format!(
            "python {requires} (pyproject.toml requires-python)"
        ));
    }
    if let Some(version) = tree.text(".python-version") {
        found
            .toolchain
            .push(format!("python {} (.python-version)", version.trim()));
    }
    // The package: under src/ (the src layout), else a top-level folder with __init__.py
    // that is not a test, docs or examples folder.
    let not_code = [
        "tests",
        "test",
        "testing",
        "docs",
        "doc",
        "examples",
        "example",
        "scripts",
        "benchmarks",
    ];
    let packages = |under: &str| -> Vec<String> {
        tree.children(under)
            .into_iter()
            .filter(|name| !not_code.contains(&name.as_str()) && !name.starts_with('.'))
            .filter(|name| tree.is_file(&format!("{under}{name}/__init__.py")))
            .map(|name| format!("{under}{name}/"))
            .collect()
    };
    let mut fix = packages("src/");
    if fix.is_empty() {
        fix = packages("");
    }
    if fix.is_empty() {
        // A single-module project (`foo.py` at the root) or an unusual layout.
        found.limits.push(
            "no package folder found (src/<name>/ or <name>/ with __init__.py): name the folders a fix may change".to_owned(),
        );
    }
    found.fix_paths = fix;
    found.test_folders = tree.folders(&["tests/", "test/", "testing/"]);
    if tree.is_file("tox.ini") && found.lockfile.is_none() {
        found.limits.push(
            "its test dependencies are read from pyproject.toml and tox.ini; no lockfile pins them"
                .to_owned(),
        );
    }
}

fn go(tree: &Tree, found: &mut Detection) {
    found.manifest = Some("go.mod".to_owned());
    found.profile = Some(Profile::Go);
    found.lockfile = tree.first_file(&["go.sum"]);
    if let Some(text) = tree.text("go.mod") {
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["go", version] => found
                    .toolchain
                    .push(format!("go {version} (go.mod go directive)")),
                ["toolchain", version] => found
                    .toolchain
                    .push(format!("{version} (go.mod toolchain)")),
                _ => {}
            }
        }
        let requires = text.lines().any(|l| l.trim_start().starts_with("require"));
        if requires && !tree.is_dir("vendor") {
            found.limits.push(
                "its modules are not vendored and the desk does not download Go modules yet (go mod download): only a standard-library suite runs".to_owned(),
            );
        }
    }
    // Go's packages are folders: every top-level folder with a non-test .go file, and the
    // root's own files one by one (a prefix of "" would let a fix change anything).
    let mut fix = Vec::new();
    for name in tree.children("") {
        if name.starts_with('.') || name == "vendor" || name == "testdata" {
            continue;
        }
        if tree.is_dir(&name) {
            if tree.has_file_where(&name, |f| f.ends_with(".go") && !f.ends_with("_test.go")) {
                fix.push(format!("{name}/"));
            }
        } else if name.ends_with(".go") && !name.ends_with("_test.go") {
            fix.push(name);
        }
    }
    found.fix_paths = fix;
}

fn node(tree: &Tree, found: &mut Detection) {
    found.manifest = Some("package.json".to_owned());
    let package: Option<serde_json::Value> = tree
        .text("package.json")
        .and_then(|t| serde_json::from_str(&t).ok());
    found.lockfile = tree.first_file(&[
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
    ]);
    if let Some(engine) = package
        .as_ref()
        .and_then(|p| p.get("engines")?.get("node")?.as_str().map(str::to_owned))
    {
        found
            .toolchain
            .push(format!("node {engine} (package.json engines.node)"));
    }
    if let Some(version) = tree
        .first_file(&[".nvmrc", ".node-version"])
        .and_then(|f| tree.text(&f).map(|t| (f, t)))
    {
        found
            .toolchain
            .push(format!("node {} ({})", version.1.trim(), version.0));
    }
    let test_script = package
        .as_ref()
        .and_then(|p| p.get("scripts")?.get("test")?.as_str().map(str::to_owned))
        .unwrap_or_default();
    let dev = |name: &str| {
        package.as_ref().is_some_and(|p| {
            ["devDependencies", "dependencies"]
                .iter()
                .any(|field| p.get(field).and_then(|d| d.get(name)).is_some())
        })
    };
    // A runner named as a command in the test script (`jest`, `./node_modules/.bin/jest`),
    // or among the dependencies.
    let commands: Vec<&str> = test_script
        .split(|c: char| c.is_whitespace() || c == '&' || c == ';' || c == '|')
        .map(|word| word.rsplit('/').next().unwrap_or(word))
        .collect();
    let runner = ["vitest", "jest", "mocha", "ava", "tap", "jasmine", "karma"]
        .into_iter()
        .find(|runner| commands.contains(runner) || dev(runner));
    found.profile = match runner {
        Some("vitest") => Some(Profile::Vitest),
        None => Some(Profile::NodeTest),
        Some(other) => {
            found.limits.push(format!(
                "its tests run with {other}; the desk runs node --test and Vitest suites only"
            ));
            None
        }
    };
    let declares = package.as_ref().is_some_and(|p| {
        ["dependencies", "devDependencies", "optionalDependencies"]
            .iter()
            .any(|field| {
                p.get(field)
                    .and_then(|d| d.as_object())
                    .is_some_and(|d| !d.is_empty())
            })
    });
    match found.lockfile.as_deref() {
        _ if !declares => {}
        Some("package-lock.json" | "npm-shrinkwrap.json" | "pnpm-lock.yaml") => {}
        Some(other) => found.limits.push(format!(
            "its lockfile is {other}; the desk installs dependencies from a package-lock.json (npm ci) or a pnpm-lock.yaml (pnpm) only"
        )),
        None => found
            .limits
            .push("no lockfile: its dependencies cannot be prepared at pinned versions".to_owned()),
    }
    found.fix_paths = tree.folders(&["src/", "lib/", "source/"]);
    found.test_folders = tree.folders(&["test/", "tests/", "__tests__/"]);
    // A workspace (package.json `workspaces`, pnpm-workspace.yaml `packages`): each member's
    // source folder, or the member itself.
    let mut members: Vec<String> = package
        .as_ref()
        .and_then(|p| {
            let workspaces = p.get("workspaces")?;
            workspaces
                .as_array()
                .or_else(|| workspaces.get("packages")?.as_array())
                .cloned()
        })
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    if let Some(yaml) = tree.text("pnpm-workspace.yaml") {
        let mut listing = false;
        for line in yaml.lines() {
            if !line.starts_with(' ') && !line.starts_with('-') {
                listing = line.trim_end() == "packages:";
            } else if let Some(item) = line.trim().strip_prefix("- ").filter(|_| listing) {
                members.push(
                    item.trim()
                        .trim_matches(|c| c == '\'' || c == '"')
                        .to_owned(),
                );
            }
        }
    }
    for member in members.iter().filter(|m| !m.starts_with('!')) {
        for folder in tree.expand_where(member, "package.json") {
            let src = format!("{folder}/src/");
            found.fix_paths.push(if tree.is_dir(&src) {
                src
            } else {
                format!("{folder}/")
            });
        }
    }
    found.fix_paths.truncate(50);
}

/// Folders one or two levels down with a manifest of their own (workspace members aside).
fn subprojects(tree: &Tree, root_has_one: bool) -> Vec<String> {
    const MANIFESTS: [&str; 6] = [
        "Cargo.toml",
        "pyproject.toml",
        "setup.py",
        "go.mod",
        "package.json",
        "pom.xml",
    ];
    if root_has_one {
        return Vec::new();
    }
    let mut found = Vec::new();
    for first in tree.children("") {
        if first.starts_with('.') || first == "node_modules" || !tree.is_dir(&first) {
            continue;
        }
        if MANIFESTS
            .iter()
            .any(|m| tree.is_file(&format!("{first}/{m}")))
        {
            found.push(format!("{first}/"));
            continue;
        }
        for second in tree.children(&format!("{first}/")) {
            let folder = format!("{first}/{second}");
            if tree.is_dir(&folder)
                && MANIFESTS
                    .iter()
                    .any(|m| tree.is_file(&format!("{folder}/{m}")))
            {
                found.push(format!("{folder}/"));
            }
        }
    }
    found.truncate(20);
    found
}

/// The tree being read; every path is relative to its root and never leaves it.
struct Tree<'a> {
    root: &'a Path,
}

impl Tree<'_> {
    /// `relative` under the root, when it names something inside it (no `..`, no absolute
    /// path, no symbolic link on the way: a repository's links are not followed).
    fn path(&self, relative: &str) -> Option<std::path::PathBuf> {
        let relative = relative.trim_end_matches('/');
        if relative.split('/').any(|part| part == "..") || relative.starts_with('/') {
            return None;
        }
        let mut path = self.root.to_path_buf();
        for part in relative.split('/').filter(|p| !p.is_empty() && *p != ".") {
            path.push(part);
            if std::fs::symlink_metadata(&path)
                .map(|m| m.file_type().is_symlink())
                .unwrap_or(false)
            {
                return None;
            }
        }
        Some(path)
    }

    fn is_file(&self, relative: &str) -> bool {
        self.path(relative).is_some_and(|p| p.is_file())
    }

    fn is_dir(&self, relative: &str) -> bool {
        self.path(relative).is_some_and(|p| p.is_dir())
    }

    /// A file's text (at most [`MANIFEST_BYTES`]), when it is one and is UTF-8.
    fn text(&self, relative: &str) -> Option<String> {
        use std::io::Read;
        let path = self.path(relative).filter(|p| p.is_file())?;
        let mut text = String::new();
        std::fs::File::open(path)
            .ok()?
            .take(MANIFEST_BYTES)
            .read_to_string(&mut text)
            .ok()?;
        Some(text)
    }

    fn toml(&self, relative: &str) -> Option<toml::Table> {
        self.text(relative)?.parse().ok()
    }

    /// The first of `names` that is a file.
    fn first_file(&self, names: &[&str]) -> Option<String> {
        names
            .iter()
            .find(|n| self.is_file(n))
            .map(|n| (*n).to_owned())
    }

    /// Those of `folders` (each ending in `/`) that exist.
    fn folders(&self, folders: &[&str]) -> Vec<String> {
        folders
            .iter()
            .filter(|f| self.is_dir(f))
            .map(|f| (*f).to_owned())
            .collect()
    }

    /// The names in a folder (`""` for the root, else ending in `/`), sorted.
    fn children(&self, folder: &str) -> Vec<String> {
        let Some(path) = self.path(folder) else {
            return Vec::new();
        };
        // Only plain names (letters, digits, `_`, `-`, `.`) are ever proposed: a folder named
        // like markup or a path is not a folder a fix may change.
        let plain = |name: &String| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        };
        let mut names: Vec<String> = std::fs::read_dir(path)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(plain)
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names.truncate(10_000);
        names
    }

    /// Whether a file in `folder` or below (at most three levels) satisfies `wanted`.
    fn has_file_where(&self, folder: &str, wanted: impl Fn(&str) -> bool + Copy) -> bool {
        fn walk(tree: &Tree, folder: &str, depth: u32, wanted: &dyn Fn(&str) -> bool) -> bool {
            tree.children(&format!("{folder}/"))
                .into_iter()
                .any(|name| {
                    let path = format!("{folder}/{name}");
                    if tree.is_file(&path) {
                        wanted(&name)
                    } else {
                        depth > 0 && tree.is_dir(&path) && walk(tree, &path, depth - 1, wanted)
                    }
                })
        }
        walk(self, folder, 3, &wanted)
    }

    /// A Cargo workspace member's pattern (`crates/*` or a folder) as the folders it names.
    fn expand(&self, member: &str) -> Vec<String> {
        self.expand_where(member, "Cargo.toml")
    }

    /// A workspace member's pattern (`packages/*`, `packages/**` or a folder) as the folders
    /// it names that hold `manifest`.
    fn expand_where(&self, member: &str, manifest: &str) -> Vec<String> {
        let member = member.trim_start_matches("./").trim_end_matches('/');
        match member
            .strip_suffix("/**")
            .or_else(|| member.strip_suffix("/*"))
        {
            Some(parent) if !parent.contains('*') => self
                .children(&format!("{parent}/"))
                .into_iter()
                .map(|name| format!("{parent}/{name}"))
                .filter(|folder| self.is_file(&format!("{folder}/{manifest}")))
                .collect(),
            Some(_) => Vec::new(),
            None if self.is_file(&format!("{member}/{manifest}")) => vec![member.to_owned()],
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree of `files` (path → text) in a fresh folder.
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
    fn a_rust_crate_without_a_lockfile_is_rust_and_says_the_desk_makes_one() {
        let dir = tree(&[
            (
                "Cargo.toml",
                "[package]\nname = \"walk\"\nrust-version = \"1.60\"\n",
            ),
            ("src/lib.rs", ""),
            ("tests/walk.rs", ""),
            ("rust-toolchain.toml", "[toolchain]\nchannel = \"1.74\"\n"),
        ]);
        let found = detect(dir.path());
        assert_eq!(found.profile, Some(Profile::Rust));
        assert_eq!(found.lockfile, None);
        assert_eq!(found.fix_paths, ["src/"]);
        assert_eq!(found.test_folders, ["tests/"]);
        assert!(
            found
                .toolchain
                .iter()
                .any(|t| t.starts_with("rust 1.74 (rust-toolchain.toml")),
            "{:?}",
            found.toolchain
        );
        assert!(
            found.toolchain.iter().any(|t| t.contains("≥ 1.60")),
            "{:?}",
            found.toolchain
        );
        assert!(
            found.limits.iter().any(|l| l.contains("no Cargo.lock")),
            "{:?}",
            found.limits
        );
        let components = tree(&[
            ("Cargo.toml", "[package]\nname = \"x\"\n"),
            (
                "rust-toolchain.toml",
                "[toolchain]\ncomponents = [\"rust-src\"]\n",
            ),
        ]);
        assert_eq!(
            detect(components.path()).toolchain,
            ["rust, no channel named (rust-toolchain.toml: its components or targets only)"]
        );
        let bare = tree(&[
            ("Cargo.toml", "[package]\nname = \"x\"\n"),
            ("rust-toolchain", "nightly-2024-01-01\n"),
        ]);
        assert_eq!(
            detect(bare.path()).toolchain,
            ["rust nightly-2024-01-01 (rust-toolchain; the sandbox runs the host's)"]
        );
    }

    #[test]
    fn a_manifest_that_does_not_read_says_so() {
        let dir = tree(&[("Cargo.toml", "[package\nname="), ("src/lib.rs", "")]);
        let found = detect(dir.path());
        assert_eq!(found.profile, Some(Profile::Rust));
        assert!(found.fix_paths.is_empty());
        assert!(
            found
                .limits
                .iter()
                .any(|l| l.contains("does not read as TOML")),
            "{:?}",
            found.limits
        );
    }

    #[test]
    fn a_rust_workspace_names_each_members_source() {
        let dir = tree(&[
            (
                "Cargo.toml",
                "[workspace]\nmembers = [\"crates/*\", \"cli\"]\n",
            ),
            ("Cargo.lock", ""),
            ("crates/core/Cargo.toml", "[package]\nname = \"core\"\n"),
            ("crates/core/src/lib.rs", ""),
            ("crates/core/tests/t.rs", ""),
            ("crates/notes/README", ""),
            ("cli/Cargo.toml", "[package]\nname = \"cli\"\n"),
            ("cli/src/main.rs", ""),
        ]);
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[workspace]\nmembers = [\"crates/*\", \"cli\"]\n[workspace.package]\nrust-version = \"1.96\"\n",
        )
        .unwrap();
        let found = detect(dir.path());
        assert_eq!(found.toolchain, ["rust ≥ 1.96 (Cargo.toml rust-version)"]);
        assert_eq!(found.lockfile.as_deref(), Some("Cargo.lock"));
        assert_eq!(found.fix_paths, ["crates/core/src/", "cli/src/"]);
        assert_eq!(found.test_folders, ["crates/core/tests/"]);
        assert!(found.limits.is_empty(), "{:?}", found.limits);
    }

    #[test]
    fn a_python_project_in_the_src_layout_or_flat_finds_its_package() {
        let src = tree(&[
            (
                "pyproject.toml",
                "[project]\nname = \"attrs\"\nrequires-python = \">=3.8\"\n",
            ),
            ("src/attr/__init__.py", ""),
            ("src/attrs/__init__.py", ""),
            ("tests/test_x.py", ""),
            ("tox.ini", ""),
        ]);
        let found = detect(src.path());
        assert_eq!(found.profile, Some(Profile::Python));
        assert_eq!(found.fix_paths, ["src/attr/", "src/attrs/"]);
        assert_eq!(found.test_folders, ["tests/"]);
        assert_eq!(
            found.toolchain,
            ["python >=3.8 (pyproject.toml requires-python)"]
        );
        assert!(
            found.limits.iter().any(|l| l.contains("tox.ini")),
            "{:?}",
            found.limits
        );
        let flat = tree(&[
            ("setup.py", ""),
            ("requirements.txt", ""),
            ("itsdangerous/__init__.py", ""),
            ("tests/__init__.py", ""),
            ("docs/__init__.py", ""),
        ]);
        let found = detect(flat.path());
        assert_eq!(found.manifest.as_deref(), Some("setup.py"));
        assert_eq!(found.lockfile.as_deref(), Some("requirements.txt"));
        assert_eq!(found.fix_paths, ["itsdangerous/"]);
        let module = tree(&[
            ("pyproject.toml", "[project]\nname='one'\n"),
            ("one.py", ""),
        ]);
        let found = detect(module.path());
        assert!(found.fix_paths.is_empty());
        assert!(
            found.limits.iter().any(|l| l.contains("no package folder")),
            "{:?}",
            found.limits
        );
    }

    #[test]
    fn a_go_module_names_its_packages_and_its_root_files_not_the_whole_tree() {
        let dir = tree(&[
            (
                "go.mod",
                "module example.com/x\n\ngo 1.21\n\nrequire github.com/a/b v1.0.0\n",
            ),
            ("go.sum", ""),
            ("walk.go", ""),
            ("walk_test.go", ""),
            ("internal/fs/fs.go", ""),
            ("testdata/a.go", ""),
            ("docs/readme.md", ""),
        ]);
        let found = detect(dir.path());
        assert_eq!(found.profile, Some(Profile::Go));
        assert_eq!(found.fix_paths, ["internal/", "walk.go"]);
        assert_eq!(found.toolchain, ["go 1.21 (go.mod go directive)"]);
        assert!(
            found.limits.iter().any(|l| l.contains("not vendored")),
            "{:?}",
            found.limits
        );
    }

    #[test]
    fn a_node_package_is_vitest_node_test_or_a_runner_the_desk_cannot_run() {
        let vitest = tree(&[
            (
                "package.json",
                r#"{"scripts":{"test":"vitest run"},"devDependencies":{"vitest":"^1"},"engines":{"node":">=18"}}"#,
            ),
            ("package-lock.json", "{}"),
            ("src/index.ts", ""),
        ]);
        let found = detect(vitest.path());
        assert_eq!(found.profile, Some(Profile::Vitest));
        assert_eq!(found.toolchain, ["node >=18 (package.json engines.node)"]);
        assert_eq!(found.fix_paths, ["src/"]);
        let jest = tree(&[
            ("package.json", r#"{"scripts":{"test":"jest --ci"}}"#),
            ("lib/a.js", ""),
        ]);
        let found = detect(jest.path());
        assert_eq!(found.profile, None);
        assert!(
            found.limits.iter().any(|l| l.contains("jest")),
            "{:?}",
            found.limits
        );
        let workspace = tree(&[
            (
                "package.json",
                r#"{"workspaces":["packages/*"],"devDependencies":{"vitest":"1"}}"#,
            ),
            (
                "pnpm-workspace.yaml",
                "packages:\n  - 'tools/cli'\n  - '!**/test/**'\ncatalog:\n  - x\n",
            ),
            ("packages/core/package.json", "{}"),
            ("packages/core/src/index.ts", ""),
            ("packages/plain/package.json", "{}"),
            ("packages/notes/README.md", ""),
            ("tools/cli/package.json", "{}"),
        ]);
        let found = detect(workspace.path());
        assert_eq!(
            found.fix_paths,
            ["packages/core/src/", "packages/plain/", "tools/cli/"]
        );
        let source = tree(&[
            ("package.json", r#"{"scripts":{"test":"xo && ava"}}"#),
            ("source/index.js", ""),
        ]);
        let found = detect(source.path());
        assert_eq!(found.fix_paths, ["source/"]);
        assert_eq!(
            found.limits.len(),
            1,
            "ava (no dependency, so no lockfile needed): {:?}",
            found.limits
        );
        let plain = tree(&[(
            "package.json",
            r#"{"scripts":{"test":"node --test --test-reporter=tap test/"}}"#,
        )]);
        assert_eq!(detect(plain.path()).profile, Some(Profile::NodeTest));
    }

    #[test]
    fn only_an_npm_lockfile_lets_a_node_projects_dependencies_be_prepared() {
        let deps = r#"{"devDependencies":{"vitest":"1"}}"#;
        let npm = tree(&[("package.json", deps), ("package-lock.json", "{}")]);
        assert!(
            detect(npm.path()).limits.is_empty(),
            "{:?}",
            detect(npm.path()).limits
        );
        let pnpm = tree(&[("package.json", deps), ("pnpm-lock.yaml", "")]);
        assert!(detect(pnpm.path()).limits.is_empty());
        let yarn = tree(&[("package.json", deps), ("yarn.lock", "")]);
        assert!(detect(yarn.path()).limits[0].contains("yarn.lock"));
        let none = tree(&[("package.json", deps)]);
        assert!(detect(none.path()).limits[0].contains("no lockfile"));
    }

    #[test]
    fn a_monorepo_without_a_root_project_lists_its_members_and_no_profile() {
        let dir = tree(&[
            ("README.md", ""),
            ("web/package.json", "{}"),
            ("services/api/go.mod", "module api\n"),
            ("node_modules/x/package.json", "{}"),
        ]);
        let found = detect(dir.path());
        assert_eq!(found.profile, None);
        assert_eq!(found.subprojects, ["services/api/", "web/"]);
        assert!(
            found.limits[0].contains("services/api/, web/"),
            "{:?}",
            found.limits
        );
        let empty = tree(&[("README.md", "")]);
        assert!(detect(empty.path()).limits[0].contains("no profile fits"));
    }

    #[test]
    fn hostile_trees_are_read_without_leaving_them() {
        let outside = tree(&[("Cargo.toml", "[package]\nname = \"outside\"\n")]);
        let dir = tree(&[("README.md", "")]);
        // A manifest that is a link out of the tree, and one that is not text.
        std::os::unix::fs::symlink(
            outside.path().join("Cargo.toml"),
            dir.path().join("Cargo.toml"),
        )
        .unwrap();
        std::fs::write(dir.path().join("package.json"), [0xff, 0xfe, 0x00]).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("src")).unwrap();
        let py = tree(&[
            ("setup.py", ""),
            ("ok/__init__.py", ""),
            ("we ird/__init__.py", ""),
            ("<b>/__init__.py", ""),
        ]);
        assert_eq!(
            detect(py.path()).fix_paths,
            ["ok/"],
            "only plain names are proposed"
        );
        let found = detect(dir.path());
        assert_eq!(found.manifest.as_deref(), Some("package.json"));
        assert!(
            found.fix_paths.is_empty(),
            "a linked src/ is not a fix folder: {:?}",
            found.fix_paths
        );
        assert_eq!(found.profile, Some(Profile::NodeTest));
    }
}
