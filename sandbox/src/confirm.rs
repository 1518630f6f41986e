//! Two runs of one job by two independent runners, compared. A worker host reports what it
//! ran, and a host that lies can say a passing test failed (a made-up reproduction) or a red
//! suite passed; a second runner that never saw the first one's answer runs the same job, and
//! the desk believes the result only when both tell the same story: the same ending (exit
//! code, deadline, memory) and the same failing tests, in any runner's words the desk reads.
//! Timings and other noise in the output are not compared.

use crate::{Profile, RunOutcome};
use std::collections::BTreeSet;

/// How a run ended, as far as a verdict depends on it.
fn ending(outcome: &RunOutcome) -> String {
    if outcome.timed_out {
        "ran past its deadline".to_owned()
    } else if outcome.oom_killed {
        "ran out of memory".to_owned()
    } else {
        match outcome.exit_code {
            Some(code) => format!("exit {code}"),
            None => "no exit code".to_owned(),
        }
    }
}

/// The failing tests any profile's reader finds in the run's output.
fn failing(outcome: &RunOutcome) -> BTreeSet<String> {
    Profile::ALL
        .iter()
        .flat_map(|profile| profile.failing_tests(outcome))
        .collect()
}

fn story(outcome: &RunOutcome) -> String {
    let failing = failing(outcome);
    if failing.is_empty() {
        ending(outcome)
    } else {
        format!(
            "{}, failing {}",
            ending(outcome),
            failing.into_iter().collect::<Vec<_>>().join(", ")
        )
    }
}

/// `None` when `first` and `second` tell the same story; otherwise both stories, in words
/// (`exit 101, failing tests::coupon` against `exit 0`).
pub fn disagreement(first: &RunOutcome, second: &RunOutcome) -> Option<String> {
    let (one, two) = (story(first), story(second));
    (one != two).then(|| format!("{one} against {two}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn run(exit: Option<i32>, stdout: &str) -> RunOutcome {
        RunOutcome {
            exit_code: exit,
            timed_out: false,
            oom_killed: false,
            duration_ms: 10,
            backend: "docker",
            workers: Vec::new(),
            confirmation: None,
            stdout: stdout.to_owned(),
            stderr: String::new(),
        }
    }

    #[test]
    fn the_same_verdict_in_other_timings_agrees() {
        let a = run(
            Some(101),
            "test coupon ... FAILED\ntest result: FAILED. 0 passed; 1 failed; finished in 0.01s",
        );
        let b = run(
            Some(101),
            "test coupon ... FAILED\ntest result: FAILED. 0 passed; 1 failed; finished in 0.93s",
        );
        assert_eq!(disagreement(&a, &b), None);
        let green = run(Some(0), "test result: ok. 3 passed; finished in 0.2s");
        assert_eq!(disagreement(&green, &run(Some(0), "ok")), None);
    }

    #[test]
    fn a_made_up_failure_or_pass_disagrees() {
        let forged = run(Some(101), "test coupon ... FAILED\npanicked: payable total");
        let honest = run(Some(0), "test coupon ... ok");
        let said = disagreement(&forged, &honest).unwrap();
        assert!(
            said.contains("exit 101, failing coupon") && said.contains("against exit 0"),
            "{said}"
        );
        // The same exit with another failing test is another story.
        let other = run(Some(101), "test totals ... FAILED");
        assert!(disagreement(&forged, &other).is_some());
        // A deadline or memory kill is never the same as an exit.
        let mut late = run(None, "");
        late.timed_out = true;
        assert!(disagreement(&late, &run(None, "")).is_some());
        let mut big = run(Some(137), "");
        big.oom_killed = true;
        assert!(disagreement(&big, &run(Some(137), "")).is_some());
    }
}
