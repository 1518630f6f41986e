//! What crosses the wire for owners: the desk's pages, their server functions' inputs and
//! the desk's own errors.

use super::{BugState, DeskAction};
use serde::{Deserialize, Serialize};

/// What a desk page rendered by the server alone shows (sign-in, accepting an invitation, a
/// refusal): the pages that take a password stay plain form posts without hydration scripts;
/// every other desk page is hydrated on its server function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeskPage {
    /// `/desk/sign-in`.
    SignIn {
        /// Why the last attempt failed.
        error: Option<String>,
        /// Where to go after signing in.
        next: String,
    },
    /// `/desk/invite`: accept an invitation (public; the secret is in the link's fragment).
    Invite(Box<InvitePage>),
    /// Something went wrong (unknown bug, refused action).
    Problem {
        /// The owner, when signed in.
        owner: Option<String>,
        /// What happened.
        message: String,
        /// Where to go back to.
        back: String,
    },
}

/// One bug's line on the dashboard.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BugRow {
    /// Id.
    pub id: String,
    /// The first report's title (redacted).
    pub title: String,
    /// Component.
    pub component: String,
    /// State.
    pub state: BugState,
    /// Review tier, when a fix exists.
    pub tier: Option<u8>,
    /// Reports joined.
    pub reports: usize,
    /// When it was opened (ms).
    pub opened_at: i64,
    /// What a person has to do, if anything.
    pub waiting_for: Option<String>,
}

/// A quarantined report: metadata only (its text was never kept).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantineRow {
    /// Report id.
    pub id: String,
    /// When.
    pub at: i64,
    /// Component.
    pub component: String,
    /// Families the airlock found.
    pub families: Vec<String>,
    /// Whether the reporter left an email address (the tracking page is always a way back).
    #[serde(default)]
    pub contact: bool,
}

/// `/desk`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dashboard {
    /// The signed-in owner.
    pub owner: String,
    /// Bugs per state (every state, zero included), in the loop's order.
    pub counts: Vec<(BugState, usize)>,
    /// The bugs shown (filtered, sorted; what waits for a person first).
    pub bugs: Vec<BugRow>,
    /// All bugs before filtering.
    pub total: usize,
    /// Which page of the matching bugs this is.
    #[serde(default)]
    pub paging: Paging,
    /// Filters as applied: state, component, tier, age in days, search text, sort.
    pub filter: DeskFilter,
    /// Components to filter by.
    pub components: Vec<String>,
    /// The quarantine queue, newest first.
    pub quarantine: Vec<QuarantineRow>,
    /// Whether the crew is connected.
    pub crew_connected: bool,
    /// CSRF token for the quarantine queue's forms.
    #[serde(default)]
    pub csrf: String,
    /// What an action just did.
    #[serde(default)]
    pub notice: Option<String>,
    /// The server's clock when the page was made (relative times are counted from it, so
    /// the server's HTML and the hydrated page say the same).
    #[serde(default)]
    pub now: i64,
}

/// Where a page of the dashboard's list stands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Paging {
    /// This page (from 1).
    pub page: u32,
    /// Pages in all (at least 1).
    pub pages: u32,
    /// Bugs matching the filters, on all pages.
    pub matching: usize,
    /// The position of this page's first bug among them (from 1).
    pub first: usize,
    /// The previous page's address, if any.
    pub previous: Option<String>,
    /// The next page's address, if any.
    pub next: Option<String>,
}

/// The dashboard's filters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeskFilter {
    /// Only this state.
    pub state: Option<BugState>,
    /// Only this component.
    pub component: Option<String>,
    /// Only this tier.
    pub tier: Option<u8>,
    /// Only bugs at least this many days old.
    pub min_age_days: Option<u32>,
    /// Words in the title or id.
    pub q: Option<String>,
    /// `waiting` (default), `newest`, `oldest`, `state`.
    pub sort: String,
}

/// One report as the owner sees it: the airlock's redacted dossier, never the raw text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeskReport {
    /// Id.
    pub id: String,
    /// Filed at.
    pub filed_at: i64,
    /// Redacted title.
    pub title: String,
    /// Redacted account.
    pub what_happened: String,
    /// Redacted expectation.
    pub expected: String,
    /// Redacted steps.
    pub steps: Vec<String>,
    /// The reporter's answers on this bug.
    pub answers: Vec<String>,
    /// Whether they left an email address (the address itself is not shown here).
    #[serde(default)]
    pub has_contact: bool,
}

/// One check of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckView {
    /// `suite`, `format`, `lint`, …
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// How long it took.
    pub duration_ms: i64,
    /// One line.
    pub detail: String,
}

/// A piece of evidence.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceView {
    /// Id.
    pub id: String,
    /// `reproduction_rerun`, `baseline_run`, `fix_attempt`, …
    pub kind: String,
    /// `isolated test`, `simulated demo`, `live run`, `controlled acceptance`.
    pub label: String,
    /// Who wrote what ran: a named model, the scripted demo model; `None` for the target's
    /// own suite.
    #[serde(default)]
    pub written_by: Option<String>,
    /// What kind of run measured it (`isolated test · docker sandbox`, `live run`, …): a real
    /// run whoever wrote the test.
    #[serde(default)]
    pub measured_by: String,
    /// When.
    pub at: i64,
    /// Sandbox backend.
    pub backend: Option<String>,
    /// Model provider and model, when a model wrote what ran.
    pub model: Option<String>,
    /// The test file's path.
    pub test_path: Option<String>,
    /// The test file.
    pub test_source: Option<String>,
    /// Exit code.
    pub exit_code: Option<i64>,
    /// Duration.
    pub duration_ms: Option<i64>,
    /// The verdict or outcome in words.
    pub outcome: String,
    /// The run's output (tail).
    pub output: String,
    /// Checks of a fix attempt.
    pub checks: Vec<CheckView>,
    /// The commit it ran at.
    pub commit: Option<String>,
}

/// One ledger event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerRow {
    /// Position.
    pub seq: u64,
    /// What happened.
    pub kind: String,
    /// Who.
    pub actor: String,
    /// When.
    pub at: i64,
    /// Evidence ids or notes it rests on.
    pub evidence: Vec<String>,
    /// Details.
    pub detail: Vec<(String, String)>,
    /// Its hash (hex).
    pub hash: String,
}

/// `/desk/bugs/{id}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BugDesk {
    /// The signed-in owner.
    pub owner: String,
    /// CSRF token for the forms.
    pub csrf: String,
    /// The bug's line.
    pub bug: BugRow,
    /// The bug this one was merged into, when it is a duplicate.
    #[serde(default)]
    pub duplicate_of: Option<String>,
    /// The bug's ledger version.
    pub version: u64,
    /// Reports.
    pub reports: Vec<DeskReport>,
    /// Evidence, oldest first.
    pub evidence: Vec<EvidenceView>,
    /// The fix's diff (local forge).
    pub diff: Option<String>,
    /// The path of the failing test the crew proved (read-only to the fixer), once there is
    /// one.
    #[serde(default)]
    pub confirmed_test: Option<String>,
    /// The pull request: number, head, tier reasons, changed paths.
    pub pull_request: Option<PullRequestRow>,
    /// Approvals: who, at which head.
    pub approvals: Vec<(String, String)>,
    /// What is still required before a merge, in words.
    pub still_required: Vec<String>,
    /// Deployments: id, commit, whether it contains the fix.
    pub deployments: Vec<(String, String, String)>,
    /// Advisory notes from the crew (already through the airlock).
    pub notes: Vec<String>,
    /// The ledger.
    pub ledger: Vec<LedgerRow>,
    /// The chain's verification: `intact`, or the break.
    pub ledger_status: String,
    /// What happened after the last action (`?done=…`).
    pub notice: Option<String>,
    /// Actions an owner can take now.
    pub actions: Vec<DeskAction>,
    /// What crew roles say they are doing about this bug right now.
    pub crew_working: Vec<String>,
    /// What the crew spent on this bug and what is left: model spend against the per-bug
    /// budget, reproduction and fix attempts used of the round's.
    #[serde(default)]
    pub crew_budget: String,
    /// The project the bug's component belongs to, and how its tests run.
    #[serde(default)]
    pub project: String,
}

/// One released service on the crew page: what is live, where its latest release stands,
/// and the earlier releases an owner may serve again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseRow {
    /// The project it is released from.
    pub project: String,
    /// The service (`/live/<service>`).
    pub service: String,
    /// The commit live now, when one is.
    pub live: Option<String>,
    /// The latest release: its commit, step (`testing`, `held`, `live` …) and what happened.
    pub latest: Option<(String, String, String)>,
    /// Another desk server leads this service's deployer (its address): roll back there.
    pub leader_elsewhere: Option<String>,
    /// The releases built here, newest first: commit and when it was built (ms).
    pub built: Vec<(String, i64)>,
}

/// One project on the crew page: its definition and its spend.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectRow {
    /// Its id (`default`: the environment's).
    pub id: String,
    /// Its display name.
    pub name: String,
    /// Its components, comma-separated.
    pub components: String,
    /// How its tests run.
    pub profile: String,
    /// Its repository (the local forge's path) and branch.
    pub forge: String,
    /// Folders a fix may change, comma-separated.
    pub fix_paths: String,
    /// Where a proposed reproduction may live, comma-separated globs (the profile's when
    /// the project names none, marked so).
    #[serde(default)]
    pub test_paths: String,
    /// Whether the crew works its bugs.
    pub crew: bool,
    /// Who last changed it and when (ms), for stored projects.
    pub changed: Option<(String, i64)>,
    /// Model spend on its bugs, in micro-dollars.
    pub spent: u64,
    /// Model calls booked to its bugs.
    pub calls: u64,
}

/// A crew role's line: role, last seen (ms), age (ms), fresh, what it is doing.
pub type RoleRow = (String, Option<i64>, Option<i64>, bool, String);
/// A hand-off's line: kind, bug, from, to, where it is, body hash prefix.
pub type TaskRow = (String, String, String, String, String, String);
/// A pull request: number, head, tier reasons, changed paths.
pub type PullRequestRow = (u64, String, Vec<String>, Vec<String>);

/// `/desk/crew`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrewDesk {
    /// The signed-in owner.
    pub owner: String,
    /// All four heartbeats under 90 s.
    pub connected: bool,
    /// Role, last seen (ms), age (ms), fresh, doing.
    pub roles: Vec<RoleRow>,
    /// Spent (settled + open at worst case), settled, budget total (µ$).
    pub spend: (u64, u64, u64),
    /// Calls in the last hour and the hourly limit.
    pub calls: (u64, u64),
    /// Recent tasks: kind, bug, from, to, outcome or state, body hash prefix.
    pub tasks: Vec<TaskRow>,
    /// The bugs whose model calls cost most: bug, spent (µ$), calls.
    #[serde(default)]
    pub bug_spend: Vec<(String, u64, u64)>,
    /// The projects this desk serves, with what the crew spent on each.
    #[serde(default)]
    pub projects: Vec<ProjectRow>,
    /// The per-bug budget (µ$).
    #[serde(default)]
    pub per_bug: u64,
    /// The stranger's budget, in words: how many new bugs of one address and component the
    /// crew starts on in an hour, and how many wait for it now.
    #[serde(default)]
    pub strangers: String,
    /// Where the desk's sandbox runs go, in words: this process's own sandbox, or the worker
    /// hosts with each one's state and the jobs waiting or running.
    #[serde(default)]
    pub sandbox: Vec<String>,
    /// The services this desk releases, each with its earlier releases.
    #[serde(default)]
    pub releases: Vec<ReleaseRow>,
    /// The session's CSRF token, for the project form.
    #[serde(default)]
    pub csrf: String,
}

/// A confirmation page for an owner's action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confirm {
    /// The signed-in owner.
    pub owner: String,
    /// CSRF token.
    pub csrf: String,
    /// The bug.
    pub bug: String,
    /// The action asked about.
    pub action: DeskAction,
    /// The report written to, for `contact`.
    #[serde(default)]
    pub report: Option<String>,
    /// The pending owner, for `confirm_owner`.
    #[serde(default)]
    pub person: Option<String>,
    /// The exact head, for approve and merge.
    pub head: Option<String>,
    /// What will happen, in plain words.
    pub consequences: Vec<String>,
    /// What the owner chooses from, for `duplicate`: (bug id, its title and state).
    #[serde(default)]
    pub choices: Vec<(String, String)>,
}

/// A project as the crew page's form sends it (`desk_project`): `mode` `add` or `edit`; on
/// `edit` an empty field keeps the project's value, on `add` it takes the default (branch
/// `main`, fixes in `src/`, crew on). Lists are comma-separated.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectInput {
    /// The session's CSRF token.
    pub csrf: String,
    /// `add` or `edit`.
    pub mode: String,
    /// The project's id.
    pub id: String,
    /// Its display name.
    pub name: String,
    /// Its components.
    pub components: String,
    /// Its bare repository's absolute path on the desk's host.
    pub forge: String,
    /// The branch fixes go into.
    pub branch: String,
    /// How its tests run.
    pub profile: String,
    /// Folders a fix may change.
    pub fix_paths: String,
    /// `on`, `off`, or empty.
    pub crew: String,
    /// The GitHub repository its fixes go to (`owner/name`); `none` takes it away.
    #[serde(default)]
    pub github: String,
    /// The service the deployer releases (a Rust project); `none` stops it.
    #[serde(default)]
    pub deploy: String,
    /// Where its tests live (comma-separated globs); `default` goes back to the profile's.
    #[serde(default)]
    pub test_paths: String,
    /// The released program's port inside its namespace; empty keeps it.
    #[serde(default)]
    pub launch_port: String,
    /// Its arguments (`{addr}`, `{port}` filled in); empty keeps them, `none` takes them away.
    #[serde(default)]
    pub launch_args: String,
    /// Its environment (`NAME=VALUE; …`); empty keeps it, `none` takes it away.
    #[serde(default)]
    pub launch_env: String,
    /// The folder of the assets the recorder checks; empty keeps it, `none`: no assets.
    #[serde(default)]
    pub launch_assets: String,
}

/// An owner's confirmed action, as `desk_act` receives it (the question's form).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActInput {
    /// The bug; empty for a quarantined report.
    pub bug: String,
    /// The report written to, for `contact`.
    pub report: Option<String>,
    /// `approve`, `merge`, `reopen`, `retry`, `take_over`, `contact`.
    pub action: String,
    /// The session's CSRF token.
    pub csrf: String,
    /// The exact head approved or merged.
    pub head: Option<String>,
    /// Why, for `reopen`.
    pub reason: Option<String>,
    /// The message, for `contact`.
    pub text: Option<String>,
    /// The bug that stays, for `duplicate`.
    #[serde(default)]
    pub of: Option<String>,
    /// The pending owner, for `confirm_owner`.
    #[serde(default)]
    pub person: Option<String>,
}

/// The words of a confirmation for `action`: its heading, its "yes" button, and whether it is
/// the destructive kind (styled as danger).
pub fn question_words(action: DeskAction) -> (&'static str, String, bool) {
    let title = match action {
        DeskAction::Approve => "Approve this exact head?",
        DeskAction::Merge => "Merge this fix?",
        DeskAction::Contact => "Write to this reporter?",
        DeskAction::Invite => "Invite another owner?",
        DeskAction::ConfirmOwner => "Confirm this owner?",
        DeskAction::Retry => "Give this bug back to the crew?",
        DeskAction::TakeOver => "Take this bug over from the crew?",
        DeskAction::Promote => "Promote this bug before a reporter confirms it?",
        DeskAction::Duplicate => "Mark this bug as a duplicate?",
        DeskAction::Reopen => "Reopen this bug?",
        DeskAction::Rollback => "Serve this earlier release again?",
    };
    let yes = match action {
        DeskAction::Contact => "Yes, send the message".to_owned(),
        DeskAction::Invite => "Yes, make the link".to_owned(),
        DeskAction::ConfirmOwner => "Yes, confirm".to_owned(),
        DeskAction::Retry => "Yes, give it back to the crew".to_owned(),
        DeskAction::TakeOver => "Yes, take it over".to_owned(),
        DeskAction::Promote => "Yes, promote it".to_owned(),
        DeskAction::Duplicate => "Yes, merge the reports".to_owned(),
        DeskAction::Rollback => "Yes, serve it again".to_owned(),
        other => format!("Yes, {other}"),
    };
    (
        title,
        yes,
        matches!(action, DeskAction::Reopen | DeskAction::Rollback),
    )
}

/// `/desk/owners`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnersDesk {
    /// The signed-in owner.
    pub owner: String,
    /// CSRF token for the invite form.
    pub csrf: String,
    /// Every owner, oldest first.
    pub owners: Vec<OwnerLine>,
    /// A fresh invitation link, shown once right after it was made.
    pub invite_link: Option<String>,
    /// When it expires.
    pub expires_at: Option<i64>,
}

/// One owner on `/desk/owners`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerLine {
    /// Account id.
    pub id: String,
    /// Email.
    pub email: String,
    /// Waiting for a second owner's confirmation (cannot sign in or approve yet).
    pub pending: bool,
    /// Who invited them (none for the first owner).
    pub invited_by: Option<String>,
    /// Who confirmed them, when they needed it.
    pub confirmed_by: Option<String>,
    /// Whether the signed-in owner may confirm them (pending, and not invited by them).
    pub can_confirm: bool,
}

/// `/desk/invite`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvitePage {
    /// Why the last attempt failed.
    pub error: Option<String>,
    /// The email typed last time (kept; the password never is).
    pub email: String,
    /// The invitation typed or pasted last time.
    pub token: String,
    /// The account was created.
    pub created: bool,
    /// It was created but waits for a second owner's confirmation.
    #[serde(default)]
    pub pending: bool,
}

/// The dashboard's address as typed or linked (`/desk?state=…&q=…&page=…`): every field is
/// text as it came, and the server alone decides what of it is valid (an unknown state or a
/// page beyond the last is ignored, never an error).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeskQuery {
    /// A state's name.
    #[serde(default)]
    pub state: Option<String>,
    /// A component.
    #[serde(default)]
    pub component: Option<String>,
    /// A tier (0–2).
    #[serde(default)]
    pub tier: Option<String>,
    /// At least this many days old.
    #[serde(default)]
    pub age: Option<String>,
    /// Words to find in titles and report text.
    #[serde(default)]
    pub q: Option<String>,
    /// `waiting`, `newest`, `oldest` or `state`.
    #[serde(default)]
    pub sort: Option<String>,
    /// The page, from 1.
    #[serde(default)]
    pub page: Option<String>,
    /// What an action just did (`contact`, `handled`).
    #[serde(default)]
    pub done: Option<String>,
}

/// Why a desk server function refused: a stable code and the words for a person. The same
/// codes as the REST API's refusals (`signed_out`, `forbidden`, `invalid_csrf`, …).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeskError {
    /// Stable, machine-readable.
    pub code: String,
    /// What happened, for a person.
    pub message: String,
    /// The HTTP status the service gave the refusal (the same as the REST API's), when it
    /// came from there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl DeskError {
    /// A refusal with `code` and `message`.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        DeskError {
            code: code.into(),
            message: message.into(),
            status: None,
        }
    }

    /// The desk's own words for the code: what a page shows for a refusal that came back in
    /// its address (a form post without JavaScript), where anyone could have written the
    /// message.
    pub fn words(&self) -> &'static str {
        match self.code.as_str() {
            "signed_out" => "You are not signed in (or your session ended): sign in again.",
            "forbidden" => "The desk's pages are for owners.",
            "invalid_csrf" => "This form is out of date (or came from another site): reload the desk and try again.",
            "not_found" => "There is nothing with that id here.",
            "missing_reason" => "A reopen needs a reason: the reporters see that it was reopened.",
            "missing_head" => "The exact head is missing: open the question again from the bug view.",
            "invalid_message" => "The message is empty or too long; nothing was sent.",
            "invalid_project" => "The project was not saved: a field is wrong. Check each one against the form's hints (r2r project add names the field too).",
            code if code.starts_with("invalid_") => "The desk could not read that request.",
            _ => "That did not work; nothing was changed. Try again.",
        }
    }

    /// Whether signing in again would help.
    pub fn is_signed_out(&self) -> bool {
        self.code == "signed_out"
    }

    /// The HTTP status that goes with the code.
    #[cfg(feature = "ssr")]
    pub fn status(&self) -> http::StatusCode {
        use http::StatusCode;
        if let Some(status) = self
            .status
            .and_then(|s| StatusCode::from_u16(s).ok())
            .filter(|s| s.is_client_error() || s.is_server_error())
        {
            return status;
        }
        match self.code.as_str() {
            "signed_out" => StatusCode::UNAUTHORIZED,
            "forbidden" | "invalid_csrf" => StatusCode::FORBIDDEN,
            "not_found" | "unknown_bug" => StatusCode::NOT_FOUND,
            "storage_unavailable" | "unavailable" | "server_fn" => StatusCode::SERVICE_UNAVAILABLE,
            code if code.starts_with("invalid_") => StatusCode::BAD_REQUEST,
            "unknown_action" | "unknown_report" => StatusCode::UNPROCESSABLE_ENTITY,
            code if code.starts_with("missing_") => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::CONFLICT,
        }
    }
}

impl std::fmt::Display for DeskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeskError {}
