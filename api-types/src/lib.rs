//! The engineering API's wire types: what `/api/v1/bugs…`, `/api/v1/crew/…` and the fix
//! endpoints answer, as the desk's handlers build them and the crew reads them. One
//! definition on both sides, so renaming a field is a compile error on both sides instead of
//! a client that silently reads an empty string.
//!
//! Field names are the JSON names; every type round-trips through serde (tested).

use domain::airlock::Dossier;
use domain::workflow::Bug;
use domain::BugState;
use serde::{Deserialize, Serialize};

/// `GET /api/v1/bugs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BugList {
    /// Every bug, oldest first.
    pub bugs: Vec<BugSummary>,
    /// Names this list: `GET /api/v1/bugs?after=<fingerprint>&wait_ms=N` answers once the
    /// list differs from it (or when the wait is over).
    #[serde(default)]
    pub fingerprint: String,
}

/// One line of [`BugList`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BugSummary {
    /// The bug's id.
    pub id: String,
    /// Its component.
    pub component: String,
    /// Where it stands.
    pub state: BugState,
    /// Its version (every recorded change adds one).
    pub version: u64,
    /// How many reports it clusters.
    pub reports: usize,
    /// When the crew may start on it (ms), while a stranger's budget puts its start off:
    /// the desk refuses its model calls and its reproduction until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crew_budget_until: Option<i64>,
}

/// `GET /api/v1/bugs/{id}`: the bug as the engine keeps it and its reports' clean dossiers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BugDetail {
    /// The bug.
    pub bug: Bug,
    /// Its reports (redacted dossiers only; a quarantined report has none).
    pub reports: Vec<ReportEntry>,
    /// How many audit events its hash chain holds.
    pub events: u64,
}

/// One report of [`BugDetail`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportEntry {
    /// The report's id.
    pub id: String,
    /// When it was filed (ms since the epoch).
    pub filed_at: i64,
    /// Its redacted, structured text.
    pub dossier: Option<Dossier>,
    /// The report it repeats word for word, if any.
    pub repeat_of: Option<String>,
}

/// What a bug command recorded: the answer of every `/api/v1/bugs/{id}/…` command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    /// Whether this command changed the ledger (a repeat of a recorded one does not).
    pub recorded: bool,
    /// The bug's state now.
    pub state: BugState,
    /// The bug's version now.
    pub version: u64,
}

/// A hand-off between crew roles, as the desk stores it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Its id.
    pub id: String,
    /// What makes two sends the same hand-off.
    pub dedupe_key: String,
    /// The bug it is about, if any.
    pub bug_id: Option<String>,
    /// What to do (`reproduce`, `fix`, `review`, …).
    pub kind: String,
    /// The sending role.
    pub sender: String,
    /// The addressed role.
    pub addressed_to: String,
    /// The exact body text.
    pub body: String,
    /// Its SHA-256 (hex): the addressee accepts by naming it.
    pub body_sha256: String,
    /// When it was sent (ms).
    pub created_at: i64,
    /// When it was accepted.
    pub accepted_at: Option<i64>,
    /// When it was completed.
    pub completed_at: Option<i64>,
    /// How it ended.
    pub outcome: Option<String>,
}

/// `GET /api/v1/crew/tasks`: the open tasks addressed to the caller's role.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskList {
    /// Oldest first.
    pub tasks: Vec<Task>,
}

/// `POST /api/v1/crew/tasks/{id}/accept`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accepted {
    /// Always true on success.
    pub accepted: bool,
    /// The task, now accepted (its `accepted_at` is the lease to renew).
    pub task: Task,
    /// How long the lease holds unless renewed (`POST /api/v1/crew/tasks/{id}/renew`), ms.
    #[serde(default)]
    pub lease_ms: i64,
}

/// `GET /api/v1/bugs/{id}/crew-step`: the crew's step for the bug and what the manager is to
/// do about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BugCrewStep {
    /// The bug.
    pub bug: String,
    /// Its state.
    pub state: BugState,
    /// Its version.
    pub version: u64,
    /// The desk's clock (ms since the epoch), for `Waiting`'s `until`.
    pub now: i64,
    /// The crew's step in this state; `None` when the crew holds none here.
    pub step: Option<CrewStep>,
    /// The bug's tasks, newest first (at most 100).
    pub tasks: Vec<Task>,
}

/// One crew step of [`BugCrewStep`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrewStep {
    /// The task kind that moves the bug on (`reproduce`, `fix`).
    pub kind: String,
    /// The role it is addressed to.
    pub addressed_to: String,
    /// When the bug last changed: tasks ended before it belong to an earlier round.
    pub since: i64,
    /// What the manager is to do.
    pub verdict: domain::crew::StepVerdict,
    /// Tries allowed in all (`R2R_CREW_RETRIES`).
    pub attempts_allowed: u32,
}

/// `GET /api/v1/bugs/{id}/fix/context`: what a fix may be written from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixContext {
    /// The bug.
    pub bug: String,
    /// Its state (a fix is measured only while `fixing`).
    pub state: BugState,
    /// Attempts so far.
    pub attempts: u8,
    /// Attempts allowed.
    pub max_attempts: u8,
    /// The default branch's head the fix is written against.
    pub base: String,
    /// The target's test profile.
    pub profile: String,
    /// Path prefixes a fix may change.
    pub allowed_paths: Vec<String>,
    /// The test the reporter confirmed, byte for byte.
    pub confirmed_test: ConfirmedTest,
    /// Files under the allowed paths (at most 40, each within the per-file limit).
    pub files: Vec<ContextFile>,
}

/// The confirmed test in a [`FixContext`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfirmedTest {
    /// Its path in the repository.
    pub path: String,
    /// Its name as the runner prints it.
    pub name: String,
    /// The whole file.
    pub source: String,
    /// Its SHA-256 (hex), as the ledger holds it.
    pub sha256: String,
    /// The assertion the desk saw fail.
    pub assertion: String,
}

/// One file of a [`FixContext`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextFile {
    /// Its path.
    pub path: String,
    /// Its whole text.
    pub content: String,
}

/// `GET /api/v1/bugs/{id}/reproduction/context`: what a reproduction may be written from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReproductionContext {
    /// The bug.
    pub bug: String,
    /// Its state (a test is measured only while `reproducing`).
    pub state: BugState,
    /// Proposed tests that did not reproduce in this round.
    pub attempts: u8,
    /// Attempts allowed per round.
    pub max_attempts: u8,
    /// The default branch's head the test is run against.
    pub base: String,
    /// The target's test profile.
    pub profile: String,
    /// The package the tests import, from the project's manifest.
    pub package: Option<String>,
    /// Where a new test goes and how it reaches the code, naming the package.
    pub how_to_test: String,
    /// Source files and their public symbols (within a bound; `map_omitted` more).
    pub map: Vec<MapEntry>,
    /// Source files the map leaves out for its bound.
    pub map_omitted: usize,
    /// The files most related to the reports' words, best first, within `budget_chars`.
    pub files: Vec<RankedFile>,
    /// Characters of file text the context may carry.
    pub budget_chars: usize,
}

/// A source file in a [`ReproductionContext`]'s map.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapEntry {
    /// Its path.
    pub path: String,
    /// Its public symbols.
    pub symbols: Vec<String>,
}

/// A file shown whole in a [`ReproductionContext`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankedFile {
    /// Its path.
    pub path: String,
    /// Its whole text, or for a file too large to show whole the run of lines richest in the
    /// reports' words, after a comment line that says which lines of how many.
    pub content: String,
    /// Its rank score (0 for the example test when it shares no word).
    pub score: f64,
    /// The reports' words it contains, best first.
    pub matched: Vec<String>,
}

/// `GET /api/v1/bugs/{id}/diff`: a fix's diff for owners and the reviewer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixDiff {
    /// The exact head the pull request is at.
    pub head: String,
    /// Its risk tier (1–3).
    pub tier: u8,
    /// Why it has that tier.
    pub tier_reasons: Vec<String>,
    /// The paths it changes.
    pub changed_paths: Vec<String>,
    /// The approved change's unified diff: against the default branch while open, against
    /// the branch as it was before the merge once merged.
    pub diff: String,
    /// Once merged, what the merge commit changed on the default branch.
    #[serde(default)]
    pub merge_diff: Option<String>,
}

/// `POST /api/v1/outbox/concierge/claim`: the next notification jobs under one lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimedJobs {
    /// At most one batch.
    pub jobs: Vec<ClaimedJob>,
}

/// One leased job: its composed notice (or why it could not be composed) and the channels
/// already delivered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimedJob {
    /// The job's idempotency key.
    pub key: String,
    /// Its kind (`ask_reporter`, `notify_owners`, …).
    pub kind: String,
    /// Deliveries tried so far.
    pub attempts: u32,
    /// The lease every later call about this job must name.
    pub lease_id: String,
    /// When the lease ends (ms).
    pub leased_until: i64,
    /// Channels already delivered (`inbox`, `email`, `webhook`).
    pub delivered: Vec<String>,
    /// The notice, when the job could be composed.
    #[serde(default)]
    pub notice: Option<ClaimedNotice>,
    /// Why it could not be composed.
    #[serde(default)]
    pub error: Option<String>,
}

/// Who a notice is for: `{"reporter": "<report id>"}` or `"owners"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Audience {
    /// One report's reporter.
    Reporter(String),
    /// Every owner.
    Owners,
}

/// A composed notice with the addresses it may be emailed to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimedNotice {
    /// Who it is for.
    pub audience: Audience,
    /// The bug it is about.
    pub bug: Option<String>,
    /// One line.
    pub subject: String,
    /// Plain text.
    pub body: String,
    /// The owners' chat line.
    pub webhook_text: String,
    /// Where it may be emailed (the reporter's contact, or every owner).
    pub emails: Vec<String>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_bug_list_reads_the_names_the_desk_writes() {
        let list: BugList = serde_json::from_str(
            r#"{"bugs":[{"id":"bug-1","component":"shoplite","state":"in_review","version":7,"reports":2}]}"#,
        )
        .unwrap();
        assert_eq!(list.bugs[0].state, BugState::InReview);
        assert_eq!(list.bugs[0].version, 7);
        let again: BugList = serde_json::from_str(&serde_json::to_string(&list).unwrap()).unwrap();
        assert_eq!(again, list);
    }

    #[test]
    fn an_audience_is_a_reporter_object_or_the_word_owners() {
        assert_eq!(
            serde_json::to_string(&Audience::Reporter("r-1".into())).unwrap(),
            r#"{"reporter":"r-1"}"#
        );
        assert_eq!(
            serde_json::to_string(&Audience::Owners).unwrap(),
            r#""owners""#
        );
    }

    #[test]
    fn a_renamed_or_missing_field_is_an_error_not_an_empty_value() {
        let missing = serde_json::from_str::<Recorded>(r#"{"recorded":true,"version":3}"#);
        assert!(missing.is_err());
        let unknown_state =
            serde_json::from_str::<Recorded>(r#"{"recorded":true,"state":"donе","version":3}"#);
        assert!(unknown_state.is_err());
        let recorded: Recorded =
            serde_json::from_str(r#"{"recorded":false,"state":"fixing","version":3}"#).unwrap();
        assert_eq!(recorded.state, BugState::Fixing);
    }
}
