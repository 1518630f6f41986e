//! Judging Node test runs: `node --test --test-reporter=tap` and Vitest's verbose reporter.
//!
//! The same rule as for cargo: a reproduction is a finished run whose summary was printed,
//! in which the named test failed on an assertion (`ERR_ASSERTION` / `AssertionError`). A
//! file that does not load (syntax error, missing import) is a compile error; a
//! `TypeError` in the test is a failure without assertion.

use crate::classify::{NotReproduced, Verdict};
use crate::RunOutcome;

fn not(reason: NotReproduced) -> Verdict {
    Verdict::NotReproduced { reason }
}

fn killed(outcome: &RunOutcome) -> Option<Verdict> {
    if outcome.timed_out {
        return Some(not(NotReproduced::TimedOut));
    }
    if outcome.oom_killed {
        return Some(not(NotReproduced::OutOfMemory));
    }
    None
}

/// A TAP YAML scalar without its quotes.
fn unquote(value: &str) -> String {
    let value = value.trim();
    let inner = value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .map(|v| v.replace("''", "'"))
        .or_else(|| {
            value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .map(|v| v.replace("\\\"", "\"").replace("\\n", "\n"))
        });
    inner.unwrap_or_else(|| value.to_owned())
}

/// Judges a `node --test --test-reporter=tap` run for the test named `test`.
pub fn classify_node_tap(outcome: &RunOutcome, test: &str) -> Verdict {
    if let Some(verdict) = killed(outcome) {
        return verdict;
    }
    let lines: Vec<&str> = outcome.stdout.lines().collect();
    let summary = lines.iter().any(|l| l.trim_start().starts_with("# tests "))
        && lines.iter().any(|l| l.trim_start().starts_with("# fail "));
    if !summary {
        return not(NotReproduced::NoSummary);
    }
    // `ok N - name` / `not ok N - name`, possibly indented inside a suite.
    let result = lines.iter().enumerate().find_map(|(index, line)| {
        let line = line.trim_start();
        let (passed, rest) = if let Some(rest) = line.strip_prefix("not ok ") {
            (false, rest)
        } else if let Some(rest) = line.strip_prefix("ok ") {
            (true, rest)
        } else {
            return None;
        };
        let (_, name) = rest.split_once(" - ")?;
        let (name, directive) = match name.split_once(" # ") {
            Some((name, directive)) => (name, Some(directive)),
            None => (name, None),
        };
        (name.trim() == test).then_some((index, passed, directive.map(str::to_owned)))
    });
    let Some((index, passed, directive)) = result else {
        // The file itself failed: it did not load.
        let file_failed = lines.iter().any(|l| {
            l.trim_start().starts_with("not ok ")
                && (l.trim_end().ends_with(".js")
                    || l.trim_end().ends_with(".mjs")
                    || l.trim_end().ends_with(".cjs"))
        });
        let load_error = outcome.stdout.contains("SyntaxError")
            || outcome.stdout.contains("ERR_MODULE_NOT_FOUND")
            || outcome.stdout.contains("Cannot find module");
        return not(if file_failed && load_error {
            NotReproduced::CompileError
        } else {
            NotReproduced::TestNotRun
        });
    };
    if directive.is_some_and(|d| {
        let d = d.to_ascii_uppercase();
        d.starts_with("SKIP") || d.starts_with("TODO")
    }) {
        return not(NotReproduced::TestNotRun);
    }
    if passed {
        return Verdict::Passed {
            test: test.to_owned(),
        };
    }
    // The YAML block after the result line, up to `...`.
    let mut code = String::new();
    let mut name = String::new();
    let mut error = String::new();
    let block: Vec<&str> = lines
        .iter()
        .skip(index + 1)
        .take_while(|l| l.trim() != "...")
        .copied()
        .collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    for (at, line) in block.iter().enumerate() {
        let trimmed = line.trim();
        let value = |v: &str| {
            if matches!(v.trim(), "|" | "|-" | ">" | ">-") {
                // A block scalar: the following, deeper-indented lines.
                block[at + 1..]
                    .iter()
                    .take_while(|l| l.trim().is_empty() || indent(l) > indent(line))
                    .map(|l| l.trim())
                    .collect::<Vec<_>>()
                    .join("\n")
                    .trim()
                    .to_owned()
            } else {
                unquote(v)
            }
        };
        if let Some(v) = trimmed.strip_prefix("code: ") {
            code = value(v);
        } else if let Some(v) = trimmed.strip_prefix("name: ") {
            name = value(v);
        } else if let Some(v) = trimmed.strip_prefix("error: ") {
            error = value(v);
        }
    }
    if code == "ERR_ASSERTION" || name == "AssertionError" {
        Verdict::Reproduced {
            test: test.to_owned(),
            assertion: error,
        }
    } else {
        not(NotReproduced::FailedWithoutAssertion)
    }
}

/// Judges a Vitest run (`vitest run --reporter=verbose`) for the test named `test`.
pub fn classify_vitest(outcome: &RunOutcome, test: &str) -> Verdict {
    if let Some(verdict) = killed(outcome) {
        return verdict;
    }
    let stdout = &outcome.stdout;
    let summary = stdout.lines().any(|l| l.trim_start().starts_with("Tests "))
        && stdout
            .lines()
            .any(|l| l.trim_start().starts_with("Test Files "));
    if !summary {
        return not(NotReproduced::NoSummary);
    }
    let everything = format!("{stdout}\n{}", outcome.stderr);
    // `✓ file > name 0ms`, `× file > name 32ms`, `↓ file > name` (skipped).
    let statuses: Vec<(char, Vec<&str>)> = stdout
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let mut chars = line.chars();
            let mark = chars.next()?;
            let rest = chars.as_str().trim_start();
            let rest = match rest.rsplit_once(' ') {
                Some((head, tail))
                    if tail.ends_with("ms") && tail[..tail.len() - 2].parse::<f64>().is_ok() =>
                {
                    head
                }
                _ => rest,
            };
            let path: Vec<&str> = rest.split(" > ").map(str::trim).collect();
            (path.len() >= 2).then_some((mark, path))
        })
        .collect();
    let status = statuses
        .iter()
        .find(|(_, path)| path.last() == Some(&test))
        .map(|(mark, _)| *mark);
    if status.is_none() {
        if let Some(verdict) = describe_block(&statuses, &everything, test) {
            return verdict;
        }
    }
    match status {
        Some('✓') => Verdict::Passed {
            test: test.to_owned(),
        },
        Some('×') => {
            // The failure section: ` FAIL  file > … > name`, then `ErrorName: message`.
            let mut lines = everything.lines();
            let found = lines.any(|l| {
                let l = l.trim();
                l.starts_with("FAIL ") && l.ends_with(&format!("> {test}"))
            });
            let error = found
                .then(|| lines.find(|l| !l.trim().is_empty()))
                .flatten()
                .unwrap_or_default();
            match error.trim().strip_prefix("AssertionError: ") {
                Some(message) => Verdict::Reproduced {
                    test: test.to_owned(),
                    assertion: message.to_owned(),
                },
                None => not(NotReproduced::FailedWithoutAssertion),
            }
        }
        Some(_) => not(NotReproduced::TestNotRun),
        None if everything.contains("Failed Suites") => not(NotReproduced::CompileError),
        None => not(NotReproduced::TestNotRun),
    }
}

/// `test` named a `describe` block (a table of cases, each its own test): reproduced when
/// one of its tests failed on an assertion (the first such is shown), passed when all passed;
/// `None` when no block has that name.
fn describe_block(statuses: &[(char, Vec<&str>)], everything: &str, test: &str) -> Option<Verdict> {
    let inside: Vec<&(char, Vec<&str>)> = statuses
        .iter()
        .filter(|(_, path)| path.len() >= 3 && path[1..path.len() - 1].contains(&test))
        .collect();
    if inside.is_empty() {
        return None;
    }
    if inside.iter().all(|(mark, _)| *mark == '✓') {
        return Some(Verdict::Passed {
            test: test.to_owned(),
        });
    }
    // Each failure section: ` FAIL  file > block > case`, then `ErrorName: message`.
    let mut lines = everything.lines();
    while lines
        .by_ref()
        .any(|l| l.trim().starts_with("FAIL ") && l.contains(&format!("> {test} >")))
    {
        let error = lines.find(|l| !l.trim().is_empty()).unwrap_or_default();
        if let Some(message) = error.trim().strip_prefix("AssertionError: ") {
            return Some(Verdict::Reproduced {
                test: test.to_owned(),
                assertion: message.to_owned(),
            });
        }
    }
    Some(not(if inside.iter().any(|(mark, _)| *mark == '×') {
        NotReproduced::FailedWithoutAssertion
    } else {
        NotReproduced::TestNotRun
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: &str = "a coupon never makes the total negative";

    #[test]
    fn a_describe_block_is_judged_by_the_tests_inside_it() {
        let stdout = "\n RUN  v0.34.6 /work/src\n\n × test/url.test.ts > isScriptProtocol > blob: 2ms\n ✓ test/url.test.ts > isScriptProtocol > data: 0ms\n × test/url.test.ts > isScriptProtocol > \0vbscript: 1ms\n ✓ test/url.test.ts > other > data: 0ms\n\n Test Files  1 failed (1)\n      Tests  2 failed | 2 passed (4)\n";
        let stderr = "\n FAIL  test/url.test.ts > isScriptProtocol > blob:\nTypeError: x is not a function\n\n FAIL  test/url.test.ts > isScriptProtocol > \0vbscript:\nAssertionError: expected false to be true // Object.is equality\n";
        let run = |stdout: &str, stderr: &str| RunOutcome {
            exit_code: Some(1),
            timed_out: false,
            oom_killed: false,
            duration_ms: 1,
            backend: "test",
            workers: Vec::new(),
            confirmation: None,
            stdout: stdout.to_owned(),
            stderr: stderr.to_owned(),
        };
        // The second failure is an assertion: the block reproduces.
        assert_eq!(
            classify_vitest(&run(stdout, stderr), "isScriptProtocol"),
            Verdict::Reproduced {
                test: "isScriptProtocol".into(),
                assertion: "expected false to be true // Object.is equality".into()
            }
        );
        // Only a crash inside: not a reproduction.
        let crash = stderr.replace("AssertionError: expected", "TypeError: expected");
        assert_eq!(
            classify_vitest(&run(stdout, &crash), "isScriptProtocol"),
            not(NotReproduced::FailedWithoutAssertion)
        );
        // Every case passed: the block passed; a block named nowhere was not run.
        let green = stdout.replace('×', "✓");
        assert_eq!(
            classify_vitest(&run(&green, ""), "isScriptProtocol"),
            Verdict::Passed {
                test: "isScriptProtocol".into()
            }
        );
        assert_eq!(
            classify_vitest(&run(stdout, stderr), "noSuchBlock"),
            not(NotReproduced::TestNotRun)
        );
        // The file's name is not a block.
        assert_eq!(
            classify_vitest(&run(stdout, stderr), "test/url.test.ts"),
            not(NotReproduced::TestNotRun)
        );
    }

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn outcome(stdout: String, stderr: String, exit_code: i32) -> RunOutcome {
        RunOutcome {
            exit_code: Some(exit_code),
            timed_out: false,
            oom_killed: false,
            duration_ms: 500,
            backend: "docker",
            workers: Vec::new(),
            confirmation: None,
            stdout,
            stderr,
        }
    }

    fn tap(node: &str, case: &str, exit_code: i32) -> Verdict {
        let run = outcome(
            fixture(&format!("{node}-{case}.tap")),
            fixture(&format!("{node}-{case}.stderr")),
            exit_code,
        );
        classify_node_tap(&run, TEST)
    }

    fn vitest(case: &str, exit_code: i32) -> Verdict {
        let run = outcome(
            fixture(&format!("vitest-{case}.stdout")),
            fixture(&format!("vitest-{case}.stderr")),
            exit_code,
        );
        classify_vitest(&run, TEST)
    }

    #[test]
    fn node_assertion_failures_reproduce_on_node_18_and_20() {
        assert_eq!(
            tap("node18", "assertion", 1),
            Verdict::Reproduced {
                test: TEST.into(),
                assertion: "payable total for SAVE300 on a 200 cart".into()
            }
        );
        // Node 20 writes the message as a YAML block with the diff.
        assert_eq!(
            tap("node20", "assertion", 1),
            Verdict::Reproduced {
                test: TEST.into(),
                assertion: "payable total for SAVE300 on a 200 cart\n\n-100 !== 0".into()
            }
        );
    }

    #[test]
    fn node_runs_that_prove_nothing_are_named() {
        for node in ["node18", "node20"] {
            assert_eq!(
                tap(node, "syntax", 1),
                not(NotReproduced::CompileError),
                "{node}"
            );
            assert_eq!(
                tap(node, "missing", 1),
                not(NotReproduced::CompileError),
                "{node}"
            );
            assert_eq!(
                tap(node, "typeerror", 1),
                not(NotReproduced::FailedWithoutAssertion),
                "{node}"
            );
            // The passing file does not contain the test at all.
            assert_eq!(
                tap(node, "pass", 0),
                not(NotReproduced::TestNotRun),
                "{node}"
            );
            let run = outcome(fixture(&format!("{node}-pass.tap")), String::new(), 0);
            assert_eq!(
                classify_node_tap(&run, "no coupon keeps the subtotal"),
                Verdict::Passed {
                    test: "no coupon keeps the subtotal".into()
                }
            );
        }
    }

    #[test]
    fn node_output_cut_before_the_summary_or_a_timeout_is_not_a_reproduction() {
        let full = fixture("node20-assertion.tap");
        let cut: String = full
            .lines()
            .take_while(|l| !l.starts_with("1..") && !l.starts_with("# Subtest: no coupon"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            classify_node_tap(&outcome(cut, String::new(), 1), TEST),
            not(NotReproduced::NoSummary)
        );
        let mut timed_out = outcome(full, String::new(), 1);
        timed_out.timed_out = true;
        assert_eq!(
            classify_node_tap(&timed_out, TEST),
            not(NotReproduced::TimedOut)
        );
    }

    #[test]
    fn vitest_assertion_failures_reproduce_and_the_rest_are_named() {
        assert_eq!(
            vitest("assertion", 1),
            Verdict::Reproduced {
                test: TEST.into(),
                assertion:
                    "payable total for SAVE300 on a 200 cart: expected -100 to be +0 // Object.is equality"
                        .into()
            }
        );
        assert_eq!(vitest("syntax", 1), not(NotReproduced::CompileError));
        assert_eq!(vitest("missing", 1), not(NotReproduced::CompileError));
        assert_eq!(
            vitest("typeerror", 1),
            not(NotReproduced::FailedWithoutAssertion)
        );
        assert_eq!(vitest("pass", 0), not(NotReproduced::TestNotRun));
        let run = outcome(fixture("vitest-pass.stdout"), String::new(), 0);
        assert_eq!(
            classify_vitest(&run, "no coupon keeps the subtotal"),
            Verdict::Passed {
                test: "no coupon keeps the subtotal".into()
            }
        );
        let cut = outcome(
            fixture("vitest-assertion.stdout")
                .lines()
                .take(4)
                .collect::<Vec<_>>()
                .join("\n"),
            String::new(),
            1,
        );
        assert_eq!(classify_vitest(&cut, TEST), not(NotReproduced::NoSummary));
    }
}
