//! What crosses the wire for a reporter: the report form and its receipt, the tracking page
//! and its answers.

use super::{ApiError, BugState, ReportStatus};
use serde::{Deserialize, Serialize};

/// `POST /api/v1/reports` (and the `/report` form).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportForm {
    /// One of the project's components.
    pub component: String,
    /// Short title.
    pub title: String,
    /// What happened.
    pub what_happened: String,
    /// What you expected.
    pub expected: String,
    /// Steps to reproduce, one per line.
    pub steps: String,
    /// Optional email address for the owners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact: Option<String>,
}

/// The answer to an accepted report (201).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportReceipt {
    /// The report's id.
    pub report_id: String,
    /// The bug it belongs to (none while quarantined).
    pub bug_id: Option<String>,
    /// Admitted or quarantined.
    pub status: ReportStatus,
    /// It joined a bug others already reported.
    pub joined_existing: bool,
    /// The same text was submitted before.
    pub repeat: bool,
    /// The private link: `/track#<capability>`. Shown once; the desk keeps only a hash.
    pub tracking_link: String,
    /// What happens next, in plain words.
    pub message: String,
}

/// `GET /api/v1/components`: what a report may name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Components {
    /// Component ids, in the configured order.
    pub components: Vec<String>,
}

/// A reporter's own report, as their tracking page shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportView {
    /// Id.
    pub id: String,
    /// Component.
    pub component: String,
    /// Admitted or quarantined.
    pub status: ReportStatus,
    /// Redacted title (none when quarantined: nothing was kept).
    pub title: Option<String>,
    /// Redacted account.
    pub what_happened: Option<String>,
    /// Redacted expectation.
    pub expected: Option<String>,
    /// Redacted steps.
    pub steps: Vec<String>,
    /// What was removed, by kind.
    pub redactions: std::collections::BTreeMap<String, u32>,
    /// When filed (ms since the epoch).
    pub submitted_at: i64,
}

/// One line of a bug's public history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEntry {
    /// When (ms since the epoch).
    pub at: i64,
    /// Plain words.
    pub label: String,
}

/// The failing test the crew proposes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReproductionView {
    /// The test file.
    pub test_path: String,
    /// The failure it printed.
    pub failure: String,
    /// What it shows, in the reporter's terms (the reproducer's, through the airlock).
    #[serde(default)]
    pub summary: Option<String>,
}

/// The release that carries the fix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseView {
    /// The live commit.
    pub commit: String,
    /// The deployment.
    pub deployment: String,
    /// When recorded.
    pub at: i64,
    /// Where the reporter can try the live release themselves (the desk's `/live/<service>`
    /// address), when this desk deploys the component.
    #[serde(default)]
    pub try_at: Option<String>,
}

/// The bug a report belongs to, as its reporter may see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BugView {
    /// Id.
    pub id: String,
    /// Its state.
    pub state: BugState,
    /// State in plain words.
    pub state_label: String,
    /// How many reports the bug gathers (yours included).
    pub reports: usize,
    /// Public history.
    pub timeline: Vec<TimelineEntry>,
    /// The proposed failing test, when there is one.
    pub reproduction: Option<ReproductionView>,
    /// The release with the fix, once live.
    pub release: Option<ReleaseView>,
    /// What happens next, in plain words.
    #[serde(default)]
    pub next: String,
}

/// A question waiting for this reporter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionView {
    /// Send it back with the answer.
    pub request_id: String,
    /// Which question.
    pub kind: domain::workflow::QuestionKind,
    /// The question.
    pub prompt: String,
    /// When it expires (then a fresh one is asked).
    pub expires_at: i64,
}

/// A message from the owners.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageView {
    /// When.
    pub at: i64,
    /// The text.
    pub body: String,
}

/// `GET /api/v1/track`: everything a reporter's link shows, and nothing of other reporters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tracking {
    /// Their report.
    pub report: ReportView,
    /// Its bug (none while quarantined).
    pub bug: Option<BugView>,
    /// The question waiting for them.
    pub question: Option<QuestionView>,
    /// Messages from the owners.
    pub messages: Vec<MessageView>,
    /// What the concierge delivered to this reporter (each notice once, oldest first).
    #[serde(default)]
    pub inbox: Vec<NoticeView>,
}

/// A notice in the reporter's inbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoticeView {
    /// When it was delivered.
    pub at: i64,
    /// Its subject.
    pub subject: String,
    /// Its text.
    pub body: String,
}

/// `POST /api/v1/track/answer`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The question's id.
    pub request_id: String,
    /// `reproduction` or `fix`.
    pub kind: String,
    /// Yes or no.
    pub yes: bool,
    /// Required with a no.
    #[serde(default)]
    pub reason: Option<String>,
}

/// The answer to an answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerOutcome {
    /// Whether it changed anything (false: the question had moved on).
    pub recorded: bool,
    /// The bug's state afterwards.
    pub state: BugState,
    /// Plain words.
    pub message: String,
}

/// What a server-rendered (script-free) reporter page shows after a form post.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // one value per request; boxing buys nothing
pub enum ReportPageState {
    /// The report was filed.
    Filed(Box<ReportReceipt>),
    /// It was refused; the typed values come back so nothing is lost.
    Refused(ApiError, ReportForm),
}

/// What a server-rendered (script-free) tracking page shows after a form post.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrackPageState {
    /// The capability matched.
    Found {
        /// The view.
        tracking: Box<Tracking>,
        /// The capability, to carry in the answer forms' hidden field.
        capability: String,
        /// The outcome of an answer just given, if any.
        notice: Option<String>,
    },
    /// No report matches (wrong or missing capability: one answer for both).
    NotFound,
    /// Refused before looking (rate limit, bad answer).
    Refused(ApiError),
}
