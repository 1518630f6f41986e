//! `r2r crew eval --real-bugs DIR`: real bugs of public repositories, carried through the
//! real desk. A case names a repository, the upstream commit that fixed a bug (and its
//! parent, the commit the desk measures), the lines of the upstream test that proves it, and
//! the files the fix changed; the report is written in our own words. The upstream code is
//! never committed here: it is read from a mirror fetched on the machine that runs the
//! evaluation, and the case records the SHA-256 of what it reads (the material), so a
//! different mirror is noticed.
//!
//! The oracle ([`Oracle`]) is a model double that answers the crew's four tasks from the
//! case: the upstream test as a new test file, the upstream fix as whole files or, for a
//! file too large to return whole, as edits. Everything else is the desk's own: the
//! project read from its tree, the dependencies prepared, the baseline, the measured
//! reproduction, the reporter's confirmation and the measured fix.

use anyhow::{anyhow, bail, Context as _};
use async_trait::async_trait;
use crew::provider::{Completion, ModelError, ModelProvider, Prompt, Task};
use crew::schema::{FixEdit, FixFile, MAX_EDIT_CHARS, MAX_FILE_CHARS, MAX_FIX_EDITS};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// One real bug.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Lower-case letters, digits and dashes: also the desk's project id and component.
    pub id: String,
    /// `owner/name` on GitHub.
    pub repository: String,
    /// The profile the case expects the desk to detect.
    pub profile: String,
    /// The upstream commit that fixed the bug.
    pub fix_commit: String,
    /// Its first parent: the commit the desk is given.
    pub parent: String,
    /// The report, in our own words.
    pub report: Report,
    /// Where the proving test is in the fix commit.
    pub test: CaseTest,
    /// The non-test files the fix changed.
    pub fixed_files: Vec<String>,
    /// Their sizes in characters at the fix commit (informative).
    #[serde(default)]
    pub fixed_chars: Vec<usize>,
    /// SHA-256 of the material the case reads (see [`Material::sha256`]).
    #[serde(default)]
    pub material_sha256: Option<String>,
    /// How the case was checked outside the desk when it was chosen.
    #[serde(default)]
    pub verified: Option<String>,
    /// Whether the desk was changed while looking at this case (`built`) or only measured on
    /// it (`measured`, the default).
    #[serde(default = "measured")]
    pub set: String,
}

fn measured() -> String {
    "measured".to_owned()
}

/// A report as a user of the library would write it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// Title.
    pub title: String,
    /// What happened.
    pub what_happened: String,
    /// What was expected.
    #[serde(default)]
    pub expected: String,
}

/// The proving test: line ranges (1-based, inclusive) of a test file at the fix commit,
/// joined into a new test file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseTest {
    /// The upstream test file.
    pub from: String,
    /// Its lines that make the new file, in order.
    pub lines: Vec<[usize; 2]>,
    /// The test's name as the runner prints it.
    pub name: String,
    /// Where the new file goes (default: beside `from`, named after the case).
    #[serde(default)]
    pub path: Option<String>,
}

impl Case {
    fn check(&self) -> anyhow::Result<()> {
        let plain = |s: &str| {
            !s.is_empty()
                && s.len() <= 40
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        };
        if !plain(&self.id) {
            bail!(
                "case id {:?}: lower-case letters, digits and dashes, at most 40",
                self.id
            );
        }
        let sha = |s: &str| s.len() == 40 && s.chars().all(|c| c.is_ascii_hexdigit());
        if !sha(&self.fix_commit) || !sha(&self.parent) {
            bail!(
                "case {}: fix_commit and parent are 40-hex commit ids",
                self.id
            );
        }
        if sandbox::Profile::parse(&self.profile).is_none() {
            bail!("case {}: unknown profile {:?}", self.id, self.profile);
        }
        if self.test.lines.is_empty()
            || self
                .test
                .lines
                .iter()
                .any(|[from, to]| *from == 0 || from > to)
        {
            bail!(
                "case {}: test.lines are 1-based [from, to] ranges, at least one",
                self.id
            );
        }
        if self.fixed_files.is_empty() {
            bail!("case {}: fixed_files is empty", self.id);
        }
        Ok(())
    }

    /// Where the reproduction goes: `test.path`, else beside the upstream file with a name
    /// the profile's runner collects.
    pub fn test_path(&self) -> String {
        if let Some(path) = &self.test.path {
            return path.clone();
        }
        let (folder, file) = self
            .test
            .from
            .rsplit_once('/')
            .unwrap_or(("", self.test.from.as_str()));
        let slug = self.id.replace('-', "_");
        let extension = file.rsplit_once('.').map_or("", |(_, e)| e);
        let name = match self.profile.as_str() {
            "python" => format!("test_r2r_{slug}.py"),
            "rust" => format!("r2r_{slug}.rs"),
            "go" => format!("r2r_{slug}_test.go"),
            _ => format!("r2r-{}.test.{extension}", self.id),
        };
        if folder.is_empty() {
            name
        } else {
            format!("{folder}/{name}")
        }
    }
}

/// Every case in the `*.json` files of `dir` (each an array of cases), in file and then
/// array order; ids are unique.
pub fn load_cases(dir: &Path) -> anyhow::Result<Vec<Case>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("--real-bugs {}: cannot read the folder", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("--real-bugs {}: no *.json case file in it", dir.display());
    }
    let mut cases: Vec<Case> = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let these: Vec<Case> = serde_json::from_str(&text)
            .with_context(|| format!("{}: not an array of cases", file.display()))?;
        for case in these {
            case.check()
                .with_context(|| format!("in {}", file.display()))?;
            if cases.iter().any(|c| c.id == case.id) {
                bail!("{}: case id {} is used twice", file.display(), case.id);
            }
            cases.push(case);
        }
    }
    Ok(cases)
}

/// The git directory of `repository` (`owner/name`) under `mirrors`: the `fetch` layout
/// (`owner+name/repo`), `owner+name`, or `name.git`.
pub fn mirror_of(mirrors: &Path, repository: &str) -> Option<PathBuf> {
    let flat = repository.replace('/', "+");
    let name = repository.rsplit('/').next().unwrap_or(repository);
    [
        mirrors.join(&flat).join("repo"),
        mirrors.join(&flat),
        mirrors.join(format!("{name}.git")),
    ]
    .into_iter()
    .find(|dir| dir.join("HEAD").is_file() || dir.join(".git/HEAD").is_file())
}

fn git(git_dir: &Path, args: &[&str]) -> anyhow::Result<std::process::Output> {
    std::process::Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .with_context(|| format!("cannot run git in {}", git_dir.display()))
}

/// `rev:path` in the repository, or `None` when the commit has no such file.
fn show(git_dir: &Path, rev: &str, path: &str) -> anyhow::Result<Option<String>> {
    let out = git(git_dir, &["show", &format!("{rev}:{path}")])?;
    if !out.status.success() {
        return Ok(None);
    }
    String::from_utf8(out.stdout)
        .map(Some)
        .map_err(|_| anyhow!("{rev}:{path} is not UTF-8 text"))
}

/// What a case reads from its repository.
#[derive(Clone, Debug)]
pub struct Material {
    /// The upstream test file at the fix commit.
    pub test_file: String,
    /// Each fixed file at the parent (`None`: the fix added it) and at the fix.
    pub fixed: Vec<(String, Option<String>, String)>,
    /// `git diff` of each fixed file with growing context, for edits.
    git_dir: PathBuf,
}

impl Material {
    /// Reads the case's files from the mirror; checks that `parent` is the fix's first parent.
    pub fn read(git_dir: &Path, case: &Case) -> anyhow::Result<Material> {
        let parents = git(git_dir, &["rev-parse", &format!("{}^1", case.fix_commit)])?;
        if !parents.status.success() {
            bail!(
                "{} is not in the mirror {}",
                case.fix_commit,
                git_dir.display()
            );
        }
        if String::from_utf8_lossy(&parents.stdout).trim() != case.parent {
            bail!(
                "{} is not the first parent of {}",
                case.parent,
                case.fix_commit
            );
        }
        let test_file = show(git_dir, &case.fix_commit, &case.test.from)?
            .ok_or_else(|| anyhow!("{} has no {}", case.fix_commit, case.test.from))?;
        let mut fixed = Vec::new();
        for path in &case.fixed_files {
            let before = show(git_dir, &case.parent, path)?;
            let after = show(git_dir, &case.fix_commit, path)?
                .ok_or_else(|| anyhow!("{} has no {path}", case.fix_commit))?;
            fixed.push((path.clone(), before, after));
        }
        Ok(Material {
            test_file,
            fixed,
            git_dir: git_dir.to_owned(),
        })
    }

    /// SHA-256 over what the case reads, each part as `rev:path`, a newline, its length, a
    /// newline and its bytes (a file the parent lacks counts as empty).
    pub fn sha256(&self, case: &Case) -> String {
        let mut hasher = Sha256::new();
        let mut part = |name: String, text: &str| {
            hasher.update(format!("{name}\n{}\n", text.len()).as_bytes());
            hasher.update(text.as_bytes());
        };
        part(
            format!("{}:{}", case.fix_commit, case.test.from),
            &self.test_file,
        );
        for (path, before, after) in &self.fixed {
            part(
                format!("{}:{path}", case.parent),
                before.as_deref().unwrap_or(""),
            );
            part(format!("{}:{path}", case.fix_commit), after);
        }
        hex::encode(hasher.finalize())
    }

    /// The new test file: the case's line ranges of the upstream test file.
    pub fn test_source(&self, case: &Case) -> anyhow::Result<String> {
        let lines: Vec<&str> = self.test_file.lines().collect();
        let mut source = String::new();
        for [from, to] in &case.test.lines {
            if *to > lines.len() {
                bail!(
                    "test.lines [{from}, {to}]: {} has {} lines",
                    case.test.from,
                    lines.len()
                );
            }
            for line in &lines[from - 1..*to] {
                source.push_str(line);
                source.push('\n');
            }
        }
        Ok(source)
    }

    /// The fix as the oracle sends it: a file small enough whole; a larger one as edits
    /// taken from `git diff` with the least context (3, 8, 20 or 60 lines) whose edits,
    /// applied to the parent's file, give exactly the fix's.
    pub fn fix(&self, case: &Case) -> anyhow::Result<(Vec<FixFile>, Vec<FixEdit>)> {
        let (mut files, mut edits) = (Vec::new(), Vec::new());
        for (path, before, after) in &self.fixed {
            let Some(before) = before
                .as_deref()
                .filter(|_| after.chars().count() > MAX_FILE_CHARS)
            else {
                files.push(FixFile {
                    path: path.clone(),
                    content: after.clone(),
                });
                continue;
            };
            let mut found = None;
            for context in [3, 8, 20, 60] {
                let diff = git(
                    &self.git_dir,
                    &[
                        "diff",
                        "--no-color",
                        "--no-ext-diff",
                        &format!("-U{context}"),
                        &case.parent,
                        &case.fix_commit,
                        "--",
                        path,
                    ],
                )?;
                let these = edits_from_diff(path, &String::from_utf8_lossy(&diff.stdout));
                let refs: Vec<&FixEdit> = these.iter().collect();
                let fits = these.iter().all(|e| {
                    e.find.chars().count() <= MAX_EDIT_CHARS
                        && e.replace.chars().count() <= MAX_EDIT_CHARS
                });
                if fits
                    && !these.is_empty()
                    && crew::schema::apply_edits(before, &refs).as_deref() == Ok(after.as_str())
                {
                    found = Some(these);
                    break;
                }
            }
            match found {
                Some(these) => edits.extend(these),
                // No edits reproduce it: sent whole, and the desk's schema says why not.
                None => files.push(FixFile {
                    path: path.clone(),
                    content: after.clone(),
                }),
            }
        }
        if edits.len() > MAX_FIX_EDITS {
            bail!(
                "the upstream fix needs {} edits; a fix may carry {MAX_FIX_EDITS}",
                edits.len()
            );
        }
        Ok((files, edits))
    }
}

/// A unified diff of one file as edits: each hunk's context and removed lines are what to
/// find, its context and added lines what replaces them.
pub fn edits_from_diff(path: &str, diff: &str) -> Vec<FixEdit> {
    let mut edits = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut in_hunks = false;
    for line in diff.split_inclusive('\n') {
        if line.starts_with("@@") {
            if let Some((find, replace)) = current.take() {
                edits.push(FixEdit {
                    path: path.to_owned(),
                    find,
                    replace,
                });
            }
            current = Some((String::new(), String::new()));
            in_hunks = true;
            continue;
        }
        if !in_hunks {
            continue;
        }
        let Some((find, replace)) = current.as_mut() else {
            continue;
        };
        if let Some(rest) = line.strip_prefix(' ') {
            find.push_str(rest);
            replace.push_str(rest);
        } else if let Some(rest) = line.strip_prefix('-') {
            find.push_str(rest);
        } else if let Some(rest) = line.strip_prefix('+') {
            replace.push_str(rest);
        } else if line.starts_with('\\') {
            // "\ No newline at end of file": the line before it has no newline.
            for text in [&mut *find, &mut *replace] {
                if text.ends_with('\n') {
                    text.pop();
                }
            }
        }
    }
    if let Some((find, replace)) = current {
        edits.push(FixEdit {
            path: path.to_owned(),
            find,
            replace,
        });
    }
    edits
}

/// The oracle: a model double that knows one case's upstream test and fix.
#[derive(Debug)]
pub struct Oracle {
    reproduction: Value,
    fix: Value,
    repository: String,
    commit: String,
}

impl Oracle {
    /// The oracle for `case` from its material.
    pub fn new(case: &Case, material: &Material) -> anyhow::Result<Oracle> {
        let (files, edits) = material.fix(case)?;
        Ok(Oracle {
            reproduction: json!({
                "test_path": case.test_path(),
                "test_name": case.test.name,
                "test_source": material.test_source(case)?,
                "summary": case.report.title.chars().take(300).collect::<String>(),
            }),
            fix: json!({
                "files": files,
                "edits": edits,
                "summary": format!("The upstream fix {}", &case.fix_commit[..12]),
            }),
            repository: case.repository.clone(),
            commit: case.fix_commit.clone(),
        })
    }
}

#[async_trait]
impl ModelProvider for Oracle {
    fn name(&self) -> &'static str {
        "oracle"
    }

    fn model(&self) -> &str {
        "upstream-oracle-1"
    }

    async fn complete(&self, prompt: &Prompt) -> Result<Completion, ModelError> {
        let upstream = format!("{} at {}", self.repository, &self.commit[..12]);
        let content = match prompt.task {
            Task::Triage => json!({
                "severity": "medium",
                "likely_cause": format!("Oracle: the cause is what the upstream fix of {upstream} changed."),
                "steps": [],
                "test_idea": format!("Oracle: the upstream test of {upstream}."),
            }),
            Task::Reproduce => self.reproduction.clone(),
            Task::Fix => self.fix.clone(),
            Task::Review => json!({
                "matches_expectation": true,
                "notes": format!("Oracle: the upstream test and fix of {upstream}, not a review."),
            }),
        };
        Ok(Completion {
            content: content.to_string(),
            provider: self.name(),
            model: self.model().to_owned(),
            scripted: true,
            prompt_tokens: None,
            completion_tokens: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_becomes_edits_that_give_the_new_file() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let after = "a\nb\nC\nd\ne\nf\ng\nh\ni\nj\nk\n";
        let diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,4 +1,4 @@\n a\n b\n-c\n+C\n d\n@@ -9,2 +9,3 @@\n i\n j\n+k\n";
        let edits = edits_from_diff("src/x.py", diff);
        assert_eq!(edits.len(), 2);
        assert_eq!(edits[0].find, "a\nb\nc\nd\n");
        assert_eq!(edits[1].replace, "i\nj\nk\n");
        let refs: Vec<&FixEdit> = edits.iter().collect();
        assert_eq!(crew::schema::apply_edits(before, &refs).unwrap(), after);
        // A last line without a newline.
        let no_newline =
            "@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n\\ No newline at end of file\n";
        let edits = edits_from_diff("p", no_newline);
        assert_eq!(
            (edits[0].find.as_str(), edits[0].replace.as_str()),
            ("x", "y")
        );
    }

    fn case(json: &str) -> anyhow::Result<Case> {
        let case: Case = serde_json::from_str(json)?;
        case.check()?;
        Ok(case)
    }

    const GOOD: &str = r#"{"id":"click-flag","repository":"pallets/click","profile":"python",
        "fix_commit":"0123456789012345678901234567890123456789","parent":"9876543210987654321098765432109876543210",
        "report":{"title":"t","what_happened":"w"},
        "test":{"from":"tests/test_options.py","lines":[[1,3],[10,12]],"name":"test_flag"},
        "fixed_files":["src/click/core.py"]}"#;

    #[test]
    fn cases_are_checked_and_their_test_lands_where_the_runner_collects_it() {
        let good = case(GOOD).unwrap();
        assert_eq!(good.test_path(), "tests/test_r2r_click_flag.py");
        assert_eq!(good.set, "measured");
        for (from, to) in [
            ("click-flag", "Click_Flag"),
            ("\"0123456789012345678901234567890123456789\"", "\"0123\""),
            ("[10,12]", "[12,10]"),
            ("[1,3]", "[0,3]"),
            ("\"python\"", "\"cobol\""),
            ("[\"src/click/core.py\"]", "[]"),
        ] {
            assert!(case(&GOOD.replace(from, to)).is_err(), "{to}");
        }
        assert!(
            case(&GOOD.replace("\"fixed_files\"", "\"approve\":true,\"fixed_files\"")).is_err()
        );
        let rust = case(
            &GOOD
                .replace("\"python\"", "\"rust\"")
                .replace("tests/test_options.py", "tests/test_api.rs"),
        )
        .unwrap();
        assert_eq!(rust.test_path(), "tests/r2r_click_flag.rs");
        let vitest = case(
            &GOOD
                .replace("\"python\"", "\"vitest\"")
                .replace("tests/test_options.py", "test/url.test.ts"),
        )
        .unwrap();
        assert_eq!(vitest.test_path(), "test/r2r-click-flag.test.ts");
    }

    #[test]
    fn material_comes_from_the_mirror_and_is_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        let run = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(&work)
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        };
        std::fs::create_dir_all(work.join("src/pkg")).unwrap();
        std::fs::create_dir_all(work.join("tests")).unwrap();
        run(&["init", "-q"]);
        let big: String = (0..3_000).map(|n| format!("line = {n}\n")).collect();
        std::fs::write(work.join("src/pkg/big.py"), &big).unwrap();
        std::fs::write(work.join("src/pkg/small.py"), "def f():\n    return 1\n").unwrap();
        std::fs::write(work.join("tests/test_x.py"), "import pkg\n").unwrap();
        run(&["add", "-A"]);
        run(&["commit", "-qm", "one"]);
        let parent = run(&["rev-parse", "HEAD"]);
        std::fs::write(
            work.join("src/pkg/big.py"),
            big.replace("line = 1500\n", "line = -1500\n"),
        )
        .unwrap();
        std::fs::write(work.join("src/pkg/small.py"), "def f():\n    return 2\n").unwrap();
        std::fs::write(
            work.join("tests/test_x.py"),
            "import pkg\n\n\ndef helper():\n    pass\n\n\ndef test_f():\n    assert pkg.f() == 2\n",
        )
        .unwrap();
        run(&["commit", "-qam", "fix"]);
        let fix = run(&["rev-parse", "HEAD"]);
        let json = GOOD
            .replace("0123456789012345678901234567890123456789", &fix)
            .replace("9876543210987654321098765432109876543210", &parent)
            .replace("tests/test_options.py", "tests/test_x.py")
            .replace("[[1,3],[10,12]]", "[[1,1],[8,9]]")
            .replace(
                "[\"src/click/core.py\"]",
                "[\"src/pkg/big.py\",\"src/pkg/small.py\"]",
            );
        let case = case(&json).unwrap();
        let git_dir = work.join(".git");
        let material = Material::read(&git_dir, &case).unwrap();
        assert_eq!(
            material.test_source(&case).unwrap(),
            "import pkg\ndef test_f():\n    assert pkg.f() == 2\n"
        );
        let (files, edits) = material.fix(&case).unwrap();
        // The small file whole, the large one as one edit that gives exactly the fix.
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "src/pkg/small.py");
        assert_eq!(edits.len(), 1);
        assert!(edits[0].find.contains("line = 1500\n"));
        let sha = material.sha256(&case);
        assert_eq!(sha.len(), 64);
        assert_eq!(sha, Material::read(&git_dir, &case).unwrap().sha256(&case));
        // A parent that is not the fix's, a range past the file's end.
        let wrong = GOOD
            .replace("0123456789012345678901234567890123456789", &fix)
            .replace("9876543210987654321098765432109876543210", &fix)
            .replace("tests/test_options.py", "tests/test_x.py");
        assert!(
            Material::read(&git_dir, &serde_json::from_str(&wrong).unwrap())
                .unwrap_err()
                .to_string()
                .contains("not the first parent")
        );
        let past: Case = serde_json::from_str(&json.replace("[8,9]", "[8,90]")).unwrap();
        assert!(material.test_source(&past).is_err());
        // The fetch layout, a flat bare repository, and nothing.
        let fetched = dir.path().join("someone+lib/repo");
        std::fs::create_dir_all(&fetched).unwrap();
        std::fs::write(fetched.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(mirror_of(dir.path(), "someone/lib"), Some(fetched));
        std::fs::create_dir_all(dir.path().join("tool.git")).unwrap();
        std::fs::write(dir.path().join("tool.git/HEAD"), "x").unwrap();
        assert_eq!(
            mirror_of(dir.path(), "other/tool"),
            Some(dir.path().join("tool.git"))
        );
        assert_eq!(mirror_of(dir.path(), "someone/else"), None);
    }
}
