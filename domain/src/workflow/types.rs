//! The values the workflow works on: bugs, actors, commands, evidence, decisions.

use crate::codeowners::CodeOwners;
use crate::tier::Tier;
use crate::{BugState, Role};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Milliseconds since the Unix epoch; the caller's clock.
pub type Millis = i64;

/// How long a question to a reporter stays open (23 hours).
pub const QUESTION_TTL_MS: Millis = 23 * 60 * 60 * 1000;

/// A git commit id: 40 (SHA-1) or 64 (SHA-256) lower-case hex characters.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CommitSha(String);

/// A string that is not a commit id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a commit id is 40 or 64 lower-case hexadecimal characters")]
pub struct CommitShaError;

impl CommitSha {
    /// Validates a commit id; upper-case hex is folded to lower case.
    pub fn parse(text: &str) -> Result<Self, CommitShaError> {
        let lower = text.trim().to_ascii_lowercase();
        let valid = matches!(lower.len(), 40 | 64) && lower.bytes().all(|b| b.is_ascii_hexdigit());
        valid.then_some(CommitSha(lower)).ok_or(CommitShaError)
    }

    /// The hex text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for CommitSha {
    type Error = CommitShaError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        CommitSha::parse(&text)
    }
}

impl From<CommitSha> for String {
    fn from(sha: CommitSha) -> String {
        sha.0
    }
}

impl fmt::Debug for CommitSha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", &self.0[..12.min(self.0.len())])
    }
}

impl fmt::Display for CommitSha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who is asking. The server establishes this from a credential before the engine runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Actor {
    /// No valid credential.
    Anonymous,
    /// The holder of one report's capability.
    Reporter {
        /// The report their capability belongs to.
        report: String,
    },
    /// A person with a desk account (local forge).
    Owner {
        /// Account id (their email).
        id: String,
    },
    /// A GitHub account, from a verified webhook.
    GitHubUser {
        /// Login.
        login: String,
        /// GitHub says the account is a bot (`type: Bot`).
        bot: bool,
    },
    /// A machine role holding its bearer token.
    Role {
        /// Which.
        role: Role,
    },
    /// A verified forge event without a person behind it (a push).
    Forge,
    /// The desk's own automation (re-asking expired questions, joining reports).
    Desk,
}

impl Actor {
    /// The kind and id recorded in audit events.
    pub fn audit_ref(&self) -> (&'static str, String) {
        match self {
            Actor::Anonymous => ("anonymous", String::new()),
            Actor::Reporter { report } => ("reporter", report.clone()),
            Actor::Owner { id } => ("owner", id.clone()),
            Actor::GitHubUser { login, bot } => (
                if *bot { "github_bot" } else { "github_user" },
                login.clone(),
            ),
            Actor::Role { role } => ("role", role.as_str().to_owned()),
            Actor::Forge => ("forge", String::new()),
            Actor::Desk => ("desk", String::new()),
        }
    }

    /// A desk owner, named by their sign-in email: the one identity an owner has on every
    /// path (API, desk form, CODEOWNERS), so one person can never count as two approvers.
    pub fn owner(email: &str) -> Actor {
        Actor::Owner {
            id: person_id(email),
        }
    }

    /// The person behind the actor, when it is a person who may decide. Ids are compared as
    /// [`person_id`]s: emails and GitHub logins are case-insensitive, so `Ann@x` and `ann@x`
    /// are one person.
    pub fn human(&self) -> Option<Human> {
        match self {
            Actor::Owner { id } => Some(Human {
                kind: HumanKind::Owner,
                id: person_id(id),
            }),
            Actor::GitHubUser { login, bot: false } => Some(Human {
                kind: HumanKind::GitHub,
                id: person_id(login),
            }),
            _ => None,
        }
    }
}

/// How a person's id is compared: trimmed and lower-cased (emails and GitHub logins are both
/// case-insensitive).
pub fn person_id(id: &str) -> String {
    id.trim().to_lowercase()
}

/// Where a person's identity was verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HumanKind {
    /// A desk owner account.
    Owner,
    /// A GitHub user (not a bot).
    GitHub,
}

/// A verified person.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Human {
    /// Where verified.
    pub kind: HumanKind,
    /// Their id there.
    pub id: String,
}

/// The two questions a reporter is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionKind {
    /// "Is this the bug you saw?"
    Reproduction,
    /// "Does the live fix work for you?"
    Fix,
}

impl QuestionKind {
    /// Its name on the wire (`reproduction`, `fix`).
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionKind::Reproduction => "reproduction",
            QuestionKind::Fix => "fix",
        }
    }
}

/// An open question to one reporter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// uuid v5 of the job that asks it.
    pub request_id: String,
    /// Which question.
    pub kind: QuestionKind,
    /// The report (and so the reporter) it is addressed to.
    pub report: String,
    /// When asked.
    pub asked_at: Millis,
    /// After this it is asked afresh.
    pub expires_at: Millis,
}

/// A reporter's "yes".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confirmation {
    /// Whose.
    pub report: String,
    /// To which question.
    pub kind: QuestionKind,
    /// When.
    pub at: Millis,
}

/// What the desk's own re-run of a proposed test found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rerun {
    /// Failed on an assertion in the new test, as claimed.
    Reproduced,
    /// Anything else: passed, compile error, timeout…
    NotReproduced,
}

/// A failing test the crew proposes as proof of the bug.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reproduction {
    /// Evidence id.
    pub id: String,
    /// Path of the test file in the target repository.
    pub test_path: String,
    /// SHA-256 of the test file's contents.
    pub test_sha256: String,
    /// The assertion message the run printed.
    pub assertion: String,
    /// What the test shows, in the reporter's terms ("with SAVE300 on a ₹200 cart the shop
    /// asks for −₹100; you expected ₹0"): written by the reproducer, through the airlock's
    /// text filter. The reporter's question leads with it; the raw output stays behind
    /// "Technical details".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// A draft pull request with the fix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    /// Forge number.
    pub number: u64,
    /// Its current head.
    pub head: CommitSha,
    /// Paths the change touches.
    pub changed_paths: Vec<String>,
    /// Risk tier from the paths.
    pub tier: Tier,
    /// Why that tier.
    pub tier_reasons: Vec<String>,
}

/// A person's approval of one exact head.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// Who.
    pub approver: Human,
    /// The head they approved.
    pub head: CommitSha,
    /// Whether CODEOWNERS on the default branch (never the change's own) names them.
    pub code_owner: bool,
    /// When.
    pub at: Millis,
}

/// The recorded merge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeRecord {
    /// The pull request head that was merged.
    pub head: CommitSha,
    /// The resulting commit on the default branch.
    pub merge_commit: CommitSha,
    /// Who merged.
    pub merger: Human,
    /// When.
    pub at: Millis,
}

/// How a deployment relates to this bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeploymentStatus {
    /// Arrived before the merge: kept, checked when the merge arrives.
    Pending,
    /// Contains the bug's merge.
    ContainsFix,
    /// Does not (or could not be shown to) contain the merge.
    DoesNotContainFix,
}

/// A verified deployment as seen by one bug.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeploymentRecord {
    /// Deployment id.
    pub id: String,
    /// The commit that is live.
    pub commit: CommitSha,
    /// What it means for this bug.
    pub status: DeploymentStatus,
    /// When recorded.
    pub at: Millis,
}

/// Why a person must step in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NeedsHumanReason {
    /// The suite failed before any new test was added.
    RedBaseline,
    /// Both fix attempts failed.
    FixAttemptsExhausted,
    /// The component is outside the crew's allowed paths.
    OutOfScope,
    /// The crew's test did not fail for the reported reason in the desk's own run (it passed,
    /// did not compile, or was not a new test).
    NotReproduced,
    /// The model gave no usable answer (it failed, timed out, or broke the answer's schema).
    ModelNoAnswer,
    /// The spend guard refused the model call (the budget is used up).
    SpendLimit,
    /// An owner took the bug over from the crew.
    TakenOver,
    /// The crew's step ended every allowed try without moving the bug on (the sandbox or the
    /// desk was unreachable, the worker failed): see the crew's task outcomes.
    CrewStepFailed,
    /// The branch was rewritten after the merge: the merged commit is no longer in its
    /// history and no commit there has the same tree.
    HistoryRewritten,
}

impl NeedsHumanReason {
    /// The reason's name in events and notices.
    pub fn as_str(self) -> &'static str {
        match self {
            NeedsHumanReason::RedBaseline => "red_baseline",
            NeedsHumanReason::FixAttemptsExhausted => "fix_attempts_exhausted",
            NeedsHumanReason::OutOfScope => "out_of_scope",
            NeedsHumanReason::NotReproduced => "not_reproduced",
            NeedsHumanReason::ModelNoAnswer => "model_no_answer",
            NeedsHumanReason::SpendLimit => "spend_limit",
            NeedsHumanReason::TakenOver => "taken_over",
            NeedsHumanReason::CrewStepFailed => "crew_step_failed",
            NeedsHumanReason::HistoryRewritten => "history_rewritten",
        }
    }

    /// Reads [`NeedsHumanReason::as_str`]'s names.
    pub fn parse(name: &str) -> Option<NeedsHumanReason> {
        [
            NeedsHumanReason::RedBaseline,
            NeedsHumanReason::FixAttemptsExhausted,
            NeedsHumanReason::OutOfScope,
            NeedsHumanReason::NotReproduced,
            NeedsHumanReason::ModelNoAnswer,
            NeedsHumanReason::SpendLimit,
            NeedsHumanReason::TakenOver,
            NeedsHumanReason::CrewStepFailed,
            NeedsHumanReason::HistoryRewritten,
        ]
        .into_iter()
        .find(|r| r.as_str() == name)
    }

    /// Why, in plain words, for owners and reporters alike.
    pub fn plain(self) -> &'static str {
        match self {
            NeedsHumanReason::RedBaseline => {
                "the project's tests already failed before the crew added one"
            }
            NeedsHumanReason::FixAttemptsExhausted => {
                "both of the crew's fix attempts failed the checks"
            }
            NeedsHumanReason::OutOfScope => "this component is outside what the crew may change",
            NeedsHumanReason::NotReproduced => {
                "the crew's test did not fail for the reported reason when the desk ran it"
            }
            NeedsHumanReason::ModelNoAnswer => "the crew's model gave no usable answer",
            NeedsHumanReason::SpendLimit => "the spending limit for model calls is reached",
            NeedsHumanReason::TakenOver => "an owner took it over from the crew",
            NeedsHumanReason::CrewStepFailed => {
                "the crew tried its step several times and could not finish it (its tasks say why)"
            }
            NeedsHumanReason::HistoryRewritten => {
                "the branch was rewritten after the merge: the merged commit is gone from its history and no commit there has the same content"
            }
        }
    }

    /// Whether the crew may hand a bug over for this reason (the others are the desk's or an
    /// owner's findings).
    pub fn crew_may_give(self) -> bool {
        matches!(
            self,
            NeedsHumanReason::NotReproduced
                | NeedsHumanReason::ModelNoAnswer
                | NeedsHumanReason::SpendLimit
                | NeedsHumanReason::CrewStepFailed
        )
    }
}

/// A bug: a cluster of reports and everything proven about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bug {
    /// Id.
    pub id: String,
    /// Component every report in the cluster names.
    pub component: String,
    /// Where it stands.
    pub state: BugState,
    /// Grows by one with every recorded decision.
    pub version: u64,
    /// Reports in this cluster, first one first.
    pub reports: Vec<String>,
    /// The current reproduction, once proposed and measured.
    pub reproduction: Option<Reproduction>,
    /// Hashes of tests a reporter rejected: never proposed again.
    pub rejected_tests: Vec<String>,
    /// Reporters' "yes" answers.
    pub confirmations: Vec<Confirmation>,
    /// Questions waiting for an answer.
    pub questions: Vec<Question>,
    /// Proposed tests the desk's run did not see fail for the bug, in this round of
    /// reproduction.
    #[serde(default)]
    pub reproduction_attempts: u8,
    /// Failed fix attempts in this round.
    pub fix_attempts: u8,
    /// The draft fix.
    pub pull_request: Option<PullRequest>,
    /// Approvals of the current head.
    pub approvals: Vec<Approval>,
    /// The merge, once a person merged.
    pub merge: Option<MergeRecord>,
    /// Deployments seen.
    pub deployments: Vec<DeploymentRecord>,
    /// Why a person must step in, in `needs_human`.
    pub needs_human: Option<NeedsHumanReason>,
    /// The bug this one was merged into, in `duplicate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<String>,
    /// An owner promoted the bug before any reporter confirmed it: its crew work is paid for
    /// from the confirmed bugs' share of the budget and starts at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub promoted: bool,
}

impl Bug {
    /// Whether an owner may take the bug over from the crew ([`Command::OwnerTakeOver`]):
    /// while the crew holds it, or it waits for a person for a reason other than a take-over.
    /// The engine decides by this, and the desk offers the action by it.
    pub fn crew_holds(&self) -> bool {
        self.crew_holds_now()
    }

    /// Whether the crew's work on the bug is paid for from the strangers' share of the budget:
    /// no reporter confirmed a reproduction and no owner promoted it. (A bug confirmed once
    /// stays confirmed: a later reopening does not make it a stranger's again.)
    pub fn unconfirmed(&self) -> bool {
        self.confirmations.is_empty() && !self.promoted
    }

    /// Whether an owner may promote the bug ([`Command::OwnerPromote`]).
    pub fn promotable(&self) -> bool {
        self.unconfirmed() && !matches!(self.state, BugState::Verified | BugState::Duplicate)
    }

    fn crew_holds_now(&self) -> bool {
        use BugState as S;
        matches!(
            self.state,
            S::New | S::Triaged | S::Reproducing | S::Confirmed | S::Fixing | S::Reopened
        ) || (self.state == S::NeedsHuman && self.needs_human != Some(NeedsHumanReason::TakenOver))
    }

    /// A new bug opened by its first report.
    pub fn open(id: &str, component: &str, first_report: &str) -> Bug {
        Bug {
            id: id.to_owned(),
            component: component.to_owned(),
            state: BugState::New,
            version: 0,
            reports: vec![first_report.to_owned()],
            reproduction: None,
            rejected_tests: Vec::new(),
            confirmations: Vec::new(),
            questions: Vec::new(),
            reproduction_attempts: 0,
            fix_attempts: 0,
            pull_request: None,
            approvals: Vec::new(),
            merge: None,
            deployments: Vec::new(),
            needs_human: None,
            duplicate_of: None,
            promoted: false,
        }
    }

    /// Distinct people who approved the current head, and whether one is a code owner.
    pub fn approvals_of_head(&self) -> (usize, bool) {
        let Some(pr) = &self.pull_request else {
            return (0, false);
        };
        let mut people: Vec<&Human> = self
            .approvals
            .iter()
            .filter(|a| a.head == pr.head)
            .map(|a| &a.approver)
            .collect();
        people.sort();
        people.dedup();
        let code_owner = self
            .approvals
            .iter()
            .any(|a| a.head == pr.head && a.code_owner);
        (people.len(), code_owner)
    }

    /// What approvals the current head still needs, in words; empty when it has enough.
    pub fn missing_approvals(&self) -> Vec<String> {
        let Some(pr) = &self.pull_request else {
            return vec!["a pull request".to_owned()];
        };
        let (people, code_owner) = self.approvals_of_head();
        let mut missing = Vec::new();
        let needed = pr.tier.required_humans();
        if people < needed {
            missing.push(format!(
                "{} more approval(s) from distinct people of head {}",
                needed - people,
                pr.head.as_str()
            ));
        }
        if pr.tier.requires_code_owner() && !code_owner {
            missing.push(
                "an approval from a code owner (CODEOWNERS on the default branch)".to_owned(),
            );
        }
        missing
    }
}

/// What the caller proposes to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Command {
    /// Another report joins this cluster.
    AttachReport {
        /// The report.
        report: String,
    },
    /// The crew manager records that advisory triage is done.
    RecordTriage {
        /// Evidence id of the triage note.
        note: String,
    },
    /// The crew starts writing a failing test.
    StartReproduction,
    /// The suite was red before any new test: a person must look.
    ReportRedBaseline {
        /// Evidence id of the run.
        run: String,
    },
    /// A proposed test did not fail for the bug when the desk ran it (compile error, passed,
    /// another failure, timeout): one of the round's attempts is spent.
    FailReproductionAttempt {
        /// Evidence id of the desk's run.
        run: String,
    },
    /// The crew proposes a failing test (the desk's re-run is in the evidence).
    ProposeReproduction {
        /// The test.
        reproduction: Reproduction,
    },
    /// A reporter answers "is this the bug you saw?".
    AnswerReproduction {
        /// The question's id.
        request_id: String,
        /// Yes or no.
        confirmed: bool,
        /// Required with a no (already through the airlock).
        reason: Option<String>,
    },
    /// The crew starts a fix.
    StartFix,
    /// A fix attempt failed its checks.
    FailFixAttempt {
        /// Evidence id of the failed checks.
        run: String,
    },
    /// A fix passed its checks and a draft pull request exists.
    SubmitFix {
        /// Forge number.
        number: u64,
        /// Its head.
        head: CommitSha,
        /// Paths it changes.
        changed_paths: Vec<String>,
    },
    /// The pull request has a new head (a push).
    NewHead {
        /// The new head.
        head: CommitSha,
    },
    /// A person approves one exact head.
    Approve {
        /// The head they reviewed.
        head: CommitSha,
    },
    /// A person merged the pull request.
    Merge {
        /// The head that was merged.
        head: CommitSha,
        /// The resulting commit.
        merge_commit: CommitSha,
    },
    /// The recorder verified a deployment.
    RecordDeployment {
        /// Deployment id.
        deployment: String,
        /// The live commit.
        commit: CommitSha,
    },
    /// The desk did not release a head that contains this bug's merge: the project's own
    /// suite failed on it in the desk's sandbox (the release gate). Recorded in the ledger;
    /// the bug stays `merged` and nobody is asked about a fix that is not live.
    HoldRelease {
        /// The head that was held back.
        commit: CommitSha,
        /// Why, in the runner's words (the failing tests).
        reason: String,
    },
    /// The desk saw that the merged commit is no longer in the branch's history (a
    /// force-push). With a `replacement` whose tree is identical (the desk compared them) the
    /// bug's merge is re-bound to it; without one, a person must look. Never silent, never an
    /// approval.
    ObserveRewrittenHistory {
        /// The merge commit the bug recorded.
        merge: CommitSha,
        /// The branch's commit with exactly the same tree, if any.
        replacement: Option<CommitSha>,
    },
    /// An owner stopped trusting worker host `worker`, and this bug's standing rests on
    /// evidence it measured (a reproduction, a baseline, a fix candidate's suite): the round
    /// is undone (an approval of an unmerged head with it) and the bug starts over, so that
    /// everything is measured again by runners the desk still trusts. An open question to the
    /// reporter is withdrawn with it. A bug already merged keeps its state (people approved it and the release gate ran in the desk's own
    /// sandbox); its evidence shows the worker's mark.
    DistrustMeasurement {
        /// The distrusted worker.
        worker: String,
    },
    /// An owner rolled the live service back to an earlier recorded release that lacks this
    /// bug's merge (the desk checked): its fix is no longer live, so the bug goes back to
    /// `merged` with the owner's reason, and the question "does the fix work?" is withdrawn —
    /// no reporter is asked about a fix that is not live. The next release that contains the
    /// merge is recorded, and asked about, as any other.
    OwnerRollBack {
        /// The release now live again.
        commit: CommitSha,
        /// Why, in the owner's words.
        reason: String,
    },
    /// An owner vouches for a bug no reporter has confirmed yet: its crew work starts now
    /// (a start the stranger's budget put off is brought forward) and is paid for from the
    /// share of the budget kept for confirmed bugs.
    OwnerPromote,
    /// A reporter answers "does the live fix work for you?".
    AnswerFix {
        /// The question's id.
        request_id: String,
        /// Yes or no.
        works: bool,
        /// Required with a no (already through the airlock).
        reason: Option<String>,
    },
    /// Replace expired questions with fresh ones.
    ReaskExpired,
    /// The crew adds an advisory note (never a decision).
    AddNote {
        /// Evidence id of the note.
        note: String,
    },
    /// An owner sends the bug back to the start of the loop.
    OwnerReopen {
        /// Why.
        reason: String,
    },
    /// The crew cannot go on with the bug (reproducing or fixing) and hands it to a person.
    HandToHuman {
        /// Why (only [`NeedsHumanReason::crew_may_give`] reasons).
        reason: NeedsHumanReason,
    },
    /// An owner gives a bug that needs a person back to the crew, at the stage it reached:
    /// the fixer when a reporter confirmed its reproduction, the reproducer otherwise.
    OwnerRetry,
    /// An owner takes a bug away from the crew; it waits for a person until an owner gives it
    /// back ([`Command::OwnerRetry`]) or reopens it.
    OwnerTakeOver,
    /// An owner marks this bug a duplicate of `of` (whose reports it joins: the desk attaches
    /// them there first). Nothing more happens to this bug.
    MarkDuplicate {
        /// The bug that survives.
        of: String,
    },
    /// An owner merges bug `duplicate` into this one: its `reports` join here in one decision
    /// (a question open here is asked of their reporters too), recorded under the owner's
    /// name. The duplicate is closed next ([`Command::MarkDuplicate`]).
    AbsorbDuplicate {
        /// The bug merged in.
        duplicate: String,
        /// Its reports.
        reports: Vec<String>,
    },
}

impl Command {
    /// The command's name, as used in audit events and the transition table.
    pub fn name(&self) -> &'static str {
        match self {
            Command::AttachReport { .. } => "attach_report",
            Command::RecordTriage { .. } => "record_triage",
            Command::StartReproduction => "start_reproduction",
            Command::ReportRedBaseline { .. } => "report_red_baseline",
            Command::FailReproductionAttempt { .. } => "fail_reproduction_attempt",
            Command::ProposeReproduction { .. } => "propose_reproduction",
            Command::AnswerReproduction { .. } => "answer_reproduction",
            Command::StartFix => "start_fix",
            Command::FailFixAttempt { .. } => "fail_fix_attempt",
            Command::SubmitFix { .. } => "submit_fix",
            Command::NewHead { .. } => "new_head",
            Command::Approve { .. } => "approve",
            Command::Merge { .. } => "merge",
            Command::RecordDeployment { .. } => "record_deployment",
            Command::HoldRelease { .. } => "hold_release",
            Command::DistrustMeasurement { .. } => "distrust_measurement",
            Command::OwnerRollBack { .. } => "owner_roll_back",
            Command::ObserveRewrittenHistory { .. } => "observe_rewritten_history",
            Command::OwnerPromote => "owner_promote",
            Command::AnswerFix { .. } => "answer_fix",
            Command::ReaskExpired => "reask_expired",
            Command::AddNote { .. } => "add_note",
            Command::OwnerReopen { .. } => "owner_reopen",
            Command::HandToHuman { .. } => "hand_to_human",
            Command::OwnerRetry => "owner_retry",
            Command::OwnerTakeOver => "owner_take_over",
            Command::MarkDuplicate { .. } => "mark_duplicate",
            Command::AbsorbDuplicate { .. } => "absorb_duplicate",
        }
    }
}

/// How one commit relates to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ancestry {
    /// The candidate contains the base and more.
    Ahead,
    /// The same commit.
    Identical,
    /// The candidate is older than the base.
    Behind,
    /// Neither contains the other.
    Diverged,
    /// One of them is not known to the forge.
    Unknown,
}

impl Ancestry {
    /// Whether a deployment of the candidate contains the base: fails closed.
    pub fn contains_base(self) -> bool {
        matches!(self, Ancestry::Ahead | Ancestry::Identical)
    }
}

/// Answers "how does `candidate` relate to `base`?" (a forge compare or `git merge-base`).
pub trait AncestryOracle {
    /// The relation of `candidate` to `base`.
    fn relation(&self, base: &CommitSha, candidate: &CommitSha) -> Ancestry;
}

/// Facts established outside the engine, passed in with a command.
#[derive(Default)]
pub struct Evidence<'a> {
    /// The desk's own re-run of a proposed reproduction.
    pub rerun: Option<Rerun>,
    /// Commit ancestry; absent means unknown (fails closed).
    pub ancestry: Option<&'a dyn AncestryOracle>,
    /// CODEOWNERS read at the pull request's head.
    pub code_owners: Option<&'a CodeOwners>,
}

impl fmt::Debug for Evidence<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Evidence")
            .field("rerun", &self.rerun)
            .field("ancestry", &self.ancestry.is_some())
            .field("code_owners", &self.code_owners.is_some())
            .finish()
    }
}

/// The project's rules for the crew.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Components the crew may work on.
    pub allowed_components: Vec<String>,
    /// Path words that make a change sensitive (tier 2).
    pub sensitive_words: Vec<String>,
    /// Failed fix attempts before a person must step in.
    pub max_fix_attempts: u8,
    /// Proposed tests that did not reproduce before a person must step in (per round).
    #[serde(default = "default_reproduction_attempts")]
    pub max_reproduction_attempts: u8,
}

fn default_reproduction_attempts() -> u8 {
    3
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            allowed_components: vec!["shoplite".to_owned()],
            sensitive_words: crate::tier::DEFAULT_SENSITIVE_WORDS
                .iter()
                .map(|w| (*w).to_owned())
                .collect(),
            max_fix_attempts: 2,
            max_reproduction_attempts: default_reproduction_attempts(),
        }
    }
}

/// An audit event, before the ledger chains it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventDraft {
    /// What happened (`reproduction_proposed`, `approval_recorded`, …).
    pub kind: String,
    /// Actor kind.
    pub actor_kind: String,
    /// Actor id.
    pub actor_id: String,
    /// When.
    pub at: Millis,
    /// Evidence ids this event rests on.
    pub evidence: Vec<String>,
    /// Further facts, ordered for a canonical encoding.
    pub detail: BTreeMap<String, String>,
}

/// Who consumes an outbox job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Consumer {
    /// The notifier.
    Concierge,
    /// The crew manager.
    Manager,
    /// The forge worker (signed GitHub events waiting to be applied).
    Forge,
}

impl Consumer {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Consumer::Concierge => "concierge",
            Consumer::Manager => "manager",
            Consumer::Forge => "forge",
        }
    }
}

/// A job the decision causes, before the ledger stores it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobDraft {
    /// Enqueuing the same key twice is a no-op.
    pub idempotency_key: String,
    /// What to do (`ask_reproduction`, `ask_fix`, `reopen`, …).
    pub kind: String,
    /// Who does it.
    pub consumer: Consumer,
    /// Not before.
    pub available_at: Millis,
    /// Parameters.
    pub payload: BTreeMap<String, String>,
}

/// An accepted command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The bug after the command (version already advanced when `changed`).
    pub bug: Bug,
    /// Events to append.
    pub events: Vec<EventDraft>,
    /// Jobs to enqueue.
    pub jobs: Vec<JobDraft>,
    /// False when the command was acknowledged and dropped (a stale answer, a repeat).
    pub changed: bool,
}

/// The kind of a refusal (the server alone turns it into an answer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalKind {
    /// No valid credential.
    Unauthenticated,
    /// A valid credential without this power.
    Forbidden,
    /// Not possible in the current state.
    Conflict,
    /// The command itself is malformed or lacks evidence.
    Invalid,
}

/// A refused command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Refusal {
    /// Kind.
    pub kind: RefusalKind,
    /// Stable machine-readable code.
    pub code: String,
    /// Plain words.
    pub message: String,
}

#[cfg(test)]
mod question_kind_tests {
    use super::QuestionKind;

    /// The name a question's page and answer form carry is its name on the wire.
    #[test]
    fn a_question_kind_is_named_as_serde_names_it() {
        for kind in [QuestionKind::Reproduction, QuestionKind::Fix] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        assert_eq!(QuestionKind::Reproduction.as_str(), "reproduction");
    }
}
