//! The transition function. Read each arm as: who may, from which states, with what evidence,
//! and what it records.

use super::guard::*;
use super::outcome::*;
use super::types::*;
use crate::tier;
use crate::{BugState, Role};

/// Finds the open question `request_id` for this reporter; `Ok(None)` means the answer is
/// stale (the bug moved on) and is to be acknowledged and dropped.
fn open_question<'b>(
    bug: &'b Bug,
    report: &str,
    request_id: &str,
    kind: QuestionKind,
    now: Millis,
) -> Result<Option<&'b Question>, Refusal> {
    let Some(question) = bug
        .questions
        .iter()
        .find(|q| q.request_id == request_id && q.kind == kind)
    else {
        return Ok(None);
    };
    if question.report != report {
        return Err(refusal(
            RefusalKind::Forbidden,
            "not_addressed_to_you",
            "this question was asked of another reporter",
        ));
    }
    if now >= question.expires_at {
        return Err(refusal(
            RefusalKind::Conflict,
            "question_expired",
            "this question expired; a fresh one will be asked",
        ));
    }
    Ok(Some(question))
}

/// Whether the current head has the approvals its tier requires.
fn approvals_suffice(bug: &Bug) -> bool {
    bug.pull_request.is_some() && bug.missing_approvals().is_empty()
}

/// Checks deployments that arrived before the merge; the first that contains it counts.
fn reconcile_deployments(out: &mut Outcome<'_>, evidence: &Evidence<'_>) {
    let Some(merge) = out.bug.merge.clone() else {
        return;
    };
    let mut counted = None;
    for deployment in out.bug.deployments.iter_mut() {
        if deployment.status != DeploymentStatus::Pending {
            continue;
        }
        let relation = evidence.ancestry.map_or(Ancestry::Unknown, |oracle| {
            oracle.relation(&merge.merge_commit, &deployment.commit)
        });
        deployment.status = if relation.contains_base() {
            DeploymentStatus::ContainsFix
        } else {
            DeploymentStatus::DoesNotContainFix
        };
        if relation.contains_base() && counted.is_none() {
            counted = Some(deployment.id.clone());
        }
    }
    if let Some(id) = counted {
        out.bug.state = BugState::Deployed;
        out.event("deployment_reconciled", &[&id], &[]);
        let reports = out.bug.reports.clone();
        out.ask(QuestionKind::Fix, &reports);
    }
}

/// Asks reports that just joined `bug` the question open to its reporters, if any: their
/// report is the same bug, so their answer counts the same.
fn ask_newcomers(out: &mut Outcome<'_>, bug: &Bug, reports: &[String], now: Millis) {
    let open = match bug.state {
        BugState::AwaitingReporter => Some(QuestionKind::Reproduction),
        BugState::Deployed => Some(QuestionKind::Fix),
        _ => None,
    };
    if let Some(kind) = open {
        let asked = bug
            .questions
            .iter()
            .any(|q| q.kind == kind && q.expires_at > now);
        if asked && !reports.is_empty() {
            out.ask(kind, reports);
        }
    }
}

/// Applies `command` by `actor` to `bug` at `now`.
///
/// Returns the new bug with the events and jobs to record, or why not. The caller stores a
/// decision only when `changed` is true, in one transaction, guarded by the bug's version.
pub fn decide(
    bug: &Bug,
    command: &Command,
    actor: &Actor,
    evidence: &Evidence<'_>,
    policy: &Policy,
    now: Millis,
) -> Result<Decision, Refusal> {
    use BugState as S;
    let mut out = Outcome::new(bug, actor, now);
    let crew_in_scope = policy.allowed_components.contains(&bug.component);
    // A duplicate is closed: whatever happens next happens on the bug it joined.
    if bug.state == S::Duplicate {
        if *actor == Actor::Anonymous {
            return Err(unauthenticated());
        }
        return Err(refusal(
            RefusalKind::Conflict,
            "duplicate",
            format!(
                "this bug was merged into {}; act on that bug",
                bug.duplicate_of.as_deref().unwrap_or("another bug")
            ),
        ));
    }
    match command {
        Command::AttachReport { report } => {
            require_actor(actor, &Actor::Desk, "the desk")?;
            if bug.state == S::Verified {
                return Err(conflict(bug, command));
            }
            if bug.reports.contains(report) {
                return Ok(dropped(bug));
            }
            out.bug.reports.push(report.clone());
            out.event("report_attached", &[report], &[]);
            ask_newcomers(&mut out, bug, std::slice::from_ref(report), now);
        }
        Command::RecordTriage { note } => {
            require_role(actor, &[Role::Manager])?;
            if bug.state != S::New {
                return Err(conflict(bug, command));
            }
            out.bug.state = S::Triaged;
            out.event("triaged", &[note], &[]);
        }
        Command::StartReproduction => {
            require_role(actor, &[Role::Manager, Role::Reproducer])?;
            if !matches!(bug.state, S::New | S::Triaged | S::Reopened) {
                return Err(conflict(bug, command));
            }
            if crew_in_scope {
                out.bug.state = S::Reproducing;
                out.bug.reproduction_attempts = 0;
                out.event("reproduction_started", &[], &[]);
            } else {
                out.escalate_to_human(NeedsHumanReason::OutOfScope, &[]);
            }
        }
        Command::ReportRedBaseline { run } => {
            require_role(actor, &[Role::Reproducer])?;
            if bug.state != S::Reproducing {
                return Err(conflict(bug, command));
            }
            out.escalate_to_human(NeedsHumanReason::RedBaseline, &[run]);
        }
        Command::FailReproductionAttempt { run } => {
            require_role(actor, &[Role::Reproducer])?;
            if bug.state != S::Reproducing {
                return Err(conflict(bug, command));
            }
            out.bug.reproduction_attempts = bug.reproduction_attempts.saturating_add(1);
            out.event(
                "reproduction_attempt_failed",
                &[run],
                &[("attempt", out.bug.reproduction_attempts.to_string())],
            );
            if out.bug.reproduction_attempts >= policy.max_reproduction_attempts {
                out.escalate_to_human(NeedsHumanReason::NotReproduced, &[run]);
            }
        }
        Command::ProposeReproduction { reproduction } => {
            require_role(actor, &[Role::Reproducer])?;
            if bug.state != S::Reproducing {
                return Err(conflict(bug, command));
            }
            if bug.rejected_tests.contains(&reproduction.test_sha256) {
                return Err(refusal(
                    RefusalKind::Invalid,
                    "rejected_reproduction_replayed",
                    "a reporter already said this test is not their bug",
                ));
            }
            if evidence.rerun != Some(Rerun::Reproduced) {
                return Err(refusal(
                    RefusalKind::Invalid,
                    "not_measured",
                    "the desk's own re-run did not reproduce the failure",
                ));
            }
            out.bug.reproduction = Some(reproduction.clone());
            out.bug.state = S::AwaitingReporter;
            out.event(
                "reproduction_proposed",
                &[&reproduction.id],
                &[("test_sha256", reproduction.test_sha256.clone())],
            );
            let reports = out.bug.reports.clone();
            out.ask(QuestionKind::Reproduction, &reports);
        }
        Command::AnswerReproduction {
            request_id,
            confirmed,
            reason,
        } => {
            let report = require_reporter(bug, actor)?;
            if bug.state != S::AwaitingReporter {
                return Ok(dropped(bug));
            }
            if open_question(bug, report, request_id, QuestionKind::Reproduction, now)?.is_none() {
                return Ok(dropped(bug));
            }
            let test = bug
                .reproduction
                .as_ref()
                .map(|r| r.id.clone())
                .unwrap_or_default();
            out.bug
                .questions
                .retain(|q| q.kind != QuestionKind::Reproduction);
            if *confirmed {
                out.bug.confirmations.push(Confirmation {
                    report: report.to_owned(),
                    kind: QuestionKind::Reproduction,
                    at: now,
                });
                out.bug.state = S::Confirmed;
                out.event("reproduction_confirmed", &[&test, request_id], &[]);
                let key = format!("fix:{}:v{}", bug.id, out.next_version());
                out.job(key, "start_fix", Consumer::Manager, &[]);
            } else {
                let reason = required_reason(reason)?;
                if let Some(rejected) = out.bug.reproduction.take() {
                    out.bug.rejected_tests.push(rejected.test_sha256);
                }
                out.bug.state = S::Reproducing;
                // The reporter's "no" is new information: a new round of attempts.
                out.bug.reproduction_attempts = 0;
                out.event(
                    "reproduction_rejected",
                    &[&test, request_id],
                    &[("reason", reason.clone())],
                );
                let key = format!("reproduce:{}:v{}", bug.id, out.next_version());
                out.job(
                    key,
                    "reproduce_again",
                    Consumer::Manager,
                    &[("reason", reason)],
                );
            }
        }
        Command::StartFix => {
            require_role(actor, &[Role::Manager, Role::Fixer])?;
            if bug.state != S::Confirmed {
                return Err(conflict(bug, command));
            }
            let confirmed = bug.reproduction.is_some()
                && bug.confirmations.iter().any(|c| {
                    c.kind == QuestionKind::Reproduction && bug.reports.contains(&c.report)
                });
            if !confirmed {
                return Err(refusal(
                    RefusalKind::Conflict,
                    "reproduction_not_confirmed",
                    "a reporter must confirm the measured reproduction first",
                ));
            }
            if crew_in_scope {
                out.bug.state = S::Fixing;
                out.event("fix_started", &[], &[]);
            } else {
                out.escalate_to_human(NeedsHumanReason::OutOfScope, &[]);
            }
        }
        Command::FailFixAttempt { run } => {
            require_role(actor, &[Role::Fixer])?;
            if bug.state != S::Fixing {
                return Err(conflict(bug, command));
            }
            out.bug.fix_attempts = bug.fix_attempts.saturating_add(1);
            out.event(
                "fix_attempt_failed",
                &[run],
                &[("attempt", out.bug.fix_attempts.to_string())],
            );
            if out.bug.fix_attempts >= policy.max_fix_attempts {
                out.escalate_to_human(NeedsHumanReason::FixAttemptsExhausted, &[run]);
            }
        }
        Command::SubmitFix {
            number,
            head,
            changed_paths,
        } => {
            require_role(actor, &[Role::Fixer])?;
            if bug.state != S::Fixing {
                return Err(conflict(bug, command));
            }
            if changed_paths.is_empty() {
                return Err(refusal(
                    RefusalKind::Invalid,
                    "empty_change",
                    "a fix changes at least one path",
                ));
            }
            let (tier, tier_reasons) = tier::classify(changed_paths, &policy.sensitive_words);
            out.bug.pull_request = Some(PullRequest {
                number: *number,
                head: head.clone(),
                changed_paths: changed_paths.clone(),
                tier,
                tier_reasons,
            });
            out.bug.approvals.clear();
            out.bug.state = S::InReview;
            out.event(
                "fix_submitted",
                &[head.as_str()],
                &[
                    ("pull_request", number.to_string()),
                    ("tier", tier.number().to_string()),
                ],
            );
        }
        Command::NewHead { head } => {
            require_actor(actor, &Actor::Forge, "a verified forge event")?;
            if !matches!(bug.state, S::InReview | S::Approved) {
                return Err(conflict(bug, command));
            }
            let Some(pr) = out.bug.pull_request.as_mut() else {
                return Err(conflict(bug, command));
            };
            if &pr.head == head {
                return Ok(dropped(bug));
            }
            let previous = std::mem::replace(&mut pr.head, head.clone());
            let cleared = out.bug.approvals.len();
            out.bug.approvals.clear();
            out.bug.state = S::InReview;
            out.event(
                "head_changed",
                &[head.as_str()],
                &[
                    ("previous", previous.to_string()),
                    ("approvals_cleared", cleared.to_string()),
                ],
            );
        }
        Command::Approve { head } => {
            let human = require_human(actor)?;
            if !matches!(bug.state, S::InReview | S::Approved) {
                return Err(conflict(bug, command));
            }
            let Some(pr) = &bug.pull_request else {
                return Err(conflict(bug, command));
            };
            if &pr.head != head {
                return Err(refusal(
                    RefusalKind::Conflict,
                    "stale_head",
                    format!(
                        "the pull request's head is now {}; review that commit",
                        pr.head
                    ),
                ));
            }
            if bug
                .approvals
                .iter()
                .any(|a| a.approver == human && &a.head == head)
            {
                return Ok(dropped(bug));
            }
            let code_owner = evidence
                .code_owners
                .is_some_and(|owners| owners.owns_change(&human.id, &pr.changed_paths));
            out.bug.approvals.push(Approval {
                approver: human,
                head: head.clone(),
                code_owner,
                at: now,
            });
            if approvals_suffice(&out.bug) {
                out.bug.state = S::Approved;
            }
            out.event(
                "approval_recorded",
                &[head.as_str()],
                &[("code_owner", code_owner.to_string())],
            );
        }
        Command::Merge { head, merge_commit } => {
            let merger = require_human(actor)?;
            if bug.state != S::Approved {
                return Err(conflict(bug, command));
            }
            let Some(pr) = &bug.pull_request else {
                return Err(conflict(bug, command));
            };
            if &pr.head != head {
                return Err(refusal(
                    RefusalKind::Conflict,
                    "merged_head_not_approved",
                    format!(
                        "the merged head {head} is not the approved head {}",
                        pr.head
                    ),
                ));
            }
            if !approvals_suffice(bug) {
                return Err(refusal(
                    RefusalKind::Conflict,
                    "approvals_missing",
                    bug.missing_approvals().join("; "),
                ));
            }
            out.bug.merge = Some(MergeRecord {
                head: head.clone(),
                merge_commit: merge_commit.clone(),
                merger,
                at: now,
            });
            out.bug.state = S::Merged;
            out.event("merged", &[head.as_str(), merge_commit.as_str()], &[]);
            reconcile_deployments(&mut out, evidence);
        }
        Command::RecordDeployment { deployment, commit } => {
            require_role(actor, &[Role::Recorder])?;
            if bug.deployments.iter().any(|d| &d.id == deployment) {
                return Ok(dropped(bug));
            }
            let status = match &bug.merge {
                None => DeploymentStatus::Pending,
                Some(merge) => {
                    let relation = evidence.ancestry.map_or(Ancestry::Unknown, |o| {
                        o.relation(&merge.merge_commit, commit)
                    });
                    if relation.contains_base() {
                        DeploymentStatus::ContainsFix
                    } else {
                        DeploymentStatus::DoesNotContainFix
                    }
                }
            };
            out.bug.deployments.push(DeploymentRecord {
                id: deployment.clone(),
                commit: commit.clone(),
                status,
                at: now,
            });
            let kind = match status {
                DeploymentStatus::Pending => "deployment_kept_before_merge",
                DeploymentStatus::ContainsFix => "deployment_contains_fix",
                DeploymentStatus::DoesNotContainFix => "deployment_without_fix",
            };
            if status == DeploymentStatus::ContainsFix && bug.state == S::Merged {
                out.bug.state = S::Deployed;
                out.event(kind, &[deployment, commit.as_str()], &[]);
                let reports = out.bug.reports.clone();
                out.ask(QuestionKind::Fix, &reports);
            } else {
                out.event(kind, &[deployment, commit.as_str()], &[]);
            }
        }
        Command::HoldRelease { commit, reason } => {
            require_actor(actor, &Actor::Desk, "the desk")?;
            if bug.state != S::Merged {
                return Err(conflict(bug, command));
            }
            let reason: String = reason.trim().chars().take(2_000).collect();
            if reason.is_empty() {
                return Err(refusal(
                    RefusalKind::Invalid,
                    "reason_required",
                    "a held release needs its reason",
                ));
            }
            out.event("release_held", &[commit.as_str()], &[("reason", reason)]);
        }
        Command::OwnerRollBack { commit, reason } => {
            require_owner(actor, "roll a release back")?;
            if !matches!(bug.state, S::Deployed | S::Verified) {
                return Err(conflict(bug, command));
            }
            let reason: String = reason.trim().chars().take(2_000).collect();
            if reason.is_empty() {
                return Err(refusal(
                    RefusalKind::Invalid,
                    "reason_required",
                    "a rollback needs a reason",
                ));
            }
            let from = bug.state.as_str().to_owned();
            out.bug.state = S::Merged;
            out.bug.questions.retain(|q| q.kind != QuestionKind::Fix);
            out.event(
                "rolled_back",
                &[commit.as_str()],
                &[("reason", reason), ("from", from)],
            );
        }
        Command::OwnerPromote => {
            require_owner(actor, "promote a bug")?;
            if bug.promoted {
                return Ok(dropped(bug));
            }
            if !bug.confirmations.is_empty() {
                return Err(refusal(
                    RefusalKind::Conflict,
                    "already_confirmed",
                    "a reporter confirmed this bug already: its crew work is paid for from the \
                     confirmed bugs' share",
                ));
            }
            if !bug.promotable() {
                return Err(conflict(bug, command));
            }
            out.bug.promoted = true;
            out.event("promoted", &[], &[("state", bug.state.as_str().to_owned())]);
        }
        Command::DistrustMeasurement { worker } => {
            require_actor(actor, &Actor::Desk, "the desk")?;
            let worker: String = worker.trim().chars().take(40).collect();
            if worker.is_empty() {
                return Err(refusal(
                    RefusalKind::Invalid,
                    "worker_required",
                    "a distrusted measurement names its worker",
                ));
            }
            match bug.state {
                S::Reproducing
                | S::AwaitingReporter
                | S::Confirmed
                | S::Fixing
                | S::InReview
                | S::Approved
                | S::NeedsHuman => {}
                // Nothing measured is in force yet, or people approved the merge already.
                _ => return Ok(dropped(bug)),
            }
            let from = bug.state.as_str().to_owned();
            out.reset_round();
            out.bug.state = S::Reopened;
            let reason = format!(
                "measured by worker {worker}, whom an owner no longer trusts: measured again"
            );
            out.event(
                "measurement_distrusted",
                &[],
                &[("worker", worker), ("from", from)],
            );
            let key = format!("reopen:{}:v{}", bug.id, out.next_version());
            out.job(key, "reopen", Consumer::Manager, &[("reason", reason)]);
        }
        Command::ObserveRewrittenHistory { merge, replacement } => {
            require_actor(actor, &Actor::Desk, "the desk")?;
            if bug.state != S::Merged {
                return Err(conflict(bug, command));
            }
            let Some(recorded) = out.bug.merge.as_mut() else {
                return Err(conflict(bug, command));
            };
            if &recorded.merge_commit != merge {
                // Already re-bound, or about another merge: nothing to do.
                return Ok(dropped(bug));
            }
            match replacement {
                Some(new) => {
                    recorded.merge_commit = new.clone();
                    out.event(
                        "history_rewritten",
                        &[merge.as_str(), new.as_str()],
                        &[("same_tree", "yes".to_owned())],
                    );
                }
                None => {
                    out.event(
                        "history_rewritten",
                        &[merge.as_str()],
                        &[("same_tree", "no".to_owned())],
                    );
                    out.escalate_to_human(NeedsHumanReason::HistoryRewritten, &[merge.as_str()]);
                }
            }
        }
        Command::AnswerFix {
            request_id,
            works,
            reason,
        } => {
            let report = require_reporter(bug, actor)?;
            if !matches!(bug.state, S::Deployed | S::Verified) {
                return Ok(dropped(bug));
            }
            if open_question(bug, report, request_id, QuestionKind::Fix, now)?.is_none() {
                return Ok(dropped(bug));
            }
            if *works {
                out.bug.questions.retain(|q| q.request_id != *request_id);
                out.bug.confirmations.push(Confirmation {
                    report: report.to_owned(),
                    kind: QuestionKind::Fix,
                    at: now,
                });
                out.bug.state = S::Verified;
                out.event("fix_confirmed", &[request_id], &[]);
            } else {
                let reason = required_reason(reason)?;
                out.reset_round();
                out.bug.state = S::Reopened;
                out.event(
                    "reopened_by_reporter",
                    &[request_id],
                    &[("reason", reason.clone())],
                );
                let key = format!("reopen:{}:v{}", bug.id, out.next_version());
                out.job(key, "reopen", Consumer::Manager, &[("reason", reason)]);
            }
        }
        Command::ReaskExpired => {
            require_actor(actor, &Actor::Desk, "the desk")?;
            let expired: Vec<Question> = bug
                .questions
                .iter()
                .filter(|q| now >= q.expires_at)
                .cloned()
                .collect();
            if expired.is_empty() {
                return Ok(dropped(bug));
            }
            out.bug.questions.retain(|q| now < q.expires_at);
            for kind in [QuestionKind::Reproduction, QuestionKind::Fix] {
                let reports: Vec<String> = expired
                    .iter()
                    .filter(|q| q.kind == kind)
                    .map(|q| q.report.clone())
                    .collect();
                if !reports.is_empty() {
                    out.ask(kind, &reports);
                }
            }
            out.event(
                "questions_reasked",
                &[],
                &[("count", expired.len().to_string())],
            );
        }
        Command::AddNote { note } => {
            require_role(
                actor,
                &[Role::Manager, Role::Reproducer, Role::Fixer, Role::Reviewer],
            )?;
            out.event("advisory_note", &[note], &[]);
        }
        Command::OwnerReopen { reason } => {
            require_owner(actor, "reopen a bug")?;
            if matches!(bug.state, S::New | S::Reopened) {
                return Err(conflict(bug, command));
            }
            if reason.trim().is_empty() {
                return Err(refusal(
                    RefusalKind::Invalid,
                    "reason_required",
                    "a reopen needs a reason",
                ));
            }
            out.reset_round();
            out.bug.state = S::Reopened;
            out.event(
                "reopened_by_owner",
                &[],
                &[("reason", reason.trim().to_owned())],
            );
            let key = format!("reopen:{}:v{}", bug.id, out.next_version());
            out.job(
                key,
                "reopen",
                Consumer::Manager,
                &[("reason", reason.trim().to_owned())],
            );
        }
        Command::HandToHuman { reason } => {
            let role = require_role(actor, &[Role::Manager, Role::Reproducer, Role::Fixer])?;
            if !reason.crew_may_give() {
                return Err(refusal(
                    RefusalKind::Invalid,
                    "not_a_crew_reason",
                    format!("the crew cannot hand a bug over for {}", reason.as_str()),
                ));
            }
            let stage_fits = match bug.state {
                S::Reproducing => role != Role::Fixer,
                S::Fixing => role != Role::Reproducer && *reason != NeedsHumanReason::NotReproduced,
                // Before a worker started the step, only the manager gives up on it.
                S::New | S::Triaged | S::Reopened | S::Confirmed => {
                    role == Role::Manager && *reason == NeedsHumanReason::CrewStepFailed
                }
                _ => false,
            };
            if !stage_fits {
                return Err(conflict(bug, command));
            }
            out.escalate_to_human(*reason, &[]);
        }
        Command::OwnerRetry => {
            require_owner(actor, "give a bug back to the crew")?;
            if bug.state != S::NeedsHuman {
                return Err(conflict(bug, command));
            }
            let confirmed = bug.reproduction.is_some()
                && bug
                    .confirmations
                    .iter()
                    .any(|c| c.kind == QuestionKind::Reproduction);
            let from = bug.needs_human.map(serde_plain).unwrap_or_default();
            out.bug.needs_human = None;
            out.bug.pull_request = None;
            out.bug.approvals.clear();
            out.bug.fix_attempts = 0;
            out.bug.reproduction_attempts = 0;
            if confirmed {
                out.bug.state = S::Confirmed;
                out.event(
                    "retried_by_owner",
                    &[],
                    &[("from", from), ("stage", "fix".into())],
                );
                let key = format!("fix:{}:v{}", bug.id, out.next_version());
                out.job(key, "start_fix", Consumer::Manager, &[]);
            } else {
                out.bug.reproduction = None;
                out.bug.state = S::Triaged;
                out.event(
                    "retried_by_owner",
                    &[],
                    &[("from", from), ("stage", "reproduction".into())],
                );
                let key = format!("reproduce:{}:v{}", bug.id, out.next_version());
                out.job(key, "reproduce_again", Consumer::Manager, &[]);
            }
        }
        Command::OwnerTakeOver => {
            require_owner(actor, "take a bug over")?;
            if !bug.crew_holds() {
                return Err(conflict(bug, command));
            }
            let from = bug.state.as_str().to_owned();
            out.bug.state = S::NeedsHuman;
            out.bug.needs_human = Some(NeedsHumanReason::TakenOver);
            out.event("taken_over", &[], &[("from", from)]);
        }
        Command::AbsorbDuplicate { duplicate, reports } => {
            require_owner(actor, "merge a duplicate into a bug")?;
            if bug.state == S::Verified {
                return Err(conflict(bug, command));
            }
            if duplicate.trim().is_empty() || *duplicate == bug.id {
                return Err(refusal(
                    RefusalKind::Invalid,
                    "invalid_duplicate",
                    "a bug can only absorb another bug",
                ));
            }
            let mut joining: Vec<String> = Vec::new();
            for report in reports {
                if !bug.reports.contains(report) && !joining.contains(report) {
                    joining.push(report.clone());
                }
            }
            out.bug.reports.extend(joining.iter().cloned());
            let mut evidence: Vec<&str> = vec![duplicate.as_str()];
            evidence.extend(joining.iter().map(String::as_str));
            out.event(
                "duplicate_merged",
                &evidence,
                &[("reports", joining.len().to_string())],
            );
            ask_newcomers(&mut out, bug, &joining, now);
        }
        Command::MarkDuplicate { of } => {
            require_owner(actor, "mark a bug as a duplicate")?;
            if bug.state == S::Verified {
                return Err(conflict(bug, command));
            }
            if of.trim().is_empty() || *of == bug.id {
                return Err(refusal(
                    RefusalKind::Invalid,
                    "invalid_duplicate",
                    "a bug can only be a duplicate of another bug",
                ));
            }
            let from = bug.state.as_str().to_owned();
            out.bug.state = S::Duplicate;
            out.bug.duplicate_of = Some(of.clone());
            out.bug.needs_human = None;
            out.bug.questions.clear();
            out.event("marked_duplicate", &[of.as_str()], &[("from", from)]);
        }
    }
    Ok(out.finish())
}

/// The decision that opens a bug around its first report: taken by the desk when a report
/// joins no open bug. The manager is asked to triage it.
pub fn open_bug(id: &str, component: &str, first_report: &str, now: Millis) -> Decision {
    open_bug_at(id, component, first_report, now, now)
}

/// [`open_bug`], with the crew's triage put off until `crew_at` when it is later than `now`:
/// the stranger's budget of the address that filed the report is used up for this hour. The
/// bug is opened and kept at once either way; the ledger says when its crew work starts.
pub fn open_bug_at(
    id: &str,
    component: &str,
    first_report: &str,
    now: Millis,
    crew_at: Millis,
) -> Decision {
    const DESK: &Actor = &Actor::Desk;
    let bug = Bug::open(id, component, first_report);
    let mut out = Outcome::new(&bug, DESK, now);
    let mut detail = vec![("component", component.to_owned())];
    if crew_at > now {
        detail.push(("crew_budget_until", crew_at.to_string()));
    }
    out.event("bug_opened", &[first_report], &detail);
    out.job(
        format!("triage:{id}"),
        "triage",
        Consumer::Manager,
        &[("report", first_report.to_owned())],
    );
    if let Some(triage) = out.jobs.last_mut() {
        triage.available_at = crew_at.max(now);
    }
    out.finish()
}
