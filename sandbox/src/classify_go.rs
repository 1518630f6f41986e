//! Judging `go test -json` runs.
//!
//! Go has no assertion library of its own: a test fails by reporting through `t.Errorf`,
//! `t.Fatalf` and their kin, which print `file_test.go:LINE: message` under the test. So a
//! reproduction is a finished package run (its closing `pass`/`fail` event was printed) in
//! which the named test (or one of its subtests) failed with such a report and without a
//! panic. A package that did not build (`[build failed]`, compiler errors on stderr) is a
//! compile error; a panic, `t.FailNow()` without a message or an `os.Exit` is a failure
//! without assertion; the test binary's own timeout is a timeout.

use crate::classify::{NotReproduced, Verdict};
use crate::RunOutcome;
use serde::Deserialize;

/// One line of `go test -json` (test2json's event).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Event {
    action: String,
    #[serde(default)]
    test: Option<String>,
    #[serde(default)]
    output: Option<String>,
}

fn not(reason: NotReproduced) -> Verdict {
    Verdict::NotReproduced { reason }
}

/// Whether `line` is the compiler's `path.go:LINE:COL: message`.
fn compiler_error(line: &str) -> bool {
    let Some((path, rest)) = line.split_once(".go:") else {
        return false;
    };
    let mut parts = rest.splitn(3, ':');
    !path.is_empty()
        && !path.contains(' ')
        && parts
            .next()
            .is_some_and(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
        && parts
            .next()
            .is_some_and(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()))
        && parts.next().is_some()
}

/// A test's report line: four spaces (more in subtests), `name_test.go:LINE: message`.
fn report(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    if trimmed.len() == line.len() {
        return None;
    }
    let (file, rest) = trimmed.split_once(".go:")?;
    let (number, message) = rest.split_once(": ")?;
    (!file.is_empty()
        && !file.contains(' ')
        && !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit()))
    .then_some(message.trim_end())
}

/// Judges a `go test -json` run for the test named `test` (`TestName`, or a subtest's full
/// name `TestName/case`).
pub fn classify_go_test(outcome: &RunOutcome, test: &str) -> Verdict {
    if outcome.timed_out {
        return not(NotReproduced::TimedOut);
    }
    if outcome.oom_killed {
        return not(NotReproduced::OutOfMemory);
    }
    let build_failed = outcome
        .stdout
        .lines()
        .chain(outcome.stderr.lines())
        .any(|l| {
            let l = l.trim_end();
            l.ends_with("[build failed]") || l.ends_with("[setup failed]")
        });
    if build_failed || outcome.stderr.lines().any(compiler_error) {
        return not(NotReproduced::CompileError);
    }
    let events: Vec<Event> = outcome
        .stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    // The package's own closing event: the run finished and said so.
    let finished = events
        .iter()
        .any(|e| e.test.is_none() && matches!(e.action.as_str(), "pass" | "fail"));
    if !finished {
        return not(NotReproduced::NoSummary);
    }
    let ours = |name: &str| name == test || name.starts_with(&format!("{test}/"));
    let result = events.iter().rev().find_map(|e| {
        let name = e.test.as_deref()?;
        (name == test && matches!(e.action.as_str(), "pass" | "fail" | "skip"))
            .then_some(e.action.as_str())
    });
    let output: Vec<&str> = events
        .iter()
        .filter(|e| e.action == "output" && e.test.as_deref().is_some_and(ours))
        .filter_map(|e| e.output.as_deref())
        .collect();
    match result {
        None => not(NotReproduced::TestNotRun),
        Some("skip") => not(NotReproduced::TestNotRun),
        Some("pass") => Verdict::Passed {
            test: test.to_owned(),
        },
        Some(_) => {
            if output
                .iter()
                .any(|o| o.starts_with("panic: test timed out"))
            {
                return not(NotReproduced::TimedOut);
            }
            if output.iter().any(|o| o.trim_start().starts_with("panic: ")) {
                return not(NotReproduced::FailedWithoutAssertion);
            }
            let reports: Vec<&str> = output.iter().filter_map(|o| report(o)).collect();
            if reports.is_empty() {
                not(NotReproduced::FailedWithoutAssertion)
            } else {
                Verdict::Reproduced {
                    test: test.to_owned(),
                    assertion: reports.join("\n"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_support::{fixture, run};

    const TEST: &str = "TestCouponNeverNegative";

    #[test]
    fn a_t_errorf_report_is_a_reproduction_with_its_message() {
        let verdict = classify_go_test(&run(&fixture("go-assertion.json"), ""), TEST);
        assert_eq!(
            verdict,
            Verdict::Reproduced {
                test: TEST.into(),
                assertion: "payable total: Total(200, 300) = -100, want 0".into()
            }
        );
        // The other test in the same run passed; it is not ours.
        assert_eq!(
            classify_go_test(&run(&fixture("go-assertion.json"), ""), "TestOther"),
            Verdict::Passed {
                test: "TestOther".into()
            }
        );
    }

    #[test]
    fn a_failing_subtest_counts_for_its_parent_and_by_its_own_name() {
        let stdout = fixture("go-subtest.json");
        for name in [TEST, "TestCouponNeverNegative/save300"] {
            assert!(
                matches!(classify_go_test(&run(&stdout, ""), name),
                    Verdict::Reproduced { assertion, .. } if assertion == "Total(200, 300) = -100, want 0"),
                "{name}"
            );
        }
    }

    #[test]
    fn a_pass_a_panic_and_a_build_failure_are_told_apart() {
        assert_eq!(
            classify_go_test(&run(&fixture("go-pass.json"), ""), TEST),
            Verdict::Passed { test: TEST.into() }
        );
        assert_eq!(
            classify_go_test(&run(&fixture("go-panic.json"), ""), TEST),
            not(NotReproduced::FailedWithoutAssertion)
        );
        assert_eq!(
            classify_go_test(
                &run(&fixture("go-compile.json"), &fixture("go-compile.stderr")),
                TEST
            ),
            not(NotReproduced::CompileError)
        );
        // The compiler's lines alone are enough, whatever stdout says.
        assert_eq!(
            classify_go_test(&run("", &fixture("go-compile.stderr")), TEST),
            not(NotReproduced::CompileError)
        );
    }

    #[test]
    fn a_missing_test_a_cut_off_run_and_a_deadline_prove_nothing() {
        let full = fixture("go-assertion.json");
        assert_eq!(
            classify_go_test(&run(&full, ""), "TestSomethingElse"),
            not(NotReproduced::TestNotRun)
        );
        // Cut before the package's closing event.
        let cut: String = full
            .lines()
            .take_while(|l| !l.contains("\"Output\":\"FAIL\\n\""))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            classify_go_test(&run(&cut, ""), TEST),
            not(NotReproduced::NoSummary)
        );
        let mut late = run(&full, "");
        late.timed_out = true;
        assert_eq!(classify_go_test(&late, TEST), not(NotReproduced::TimedOut));
        let timeout = "{\"Action\":\"output\",\"Test\":\"TestCouponNeverNegative\",\"Output\":\"panic: test timed out after 1s\\n\"}\n{\"Action\":\"fail\",\"Test\":\"TestCouponNeverNegative\"}\n{\"Action\":\"fail\"}\n";
        assert_eq!(
            classify_go_test(&run(timeout, ""), TEST),
            not(NotReproduced::TimedOut)
        );
    }

    #[test]
    fn report_lines_are_recognised_and_others_are_not() {
        assert_eq!(report("    coupon_test.go:7: want 0\n"), Some("want 0"));
        assert_eq!(report("coupon_test.go:7: not indented"), None);
        assert_eq!(report("    === RUN   TestX"), None);
        assert!(compiler_error("cart/coupon_test.go:6:12: undefined: Totl"));
        assert!(!compiler_error("# example.com/shop/cart"));
        assert!(!compiler_error("see file.go:12 for details"));
    }
}
