//! The states a bug (a cluster of reports) moves through.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a bug stands in the loop from report to verified release.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BugState {
    /// Reported, not yet looked at.
    #[default]
    New,
    /// Advisory triage is done.
    Triaged,
    /// The crew is writing a failing test.
    Reproducing,
    /// The reproduction waits for the reporter's "is this the bug you saw?".
    AwaitingReporter,
    /// A reporter confirmed the reproduction.
    Confirmed,
    /// The crew is drafting a fix.
    Fixing,
    /// A person must step in (red baseline, failed fixes, out-of-scope component).
    NeedsHuman,
    /// A draft fix waits for human review.
    InReview,
    /// A human approved an exact head commit.
    Approved,
    /// The approved commit was merged by a human.
    Merged,
    /// A release containing the merge is verified live.
    Deployed,
    /// The reporter confirmed the live fix.
    Verified,
    /// A reporter said the live fix does not work.
    Reopened,
    /// An owner merged it into another bug (the same bug in other words): its reports follow
    /// that bug, and nothing more happens here.
    Duplicate,
}

impl BugState {
    /// Every state, in loop order.
    pub const ALL: [BugState; 14] = [
        BugState::New,
        BugState::Triaged,
        BugState::Reproducing,
        BugState::AwaitingReporter,
        BugState::Confirmed,
        BugState::Fixing,
        BugState::NeedsHuman,
        BugState::InReview,
        BugState::Approved,
        BugState::Merged,
        BugState::Deployed,
        BugState::Verified,
        BugState::Reopened,
        BugState::Duplicate,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            BugState::New => "new",
            BugState::Triaged => "triaged",
            BugState::Reproducing => "reproducing",
            BugState::AwaitingReporter => "awaiting_reporter",
            BugState::Confirmed => "confirmed",
            BugState::Fixing => "fixing",
            BugState::NeedsHuman => "needs_human",
            BugState::InReview => "in_review",
            BugState::Approved => "approved",
            BugState::Merged => "merged",
            BugState::Deployed => "deployed",
            BugState::Verified => "verified",
            BugState::Reopened => "reopened",
            BugState::Duplicate => "duplicate",
        }
    }

    /// Reads a stored name.
    pub fn parse(name: &str) -> Option<BugState> {
        BugState::ALL
            .into_iter()
            .find(|state| state.as_str() == name)
    }
}

impl fmt::Display for BugState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_round_trips_through_its_stored_name_and_json() {
        for state in BugState::ALL {
            assert_eq!(BugState::parse(state.as_str()), Some(state));
            let json = serde_json::to_string(&state).unwrap();
            assert_eq!(json, format!("\"{}\"", state.as_str()));
        }
        assert_eq!(BugState::parse("done"), None);
    }
}
