//! The only shapes of model output the crew accepts. Parsing is strict (unknown fields,
//! missing fields and wrong types are errors) and every field is bounded; paths are
//! relative, without `..`, and limited to plain characters. Text that people will read
//! still goes through the airlock's filter before it is stored (the caller's job).

use serde::Deserialize;

/// Largest file a model may return (characters).
pub const MAX_FILE_CHARS: usize = 24_000;
/// Most files one fix may touch.
pub const MAX_FIX_FILES: usize = 2;

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

/// The fixer's answer.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixDraft {
    /// At most two files.
    pub files: Vec<FixFile>,
    /// One line for the pull request.
    pub summary: String,
}

/// Parses and checks a fix against the project's allowed path prefixes and the confirmed
/// test (which it may never touch).
pub fn fix(content: &str, allowed: &[&str], confirmed_test: &str) -> Result<FixDraft, SchemaError> {
    const SHAPE: &str = "fix";
    let draft: FixDraft = parse(SHAPE, content)?;
    if draft.files.is_empty() || draft.files.len() > MAX_FIX_FILES {
        return Err(error(
            SHAPE,
            format!("files: 1 to {MAX_FIX_FILES}, got {}", draft.files.len()),
        ));
    }
    bounded(SHAPE, "summary", &draft.summary, 1, 200)?;
    let mut seen = Vec::new();
    for file in &draft.files {
        if !safe_path(&file.path) {
            return Err(error(
                SHAPE,
                format!("{:?} is not a safe relative path", file.path),
            ));
        }
        if file.path == confirmed_test {
            return Err(error(
                SHAPE,
                format!("{} is the confirmed test; it cannot change", file.path),
            ));
        }
        if !allowed.iter().any(|prefix| file.path.starts_with(prefix)) {
            return Err(error(
                SHAPE,
                format!("{} is outside the allowed paths {allowed:?}", file.path),
            ));
        }
        if seen.contains(&&file.path) {
            return Err(error(SHAPE, format!("{} appears twice", file.path)));
        }
        seen.push(&file.path);
        bounded(SHAPE, &file.path, &file.content, 1, MAX_FILE_CHARS)?;
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
    fn triage_and_review_are_bounded() {
        let ok = r#"{"severity":"high","likely_cause":"discount not capped","steps":["add SAVE300"],"test_idea":"total is 0"}"#;
        assert_eq!(triage(ok).unwrap().severity, Severity::High);
        assert!(triage(&ok.replace("high", "urgent")).is_err());
        assert!(triage(&ok.replace("\"add SAVE300\"", &vec!["\"s\""; 13].join(","))).is_err());
        assert!(review(r#"{"matches_expectation":true,"notes":"ok"}"#).is_ok());
        assert!(review(r#"{"matches_expectation":"yes","notes":"ok"}"#).is_err());
    }
}
