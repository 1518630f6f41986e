//! Guards of the workflow engine, part one: the loop, reporters' answers, proof before fixing
//! and hand-offs to people.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use domain::workflow::*;
use domain::{BugState, Role};
use support::*;

fn kind(result: Result<Decision, Refusal>) -> RefusalKind {
    result.expect_err("the command must be refused").kind
}

// ── the happy path ──────────────────────────────────────────────────────────────────────────

#[test]
fn a_bug_travels_the_whole_loop_with_the_right_evidence() {
    let mut d = Driver::new();
    d.walk_to_deployed();
    let request = d.question(QuestionKind::Fix, "report-a");
    d.ok(
        &reporter("report-a"),
        Command::AnswerFix {
            request_id: request,
            works: true,
            reason: None,
        },
    );
    assert_eq!(d.bug.state, BugState::Verified);
    let kinds: Vec<&str> = d.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "triaged",
            "reproduction_started",
            "reproduction_proposed",
            "reproduction_confirmed",
            "fix_started",
            "fix_submitted",
            "approval_recorded",
            "merged",
            "deployment_contains_fix",
            "fix_confirmed"
        ]
    );
    let job_kinds: Vec<&str> = d.jobs.iter().map(|j| j.kind.as_str()).collect();
    assert_eq!(job_kinds, ["ask_reproduction", "start_fix", "ask_fix"]);
    assert_eq!(d.bug.version, 10);
}

// ── reporters answer only for their own bug ─────────────────────────────────────────────────

#[test]
fn only_a_reporter_of_this_bug_can_answer_is_this_your_bug() {
    let mut d = Driver::new();
    d.walk_to_awaiting_reporter();
    let request = d.question(QuestionKind::Reproduction, "report-a");
    let answer = |request_id: &str| Command::AnswerReproduction {
        request_id: request_id.to_owned(),
        confirmed: true,
        reason: None,
    };
    assert_eq!(
        kind(d.try_(&reporter("report-elsewhere"), answer(&request))),
        RefusalKind::Forbidden
    );
    assert_eq!(
        kind(d.try_(&role(Role::Reproducer), answer(&request))),
        RefusalKind::Forbidden
    );
    assert_eq!(
        kind(d.try_(&owner("ana@desk.test"), answer(&request))),
        RefusalKind::Forbidden
    );
    assert_eq!(
        kind(d.try_(&Actor::Anonymous, answer(&request))),
        RefusalKind::Unauthenticated
    );
    assert_eq!(d.bug.state, BugState::AwaitingReporter);
    d.ok(&reporter("report-a"), answer(&request));
    assert_eq!(d.bug.state, BugState::Confirmed);
}

#[test]
fn a_question_addressed_to_one_reporter_cannot_be_answered_by_another() {
    let mut d = Driver::new();
    d.ok(
        &Actor::Desk,
        Command::AttachReport {
            report: "report-b".into(),
        },
    );
    d.walk_to_awaiting_reporter();
    let for_a = d.question(QuestionKind::Reproduction, "report-a");
    let refused = d.try_(
        &reporter("report-b"),
        Command::AnswerReproduction {
            request_id: for_a,
            confirmed: true,
            reason: None,
        },
    );
    assert_eq!(kind(refused), RefusalKind::Forbidden);
    let for_b = d.question(QuestionKind::Reproduction, "report-b");
    d.ok(
        &reporter("report-b"),
        Command::AnswerReproduction {
            request_id: for_b,
            confirmed: true,
            reason: None,
        },
    );
    assert_eq!(d.bug.state, BugState::Confirmed);
}

#[test]
fn questions_expire_after_23_hours_and_are_asked_afresh_with_new_ids() {
    let mut d = Driver::new();
    d.walk_to_awaiting_reporter();
    let old = d.question(QuestionKind::Reproduction, "report-a");
    d.now += QUESTION_TTL_MS;
    let late = d.try_(
        &reporter("report-a"),
        Command::AnswerReproduction {
            request_id: old.clone(),
            confirmed: true,
            reason: None,
        },
    );
    assert_eq!(late.unwrap_err().code, "question_expired");
    d.ok(&Actor::Desk, Command::ReaskExpired);
    let fresh = d.question(QuestionKind::Reproduction, "report-a");
    assert_ne!(fresh, old);
    assert_eq!(
        d.jobs
            .iter()
            .filter(|j| j.kind == "ask_reproduction")
            .count(),
        2
    );
    // Nothing else expired: a second sweep records nothing.
    assert!(!d.ok(&Actor::Desk, Command::ReaskExpired).changed);
    d.ok(
        &reporter("report-a"),
        Command::AnswerReproduction {
            request_id: fresh,
            confirmed: true,
            reason: None,
        },
    );
    assert_eq!(d.bug.state, BugState::Confirmed);
}

#[test]
fn a_question_id_is_the_uuid_v5_of_the_job_that_asked_it() {
    let mut d = Driver::new();
    d.walk_to_awaiting_reporter();
    let job = d
        .jobs
        .iter()
        .find(|j| j.kind == "ask_reproduction")
        .unwrap();
    let request = d.question(QuestionKind::Reproduction, "report-a");
    assert_eq!(job.payload["request_id"], request);
    assert_eq!(
        domain::workflow::question_request_id(&job.idempotency_key),
        request
    );
    let parsed: Vec<&str> = request.split('-').collect();
    assert_eq!(
        parsed[2].chars().next(),
        Some('5'),
        "uuid version 5: {request}"
    );
}

#[test]
fn a_stale_answer_for_a_bug_that_moved_on_is_acknowledged_and_dropped() {
    let mut d = Driver::new();
    d.ok(
        &Actor::Desk,
        Command::AttachReport {
            report: "report-b".into(),
        },
    );
    d.walk_to_awaiting_reporter();
    let for_b = d.question(QuestionKind::Reproduction, "report-b");
    let for_a = d.question(QuestionKind::Reproduction, "report-a");
    d.ok(
        &reporter("report-a"),
        Command::AnswerReproduction {
            request_id: for_a,
            confirmed: true,
            reason: None,
        },
    );
    let version = d.bug.version;
    let late = d.ok(
        &reporter("report-b"),
        Command::AnswerReproduction {
            request_id: for_b,
            confirmed: false,
            reason: Some("no".into()),
        },
    );
    assert!(!late.changed);
    assert_eq!(d.bug.version, version);
    assert_eq!(d.bug.state, BugState::Confirmed);
}

// ── proof before fixing ─────────────────────────────────────────────────────────────────────

#[test]
fn a_reproduction_counts_only_when_the_desk_re_ran_it() {
    let mut d = Driver::new();
    d.ok(&role(Role::Reproducer), Command::StartReproduction);
    for rerun in [None, Some(Rerun::NotReproduced)] {
        let refused = d.try_with(
            &role(Role::Reproducer),
            Command::ProposeReproduction {
                reproduction: reproduction(1),
            },
            &Evidence {
                rerun,
                ..Evidence::default()
            },
        );
        assert_eq!(refused.unwrap_err().code, "not_measured");
    }
    assert_eq!(d.bug.state, BugState::Reproducing);
}

#[test]
fn a_fix_cannot_start_before_a_reporter_confirmed() {
    let mut d = Driver::new();
    d.walk_to_awaiting_reporter();
    assert_eq!(
        kind(d.try_(&role(Role::Fixer), Command::StartFix)),
        RefusalKind::Conflict
    );
}

#[test]
fn a_rejected_reproduction_is_never_replayed() {
    let mut d = Driver::new();
    d.walk_to_awaiting_reporter();
    let request = d.question(QuestionKind::Reproduction, "report-a");
    let no_reason = d.try_(
        &reporter("report-a"),
        Command::AnswerReproduction {
            request_id: request.clone(),
            confirmed: false,
            reason: Some("  ".into()),
        },
    );
    assert_eq!(no_reason.unwrap_err().code, "reason_required");
    d.ok(
        &reporter("report-a"),
        Command::AnswerReproduction {
            request_id: request,
            confirmed: false,
            reason: Some("my cart had two items".into()),
        },
    );
    assert_eq!(d.bug.state, BugState::Reproducing);
    assert!(d.jobs.iter().any(|j| j.kind == "reproduce_again"));
    let rerun = Evidence {
        rerun: Some(Rerun::Reproduced),
        ..Evidence::default()
    };
    let replay = d.try_with(
        &role(Role::Reproducer),
        Command::ProposeReproduction {
            reproduction: reproduction(1),
        },
        &rerun,
    );
    assert_eq!(replay.unwrap_err().code, "rejected_reproduction_replayed");
    d.ok_with(
        &role(Role::Reproducer),
        Command::ProposeReproduction {
            reproduction: reproduction(2),
        },
        &rerun,
    );
    assert_eq!(d.bug.state, BugState::AwaitingReporter);
}

// ── needs_human ─────────────────────────────────────────────────────────────────────────────

#[test]
fn a_red_baseline_needs_a_human() {
    let mut d = Driver::new();
    d.ok(&role(Role::Reproducer), Command::StartReproduction);
    d.ok(
        &role(Role::Reproducer),
        Command::ReportRedBaseline {
            run: "run-1".into(),
        },
    );
    assert_eq!(d.bug.state, BugState::NeedsHuman);
    assert_eq!(d.bug.needs_human, Some(NeedsHumanReason::RedBaseline));
    assert!(d.jobs.iter().any(|j| j.kind == "notify_owners"));
}

#[test]
fn three_tests_that_did_not_reproduce_need_a_human_and_a_reporters_no_starts_a_new_round() {
    let mut d = Driver::new();
    d.ok(&role(Role::Reproducer), Command::StartReproduction);
    let fail = |run: &str| Command::FailReproductionAttempt { run: run.into() };
    // Only the reproducer spends the crew's attempts, and only while reproducing.
    for actor in [
        role(Role::Fixer),
        role(Role::Manager),
        owner("ana@desk.test"),
    ] {
        assert_eq!(kind(d.try_(&actor, fail("r-0"))), RefusalKind::Forbidden);
    }
    d.ok(&role(Role::Reproducer), fail("r-1"));
    d.ok(&role(Role::Reproducer), fail("r-2"));
    assert_eq!(d.bug.state, BugState::Reproducing);
    assert_eq!(d.bug.reproduction_attempts, 2);
    d.ok(&role(Role::Reproducer), fail("r-3"));
    assert_eq!(d.bug.state, BugState::NeedsHuman);
    assert_eq!(d.bug.needs_human, Some(NeedsHumanReason::NotReproduced));
    let last = d.events.last().unwrap();
    assert_eq!(last.kind, "needs_human");
    assert!(d
        .events
        .iter()
        .any(|e| e.kind == "reproduction_attempt_failed" && e.evidence == ["r-3"]));
    assert!(d.jobs.iter().any(|j| j.kind == "notify_owners"));
    // Spent: no fourth attempt, and no proposal.
    assert_eq!(
        kind(d.try_(&role(Role::Reproducer), fail("r-4"))),
        RefusalKind::Conflict
    );
    // An owner gives it back: a new round with all its attempts.
    d.ok(&owner("ana@desk.test"), Command::OwnerRetry);
    assert_eq!(d.bug.reproduction_attempts, 0);
    d.ok(&role(Role::Reproducer), Command::StartReproduction);
    d.ok(&role(Role::Reproducer), fail("r-5"));
    d.ok(&role(Role::Reproducer), fail("r-6"));
    d.ok_with(
        &role(Role::Reproducer),
        Command::ProposeReproduction {
            reproduction: reproduction(1),
        },
        &Evidence {
            rerun: Some(Rerun::Reproduced),
            ..Evidence::default()
        },
    );
    // The reporter says no: the crew gets a new round of attempts.
    let request = d.question(QuestionKind::Reproduction, "report-a");
    d.ok(
        &reporter("report-a"),
        Command::AnswerReproduction {
            request_id: request,
            confirmed: false,
            reason: Some("that is not what I saw".into()),
        },
    );
    assert_eq!(d.bug.state, BugState::Reproducing);
    assert_eq!(d.bug.reproduction_attempts, 0);
    d.ok(&role(Role::Reproducer), fail("r-7"));
    assert_eq!(d.bug.state, BugState::Reproducing);
}

#[test]
fn two_failed_fix_attempts_need_a_human() {
    let mut d = Driver::new();
    d.walk_to_awaiting_reporter();
    let request = d.question(QuestionKind::Reproduction, "report-a");
    d.ok(
        &reporter("report-a"),
        Command::AnswerReproduction {
            request_id: request,
            confirmed: true,
            reason: None,
        },
    );
    d.ok(&role(Role::Fixer), Command::StartFix);
    d.ok(
        &role(Role::Fixer),
        Command::FailFixAttempt {
            run: "fix-1".into(),
        },
    );
    assert_eq!(d.bug.state, BugState::Fixing);
    d.ok(
        &role(Role::Fixer),
        Command::FailFixAttempt {
            run: "fix-2".into(),
        },
    );
    assert_eq!(d.bug.state, BugState::NeedsHuman);
    assert_eq!(
        d.bug.needs_human,
        Some(NeedsHumanReason::FixAttemptsExhausted)
    );
    let late = d.try_(
        &role(Role::Fixer),
        Command::SubmitFix {
            number: 1,
            head: sha(1),
            changed_paths: vec!["a.rs".into()],
        },
    );
    assert_eq!(kind(late), RefusalKind::Conflict);
}

#[test]
fn a_component_outside_the_crews_paths_needs_a_human() {
    let mut d = Driver::new();
    d.bug.component = "payments-service".into();
    d.ok(&role(Role::Reproducer), Command::StartReproduction);
    assert_eq!(d.bug.state, BugState::NeedsHuman);
    assert_eq!(d.bug.needs_human, Some(NeedsHumanReason::OutOfScope));
}

// ── the crew hands over; an owner gives back or takes over ─────────────────────────────────

fn confirmed_and_fixing(d: &mut Driver) {
    d.walk_to_awaiting_reporter();
    let request = d.question(QuestionKind::Reproduction, "report-a");
    d.ok(
        &reporter("report-a"),
        Command::AnswerReproduction {
            request_id: request,
            confirmed: true,
            reason: None,
        },
    );
    d.ok(&role(Role::Fixer), Command::StartFix);
}

#[test]
fn the_crew_hands_a_bug_it_cannot_go_on_with_to_a_person_and_says_why() {
    for reason in [
        NeedsHumanReason::NotReproduced,
        NeedsHumanReason::ModelNoAnswer,
        NeedsHumanReason::SpendLimit,
    ] {
        let mut d = Driver::new();
        d.ok(&role(Role::Reproducer), Command::StartReproduction);
        d.ok(&role(Role::Reproducer), Command::HandToHuman { reason });
        assert_eq!(d.bug.state, BugState::NeedsHuman);
        assert_eq!(d.bug.needs_human, Some(reason));
        let notify = d.jobs.iter().find(|j| j.kind == "notify_owners").unwrap();
        assert_eq!(notify.payload["reason"], reason.as_str());
    }
    // Only the crew's own reasons, only from the stage the crew holds, only by the crew.
    let mut d = Driver::new();
    d.ok(&role(Role::Reproducer), Command::StartReproduction);
    for reason in [
        NeedsHumanReason::TakenOver,
        NeedsHumanReason::FixAttemptsExhausted,
        NeedsHumanReason::RedBaseline,
    ] {
        let refused = d.try_(&role(Role::Reproducer), Command::HandToHuman { reason });
        assert_eq!(kind(refused), RefusalKind::Invalid);
    }
    let give = Command::HandToHuman {
        reason: NeedsHumanReason::ModelNoAnswer,
    };
    assert_eq!(
        kind(d.try_(&role(Role::Fixer), give.clone())),
        RefusalKind::Conflict
    );
    assert_eq!(
        kind(d.try_(&role(Role::Reviewer), give.clone())),
        RefusalKind::Forbidden
    );
    assert_eq!(
        kind(d.try_(&owner("ana@desk.test"), give.clone())),
        RefusalKind::Forbidden
    );
    assert_eq!(
        kind(d.try_(&Actor::Anonymous, give.clone())),
        RefusalKind::Unauthenticated
    );
    let mut fixing = Driver::new();
    confirmed_and_fixing(&mut fixing);
    let not_reproduced = Command::HandToHuman {
        reason: NeedsHumanReason::NotReproduced,
    };
    assert_eq!(
        kind(fixing.try_(&role(Role::Fixer), not_reproduced)),
        RefusalKind::Conflict
    );
    fixing.ok(
        &role(Role::Fixer),
        Command::HandToHuman {
            reason: NeedsHumanReason::SpendLimit,
        },
    );
    assert_eq!(fixing.bug.state, BugState::NeedsHuman);
}

#[test]
fn the_manager_gives_a_step_that_keeps_failing_to_a_person_even_before_it_started() {
    let failed = Command::HandToHuman {
        reason: NeedsHumanReason::CrewStepFailed,
    };
    // New (triage gave no answer), the reproducer never started.
    let mut n = Driver::new();
    n.ok(&role(Role::Manager), failed.clone());
    assert_eq!(n.bug.state, BugState::NeedsHuman);
    // Triaged, the reproducer never started: only the manager, only for this reason.
    let mut d = Driver::new();
    d.ok(
        &role(Role::Manager),
        Command::RecordTriage {
            note: "note-1".into(),
        },
    );
    assert_eq!(
        kind(d.try_(&role(Role::Reproducer), failed.clone())),
        RefusalKind::Conflict
    );
    assert_eq!(
        kind(d.try_(
            &role(Role::Manager),
            Command::HandToHuman {
                reason: NeedsHumanReason::ModelNoAnswer
            }
        )),
        RefusalKind::Conflict
    );
    d.ok(&role(Role::Manager), failed.clone());
    assert_eq!(d.bug.state, BugState::NeedsHuman);
    assert_eq!(d.bug.needs_human, Some(NeedsHumanReason::CrewStepFailed));
    let notify = d.jobs.iter().find(|j| j.kind == "notify_owners").unwrap();
    assert_eq!(notify.payload["reason"], "crew_step_failed");
    // Given back, the crew starts over.
    d.ok(&owner("ana@desk.test"), Command::OwnerRetry);
    assert_eq!(d.bug.state, BugState::Triaged);
    // While fixing.
    let mut c = Driver::new();
    confirmed_and_fixing(&mut c);
    c.ok(&role(Role::Manager), failed.clone());
    assert_eq!(c.bug.needs_human, Some(NeedsHumanReason::CrewStepFailed));
    // Not once people hold it.
    let mut r = Driver::new();
    r.walk_to_in_review(&["src/lib.rs"]);
    assert_eq!(
        kind(r.try_(&role(Role::Manager), failed)),
        RefusalKind::Conflict
    );
}

#[test]
fn try_again_returns_the_bug_to_the_stage_it_reached() {
    // Before a confirmed reproduction: back to the reproducer, nothing of the old test kept.
    let mut d = Driver::new();
    d.ok(&role(Role::Reproducer), Command::StartReproduction);
    d.ok(
        &role(Role::Reproducer),
        Command::HandToHuman {
            reason: NeedsHumanReason::NotReproduced,
        },
    );
    assert_eq!(
        kind(d.try_(&role(Role::Manager), Command::OwnerRetry)),
        RefusalKind::Forbidden
    );
    d.ok(&owner("ana@desk.test"), Command::OwnerRetry);
    assert_eq!(d.bug.state, BugState::Triaged);
    assert_eq!(d.bug.needs_human, None);
    assert_eq!(d.events.last().unwrap().kind, "retried_by_owner");
    d.ok(&role(Role::Reproducer), Command::StartReproduction);
    assert_eq!(d.bug.state, BugState::Reproducing);
    // After both fix attempts failed: back to the fixer, with two fresh attempts.
    let mut f = Driver::new();
    confirmed_and_fixing(&mut f);
    for run in ["fix-1", "fix-2"] {
        f.ok(
            &role(Role::Fixer),
            Command::FailFixAttempt { run: run.into() },
        );
    }
    assert_eq!(f.bug.state, BugState::NeedsHuman);
    f.ok(&owner("ana@desk.test"), Command::OwnerRetry);
    assert_eq!(f.bug.state, BugState::Confirmed);
    assert_eq!(f.bug.fix_attempts, 0);
    assert!(f.jobs.iter().any(|j| j.kind == "start_fix"));
    f.ok(&role(Role::Fixer), Command::StartFix);
    assert_eq!(f.bug.state, BugState::Fixing);
    // Nothing to retry outside needs_human.
    assert_eq!(
        kind(f.try_(&owner("ana@desk.test"), Command::OwnerRetry)),
        RefusalKind::Conflict
    );
}

#[test]
fn an_owner_takes_a_bug_from_the_crew_and_the_crew_can_do_nothing_more_with_it() {
    let mut d = Driver::new();
    d.ok(&role(Role::Reproducer), Command::StartReproduction);
    assert_eq!(
        kind(d.try_(&role(Role::Manager), Command::OwnerTakeOver)),
        RefusalKind::Forbidden
    );
    d.ok(&owner("ana@desk.test"), Command::OwnerTakeOver);
    assert_eq!(d.bug.state, BugState::NeedsHuman);
    assert_eq!(d.bug.needs_human, Some(NeedsHumanReason::TakenOver));
    assert!(
        !d.jobs.iter().any(|j| j.kind == "notify_owners"),
        "an owner's own act needs no alarm"
    );
    assert_eq!(
        kind(d.try_(
            &role(Role::Reproducer),
            Command::HandToHuman {
                reason: NeedsHumanReason::ModelNoAnswer
            }
        )),
        RefusalKind::Conflict
    );
    assert_eq!(
        kind(d.try_(&role(Role::Reproducer), Command::StartReproduction)),
        RefusalKind::Conflict
    );
    assert_eq!(
        kind(d.try_(&owner("ana@desk.test"), Command::OwnerTakeOver)),
        RefusalKind::Conflict
    );
    d.ok(&owner("bo@desk.test"), Command::OwnerRetry);
    assert_eq!(d.bug.state, BugState::Triaged);
    // Not from review on: people already hold it.
    let mut r = Driver::new();
    r.walk_to_in_review(&["src/lib.rs"]);
    assert_eq!(
        kind(r.try_(&owner("ana@desk.test"), Command::OwnerTakeOver)),
        RefusalKind::Conflict
    );
}

#[test]
fn an_owner_merges_a_duplicate_and_nothing_more_happens_to_it() {
    let mut d = Driver::new();
    d.ok(&role(Role::Reproducer), Command::StartReproduction);
    let into = |of: &str| Command::MarkDuplicate { of: of.into() };
    // Only an owner; never into itself or nowhere.
    for actor in [
        role(Role::Manager),
        role(Role::Reviewer),
        reporter("report-a"),
        Actor::Anonymous,
    ] {
        assert!(d.try_(&actor, into("bug-2")).is_err(), "{actor:?}");
    }
    for of in ["bug-1", "", "  "] {
        assert_eq!(
            kind(d.try_(&owner("ana@desk.test"), into(of))),
            RefusalKind::Invalid,
            "{of:?}"
        );
    }
    d.ok(&owner("ana@desk.test"), into("bug-2"));
    assert_eq!(d.bug.state, BugState::Duplicate);
    assert_eq!(d.bug.duplicate_of.as_deref(), Some("bug-2"));
    let event = d.events.last().unwrap();
    assert_eq!(event.kind, "marked_duplicate");
    assert_eq!(event.evidence, vec!["bug-2".to_owned()]);
    // Closed: no crew step, no owner act, no second merge, no new report.
    for (actor, command) in [
        (role(Role::Reproducer), Command::StartReproduction),
        (owner("ana@desk.test"), Command::OwnerTakeOver),
        (
            owner("ana@desk.test"),
            Command::OwnerReopen { reason: "x".into() },
        ),
        (owner("bo@desk.test"), into("bug-3")),
        (
            Actor::Desk,
            Command::AttachReport {
                report: "report-z".into(),
            },
        ),
    ] {
        let refused = d.try_(&actor, command).unwrap_err();
        assert_eq!(
            (refused.kind, refused.code.as_str()),
            (RefusalKind::Conflict, "duplicate")
        );
    }
    // A verified bug stays what it is.
    let mut v = Driver::new();
    v.bug.state = BugState::Verified;
    assert_eq!(
        kind(v.try_(&owner("ana@desk.test"), into("bug-2"))),
        RefusalKind::Conflict
    );
}

#[test]
fn a_report_that_joins_a_bug_awaiting_its_reporters_is_asked_too() {
    let mut d = Driver::new();
    d.walk_to_awaiting_reporter();
    d.ok(
        &Actor::Desk,
        Command::AttachReport {
            report: "report-b".into(),
        },
    );
    // Asked the same question as the first reporter, and their answer counts.
    let asked = d.question(QuestionKind::Reproduction, "report-b");
    assert!(d.jobs.iter().any(|j| j.kind == "ask_reproduction"));
    d.ok(
        &reporter("report-b"),
        Command::AnswerReproduction {
            request_id: asked,
            confirmed: true,
            reason: None,
        },
    );
    assert_eq!(d.bug.state, BugState::Confirmed);
    // A bug with no open question asks nothing of a newcomer.
    let mut n = Driver::new();
    n.ok(
        &Actor::Desk,
        Command::AttachReport {
            report: "report-b".into(),
        },
    );
    assert!(n.bug.questions.is_empty());
}

#[test]
fn a_bug_absorbs_a_duplicates_reports_once_under_an_owners_name_and_asks_them_its_question() {
    let mut d = Driver::new();
    d.walk_to_awaiting_reporter();
    let absorb = |reports: &[&str]| Command::AbsorbDuplicate {
        duplicate: "bug-2".into(),
        reports: reports.iter().map(|r| (*r).to_owned()).collect(),
    };
    assert_eq!(
        kind(d.try_(&role(Role::Manager), absorb(&["report-b"]))),
        RefusalKind::Forbidden
    );
    assert_eq!(
        kind(d.try_(
            &owner("ana@desk.test"),
            Command::AbsorbDuplicate {
                duplicate: "bug-1".into(),
                reports: vec!["report-b".into()]
            }
        )),
        RefusalKind::Invalid
    );
    // A report already here, and one named twice, join once.
    d.ok(
        &owner("ana@desk.test"),
        absorb(&["report-a", "report-b", "report-b"]),
    );
    assert_eq!(
        d.bug.reports,
        vec!["report-a".to_owned(), "report-b".to_owned()]
    );
    let event = d.events.last().unwrap();
    assert_eq!(event.kind, "duplicate_merged");
    assert_eq!(event.actor_kind, "owner");
    assert_eq!(
        event.evidence,
        vec!["bug-2".to_owned(), "report-b".to_owned()]
    );
    // The newcomer is asked the open question; the first reporter is not asked twice.
    d.question(QuestionKind::Reproduction, "report-b");
    assert_eq!(
        d.bug
            .questions
            .iter()
            .filter(|q| q.report == "report-a")
            .count(),
        1
    );
}
