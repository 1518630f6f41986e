//! Test profiles: how a project's tests run inside the sandbox, and how their output is
//! judged. Rust runs `cargo test` on the read-only snapshot itself (frozen lockfile,
//! offline, target and cargo home on the tmpfs) with the host's toolchain mounted read-only
//! at `/opt/rust`; Node copies the snapshot to `/work/src` and runs `node --test` (TAP) or
//! Vitest from the snapshot's own `node_modules`; Python copies it and runs pytest, which
//! writes a JUnit XML report; Go copies it and runs `go test -json` offline (`GOPROXY=off`,
//! so modules must be vendored or standard); the generic JUnit profile runs the project's
//! own `.r2r/junit` script, which writes JUnit XML reports into `$R2R_JUNIT_DIR`.
//!
//! Report files go to stdout after [`FILE_MARK`] lines and the runner's own output to stderr,
//! so the classifier reads the report whole and the crew still sees the runner's words.

use crate::classify_junit::FILE_MARK;
use crate::isolated::{ReadOnlyMount, SandboxError, SandboxJob, SNAPSHOT_DIR, WORK_DIR};
use crate::{
    classify_cargo_test, classify_go_test, classify_junit, classify_node_tap, classify_vitest,
    RunOutcome, Verdict,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the Rust toolchain appears inside.
pub const RUST_TOOLCHAIN_DIR: &str = "/opt/rust";

/// The start of every Rust script: when the project's prepared dependencies are mounted
/// ([`crate::prepare::RUST_VENDOR_DIR`]), cargo's arguments (`"$@"`) name them as the source
/// of crates.io. Given on the command line, they win over a `.cargo/config.toml` of the
/// repository's own.
const VENDORED: &str = "[ -d /deps/cargo/vendor ] && set -- --config 'source.crates-io.replace-with=\"vendored-sources\"' --config 'source.vendored-sources.directory=\"/deps/cargo/vendor\"'; ";

/// A project's kind of test suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// `cargo test`.
    Rust,
    /// `node --test` with the TAP reporter.
    NodeTest,
    /// Vitest (`vitest run --reporter=verbose`).
    Vitest,
    /// pytest, judged by its JUnit XML report.
    Python,
    /// `go test -json`.
    Go,
    /// Any runner writing JUnit XML, started by the project's `.r2r/junit` script.
    Junit,
}

/// In a Node run's copy of the tree: the prepared packages, when mounted, are its
/// `node_modules` (unless the tree brings its own).
/// The run's own `node_modules` holds a link to each prepared package (not one link to the
/// read-only folder): runners write their caches into it (Vitest's `.vitest`, Vite's
/// `.vite`), and the packages stay read-only.
const NODE_MODULES_LINK: &str = "if [ -d /deps/node/node_modules ] && [ ! -e node_modules ]; then mkdir node_modules && for entry in /deps/node/node_modules/* /deps/node/node_modules/.[!.]*; do [ -e \"$entry\" ] && ln -s \"$entry\" node_modules/; done; fi; ";

/// Where the generic JUnit profile's script lives in the project.
pub const JUNIT_SCRIPT: &str = ".r2r/junit";
/// Where report files are written inside the sandbox.
const REPORT_DIR: &str = "/work/reports";

/// Toolchains on this host that the sandbox may mount read-only.
#[derive(Clone, Debug, Default)]
pub struct Toolchains {
    /// The Rust sysroot (`rustc --print sysroot`, or `R2R_SANDBOX_RUST_SYSROOT`).
    pub rust_sysroot: Option<PathBuf>,
}

impl Toolchains {
    /// Finds the host's toolchains.
    pub fn detect() -> Self {
        let rust_sysroot = std::env::var_os("R2R_SANDBOX_RUST_SYSROOT")
            .map(PathBuf::from)
            .or_else(|| {
                let output = std::process::Command::new("rustc")
                    .args(["--print", "sysroot"])
                    .output()
                    .ok()?;
                output
                    .status
                    .success()
                    .then(|| PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()))
            })
            .filter(|path| path.join("bin/cargo").is_file());
        Toolchains { rust_sysroot }
    }
}

fn invalid(why: impl Into<String>) -> SandboxError {
    SandboxError::InvalidJob(why.into())
}

/// A relative path inside the snapshot, without `..`, absolute parts or odd characters.
fn checked_relative(path: &str) -> Result<&str, SandboxError> {
    let ok = !path.is_empty()
        && !path.starts_with('/')
        && !path.starts_with('-')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    if ok {
        Ok(path)
    } else {
        Err(invalid(format!(
            "{path:?} is not a safe relative test path"
        )))
    }
}

impl Profile {
    /// Its name in the desk's JSON (as serde writes it).
    pub fn as_str(&self) -> &'static str {
        match self {
            Profile::Rust => "rust",
            Profile::NodeTest => "node_test",
            Profile::Vitest => "vitest",
            Profile::Python => "python",
            Profile::Go => "go",
            Profile::Junit => "junit",
        }
    }

    /// Every profile.
    pub const ALL: [Profile; 6] = [
        Profile::Rust,
        Profile::NodeTest,
        Profile::Vitest,
        Profile::Python,
        Profile::Go,
        Profile::Junit,
    ];

    /// From `R2R_TARGET_PROFILE` (`rust`, `node`, `vitest`, `python`, `go`, `junit`).
    pub fn parse(text: &str) -> Option<Profile> {
        match text {
            "rust" => Some(Profile::Rust),
            "node" | "node_test" => Some(Profile::NodeTest),
            "vitest" => Some(Profile::Vitest),
            "python" | "pytest" => Some(Profile::Python),
            "go" => Some(Profile::Go),
            "junit" => Some(Profile::Junit),
            _ => None,
        }
    }

    /// The job running one test file (`Some(file)`) or the whole suite (`None`).
    pub fn job(
        &self,
        snapshot: &Path,
        test_file: Option<&str>,
        toolchains: &Toolchains,
        deadline: Duration,
    ) -> Result<SandboxJob, SandboxError> {
        let file = test_file.map(checked_relative).transpose()?;
        let mut job = self.empty_job(snapshot, toolchains, deadline)?;
        let script = match self {
            Profile::Rust => match file {
                Some(file) => {
                    let stem = Path::new(file)
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .filter(|_| file.starts_with("tests/") && file.ends_with(".rs"))
                        .ok_or_else(|| {
                            invalid(format!(
                                "a Rust test file lives in tests/ and ends in .rs: {file:?}"
                            ))
                        })?;
                    format!("{VENDORED}cd {SNAPSHOT_DIR} && exec cargo \"$@\" test --frozen --offline --test {stem}")
                }
                None => format!(
                    "{VENDORED}cd {SNAPSHOT_DIR} && exec cargo \"$@\" test --frozen --offline"
                ),
            },
            Profile::NodeTest => {
                let run = match file {
                    Some(file) => format!("node --test --test-reporter=tap {file}"),
                    None => "node --test --test-reporter=tap".into(),
                };
                format!("cp -R {SNAPSHOT_DIR}/. {WORK_DIR}/src && cd {WORK_DIR}/src && {NODE_MODULES_LINK}exec {run}")
            }
            Profile::Vitest => {
                let run = format!(
                    "node node_modules/vitest/vitest.mjs run {} --reporter=verbose",
                    file.unwrap_or("")
                );
                format!("cp -R {SNAPSHOT_DIR}/. {WORK_DIR}/src && cd {WORK_DIR}/src && {NODE_MODULES_LINK}exec {run}")
            }
            Profile::Python => {
                if let Some(file) = file {
                    let name = file.rsplit('/').next().unwrap_or(file);
                    let collected = name.ends_with(".py")
                        && (name.starts_with("test_") || name.ends_with("_test.py"));
                    if !collected {
                        return Err(invalid(format!(
                            "a Python test file is named test_*.py or *_test.py (pytest collects no other, and a conftest.py is not a test): {file:?}"
                        )));
                    }
                }
                reported(
                    &format!(
                        "python3 -m pytest -p no:cacheprovider --junitxml={REPORT_DIR}/pytest.xml {}",
                        file.unwrap_or("")
                    ),
                    "pytest.xml",
                )
            }
            Profile::Go => {
                let packages = match file {
                    Some(file) => {
                        if !file.ends_with("_test.go") {
                            return Err(invalid(format!(
                                "a Go test file ends in _test.go: {file:?}"
                            )));
                        }
                        match file.rsplit_once('/') {
                            Some((dir, _)) => format!("./{dir}"),
                            None => ".".into(),
                        }
                    }
                    None => "./...".into(),
                };
                format!(
                    "mkdir -p {WORK_DIR}/.cache/tmp && cp -R {SNAPSHOT_DIR}/. {WORK_DIR}/src && cd {WORK_DIR}/src && exec go test -json {packages}"
                )
            }
            Profile::Junit => reported(
                &format!("sh {JUNIT_SCRIPT} {}", file.unwrap_or("")),
                "*.xml",
            ),
        };
        job.command = vec!["/bin/sh".into(), "-c".into(), script];
        Ok(job)
    }

    /// The job building the release binary `binary` of a Rust target and copying it to
    /// `/out/<binary>` (`output` on the host): the build's output is the artifact. Only Rust
    /// targets are built for release here.
    pub fn release_job(
        &self,
        snapshot: &Path,
        binary: &str,
        output: &Path,
        toolchains: &Toolchains,
        deadline: Duration,
    ) -> Result<SandboxJob, SandboxError> {
        if *self != Profile::Rust {
            return Err(invalid(format!(
                "only Rust targets are built for release, not {}",
                self.as_str()
            )));
        }
        let safe = !binary.is_empty()
            && binary.len() <= 64
            && binary
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !safe {
            return Err(invalid(format!("{binary:?} is not a binary name")));
        }
        let mut job = self.empty_job(snapshot, toolchains, deadline)?;
        job.command = vec![
            "/bin/sh".into(),
            "-c".into(),
            format!(
                "{VENDORED}cd {SNAPSHOT_DIR} && cargo \"$@\" build --release --frozen --offline --bin {binary} && cp {WORK_DIR}/target/release/{binary} {}/{binary}",
                crate::isolated::OUTPUT_DIR
            ),
        ];
        job.output = Some(output.to_path_buf());
        Ok(job)
    }

    /// A job with this profile's mounts and environment and no command yet.
    fn empty_job(
        &self,
        snapshot: &Path,
        toolchains: &Toolchains,
        deadline: Duration,
    ) -> Result<SandboxJob, SandboxError> {
        let mut job = SandboxJob::new(snapshot, Vec::new(), deadline);
        match self {
            Profile::Rust => {
                let sysroot = toolchains.rust_sysroot.clone().ok_or_else(|| {
                    invalid("no Rust toolchain found on this host (rustc --print sysroot)")
                })?;
                job.mounts.push(ReadOnlyMount {
                    host: sysroot,
                    target: PathBuf::from(RUST_TOOLCHAIN_DIR),
                });
                job.env = vec![
                    (
                        "PATH".into(),
                        format!("{RUST_TOOLCHAIN_DIR}/bin:/usr/local/bin:/usr/bin:/bin"),
                    ),
                    ("HOME".into(), WORK_DIR.into()),
                    ("TMPDIR".into(), "/tmp".into()),
                    ("CARGO_HOME".into(), format!("{WORK_DIR}/.cargo")),
                    ("CARGO_TARGET_DIR".into(), format!("{WORK_DIR}/target")),
                    ("CARGO_TERM_COLOR".into(), "never".into()),
                    ("CARGO_INCREMENTAL".into(), "0".into()),
                    ("RUST_BACKTRACE".into(), "0".into()),
                ];
            }
            Profile::NodeTest => {}
            Profile::Vitest => {
                job.env.push(("CI".into(), "1".into()));
                job.env.push(("NO_COLOR".into(), "1".into()));
            }
            Profile::Python => {
                job.env.extend(
                    [
                        ("HOME", WORK_DIR),
                        ("PYTHONDONTWRITEBYTECODE", "1"),
                        ("PYTHONHASHSEED", "0"),
                        ("PYTHONUNBUFFERED", "1"),
                    ]
                    .map(|(k, v)| (k.to_owned(), v.to_owned())),
                );
            }
            Profile::Go => {
                job.env.extend(
                    [
                        ("HOME", WORK_DIR.to_owned()),
                        ("GOCACHE", format!("{WORK_DIR}/.cache/go-build")),
                        // `/tmp` is mounted noexec; the test binary is built and run here.
                        ("GOTMPDIR", format!("{WORK_DIR}/.cache/tmp")),
                        ("GOPATH", format!("{WORK_DIR}/go")),
                        ("GOPROXY", "off".into()),
                        ("GOFLAGS", "-mod=mod".into()),
                        ("GOTOOLCHAIN", "local".into()),
                        ("GOTELEMETRY", "off".into()),
                        ("CGO_ENABLED", "0".into()),
                    ]
                    .map(|(k, v)| (k.to_owned(), v)),
                );
            }
            Profile::Junit => {
                job.env.extend(
                    [
                        ("HOME", WORK_DIR),
                        ("CI", "1"),
                        ("NO_COLOR", "1"),
                        ("R2R_JUNIT_DIR", REPORT_DIR),
                    ]
                    .map(|(k, v)| (k.to_owned(), v.to_owned())),
                );
            }
        }
        Ok(job)
    }

    /// The checks a fix must pass besides the whole suite, by name: Rust runs `cargo fmt
    /// --check` and `cargo clippy --all-targets -D warnings`; Node checks the syntax of each
    /// changed JavaScript file (`node --check`), and Vitest projects with TypeScript installed
    /// also type-check (`tsc --noEmit`).
    pub fn checks(
        &self,
        snapshot: &Path,
        changed: &[&str],
        toolchains: &Toolchains,
        deadline: Duration,
    ) -> Result<Vec<(&'static str, SandboxJob)>, SandboxError> {
        let changed = changed
            .iter()
            .map(|path| checked_relative(path))
            .collect::<Result<Vec<_>, _>>()?;
        let mut scripts: Vec<(&'static str, String)> = Vec::new();
        match self {
            Profile::Rust => {
                scripts.push((
                    "format",
                    format!("cd {SNAPSHOT_DIR} && exec cargo fmt --check"),
                ));
                scripts.push((
                    "lint",
                    format!(
                        "{VENDORED}cd {SNAPSHOT_DIR} && exec cargo clippy \"$@\" --frozen --offline --all-targets -- -D warnings"
                    ),
                ));
            }
            Profile::NodeTest | Profile::Vitest => {
                let javascript: Vec<&str> = changed
                    .iter()
                    .copied()
                    .filter(|p| [".js", ".mjs", ".cjs"].iter().any(|e| p.ends_with(e)))
                    .collect();
                if !javascript.is_empty() {
                    let each: Vec<String> = javascript
                        .iter()
                        .map(|file| format!("node --check {file}"))
                        .collect();
                    scripts.push((
                        "syntax",
                        format!("cd {SNAPSHOT_DIR} && {}", each.join(" && ")),
                    ));
                }
                let typescript = changed.iter().any(|p| p.ends_with(".ts"));
                if *self == Profile::Vitest
                    && typescript
                    && snapshot.join("node_modules/typescript/bin/tsc").is_file()
                {
                    scripts.push((
                        "types",
                        format!(
                            "cp -R {SNAPSHOT_DIR}/. {WORK_DIR}/src && cd {WORK_DIR}/src && exec node node_modules/typescript/bin/tsc --noEmit"
                        ),
                    ));
                }
            }
            Profile::Python => {
                let python: Vec<&str> = changed
                    .iter()
                    .copied()
                    .filter(|p| p.ends_with(".py"))
                    .collect();
                if !python.is_empty() {
                    scripts.push((
                        "syntax",
                        format!(
                            "cd {SNAPSHOT_DIR} && exec python3 -c \"import ast, sys; [ast.parse(open(f, encoding='utf-8').read(), f) for f in sys.argv[1:]]\" {}",
                            python.join(" ")
                        ),
                    ));
                }
            }
            Profile::Go => {
                let go: Vec<&str> = changed
                    .iter()
                    .copied()
                    .filter(|p| p.ends_with(".go"))
                    .collect();
                if !go.is_empty() {
                    scripts.push((
                        "format",
                        format!(
                            "cd {SNAPSHOT_DIR} && out=$(gofmt -l {}) && test -z \"$out\" || {{ echo \"not gofmt-formatted: $out\"; exit 1; }}",
                            go.join(" ")
                        ),
                    ));
                    scripts.push((
                        "vet",
                        format!(
                            "mkdir -p {WORK_DIR}/.cache/tmp && cp -R {SNAPSHOT_DIR}/. {WORK_DIR}/src && cd {WORK_DIR}/src && exec go vet ./..."
                        ),
                    ));
                }
            }
            Profile::Junit => {}
        }
        scripts
            .into_iter()
            .map(|(name, script)| {
                let mut job = self.empty_job(snapshot, toolchains, deadline)?;
                job.command = vec!["/bin/sh".into(), "-c".into(), script];
                Ok((name, job))
            })
            .collect()
    }

    /// Judges a run for the test named `test`. Whatever the output says, a runner that
    /// exited 0 reported every test passed, and pytest's own closing line must count a
    /// failure: a test that forges a report (writes the report file, writes to the runner's
    /// output, exits early) still cannot pass for a reproduction.
    pub fn classify(&self, outcome: &RunOutcome, test: &str) -> Verdict {
        let verdict = match self {
            Profile::Rust => classify_cargo_test(outcome, test),
            Profile::NodeTest => classify_node_tap(outcome, test),
            Profile::Vitest => classify_vitest(outcome, test),
            Profile::Python | Profile::Junit => classify_junit(outcome, test),
            Profile::Go => classify_go_test(outcome, test),
        };
        let failed_by_its_runner = outcome.exit_code != Some(0)
            && (*self != Profile::Python || pytest_counted_a_failure(&outcome.stderr));
        match verdict {
            Verdict::Reproduced { .. } if !failed_by_its_runner => Verdict::NotReproduced {
                reason: crate::NotReproduced::RunnerSaysPassed,
            },
            other => other,
        }
    }
}

impl Profile {
    /// The tests a red suite run names as failed, in its runner's own words (at most 20):
    /// `test … FAILED` (cargo), `FAILED …` (pytest), `not ok N - …` (TAP), `--- FAIL: …`
    /// (go), `×`/`FAIL` lines (Vitest). Empty when the runner named none (it did not build,
    /// say): the caller then shows the output's last lines.
    pub fn failing_tests(&self, outcome: &RunOutcome) -> Vec<String> {
        let text = format!("{}\n{}", outcome.stdout, outcome.stderr);
        let mut names: Vec<String> = Vec::new();
        for line in text.lines().map(str::trim) {
            let name = match self {
                Profile::Rust => line
                    .strip_prefix("test ")
                    .and_then(|rest| rest.strip_suffix(" ... FAILED")),
                Profile::Python | Profile::Junit => line
                    .strip_prefix("FAILED ")
                    .map(|rest| rest.split(" - ").next().unwrap_or(rest)),
                Profile::NodeTest => line
                    .strip_prefix("not ok ")
                    .and_then(|rest| rest.split_once(" - ").map(|(_, name)| name)),
                Profile::Go => line
                    .strip_prefix("--- FAIL: ")
                    .map(|rest| rest.split(" (").next().unwrap_or(rest)),
                Profile::Vitest => line
                    .strip_prefix("× ")
                    .or_else(|| line.strip_prefix("FAIL ")),
            };
            if let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) {
                let name: String = name.chars().take(200).collect();
                if !names.contains(&name) && names.len() < 20 {
                    names.push(name);
                }
            }
        }
        names
    }

    /// Whether the project's whole suite will run a test at `path` (relative, already checked
    /// by [`Profile::job`]) in the checked-out project at `root`: a test the suite never
    /// collects could reproduce the bug and still never let a fix pass. Python reads
    /// `testpaths` from pyproject.toml, pytest.ini, tox.ini or setup.cfg; the other profiles
    /// collect what their file rules allow.
    pub fn suite_collects(&self, root: &Path, path: &str) -> Result<(), String> {
        match self {
            Profile::NodeTest if !node_test_collects(path) => {
                return Err(format!(
                    "{path} is not a file `node --test` runs by itself (*.test.js, *-test.js, *_test.js, test-*.js, test.js, or a .js/.mjs/.cjs file under a test/ folder): the project's own test run would never run it"
                ))
            }
            Profile::Vitest if !vitest_collects(path) => {
                return Err(format!(
                    "{path} is not a file Vitest collects by default (*.test.ts, *.spec.js and the like): the project's own test run would never run it"
                ))
            }
            Profile::Python => {}
            _ => return Ok(()),
        }
        if *self != Profile::Python {
            return Ok(());
        }
        let Some(testpaths) = python_testpaths(root) else {
            return Ok(());
        };
        let inside = testpaths.iter().any(|folder| {
            let folder = folder.trim_matches('/');
            folder == "." || path.starts_with(&format!("{folder}/"))
        });
        if inside {
            Ok(())
        } else {
            Err(format!(
                "{path} is outside the suite's testpaths ({}): the project's own test run would never run it",
                testpaths.join(", ")
            ))
        }
    }
}

/// Whether `node --test` (Node 20+, no arguments) runs `path`: its default patterns.
fn node_test_collects(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some((stem, extension)) = name.rsplit_once('.') else {
        return false;
    };
    if !matches!(extension, "js" | "mjs" | "cjs") || path.split('/').any(|p| p == "node_modules") {
        return false;
    }
    let in_test_folder = path.split('/').rev().skip(1).any(|folder| folder == "test");
    in_test_folder
        || stem == "test"
        || stem.starts_with("test-")
        || stem.ends_with(".test")
        || stem.ends_with("-test")
        || stem.ends_with("_test")
}

/// Whether Vitest's default `include` (`**/*.{test,spec}.?(c|m)[jt]s?(x)`) takes `path`.
fn vitest_collects(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    if path.split('/').any(|p| p == "node_modules") {
        return false;
    }
    let Some((stem, extension)) = name.rsplit_once('.') else {
        return false;
    };
    let script = matches!(
        extension,
        "js" | "ts" | "jsx" | "tsx" | "cjs" | "mjs" | "cts" | "mts"
    );
    script && (stem.ends_with(".test") || stem.ends_with(".spec"))
}

/// pytest's `testpaths`, from the first configuration file that sets it.
fn python_testpaths(root: &Path) -> Option<Vec<String>> {
    for (file, section) in [
        ("pytest.ini", "[pytest]"),
        ("pyproject.toml", "[tool.pytest.ini_options]"),
        ("tox.ini", "[pytest]"),
        ("setup.cfg", "[tool:pytest]"),
    ] {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        let mut in_section = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                in_section = line == section;
                continue;
            }
            let Some(value) = line
                .strip_prefix("testpaths")
                .map(str::trim_start)
                .and_then(|rest| rest.strip_prefix('='))
            else {
                continue;
            };
            if !in_section {
                continue;
            }
            let folders: Vec<String> = value
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split([',', ' '])
                .map(|part| part.trim().trim_matches(['"', '\'']).to_owned())
                .filter(|part| !part.is_empty())
                .collect();
            if !folders.is_empty() {
                return Some(folders);
            }
        }
    }
    None
}

/// Whether pytest's closing line (`1 failed, 2 passed in 0.03s`, framed by `=` without `-q`)
/// counts at least one failed test.
fn pytest_counted_a_failure(output: &str) -> bool {
    output.lines().rev().take(5).any(|line| {
        let line = line.trim().trim_matches('=').trim();
        line.contains(" in ")
            && line.split(", ").any(|part| {
                part.split_once(' ').is_some_and(|(count, word)| {
                    count.parse::<u32>().is_ok_and(|n| n > 0) && word.starts_with("failed")
                })
            })
    })
}

/// A script running `run` in a copy of the snapshot with its output on stderr, then — once
/// every other process of the run is killed, so nothing the test left behind can still write
/// — printing each report file matching `reports` on stdout after [`FILE_MARK`], and exiting
/// as `run` did.
fn reported(run: &str, reports: &str) -> String {
    format!(
        "cp -R {SNAPSHOT_DIR}/. {WORK_DIR}/src && mkdir -p {REPORT_DIR} && cd {WORK_DIR}/src && {{ {run} ; }} 1>&2; status=$?; \
         [ \"$(id -u)\" = 0 ] || kill -9 -1 2>/dev/null; \
         for report in {REPORT_DIR}/{reports}; do [ -f \"$report\" ] && {{ echo '{FILE_MARK}'; cat \"$report\"; }}; done; exit $status"
    )
}

/// Makes a snapshot readable by the sandbox's uid: directories 0755, files a+r (executables
/// keep their x bits); symlinks are left as they are (they resolve inside the sandbox).
pub fn share_read_only(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let metadata = std::fs::symlink_metadata(dir)?;
    if metadata.file_type().is_symlink() {
        return Ok(());
    }
    if metadata.is_dir() {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
        for entry in std::fs::read_dir(dir)? {
            share_read_only(&entry?.path())?;
        }
    } else {
        let mode = metadata.permissions().mode() & 0o777;
        let readable = if mode & 0o100 != 0 { 0o755 } else { 0o644 };
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(readable))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_proposed_test_must_be_one_the_suite_runs_by_itself() {
        let root = std::path::Path::new("/nonexistent");
        for ok in [
            "test/cart.js",
            "src/cart.test.mjs",
            "lib/test/deep/total.cjs",
            "cart-test.js",
            "test-cart.js",
        ] {
            assert!(Profile::NodeTest.suite_collects(root, ok).is_ok(), "{ok}");
        }
        for refused in [
            "src/cart.js",
            "package.json",
            "build.js",
            "node_modules/x/test/a.js",
        ] {
            assert!(
                Profile::NodeTest.suite_collects(root, refused).is_err(),
                "{refused}"
            );
        }
        for ok in ["src/cart.test.ts", "tests/total.spec.tsx", "a.test.mjs"] {
            assert!(Profile::Vitest.suite_collects(root, ok).is_ok(), "{ok}");
        }
        for refused in ["src/cart.ts", "vitest.config.ts", "test/cart.ts"] {
            assert!(
                Profile::Vitest.suite_collects(root, refused).is_err(),
                "{refused}"
            );
        }
    }

    #[test]
    fn a_red_suite_names_its_failing_tests_in_the_runners_words() {
        let run = |stdout: &str| crate::test_support::run(stdout, "");
        let cargo = run("running 2 tests\ntest a::passes ... ok\ntest coupon::never_pays ... FAILED\n\nfailures:\n");
        assert_eq!(
            Profile::Rust.failing_tests(&cargo),
            vec!["coupon::never_pays".to_owned()]
        );
        let pytest = run("FAILED tests/test_split.py::test_shares - assert 99.99 == 100\n");
        assert_eq!(
            Profile::Python.failing_tests(&pytest),
            vec!["tests/test_split.py::test_shares".to_owned()]
        );
        let go = run("--- FAIL: TestTotal (0.00s)\n");
        assert_eq!(Profile::Go.failing_tests(&go), vec!["TestTotal".to_owned()]);
        let tap = run("ok 1 - adds\nnot ok 2 - rounds down\n");
        assert_eq!(
            Profile::NodeTest.failing_tests(&tap),
            vec!["rounds down".to_owned()]
        );
        let broken = run("error[E0425]: cannot find value `x`\n");
        assert!(Profile::Rust.failing_tests(&broken).is_empty());
    }

    use super::*;

    #[test]
    fn a_release_is_built_for_rust_binaries_with_plain_names_only() {
        let toolchains = Toolchains {
            rust_sysroot: Some(std::env::temp_dir()),
        };
        let dir = std::env::temp_dir();
        let deadline = Duration::from_secs(60);
        let job = Profile::Rust
            .release_job(&dir, "shoplite", &dir, &toolchains, deadline)
            .unwrap();
        assert_eq!(job.output.as_deref(), Some(dir.as_path()));
        assert!(
            job.command[2].contains("--bin shoplite"),
            "{:?}",
            job.command
        );
        for bad in ["", "shop lite", "shop;rm", "../x"] {
            assert!(Profile::Rust
                .release_job(&dir, bad, &dir, &toolchains, deadline)
                .is_err());
        }
        assert!(Profile::NodeTest
            .release_job(&dir, "shoplite", &dir, &toolchains, deadline)
            .is_err());
    }

    fn finished(exit: i32, stdout: &str, stderr: &str) -> RunOutcome {
        RunOutcome {
            exit_code: Some(exit),
            timed_out: false,
            oom_killed: false,
            duration_ms: 1,
            backend: "host",
            workers: Vec::new(),
            confirmation: None,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn a_report_that_the_runner_contradicts_is_not_a_reproduction() {
        let report = format!(
            "{FILE_MARK}\n{}",
            crate::test_support::fixture("pytest-assert.xml")
        );
        let test = "test_coupon_never_negative";
        let failed = "1 failed, 1 passed in 0.02s\n";
        assert!(matches!(
            Profile::Python.classify(&finished(1, &report, failed), test),
            Verdict::Reproduced { .. }
        ));
        let says_passed = Verdict::NotReproduced {
            reason: crate::NotReproduced::RunnerSaysPassed,
        };
        // The test wrote a failing report, but pytest passed it and exited 0.
        assert_eq!(
            Profile::Python.classify(&finished(0, &report, "1 passed in 0.01s\n"), test),
            says_passed
        );
        // The test wrote the report and left early: pytest never counted a failure.
        assert_eq!(
            Profile::Python.classify(&finished(1, &report, "collected 2 items\n"), test),
            says_passed
        );
        assert!(matches!(
            Profile::Python.classify(
                &finished(1, &report, "===== 1 failed, 1 passed in 0.02s =====\n"),
                test
            ),
            Verdict::Reproduced { .. }
        ));
        // Any runner: exit 0 means every test passed.
        assert_eq!(
            Profile::Junit.classify(&finished(0, &report, ""), test),
            says_passed
        );
    }

    #[test]
    fn a_python_test_must_be_one_the_suite_collects() {
        let toolchains = Toolchains::default();
        let dir = tempfile::tempdir().unwrap();
        for bad in [
            "tests/conftest.py",
            "conftest.py",
            "tests/helpers.py",
            "tests/check.py",
        ] {
            assert!(
                Profile::Python
                    .job(dir.path(), Some(bad), &toolchains, Duration::from_secs(5))
                    .is_err(),
                "{bad}"
            );
        }
        assert!(Profile::Python
            .suite_collects(dir.path(), "anywhere/test_x.py")
            .is_ok());
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[project]\nname = \"x\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\", 'more']\n",
        )
        .unwrap();
        assert!(Profile::Python
            .suite_collects(dir.path(), "tests/test_x.py")
            .is_ok());
        assert!(Profile::Python
            .suite_collects(dir.path(), "more/deep/test_x.py")
            .is_ok());
        let outside = Profile::Python
            .suite_collects(dir.path(), "regressions/test_x.py")
            .unwrap_err();
        assert!(outside.contains("tests, more"), "{outside}");
        std::fs::write(
            dir.path().join("pytest.ini"),
            "[pytest]\ntestpaths = checks\n",
        )
        .unwrap();
        assert!(Profile::Python
            .suite_collects(dir.path(), "checks/test_x.py")
            .is_ok());
        assert!(Profile::Rust.suite_collects(dir.path(), "anything").is_ok());
    }

    #[test]
    fn a_profile_names_itself_as_serde_does() {
        for profile in Profile::ALL {
            assert_eq!(
                serde_json::to_value(profile).ok(),
                Some(serde_json::Value::from(profile.as_str()))
            );
            assert_eq!(Profile::parse(profile.as_str()), Some(profile));
        }
        assert_eq!(Profile::parse("pytest"), Some(Profile::Python));
        assert_eq!(Profile::parse("Go"), None);
    }

    #[test]
    fn each_profile_names_its_fix_checks() {
        let toolchains = Toolchains {
            rust_sysroot: Some(std::env::temp_dir()),
        };
        let dir = std::env::temp_dir();
        let deadline = Duration::from_secs(5);
        let names = |profile: Profile, changed: &[&str]| -> Vec<&'static str> {
            profile
                .checks(&dir, changed, &toolchains, deadline)
                .unwrap()
                .into_iter()
                .map(|(name, _)| name)
                .collect()
        };
        assert_eq!(names(Profile::Rust, &["src/lib.rs"]), ["format", "lint"]);
        let rust = Profile::Rust
            .checks(&dir, &["src/lib.rs"], &toolchains, deadline)
            .unwrap();
        assert!(
            // The vendored source's `--config` goes after `clippy`: cargo does not pass its
            // global flags on to an external subcommand, so before it clippy looked for the
            // registry offline and failed in 0.1 s on any crate with dependencies.
            rust[1].1.command[2]
                .contains("clippy \"$@\" --frozen --offline --all-targets -- -D warnings")
        );
        assert_eq!(names(Profile::NodeTest, &["src/cart.js"]), ["syntax"]);
        let node = Profile::NodeTest
            .checks(&dir, &["src/cart.js", "src/b.mjs"], &toolchains, deadline)
            .unwrap();
        assert!(node[0].1.command[2].contains("node --check src/cart.js && node --check src/b.mjs"));
        assert!(names(Profile::NodeTest, &["README.md"]).is_empty());
        assert_eq!(names(Profile::Python, &["shop/cart.py"]), ["syntax"]);
        assert!(names(Profile::Python, &["README.md"]).is_empty());
        assert_eq!(names(Profile::Go, &["cart/cart.go"]), ["format", "vet"]);
        assert!(names(Profile::Junit, &["src/Cart.java"]).is_empty());
        for bad in ["../x.js", "src/a;rm.js", "/etc/x.js"] {
            assert!(Profile::NodeTest
                .checks(&dir, &[bad], &toolchains, deadline)
                .is_err());
        }
    }

    #[test]
    fn test_paths_cannot_escape_or_inject() {
        let toolchains = Toolchains {
            rust_sysroot: Some(std::env::temp_dir()),
        };
        let dir = std::env::temp_dir();
        for bad in [
            "../x.rs",
            "/etc/passwd",
            "tests/a b.rs",
            "tests/$(id).rs",
            "-x",
            "tests/../../x.rs",
            "tests/a;b.rs",
        ] {
            assert!(
                Profile::NodeTest
                    .job(&dir, Some(bad), &toolchains, Duration::from_secs(5))
                    .is_err(),
                "{bad}"
            );
        }
        assert!(Profile::Rust
            .job(
                &dir,
                Some("src/lib.rs"),
                &toolchains,
                Duration::from_secs(5)
            )
            .is_err());
        let job = Profile::Rust
            .job(
                &dir,
                Some("tests/coupon.rs"),
                &toolchains,
                Duration::from_secs(5),
            )
            .unwrap();
        assert!(job.command[2].ends_with("--test coupon"));
        let go = |file: &str| {
            Profile::Go
                .job(&dir, Some(file), &toolchains, Duration::from_secs(5))
                .map(|job| job.command[2].clone())
        };
        assert!(go("cart/coupon_test.go")
            .unwrap()
            .ends_with("go test -json ./cart"));
        assert!(go("coupon_test.go").unwrap().ends_with("go test -json ."));
        assert!(go("cart/coupon.go").is_err());
        let python = Profile::Python
            .job(
                &dir,
                Some("tests/test_coupon.py"),
                &toolchains,
                Duration::from_secs(5),
            )
            .unwrap();
        assert!(python.command[2].contains("pytest") && python.command[2].contains(FILE_MARK));
        assert!(Profile::Python
            .job(
                &dir,
                Some("tests/test_coupon.rs"),
                &toolchains,
                Duration::from_secs(5)
            )
            .is_err());
        assert_eq!(job.mounts[0].target, PathBuf::from(RUST_TOOLCHAIN_DIR));
        let none = Toolchains::default();
        assert!(Profile::Rust
            .job(&dir, None, &none, Duration::from_secs(5))
            .is_err());
    }
}
