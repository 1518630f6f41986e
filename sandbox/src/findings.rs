//! A check's findings, compared with the base's. Real projects carry lint debt (a newer
//! clippy, ruff or tsc finds things the project's own CI did not), so a fix's check is judged
//! by what it adds: the findings of the check run on the fix, less those of the same check
//! run on the base. A finding is a line that reports one — a compiler-style headline
//! (`error…:` / `warning…:`, with the file of its `-->` line), a `path:line:col:` line
//! (ruff, flake8, mypy, ESLint's unix format), tsc's `path(line,col): error`, or rustfmt's
//! `Diff in` — with its numbers blanked, so a finding that only moved is the same finding.

/// The findings in a check's output, normalised, in order (repeats kept: one more of the
/// same finding is a new one).
pub fn findings(output: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut headline: Option<String> = None;
    for line in output.lines() {
        let trimmed = line.trim();
        if let Some(location) = trimmed.strip_prefix("--> ") {
            if let Some(head) = headline.take() {
                let file = location.split(':').next().unwrap_or(location);
                found.push(format!("{head} @ {}", blank_numbers(file)));
            }
            continue;
        }
        if let Some(head) = headline.take() {
            found.push(head);
        }
        let lower = trimmed.to_ascii_lowercase();
        let compiler = ["error", "warning"].iter().any(|word| {
            lower.starts_with(word)
                && lower[word.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c == ':' || c == '[')
        });
        // A summary ("could not compile … due to 3 previous errors", "generated 2
        // warnings") counts the findings already listed.
        let summary = lower.contains("previous error")
            || lower.contains("could not compile")
            || (lower.starts_with("warning:") && lower.contains("generated "))
            || lower.starts_with("error: aborting");
        if compiler && !summary {
            headline = Some(blank_numbers(trimmed));
        } else if !summary && (located(trimmed) || trimmed.starts_with("Diff in ")) {
            found.push(blank_numbers(trimmed));
        }
    }
    if let Some(head) = headline {
        found.push(head);
    }
    found
}

/// `path:line[:col]:` or `path(line,col):` at the start of a line.
fn located(line: &str) -> bool {
    let Some(first) = line.split_whitespace().next() else {
        return false;
    };
    let path_then = |rest: &str| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        !digits.is_empty()
    };
    if let Some((path, rest)) = first.split_once('(') {
        return path.contains('.') && path_then(rest) && first.ends_with("):");
    }
    match first.split_once(':') {
        Some((path, rest)) => path.contains('.') && !path.contains("//") && path_then(rest),
        None => false,
    }
}

/// Every run of digits as `N`, whitespace collapsed.
fn blank_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_digits = false;
    for c in text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
    {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    out
}

/// What `candidate` finds that `base` does not (counting repeats).
pub fn new_findings(base: &str, candidate: &str) -> Vec<String> {
    let mut left = findings(base);
    let mut new = Vec::new();
    for finding in findings(candidate) {
        match left.iter().position(|f| *f == finding) {
            Some(at) => {
                left.swap_remove(at);
            }
            None => new.push(finding),
        }
    }
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIPPY_BASE: &str = "\
    Checking bytes v1.7.1 (/snapshot)
error: unexpected `cfg` condition name: `loom`
  --> src/loom.rs:1:11
   |
1  | #[cfg(not(all(test, loom)))]
   |           ^^^^
error: this `if` has identical blocks
   --> src/bytes.rs:120:9
error: could not compile `bytes` (lib) due to 2 previous errors
";

    #[test]
    fn lint_debt_at_the_base_is_not_a_new_finding_but_one_more_is() {
        assert_eq!(
            findings(CLIPPY_BASE),
            [
                "error: unexpected `cfg` condition name: `loom` @ src/loom.rs",
                "error: this `if` has identical blocks @ src/bytes.rs",
            ]
        );
        // The same findings, moved by the fix's lines, and the summary's count: nothing new.
        let moved = CLIPPY_BASE
            .replace("src/bytes.rs:120:9", "src/bytes.rs:131:9")
            .replace("src/loom.rs:1:11", "src/loom.rs:2:11");
        assert!(new_findings(CLIPPY_BASE, &moved).is_empty());
        // One more of the same kind in the same file is new; so is another kind.
        let more = format!(
            "{CLIPPY_BASE}error: this `if` has identical blocks\n   --> src/bytes.rs:300:5\nwarning: unused variable: `x`\n  --> src/buf/mod.rs:7:9\n"
        );
        assert_eq!(
            new_findings(CLIPPY_BASE, &more),
            [
                "error: this `if` has identical blocks @ src/bytes.rs",
                "warning: unused variable: `x` @ src/buf/mod.rs",
            ]
        );
        // A clean base: every finding of the fix is new.
        assert_eq!(new_findings("", CLIPPY_BASE).len(), 2);
    }

    #[test]
    fn located_lines_of_other_tools_and_rustfmt_diffs_are_findings() {
        let ruff = "src/pkg/a.py:10:5: F401 `os` imported but unused\nFound 1 error.\n";
        assert_eq!(
            findings(ruff),
            ["src/pkg/a.py:N:N: FN `os` imported but unused"]
        );
        let tsc =
            "src/parse.ts(12,3): error TS2322: Type 'string' is not assignable to type 'number'.\n";
        assert_eq!(findings(tsc).len(), 1);
        let fmt = "Diff in /snapshot/src/lib.rs at line 14:\n-    let a=1;\n+    let a = 1;\n";
        assert_eq!(findings(fmt), ["Diff in /snapshot/src/lib.rs at line N:"]);
        // Prose, URLs and progress lines are not findings.
        for quiet in [
            "Compiling itoa v1.0.11",
            "see https://rust-lang.github.io/rust-clippy/master/index.html#if_same_then_else",
            "Finished `dev` profile",
            "note: `#[deny(warnings)]` on by default",
        ] {
            assert!(findings(quiet).is_empty(), "{quiet}");
        }
    }
}
