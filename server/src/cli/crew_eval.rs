//! `r2r crew eval`: how well the reproducer's context finds the code a bug lives in. For each
//! case (a report in a user's words and the files its real fix changed) it builds the context
//! exactly as the desk does ([`crew::context::assemble`]) from the target's files and
//! prints, per target, how often a fixed file ranks first (recall@1), is in the top 3
//! (recall@3), and is among the files the prompt carries whole (recall@prompt), and the
//! prompt's size in tokens (characters / 4).

use anyhow::{bail, Context as _};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A case file (`crew/eval/*.json`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cases {
    /// The target's name, also the reports' component.
    pub target: String,
    /// What the cases are.
    pub about: String,
    /// Path prefixes left out of the target (e.g. a stored answer to a seeded bug).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// The target's test profile, when the file names one (it wins over `--profile`).
    #[serde(default)]
    pub profile: Option<String>,
    /// The cases.
    pub cases: Vec<Case>,
}

/// One report and where its fix went.
#[derive(Debug, Deserialize)]
pub struct Case {
    /// Which bug it reports (several reports per bug).
    pub bug: String,
    /// The report's title.
    pub title: String,
    /// What happened.
    pub what_happened: String,
    /// What the reporter expected.
    #[serde(default)]
    pub expected: String,
    /// Steps.
    #[serde(default)]
    pub steps: String,
    /// Files the real fix changed, relative to the target's root.
    pub fixed_files: Vec<String>,
    /// The fix's commit, when the case comes from history.
    #[serde(default)]
    pub commit: Option<String>,
    /// An area label.
    #[serde(default)]
    pub area: Option<String>,
}

/// One target's figures.
#[derive(Debug, PartialEq)]
pub struct Figures {
    /// Cases scored.
    pub cases: usize,
    /// Distinct bugs.
    pub bugs: usize,
    /// Source files the target has.
    pub files: usize,
    /// A fixed file ranked first.
    pub at_1: usize,
    /// A fixed file in the top three.
    pub at_3: usize,
    /// A fixed file among the files shown whole.
    pub in_prompt: usize,
    /// Prompt tokens (characters / 4): mean and largest.
    pub tokens_mean: usize,
    /// Largest.
    pub tokens_max: usize,
}

/// The tracked files under `root` (`git ls-files`, relative to it).
fn tracked_files(root: &Path) -> anyhow::Result<Vec<String>> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "-z"])
        .output()
        .with_context(|| format!("running git ls-files in {}", root.display()))?;
    if !output.status.success() {
        bail!(
            "{} is not inside a git work tree: {}",
            root.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(output
        .stdout
        .split(|b| *b == 0)
        .filter_map(|p| std::str::from_utf8(p).ok())
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect())
}

/// Scores `cases` against the files of `root` under `profile`.
pub fn score(cases: &Cases, root: &Path, profile: &str) -> anyhow::Result<Figures> {
    let tracked = tracked_files(root)?
        .into_iter()
        .filter(|p| !cases.exclude.iter().any(|x| p.starts_with(x.as_str())))
        .collect();
    let files = crate::service::repro_context::read_files(root, tracked);
    let sources: Vec<crew::context::SourceFile> = files
        .iter()
        .filter(|f| crew::context::language(&f.path).is_some())
        .cloned()
        .collect();
    for case in &cases.cases {
        for fixed in &case.fixed_files {
            if !files.iter().any(|f| &f.path == fixed) {
                bail!(
                    "case {:?}: {fixed} is not a source file of {}",
                    case.title,
                    root.display()
                );
            }
        }
    }
    let mut figures = Figures {
        cases: cases.cases.len(),
        bugs: cases
            .cases
            .iter()
            .map(|c| c.bug.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        files: sources.len(),
        at_1: 0,
        at_3: 0,
        in_prompt: 0,
        tokens_mean: 0,
        tokens_max: 0,
    };
    let mut tokens_total = 0;
    for case in &cases.cases {
        let dossier = domain::airlock::Dossier {
            header: domain::airlock::UNTRUSTED_HEADER.to_owned(),
            component: cases.target.clone(),
            title: case.title.clone(),
            what_happened: case.what_happened.clone(),
            expected: case.expected.clone(),
            steps: case.steps.lines().map(str::to_owned).collect(),
            redactions: Default::default(),
        };
        let query = format!(
            "{}\n{}\n{}\n{}\n{}",
            dossier.component,
            dossier.title,
            dossier.what_happened,
            dossier.expected,
            dossier.steps.join("\n")
        );
        let assembled = crew::context::assemble(files.clone(), &query, profile);
        let fixed = |path: &str| case.fixed_files.iter().any(|f| f == path);
        let ranked = crew::context::rank(&sources, &query);
        let top: Vec<&str> = ranked
            .iter()
            .take(3)
            .map(|r| sources[r.index].path.as_str())
            .collect();
        figures.at_1 += usize::from(top.first().is_some_and(|p| fixed(p)));
        figures.at_3 += usize::from(top.iter().any(|p| fixed(p)));
        figures.in_prompt += usize::from(assembled.files.iter().any(|f| fixed(&f.path)));
        let context = api_types::ReproductionContext {
            bug: "eval".into(),
            state: domain::BugState::Reproducing,
            attempts: 0,
            max_attempts: 3,
            base: "0".repeat(40),
            profile: profile.to_owned(),
            package: assembled.package,
            how_to_test: assembled.how_to_test,
            map: assembled.map,
            map_omitted: assembled.map_omitted,
            files: assembled.files,
            budget_chars: crew::context::BUDGET_CHARS,
        };
        let prompt = crew::reproducer::prompt_for(
            &crew::reproducer::context_text(&context),
            &[crew::guard::dossier_text(&dossier)],
            "",
        );
        let tokens = (prompt.system.chars().count() + prompt.user.chars().count()).div_ceil(4);
        tokens_total += tokens;
        figures.tokens_max = figures.tokens_max.max(tokens);
    }
    figures.tokens_mean = tokens_total / figures.cases.max(1);
    Ok(figures)
}

/// The built-in case sets and the folders they are scored against, from the repository root.
pub fn builtin(root: &Path) -> Vec<(PathBuf, PathBuf)> {
    vec![
        (
            root.join("crew/eval/shoplite_cases.json"),
            root.join("shoplite"),
        ),
        (
            root.join("crew/eval/tallybook_cases.json"),
            root.join("tallybook"),
        ),
        (root.join("crew/eval/desk_cases.json"), root.to_path_buf()),
        (
            root.join("crew/eval/desk_heldout_cases.json"),
            root.to_path_buf(),
        ),
    ]
}

/// Runs `r2r crew eval`: the built-in sets, or `cases` against `repo`.
pub fn run(cases: Option<PathBuf>, repo: Option<PathBuf>, profile: &str) -> anyhow::Result<()> {
    let sets = match (cases, repo) {
        (Some(cases), Some(repo)) => vec![(cases, repo)],
        (None, None) => {
            let root = std::env::current_dir()?;
            builtin(&root)
        }
        _ => bail!("--cases and --repo go together (or neither, for the built-in sets)"),
    };
    println!(
        "{:<10} {:>5} {:>4} {:>6} {:>9} {:>9} {:>14} {:>12}",
        "target",
        "cases",
        "bugs",
        "files",
        "recall@1",
        "recall@3",
        "recall@prompt",
        "tokens mean/max"
    );
    for (cases_path, repo) in sets {
        let text = std::fs::read_to_string(&cases_path)
            .with_context(|| format!("reading {}", cases_path.display()))?;
        let cases: Cases = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a case file", cases_path.display()))?;
        if cases.cases.is_empty() {
            bail!("{} holds no cases", cases_path.display());
        }
        let profile = match &cases.profile {
            Some(named) => sandbox::Profile::parse(named)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{} names an unknown profile {named:?}",
                        cases_path.display()
                    )
                })?
                .as_str(),
            None => profile,
        };
        let figures = score(&cases, &repo, profile)?;
        let pct = |n: usize| format!("{:.0} %", 100.0 * n as f64 / figures.cases as f64);
        println!(
            "{:<10} {:>5} {:>4} {:>6} {:>9} {:>9} {:>14} {:>8}/{}",
            cases.target,
            figures.cases,
            figures.bugs,
            figures.files,
            pct(figures.at_1),
            pct(figures.at_3),
            pct(figures.in_prompt),
            figures.tokens_mean,
            figures.tokens_max
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    #[test]
    fn the_shoplite_set_scores_against_the_shop_without_its_stored_answer() {
        let text = std::fs::read_to_string(root().join("crew/eval/shoplite_cases.json")).unwrap();
        let cases: Cases = serde_json::from_str(&text).unwrap();
        let figures = score(&cases, &root().join("shoplite"), "rust").unwrap();
        assert_eq!((figures.cases, figures.bugs), (12, 2));
        // src/lib.rs and src/main.rs: the regression test (bug 1's answer) is left out.
        assert_eq!(figures.files, 2);
        assert!(figures.at_1 <= figures.at_3 && figures.at_1 <= figures.in_prompt);
        assert!(figures.tokens_mean > 0 && figures.tokens_mean <= figures.tokens_max);
    }

    #[test]
    fn the_tallybook_set_names_its_own_profile_and_scores_every_case() {
        let text = std::fs::read_to_string(root().join("crew/eval/tallybook_cases.json")).unwrap();
        let cases: Cases = serde_json::from_str(&text).unwrap();
        assert_eq!(cases.profile.as_deref(), Some("python"));
        let figures = score(&cases, &root().join("tallybook"), "python").unwrap();
        assert_eq!((figures.cases, figures.bugs), (12, 2));
        // Three modules and two test files; the stored regression test is left out.
        assert_eq!(figures.files, 5);
        assert!(figures.at_1 <= figures.at_3 && figures.at_3 <= figures.cases);
    }

    #[test]
    fn a_case_naming_a_file_the_target_lacks_is_a_clear_error() {
        let cases: Cases = serde_json::from_value(serde_json::json!({
            "target": "shoplite", "about": "x",
            "cases": [{"bug": "b", "title": "t", "what_happened": "w", "fixed_files": ["src/gone.rs"]}]
        }))
        .unwrap();
        let error = score(&cases, &root().join("shoplite"), "rust").unwrap_err();
        assert!(error.to_string().contains("src/gone.rs"), "{error}");
        let unknown = serde_json::from_value::<Cases>(serde_json::json!({
            "target": "s", "about": "x", "cases": [], "extra": 1
        }));
        assert!(unknown.is_err());
    }
}
