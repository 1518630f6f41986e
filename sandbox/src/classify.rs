//! Reading a test run: is it a genuine reproduction?
//!
//! A run reproduces a bug only when all of these hold: it finished before its deadline, the
//! runner printed its summary (so the suite really ran), the new test is listed as failed, and
//! its failure is an assertion. Everything else is named precisely so the crew and the desk
//! can say why a test does not count.

use crate::RunOutcome;
use serde::Serialize;

/// The judgement on one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// The new test failed on an assertion: the bug is reproduced.
    Reproduced {
        /// The failing test.
        test: String,
        /// The assertion message, as the runner printed it.
        assertion: String,
    },
    /// The new test ran and passed.
    Passed {
        /// The test.
        test: String,
    },
    /// The run proves nothing about the bug.
    NotReproduced {
        /// Why.
        reason: NotReproduced,
    },
}

/// Why a run is not a reproduction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotReproduced {
    /// Killed at the deadline.
    TimedOut,
    /// Killed for memory.
    OutOfMemory,
    /// The code did not compile (includes missing imports).
    CompileError,
    /// The runner never printed its summary line.
    NoSummary,
    /// The named test is not in the run.
    TestNotRun,
    /// The test failed, but not on an assertion (a panic, an unwrap, an early exit).
    FailedWithoutAssertion,
    /// The runner itself said every test passed (it exited 0, or its own summary counts no
    /// failure), whatever a report on the output claims.
    RunnerSaysPassed,
}

/// Judges a `cargo test` run for the test named `test` (its name as the runner prints it,
/// e.g. `save300_is_free` or `tests::save300_is_free`).
pub fn classify_cargo_test(outcome: &RunOutcome, test: &str) -> Verdict {
    let not = |reason| Verdict::NotReproduced { reason };
    if outcome.timed_out {
        return not(NotReproduced::TimedOut);
    }
    if outcome.oom_killed {
        return not(NotReproduced::OutOfMemory);
    }
    if outcome.stderr.contains("error: could not compile")
        || outcome
            .stderr
            .lines()
            .any(|line| line.starts_with("error[E"))
    {
        return not(NotReproduced::CompileError);
    }
    if !outcome
        .stdout
        .lines()
        .any(|line| line.starts_with("test result: "))
    {
        return not(NotReproduced::NoSummary);
    }
    let status = outcome.stdout.lines().find_map(|line| {
        let rest = line.strip_prefix("test ")?;
        let (name, status) = rest.split_once(" ... ")?;
        (name == test || name.ends_with(&format!("::{test}"))).then_some(status.trim())
    });
    match status {
        None => not(NotReproduced::TestNotRun),
        Some("ok") => Verdict::Passed {
            test: test.to_owned(),
        },
        Some(_) => match failure_assertion(&outcome.stdout, test) {
            Some(assertion) => Verdict::Reproduced {
                test: test.to_owned(),
                assertion,
            },
            None => not(NotReproduced::FailedWithoutAssertion),
        },
    }
}

/// The assertion message in the named test's failure section, if its panic is an assertion.
fn failure_assertion(stdout: &str, test: &str) -> Option<String> {
    let mut lines = stdout.lines();
    // The section starts with `---- <name> stdout ----`.
    lines.find(|line| {
        line.strip_prefix("---- ")
            .and_then(|rest| rest.strip_suffix(" stdout ----"))
            .is_some_and(|name| name == test || name.ends_with(&format!("::{test}")))
    })?;
    let section: Vec<&str> = lines
        .take_while(|line| !line.starts_with("---- ") && *line != "failures:")
        .collect();
    // The line after `thread '…' panicked at file:line:col:` is the panic message.
    let panic_at = section
        .iter()
        .position(|line| line.starts_with("thread '") && line.contains("panicked at"))?;
    let message: Vec<&str> = section[panic_at + 1..]
        .iter()
        .take_while(|line| !line.starts_with("note: ") && !line.starts_with("stack backtrace:"))
        .copied()
        .collect();
    let first = message.first()?;
    // assert_cmd's checks of a program's output and exit (a common way to test a CLI): its
    // "Unexpected completion" and "Command interrupted" are the command's own ending, not a
    // check, and stay out.
    let assert_cmd = [
        "Unexpected stdout, failed ",
        "Unexpected stderr, failed ",
        "Unexpected return code, failed ",
        "Unexpected success",
        "Unexpected failure.",
    ]
    .iter()
    .any(|check| first.starts_with(check));
    let is_assertion =
        first.starts_with("assertion `") || first.starts_with("assertion failed") || assert_cmd;
    is_assertion.then(|| message.join("\n").trim_end().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(stdout: &str, stderr: &str, exit_code: Option<i32>, timed_out: bool) -> RunOutcome {
        RunOutcome {
            exit_code,
            timed_out,
            oom_killed: false,
            duration_ms: 1,
            backend: "host",
            workers: Vec::new(),
            confirmation: None,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    fn fixture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    const TEST: &str = "save300_on_a_200_rupee_cart_is_free_not_negative";

    #[test]
    fn an_assertion_failure_in_the_new_test_is_a_reproduction() {
        let run = outcome(&fixture("cargo-assertion.stdout"), "", Some(101), false);
        match classify_cargo_test(&run, TEST) {
            Verdict::Reproduced { test, assertion } => {
                assert_eq!(test, TEST);
                assert!(assertion.contains("left: Rupees(-100.0)"), "{assertion}");
                assert!(assertion.contains("right: Rupees(0.0)"), "{assertion}");
            }
            other => panic!("expected a reproduction, got {other:?}"),
        }
    }

    #[test]
    fn an_assert_cmd_check_of_a_programs_output_is_a_reproduction() {
        let stdout = fixture("cargo-assert-cmd.stdout");
        let test = "display_offset_and_skip";
        match classify_cargo_test(&outcome(&stdout, "", Some(101), false), test) {
            Verdict::Reproduced { assertion, .. } => {
                assert!(assertion.starts_with("Unexpected stdout"), "{assertion}");
                assert!(assertion.contains("00000004"), "{assertion}");
            }
            other => panic!("expected a reproduction, got {other:?}"),
        }
        // The command's own ending is not a check.
        let interrupted = stdout.replace(
            "Unexpected stdout, failed diff original var",
            "Command interrupted",
        );
        assert_eq!(
            classify_cargo_test(&outcome(&interrupted, "", Some(101), false), test),
            Verdict::NotReproduced {
                reason: NotReproduced::FailedWithoutAssertion
            }
        );
    }

    #[test]
    fn a_passing_run_is_a_pass() {
        let run = outcome(&fixture("cargo-pass.stdout"), "", Some(0), false);
        assert_eq!(
            classify_cargo_test(&run, TEST),
            Verdict::Passed { test: TEST.into() }
        );
    }

    #[test]
    fn a_compile_error_is_not_a_reproduction() {
        let run = outcome("", &fixture("cargo-compile-error.stderr"), Some(101), false);
        assert_eq!(
            classify_cargo_test(&run, TEST),
            Verdict::NotReproduced {
                reason: NotReproduced::CompileError
            }
        );
    }

    #[test]
    fn an_unwrap_panic_is_not_a_reproduction() {
        let run = outcome(&fixture("cargo-unwrap-panic.stdout"), "", Some(101), false);
        assert_eq!(
            classify_cargo_test(&run, "parses_the_price"),
            Verdict::NotReproduced {
                reason: NotReproduced::FailedWithoutAssertion
            }
        );
    }

    #[test]
    fn a_timeout_is_not_a_reproduction_even_with_an_assertion_in_the_output() {
        let run = outcome(&fixture("cargo-assertion.stdout"), "", None, true);
        assert_eq!(
            classify_cargo_test(&run, TEST),
            Verdict::NotReproduced {
                reason: NotReproduced::TimedOut
            }
        );
    }

    #[test]
    fn output_cut_off_before_the_summary_is_not_a_reproduction() {
        let full = fixture("cargo-assertion.stdout");
        let cut: String = full
            .lines()
            .take_while(|line| !line.starts_with("test result"))
            .collect::<Vec<_>>()
            .join("\n");
        let run = outcome(&cut, "", Some(101), false);
        assert_eq!(
            classify_cargo_test(&run, TEST),
            Verdict::NotReproduced {
                reason: NotReproduced::NoSummary
            }
        );
    }

    #[test]
    fn a_failure_of_another_test_does_not_count_for_the_new_one() {
        let run = outcome(&fixture("cargo-assertion.stdout"), "", Some(101), false);
        assert_eq!(
            classify_cargo_test(&run, "some_other_test"),
            Verdict::NotReproduced {
                reason: NotReproduced::TestNotRun
            }
        );
    }
}
