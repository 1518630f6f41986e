//! Data shapes that cross the wire between the server and the browser.

use serde::{Deserialize, Serialize};

/// The service name every health answer carries; the recorder checks it.
pub const SERVICE_NAME: &str = "reporter-to-release";

/// `GET /api/health`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// Always [`SERVICE_NAME`].
    pub service: String,
    /// The crate version.
    pub version: String,
    /// The full git commit the binary was built from.
    pub commit: String,
    /// `sqlite` or `postgres`.
    pub storage: String,
    /// `ok`, or why not.
    pub status: String,
    /// Whether the database answered.
    pub database_reachable: bool,
    /// Newest applied migration, when the database answered.
    pub schema_version: Option<i64>,
    /// This installation's id, fixed when its database was created.
    pub instance: Option<String>,
}

impl Health {
    /// Whether the answer says the desk can serve.
    pub fn is_ok(&self) -> bool {
        self.status == "ok"
    }
}

/// The header a tracking page sends its capability in (never a path or query string).
pub const CAPABILITY_HEADER: &str = "x-r2r-capability";

/// Limits on report fields, in characters (the server enforces them; the form shows them).
pub mod limits {
    /// Title.
    pub const TITLE: usize = 200;
    /// What happened.
    pub const WHAT_HAPPENED: usize = 8_000;
    /// What the reporter expected.
    pub const EXPECTED: usize = 4_000;
    /// Steps to reproduce.
    pub const STEPS: usize = 8_000;
    /// Contact address.
    pub const CONTACT: usize = 254;
    /// A "no" answer's reason.
    pub const REASON: usize = 2_000;
    /// A request body, in bytes.
    pub const BODY_BYTES: usize = 64 * 1024;
}

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
    /// `admitted` or `quarantined`.
    pub status: String,
    /// It joined a bug others already reported.
    pub joined_existing: bool,
    /// The same text was submitted before.
    pub repeat: bool,
    /// The private link: `/track#<capability>`. Shown once; the desk keeps only a hash.
    pub tracking_link: String,
    /// What happens next, in plain words.
    pub message: String,
}

/// Every refusal: a stable code, plain words, and per-field reasons when fields were at fault.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// Stable machine-readable code.
    pub error: String,
    /// Plain words.
    pub message: String,
    /// Field name → what is wrong with it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub fields: std::collections::BTreeMap<String, String>,
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
    /// `admitted` or `quarantined`.
    pub status: String,
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
}

/// The bug a report belongs to, as its reporter may see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BugView {
    /// Id.
    pub id: String,
    /// State name.
    pub state: String,
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
}

/// A question waiting for this reporter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionView {
    /// Send it back with the answer.
    pub request_id: String,
    /// `reproduction` or `fix`.
    pub kind: String,
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
    pub state: String,
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

/// Server-side settings the pages need (provided as context when rendering).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteSettings {
    /// Components a report may name.
    pub components: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_serialises_with_the_field_names_the_recorder_reads() {
        let health = Health {
            service: SERVICE_NAME.into(),
            version: "0.1.0".into(),
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            storage: "sqlite".into(),
            status: "ok".into(),
            database_reachable: true,
            schema_version: Some(1),
            instance: Some("desk-1".into()),
        };
        let json: serde_json::Value = serde_json::to_value(&health).unwrap();
        assert_eq!(json["service"], "reporter-to-release");
        assert_eq!(json["commit"], "0123456789abcdef0123456789abcdef01234567");
        assert_eq!(json["storage"], "sqlite");
        assert_eq!(json["status"], "ok");
        assert_eq!(json["database_reachable"], true);
        let back: Health = serde_json::from_value(json).unwrap();
        assert_eq!(back, health);
        assert!(back.is_ok());
    }
}
