//! The only shapes of model output the crew accepts. Parsing is strict (unknown fields,
//! missing fields and wrong types are errors) and every field is bounded; paths are
//! relative, without `..`, and limited to plain characters. Text that people will read
//! still goes through the airlock's filter before it is stored (the caller's job).

use serde::Deserialize;

/// Largest file a model may return (characters).
pub const MAX_FILE_CHARS: usize = 24_000;
/// Most files one fix may touch.
pub const MAX_FIX_FILES: usize = 2;
/// Most edits one fix may carry (all files together).
pub const MAX_FIX_EDITS: usize = 24;
/// Largest text an edit finds or puts in its place (characters).
pub const MAX_EDIT_CHARS: usize = 8_000;
/// Largest file an edit may be applied to, and may leave (characters): real source files
/// are often larger than a model may return whole.
pub const MAX_EDITED_FILE_CHARS: usize = 1_000_000;

/// Why a model's answer was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the model's answer does not match the {shape} schema: {reason}")]
pub struct SchemaError {
    /// The expected shape.
    pub shape: &'static str,
    /// What is wrong.
    pub reason: String,
}

fn error(shape: &'static str, reason: impl Into<String>) -> SchemaError {
    SchemaError {
        shape,
        reason: reason.into(),
    }
}

/// Models often wrap JSON in a Markdown fence; that (and only that) is tolerated.
fn json_text(content: &str) -> &str {
    let trimmed = content.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .map_or(trimmed, str::trim)
}

fn parse<T: for<'de> Deserialize<'de>>(
    shape: &'static str,
    content: &str,
) -> Result<T, SchemaError> {
    serde_json::from_str(json_text(content)).map_err(|e| error(shape, e.to_string()))
}

fn bounded(
    shape: &'static str,
    field: &str,
    text: &str,
    min: usize,
    max: usize,
) -> Result<(), SchemaError> {
    let n = text.chars().count();
    if n < min || n > max {
        return Err(error(
            shape,
            format!("{field}: {min} to {max} characters, got {n}"),
        ));
    }
    if text.chars().any(|c| c == '\0') {
        return Err(error(shape, format!("{field}: contains a NUL character")));
    }
    Ok(())
}

/// A repository-relative path a model may name.
pub fn safe_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 200
        && !path.starts_with('/')
        && !path.starts_with('-')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
}

/// The reproducer's answer: one new test file.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReproductionDraft {
    /// Where the test goes.
    pub test_path: String,
    /// The test's name as the runner prints it.
    pub test_name: String,
    /// The whole file.
    pub test_source: String,
    /// What the test shows, in the reporter's terms (the desk screens it again).
    #[serde(default)]
    pub summary: Option<String>,
}

/// Parses and checks a reproduction.
pub fn reproduction(content: &str) -> Result<ReproductionDraft, SchemaError> {
    const SHAPE: &str = "reproduction";
    let draft: ReproductionDraft = parse(SHAPE, content)?;
    if !safe_path(&draft.test_path) {
        return Err(error(
            SHAPE,
            format!(
                "test_path {:?} is not a safe relative path",
                draft.test_path
            ),
        ));
    }
    bounded(SHAPE, "test_name", &draft.test_name, 1, 200)?;
    bounded(SHAPE, "test_source", &draft.test_source, 1, MAX_FILE_CHARS)?;
    if let Some(summary) = &draft.summary {
        bounded(SHAPE, "summary", summary, 0, 300)?;
    }
    Ok(draft)
}

/// One file of a fix, whole.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct FixFile {
    /// Repository-relative path.
    pub path: String,
    /// The whole new content.
    pub content: String,
}

/// One edit of a file too large to return whole: `find` occurs exactly once in the file
/// (after the edits before it are applied) and is replaced by `replace`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct FixEdit {
    /// Repository-relative path of a file that exists at the fix's base.
    pub path: String,
    /// The exact text to replace, with enough around it to occur once.
    pub find: String,
    /// What takes its place (may be empty).
    pub replace: String,
}

/// The fixer's answer: whole files, edits of existing files, or both (at most two paths
/// in all, none both whole and edited).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixDraft {
    /// Whole files.
    #[serde(default)]
    pub files: Vec<FixFile>,
    /// Edits, applied in order per file.
    #[serde(default)]
    pub edits: Vec<FixEdit>,
    /// One line for the pull request.
    pub summary: String,
}

impl FixDraft {
    /// Every path the fix changes, in first-named order.
    pub fn paths(&self) -> Vec<&str> {
        let mut paths: Vec<&str> = Vec::new();
        for path in self
            .files
            .iter()
            .map(|f| f.path.as_str())
            .chain(self.edits.iter().map(|e| e.path.as_str()))
        {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        paths
    }
}

/// Applies `edits` (already checked by [`fix`]) to `original`, in order: each `find` must
/// occur exactly once in the text as it stands. The error names the edit (1-based among
/// this file's) and what was wrong.
pub fn apply_edits(original: &str, edits: &[&FixEdit]) -> Result<String, String> {
    let mut text = original.to_owned();
    for (n, edit) in edits.iter().enumerate() {
        let found = text.match_indices(edit.find.as_str()).count();
        let Some((at, _)) = text.match_indices(edit.find.as_str()).next() else {
            return Err(format!(
                "edit {} of {}: its find text does not occur in the file",
                n + 1,
                edit.path
            ));
        };
        if found > 1 {
            return Err(format!(
                "edit {} of {}: its find text occurs {found} times; include more of the lines around it",
                n + 1,
                edit.path
            ));
        }
        text.replace_range(at..at + edit.find.len(), &edit.replace);
        if text.chars().count() > MAX_EDITED_FILE_CHARS {
            return Err(format!(
                "edit {} of {}: the file would exceed {MAX_EDITED_FILE_CHARS} characters",
                n + 1,
                edit.path
            ));
        }
    }
    Ok(text)
}

/// Parses and checks a fix against the project's allowed path prefixes and the confirmed
/// test (which it may never touch).
pub fn fix(content: &str, allowed: &[&str], confirmed_test: &str) -> Result<FixDraft, SchemaError> {
    const SHAPE: &str = "fix";
    let draft: FixDraft = parse(SHAPE, content)?;
    let paths = draft.paths();
    if paths.is_empty() || paths.len() > MAX_FIX_FILES {
        return Err(error(
            SHAPE,
            format!(
                "files and edits: 1 to {MAX_FIX_FILES} paths in all, got {}",
                paths.len()
            ),
        ));
    }
    if draft.edits.len() > MAX_FIX_EDITS {
        return Err(error(
            SHAPE,
            format!("edits: at most {MAX_FIX_EDITS}, got {}", draft.edits.len()),
        ));
    }
    bounded(SHAPE, "summary", &draft.summary, 1, 200)?;
    for path in &paths {
        if !safe_path(path) {
            return Err(error(
                SHAPE,
                format!("{path:?} is not a safe relative path"),
            ));
        }
        if *path == confirmed_test {
            return Err(error(
                SHAPE,
                format!("{path} is the confirmed test; it cannot change"),
            ));
        }
        if !allowed.iter().any(|prefix| path.starts_with(prefix)) {
            return Err(error(
                SHAPE,
                format!("{path} is outside the allowed paths {allowed:?}"),
            ));
        }
    }
    let mut seen = Vec::new();
    for file in &draft.files {
        if seen.contains(&&file.path) {
            return Err(error(SHAPE, format!("{} appears twice", file.path)));
        }
        seen.push(&file.path);
        bounded(SHAPE, &file.path, &file.content, 1, MAX_FILE_CHARS)?;
    }
    for edit in &draft.edits {
        if seen.contains(&&edit.path) {
            return Err(error(
                SHAPE,
                format!("{} is sent whole and edited: choose one", edit.path),
            ));
        }
        bounded(SHAPE, "edits[].find", &edit.find, 1, MAX_EDIT_CHARS)?;
        bounded(SHAPE, "edits[].replace", &edit.replace, 0, MAX_EDIT_CHARS)?;
    }
    Ok(draft)
}

/// Severity in a triage read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Cosmetic.
    Low,
    /// Wrong but with a workaround.
    Medium,
    /// Wrong, no workaround.
    High,
    /// Money, data or security.
    Critical,
}

/// An advisory triage read.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Triage {
    /// How bad.
    pub severity: Severity,
    /// The likely cause, in a sentence or two.
    pub likely_cause: String,
    /// Steps to reproduce.
    pub steps: Vec<String>,
    /// The test that would prove it.
    pub test_idea: String,
}

/// Parses and checks a triage read.
pub fn triage(content: &str) -> Result<Triage, SchemaError> {
    const SHAPE: &str = "triage";
    let triage: Triage = parse(SHAPE, content)?;
    bounded(SHAPE, "likely_cause", &triage.likely_cause, 1, 600)?;
    bounded(SHAPE, "test_idea", &triage.test_idea, 1, 600)?;
    if triage.steps.len() > 12 {
        return Err(error(
            SHAPE,
            format!("steps: at most 12, got {}", triage.steps.len()),
        ));
    }
    for step in &triage.steps {
        bounded(SHAPE, "steps[]", step, 1, 300)?;
    }
    Ok(triage)
}

/// An advisory review of a test or a fix.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Review {
    /// Whether it does what the reporter expected.
    pub matches_expectation: bool,
    /// Why.
    pub notes: String,
}

/// Parses and checks a review.
pub fn review(content: &str) -> Result<Review, SchemaError> {
    const SHAPE: &str = "review";
    let review: Review = parse(SHAPE, content)?;
    bounded(SHAPE, "notes", &review.notes, 1, 2_000)?;
    Ok(review)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproductions_are_parsed_strictly() {
        let ok =
            r##"{"test_path":"tests/coupon.rs","test_name":"t","test_source":"#[test] fn t(){}"}"##;
        assert_eq!(reproduction(ok).unwrap().test_path, "tests/coupon.rs");
        assert!(
            reproduction(&format!("```json\n{ok}\n```")).is_ok(),
            "a fenced answer"
        );
        for bad in [
            r#"{"test_path":"../x.rs","test_name":"t","test_source":"x"}"#,
            r#"{"test_path":"/etc/x","test_name":"t","test_source":"x"}"#,
            r#"{"test_path":"tests/x.rs","test_name":"","test_source":"x"}"#,
            r#"{"test_path":"tests/x.rs","test_name":"t"}"#,
            r#"{"test_path":"tests/x.rs","test_name":"t","test_source":"x","approve":true}"#,
            r#"{"test_path":"tests/x.rs","test_name":1,"test_source":"x"}"#,
            "Sure! Here is the test: ...",
        ] {
            assert!(reproduction(bad).is_err(), "{bad}");
        }
        let huge = format!(
            r#"{{"test_path":"tests/x.rs","test_name":"t","test_source":"{}"}}"#,
            "x".repeat(MAX_FILE_CHARS + 1)
        );
        assert!(reproduction(&huge).is_err());
    }

    #[test]
    fn fixes_stay_inside_the_allowed_paths_and_never_touch_the_test() {
        let allowed = ["src/"];
        let one = r#"{"files":[{"path":"src/lib.rs","content":"fn a(){}"}],"summary":"cap the discount"}"#;
        assert_eq!(
            fix(one, &allowed, "tests/coupon.rs").unwrap().files.len(),
            1
        );
        for bad in [
            r#"{"files":[{"path":"tests/coupon.rs","content":"x"}],"summary":"s"}"#,
            r#"{"files":[{"path":"build.rs","content":"x"}],"summary":"s"}"#,
            r#"{"files":[{"path":"src/../build.rs","content":"x"}],"summary":"s"}"#,
            r#"{"files":[],"summary":"s"}"#,
            r#"{"files":[{"path":"src/a.rs","content":"x"},{"path":"src/b.rs","content":"x"},{"path":"src/c.rs","content":"x"}],"summary":"s"}"#,
            r#"{"files":[{"path":"src/a.rs","content":"x"},{"path":"src/a.rs","content":"y"}],"summary":"s"}"#,
            r#"{"files":[{"path":"src/a.rs","content":"x","mode":"120000"}],"summary":"s"}"#,
        ] {
            assert!(fix(bad, &allowed, "tests/coupon.rs").is_err(), "{bad}");
        }
    }

    #[test]
    fn edits_name_existing_text_once_and_obey_the_same_paths() {
        let allowed = ["src/"];
        let ok = r#"{"edits":[{"path":"src/big.py","find":"return a - b","replace":"return a + b"}],"summary":"add, not subtract"}"#;
        let draft = fix(ok, &allowed, "tests/test_x.py").unwrap();
        assert_eq!(draft.paths(), ["src/big.py"]);
        for bad in [
            // Outside the allowed paths, the confirmed test, an unsafe path.
            r#"{"edits":[{"path":"setup.py","find":"a","replace":"b"}],"summary":"s"}"#,
            r#"{"edits":[{"path":"tests/test_x.py","find":"a","replace":"b"}],"summary":"s"}"#,
            r#"{"edits":[{"path":"src/../setup.py","find":"a","replace":"b"}],"summary":"s"}"#,
            // An empty find, a file both whole and edited, three paths, unknown fields.
            r#"{"edits":[{"path":"src/a.py","find":"","replace":"b"}],"summary":"s"}"#,
            r#"{"files":[{"path":"src/a.py","content":"x"}],"edits":[{"path":"src/a.py","find":"x","replace":"y"}],"summary":"s"}"#,
            r#"{"files":[{"path":"src/a.py","content":"x"}],"edits":[{"path":"src/b.py","find":"x","replace":"y"},{"path":"src/c.py","find":"x","replace":"y"}],"summary":"s"}"#,
            r#"{"edits":[{"path":"src/a.py","find":"a","replace":"b","line":3}],"summary":"s"}"#,
            r#"{"edits":[],"summary":"s"}"#,
        ] {
            assert!(fix(bad, &allowed, "tests/test_x.py").is_err(), "{bad}");
        }
        let many: Vec<String> = (0..=MAX_FIX_EDITS)
            .map(|n| format!(r#"{{"path":"src/a.py","find":"x{n}","replace":"y"}}"#))
            .collect();
        let too_many = format!(r#"{{"edits":[{}],"summary":"s"}}"#, many.join(","));
        assert!(fix(&too_many, &allowed, "tests/test_x.py").is_err());
        // Two edits of one file and one of another: two paths.
        let two = r#"{"edits":[{"path":"src/a.py","find":"x","replace":"y"},{"path":"src/b.py","find":"x","replace":"y"},{"path":"src/a.py","find":"z","replace":"w"}],"summary":"s"}"#;
        assert_eq!(
            fix(two, &allowed, "t").unwrap().paths(),
            ["src/a.py", "src/b.py"]
        );
    }

    #[test]
    fn edits_apply_in_order_and_refuse_missing_or_ambiguous_text() {
        let edit = |find: &str, replace: &str| FixEdit {
            path: "src/a.py".into(),
            find: find.into(),
            replace: replace.into(),
        };
        let original = "def f(a, b):\n    return a - b\n\ndef g():\n    pass\n";
        let (one, two) = (edit("a - b", "a + b"), edit("a + b\n", "a + b  # sum\n"));
        assert_eq!(
            apply_edits(original, &[&one, &two]).unwrap(),
            "def f(a, b):\n    return a + b  # sum\n\ndef g():\n    pass\n"
        );
        let missing = apply_edits(original, &[&edit("a * b", "x")]).unwrap_err();
        assert!(missing.contains("does not occur"), "{missing}");
        let twice = apply_edits(original, &[&edit("def ", "fn ")]).unwrap_err();
        assert!(twice.contains("occurs 2 times"), "{twice}");
        // The second edit sees the first's result, not the original.
        let stale = apply_edits(original, &[&one, &edit("a - b", "b - a")]).unwrap_err();
        assert!(stale.contains("edit 2"), "{stale}");
        let grow = "x".repeat(MAX_EDIT_CHARS);
        let big = format!("{}MARK", "y".repeat(MAX_EDITED_FILE_CHARS - 10));
        assert!(apply_edits(&big, &[&edit("MARK", &grow)])
            .unwrap_err()
            .contains("exceed"));
    }

    #[test]
    fn triage_and_review_are_bounded() {
        let ok = r#"{"severity":"high","likely_cause":"discount not capped","steps":["add SAVE300"],"test_idea":"total is 0"}"#;
        assert_eq!(triage(ok).unwrap().severity, Severity::High);
        assert!(triage(&ok.replace("high", "urgent")).is_err());
        assert!(triage(&ok.replace("\"add SAVE300\"", &vec!["\"s\""; 13].join(","))).is_err());
        assert!(review(r#"{"matches_expectation":true,"notes":"ok"}"#).is_ok());
        assert!(review(r#"{"matches_expectation":"yes","notes":"ok"}"#).is_err());
    }
}
