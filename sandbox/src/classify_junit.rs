//! Judging runs by their JUnit XML report: pytest (`--junitxml`) and any runner that writes
//! the format (Maven Surefire, Gradle, .NET loggers, jest-junit, Vitest's `junit` reporter…).
//!
//! The profile prints the report files on stdout (the runner's own output goes to stderr),
//! each after a [`FILE_MARK`] line. The same rule as for every runner: a reproduction is a
//! report that parsed whole (so the run finished and was not cut off) in which the named test
//! failed on an assertion. By JUnit's convention `<failure>` is a failed check and `<error>`
//! an unexpected exception; runners blur that line, so a failure counts as an assertion only
//! when its type or message names one (`AssertionError`, `AssertionFailedError`, pytest's
//! `assert …` and `DID NOT RAISE`, Jest's `expect(…)`). A test module that did not load — pytest's collection
//! error, Jest's "Test suite failed to run", Vitest's "Failed to load", an import or syntax
//! error on stderr — is a compile error.

use crate::classify::{NotReproduced, Verdict};
use crate::RunOutcome;

/// The line printed before each report file on stdout.
pub const FILE_MARK: &str = "<!-- r2r: junit report -->";

/// Words that mean the test file itself did not load.
const LOAD_FAILURES: [&str; 12] = [
    "collection failure",
    "Test suite failed to run",
    "Failed to load",
    "SyntaxError",
    "ImportError",
    "ModuleNotFoundError",
    "Cannot find module",
    "ERR_MODULE_NOT_FOUND",
    "COMPILATION ERROR",
    "Compilation failure",
    "cannot find symbol",
    "error CS",
];

fn not(reason: NotReproduced) -> Verdict {
    Verdict::NotReproduced { reason }
}

/// One `<testcase>` as the classifier needs it.
#[derive(Debug)]
struct Case {
    name: String,
    classname: String,
    outcome: CaseOutcome,
}

#[derive(Debug)]
enum CaseOutcome {
    Passed,
    Skipped,
    /// `<failure>` (`error == false`) or `<error>`: its type, message and text.
    Failed {
        error: bool,
        kind: String,
        message: String,
        text: String,
    },
}

/// Every test case in the reports on stdout, or `None` when a report is missing, cut off or
/// not JUnit XML.
fn cases(stdout: &str) -> Option<Vec<Case>> {
    let documents: Vec<&str> = if stdout.contains(FILE_MARK) {
        stdout.split(FILE_MARK).skip(1).collect()
    } else {
        vec![stdout]
    };
    let mut cases = Vec::new();
    let mut reports = 0;
    for document in documents {
        let document = document.trim();
        if document.is_empty() {
            continue;
        }
        let parsed = roxmltree::Document::parse(document).ok()?;
        let root = parsed.root_element();
        if !matches!(root.tag_name().name(), "testsuites" | "testsuite") {
            return None;
        }
        reports += 1;
        for case in root
            .descendants()
            .filter(|n| n.is_element() && n.tag_name().name() == "testcase")
        {
            let child = |tag: &str| {
                case.children()
                    .find(|n| n.is_element() && n.tag_name().name() == tag)
            };
            let outcome = if let Some(node) = child("failure").or_else(|| child("error")) {
                CaseOutcome::Failed {
                    error: node.tag_name().name() == "error",
                    kind: node.attribute("type").unwrap_or_default().to_owned(),
                    message: node.attribute("message").unwrap_or_default().to_owned(),
                    text: node
                        .descendants()
                        .filter_map(|n| n.text())
                        .collect::<String>(),
                }
            } else if child("skipped").is_some() {
                CaseOutcome::Skipped
            } else {
                CaseOutcome::Passed
            };
            cases.push(Case {
                name: case.attribute("name").unwrap_or_default().to_owned(),
                classname: case.attribute("classname").unwrap_or_default().to_owned(),
                outcome,
            });
        }
    }
    (reports > 0).then_some(cases)
}

/// Whether a test case is the one named `test`: its name, its name under describe blocks
/// (`suite > test`, `suite test`), a parametrised instance (`test[1-2]`), a Java method
/// (`test()`), or the qualified `class.test` / `class::test`.
fn is_named(case: &Case, test: &str) -> bool {
    let name = case.name.as_str();
    name == test
        || name.ends_with(&format!(" > {test}"))
        || name.ends_with(&format!(" {test}"))
        || (name.starts_with(&format!("{test}[")) && name.ends_with(']'))
        || name == format!("{test}()")
        || (!case.classname.is_empty()
            && [".", "::", "#"].iter().any(|sep| {
                let qualified = format!("{}{sep}{name}", case.classname);
                qualified == test
                    || [".", "::", "#", "/"]
                        .iter()
                        .any(|before| qualified.ends_with(&format!("{before}{test}")))
            })
            && [".", "::", "#"].iter().any(|sep| test.contains(sep)))
}

/// Whether a failure's type or message says it is an assertion.
fn is_assertion(kind: &str, message: &str, text: &str) -> bool {
    let kind_says = ["Assert", "ComparisonFailure", "ExpectationFailed"]
        .iter()
        .any(|word| kind.contains(word));
    let first = |s: &str| {
        s.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or_default()
            .to_owned()
    };
    let says = |line: &str| {
        line.starts_with("AssertionError")
            // `pytest.raises` / `pytest.warns` whose exception or warning never came: the
            // test's check failed (a plain `pytest.fail`, such as pytest-timeout's, is not).
            || line.starts_with("Failed: DID NOT RAISE")
            || line.starts_with("Failed: DID NOT WARN")
            || line == "assert"
            || line.starts_with("assert ")
            || line.starts_with("Error: expect(")
            || line.starts_with("expect(")
    };
    kind_says
        || (!message.is_empty() && says(&first(message)))
        || (message.is_empty() && kind.is_empty() && says(&first(text)))
}

fn loaded_badly(text: &str) -> bool {
    LOAD_FAILURES.iter().any(|word| text.contains(word))
}

/// Judges a run whose stdout holds JUnit XML reports for the test named `test`.
pub fn classify_junit(outcome: &RunOutcome, test: &str) -> Verdict {
    if outcome.timed_out {
        return not(NotReproduced::TimedOut);
    }
    if outcome.oom_killed {
        return not(NotReproduced::OutOfMemory);
    }
    let Some(cases) = cases(&outcome.stdout) else {
        return not(if loaded_badly(&outcome.stderr) {
            NotReproduced::CompileError
        } else {
            NotReproduced::NoSummary
        });
    };
    let ours: Vec<&Case> = cases.iter().filter(|c| is_named(c, test)).collect();
    if ours.is_empty() {
        let load_failure = cases.iter().any(|c| match &c.outcome {
            CaseOutcome::Failed { message, text, .. } => {
                loaded_badly(message) || loaded_badly(text)
            }
            _ => false,
        }) || loaded_badly(&outcome.stderr);
        return not(if load_failure {
            NotReproduced::CompileError
        } else {
            NotReproduced::TestNotRun
        });
    }
    let failed = ours.iter().find_map(|c| match &c.outcome {
        CaseOutcome::Failed {
            error,
            kind,
            message,
            text,
        } => Some((*error, kind, message, text)),
        _ => None,
    });
    match failed {
        Some((false, kind, message, text)) if is_assertion(kind, message, text) => {
            let shown = if message.trim().is_empty() {
                text.lines()
                    .map(str::trim_end)
                    .filter(|l| !l.trim_start().starts_with("at "))
                    .take(12)
                    .collect::<Vec<_>>()
                    .join("\n")
            } else {
                message.clone()
            };
            Verdict::Reproduced {
                test: test.to_owned(),
                assertion: shown.trim().to_owned(),
            }
        }
        Some(_) => not(NotReproduced::FailedWithoutAssertion),
        None if ours
            .iter()
            .all(|c| matches!(c.outcome, CaseOutcome::Skipped)) =>
        {
            not(NotReproduced::TestNotRun)
        }
        None => Verdict::Passed {
            test: test.to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_support::{fixture, run};

    /// A report as the profile prints it.
    fn report(name: &str) -> String {
        format!("{FILE_MARK}\n{}", fixture(name))
    }

    const PY: &str = "test_coupon_never_negative";
    const JS: &str = "a coupon never makes the total negative";

    #[test]
    fn pytest_assertions_are_reproductions_with_pytests_message() {
        for (file, expected) in [
            (
                "pytest-assert.xml",
                "AssertionError: payable total\nassert -100 == 0",
            ),
            ("pytest-class.xml", "assert -100 == 0"),
            ("pytest-param.xml", "assert -100 >= 0"),
        ] {
            let verdict = classify_junit(&run(&report(file), ""), PY);
            assert!(
                matches!(&verdict, Verdict::Reproduced { assertion, .. } if assertion.starts_with(expected)),
                "{file}: {verdict:?}"
            );
        }
        // The qualified and the parametrised names find the same cases.
        assert!(matches!(
            classify_junit(
                &run(&report("pytest-class.xml"), ""),
                "TestCoupon::test_coupon_never_negative"
            ),
            Verdict::Reproduced { .. }
        ));
        assert!(matches!(
            classify_junit(
                &run(&report("pytest-param.xml"), ""),
                "test_coupon_never_negative[200-300]"
            ),
            Verdict::Reproduced { .. }
        ));
        assert_eq!(
            classify_junit(&run(&report("pytest-assert.xml"), ""), "test_other_passes"),
            Verdict::Passed {
                test: "test_other_passes".into()
            }
        );
    }

    #[test]
    fn an_expected_exception_that_never_came_is_a_reproduction_and_a_bare_fail_is_not() {
        let outcome = run(&report("pytest-did-not-raise.xml"), "");
        assert!(
            matches!(
                classify_junit(&outcome, PY),
                Verdict::Reproduced { assertion, .. } if assertion.starts_with("Failed: DID NOT RAISE ValueError")
            ),
            "{:?}",
            classify_junit(&outcome, PY)
        );
        // pytest.fail (here pytest-timeout's words) is not a check of the bug.
        assert_eq!(
            classify_junit(&outcome, "test_gives_up"),
            not(NotReproduced::FailedWithoutAssertion)
        );
    }

    #[test]
    fn pytest_errors_and_import_failures_are_not_reproductions() {
        assert_eq!(
            classify_junit(&run(&report("pytest-pass.xml"), ""), PY),
            Verdict::Passed { test: PY.into() }
        );
        assert_eq!(
            classify_junit(&run(&report("pytest-typeerror.xml"), ""), PY),
            not(NotReproduced::FailedWithoutAssertion)
        );
        assert_eq!(
            classify_junit(&run(&report("pytest-fixture_error.xml"), ""), PY),
            not(NotReproduced::FailedWithoutAssertion)
        );
        for file in ["pytest-missing.xml", "pytest-syntax.xml"] {
            assert_eq!(
                classify_junit(&run(&report(file), ""), PY),
                not(NotReproduced::CompileError),
                "{file}"
            );
        }
        assert_eq!(
            classify_junit(&run(&report("pytest-assert.xml"), ""), "test_not_there"),
            not(NotReproduced::TestNotRun)
        );
    }

    #[test]
    fn other_runners_reports_are_read_the_same_way() {
        // Vitest's junit reporter names the case `describe > test` and types the failure.
        let verdict = classify_junit(&run(&report("vitest-junit-assert.xml"), ""), JS);
        assert!(
            matches!(&verdict, Verdict::Reproduced { assertion, .. } if assertion == "expected -100 to be +0 // Object.is equality"),
            "{verdict:?}"
        );
        assert_eq!(
            classify_junit(&run(&report("vitest-junit-typeerror.xml"), ""), JS),
            not(NotReproduced::FailedWithoutAssertion)
        );
        assert_eq!(
            classify_junit(&run(&report("vitest-junit-missing.xml"), ""), JS),
            not(NotReproduced::CompileError)
        );
        // jest-junit: no type or message, the text says `expect(…)`.
        let verdict = classify_junit(&run(&report("jest-junit-assert.xml"), ""), JS);
        assert!(
            matches!(&verdict, Verdict::Reproduced { assertion, .. }
                if assertion.starts_with("Error: expect(received).toBe(expected)") && assertion.contains("Received: -100") && !assertion.contains("jest-circus")),
            "{verdict:?}"
        );
        assert_eq!(
            classify_junit(&run(&report("jest-junit-typeerror.xml"), ""), JS),
            not(NotReproduced::FailedWithoutAssertion)
        );
        // A suite that failed to load: reported as a suite error, or only on stderr.
        assert_eq!(
            classify_junit(&run(&report("jest-junit-syntax.xml"), ""), JS),
            not(NotReproduced::CompileError)
        );
        assert_eq!(
            classify_junit(
                &run(
                    &report("jest-junit-missing.xml"),
                    &fixture("jest-junit-missing.stderr")
                ),
                JS
            ),
            not(NotReproduced::CompileError)
        );
    }

    #[test]
    fn several_reports_are_read_together() {
        let both = format!(
            "{}\n{}",
            report("vitest-junit-typeerror.xml"),
            report("pytest-assert.xml")
        );
        assert!(matches!(
            classify_junit(&run(&both, ""), PY),
            Verdict::Reproduced { .. }
        ));
    }

    #[test]
    fn a_missing_cut_off_or_foreign_report_proves_nothing() {
        assert_eq!(
            classify_junit(&run("", ""), PY),
            not(NotReproduced::NoSummary)
        );
        let full = report("pytest-assert.xml");
        let cut = &full[..full.len() / 2];
        assert_eq!(
            classify_junit(&run(cut, ""), PY),
            not(NotReproduced::NoSummary)
        );
        assert_eq!(
            classify_junit(&run("<html><body>testcase</body></html>", ""), PY),
            not(NotReproduced::NoSummary)
        );
        // A report missing because the module did not import says so on stderr.
        assert_eq!(
            classify_junit(&run("", &fixture("pytest-missing.out")), PY),
            not(NotReproduced::CompileError)
        );
        let mut late = run(&full, "");
        late.timed_out = true;
        assert_eq!(classify_junit(&late, PY), not(NotReproduced::TimedOut));
    }

    #[test]
    fn names_match_only_whole_tests() {
        let case = |name: &str, classname: &str| Case {
            name: name.into(),
            classname: classname.into(),
            outcome: CaseOutcome::Passed,
        };
        assert!(is_named(&case("test_a[1]", "t"), "test_a"));
        assert!(!is_named(&case("test_ab", "t"), "test_a"));
        assert!(!is_named(&case("test_a_b[1]", "t"), "test_a"));
        assert!(is_named(
            &case("couponIsCapped()", "shop.CartTest"),
            "couponIsCapped"
        ));
        assert!(is_named(
            &case("couponIsCapped", "shop.CartTest"),
            "CartTest.couponIsCapped"
        ));
        assert!(!is_named(
            &case("couponIsCapped", "shop.CartTest"),
            "Test.couponIsCapped"
        ));
    }
}
