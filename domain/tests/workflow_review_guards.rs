//! Guards of the workflow engine, part two: the crew, reviews, merges, tiers, deployments and
//! the reporter's last word.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use domain::workflow::*;
use domain::{BugState, Role, Tier};
use std::collections::BTreeMap;
use support::*;

fn kind(result: Result<Decision, Refusal>) -> RefusalKind {
    result.expect_err("the command must be refused").kind
}

// ── the crew drafts, never decides ──────────────────────────────────────────────────────────

#[test]
fn crew_roles_can_never_approve_merge_record_a_deployment_or_answer_for_a_reporter() {
    let mut d = Driver::new();
    d.walk_to_in_review(&["shoplite/src/lib.rs"]);
    for crew in [Role::Manager, Role::Reproducer, Role::Fixer, Role::Reviewer] {
        let actor = role(crew);
        assert_eq!(
            kind(d.try_(&actor, Command::Approve { head: sha(1) })),
            RefusalKind::Forbidden,
            "{crew}"
        );
        assert_eq!(
            kind(d.try_(
                &actor,
                Command::Merge {
                    head: sha(1),
                    merge_commit: sha(2)
                }
            )),
            RefusalKind::Forbidden,
            "{crew}"
        );
        assert_eq!(
            kind(d.try_(
                &actor,
                Command::RecordDeployment {
                    deployment: "d".into(),
                    commit: sha(3)
                }
            )),
            RefusalKind::Forbidden,
            "{crew}"
        );
        assert_eq!(
            kind(d.try_(
                &actor,
                Command::AnswerFix {
                    request_id: "x".into(),
                    works: true,
                    reason: None
                }
            )),
            RefusalKind::Forbidden,
            "{crew}"
        );
        assert_eq!(
            kind(d.try_(&actor, Command::OwnerReopen { reason: "x".into() })),
            RefusalKind::Forbidden,
            "{crew}"
        );
        // Advisory notes are allowed and change no state.
        d.ok(
            &actor,
            Command::AddNote {
                note: format!("note-{crew}"),
            },
        );
        assert_eq!(d.bug.state, BugState::InReview);
    }
    for other in [
        role(Role::Concierge),
        role(Role::Recorder),
        reporter("report-a"),
        Actor::Desk,
    ] {
        assert_eq!(
            kind(d.try_(&other, Command::Approve { head: sha(1) })),
            RefusalKind::Forbidden,
            "{other:?}"
        );
        assert_eq!(
            kind(d.try_(&other, Command::AddNote { note: "n".into() })),
            RefusalKind::Forbidden,
            "{other:?}"
        );
    }
    assert_eq!(
        kind(d.try_(&Actor::Anonymous, Command::StartFix)),
        RefusalKind::Unauthenticated
    );
}

// ── approvals bind to an exact head ─────────────────────────────────────────────────────────

#[test]
fn an_approval_of_an_old_head_is_refused() {
    let mut d = Driver::new();
    d.walk_to_in_review(&["shoplite/src/lib.rs"]);
    assert_eq!(
        d.try_(&owner("ana@desk.test"), Command::Approve { head: sha(9) })
            .unwrap_err()
            .code,
        "stale_head"
    );
}

#[test]
fn a_new_head_clears_every_approval() {
    let mut d = Driver::new();
    d.walk_to_in_review(&["shoplite/src/lib.rs"]);
    d.ok(&owner("ana@desk.test"), Command::Approve { head: sha(1) });
    assert_eq!(d.bug.state, BugState::Approved);
    // Only a verified forge event moves the head.
    assert_eq!(
        kind(d.try_(&role(Role::Fixer), Command::NewHead { head: sha(4) })),
        RefusalKind::Forbidden
    );
    d.ok(&Actor::Forge, Command::NewHead { head: sha(4) });
    assert_eq!(d.bug.state, BugState::InReview);
    assert!(d.bug.approvals.is_empty());
    let merge = d.try_(
        &owner("ana@desk.test"),
        Command::Merge {
            head: sha(4),
            merge_commit: sha(5),
        },
    );
    assert_eq!(kind(merge), RefusalKind::Conflict);
}

// ── merges ──────────────────────────────────────────────────────────────────────────────────

#[test]
fn a_merge_of_a_head_other_than_the_approved_one_is_refused() {
    let mut d = Driver::new();
    d.walk_to_in_review(&["shoplite/src/lib.rs"]);
    d.ok(&owner("ana@desk.test"), Command::Approve { head: sha(1) });
    let refused = d.try_(
        &owner("ana@desk.test"),
        Command::Merge {
            head: sha(8),
            merge_commit: sha(2),
        },
    );
    assert_eq!(refused.unwrap_err().code, "merged_head_not_approved");
    assert_eq!(d.bug.state, BugState::Approved);
}

#[test]
fn a_bot_cannot_merge_or_approve() {
    let mut d = Driver::new();
    d.walk_to_in_review(&["shoplite/src/lib.rs"]);
    assert_eq!(
        kind(d.try_(&bot("dependabot[bot]"), Command::Approve { head: sha(1) })),
        RefusalKind::Forbidden
    );
    d.ok(&github("octocat"), Command::Approve { head: sha(1) });
    assert_eq!(
        kind(d.try_(
            &bot("mergify[bot]"),
            Command::Merge {
                head: sha(1),
                merge_commit: sha(2)
            }
        )),
        RefusalKind::Forbidden
    );
    d.ok(
        &github("octocat"),
        Command::Merge {
            head: sha(1),
            merge_commit: sha(2),
        },
    );
    assert_eq!(d.bug.state, BugState::Merged);
}

#[test]
fn a_merge_without_any_human_approval_is_refused() {
    let mut d = Driver::new();
    d.walk_to_in_review(&["shoplite/src/lib.rs"]);
    assert_eq!(
        kind(d.try_(
            &owner("ana@desk.test"),
            Command::Merge {
                head: sha(1),
                merge_commit: sha(2)
            }
        )),
        RefusalKind::Conflict
    );
}

#[test]
fn one_owner_written_two_ways_is_still_one_approver() {
    let owners = code_owners("*  ana@desk.test\n");
    let evidence = Evidence {
        code_owners: Some(&owners),
        ..Evidence::default()
    };
    let mut d = Driver::new();
    d.walk_to_in_review(&["server/src/auth/session.rs"]);
    d.ok_with(
        &Actor::owner("Ana@Desk.test"),
        Command::Approve { head: sha(1) },
        &evidence,
    );
    d.ok_with(
        &Actor::Owner {
            id: " ana@desk.TEST".into(),
        },
        Command::Approve { head: sha(1) },
        &evidence,
    );
    assert_eq!(d.bug.approvals_of_head(), (1, true));
    assert_eq!(
        d.bug.state,
        BugState::InReview,
        "tier 2 still needs a second person"
    );
}

// ── risk tiers ──────────────────────────────────────────────────────────────────────────────

#[test]
fn tier_2_needs_two_distinct_people_one_of_them_a_code_owner() {
    let owners = code_owners("*  @lead\n/server/src/auth/ @sec-lead ana@desk.test\n");
    let evidence = Evidence {
        code_owners: Some(&owners),
        ..Evidence::default()
    };
    let mut d = Driver::new();
    d.walk_to_in_review(&["server/src/auth/session.rs"]);
    assert_eq!(d.bug.pull_request.as_ref().unwrap().tier, Tier::Sensitive);

    // One person, even approving twice, is one person.
    d.ok_with(
        &owner("ana@desk.test"),
        Command::Approve { head: sha(1) },
        &evidence,
    );
    assert!(
        !d.ok_with(
            &owner("ana@desk.test"),
            Command::Approve { head: sha(1) },
            &evidence
        )
        .changed
    );
    assert_eq!(d.bug.state, BugState::InReview);
    assert_eq!(
        kind(d.try_(
            &owner("ana@desk.test"),
            Command::Merge {
                head: sha(1),
                merge_commit: sha(2)
            }
        )),
        RefusalKind::Conflict
    );

    // A second person makes two, and ana owns the path: approved.
    d.ok_with(
        &github("octocat"),
        Command::Approve { head: sha(1) },
        &evidence,
    );
    assert_eq!(d.bug.state, BugState::Approved);
    d.ok(
        &github("octocat"),
        Command::Merge {
            head: sha(1),
            merge_commit: sha(2),
        },
    );
}

#[test]
fn tier_2_with_two_people_but_no_code_owner_stays_in_review() {
    let owners = code_owners("/server/src/auth/ @sec-lead\n");
    let evidence = Evidence {
        code_owners: Some(&owners),
        ..Evidence::default()
    };
    let mut d = Driver::new();
    d.walk_to_in_review(&["server/src/auth/session.rs"]);
    d.ok_with(
        &owner("ana@desk.test"),
        Command::Approve { head: sha(1) },
        &evidence,
    );
    d.ok_with(
        &github("octocat"),
        Command::Approve { head: sha(1) },
        &evidence,
    );
    assert_eq!(d.bug.state, BugState::InReview);
    let missing = d.bug.missing_approvals();
    assert_eq!(missing.len(), 1);
    assert!(missing[0].contains("code owner"));
    d.ok_with(
        &github("sec-lead"),
        Command::Approve { head: sha(1) },
        &evidence,
    );
    assert_eq!(d.bug.state, BugState::Approved);
}

// ── deployments ─────────────────────────────────────────────────────────────────────────────

#[test]
fn a_deployment_counts_only_if_it_contains_the_merge() {
    for (relation, counts) in [
        (Ancestry::Ahead, true),
        (Ancestry::Identical, true),
        (Ancestry::Behind, false),
        (Ancestry::Diverged, false),
        (Ancestry::Unknown, false),
    ] {
        let mut d = Driver::new();
        d.walk_to_merged();
        let oracle = Table(BTreeMap::from([((sha(2), sha(3)), relation)]));
        d.ok_with(
            &role(Role::Recorder),
            Command::RecordDeployment {
                deployment: "dep-1".into(),
                commit: sha(3),
            },
            &Evidence {
                ancestry: Some(&oracle),
                ..Evidence::default()
            },
        );
        let expected = if counts {
            BugState::Deployed
        } else {
            BugState::Merged
        };
        assert_eq!(d.bug.state, expected, "{relation:?}");
    }
}

#[test]
fn without_an_ancestry_oracle_a_deployment_fails_closed() {
    let mut d = Driver::new();
    d.walk_to_merged();
    d.ok(
        &role(Role::Recorder),
        Command::RecordDeployment {
            deployment: "dep-1".into(),
            commit: sha(3),
        },
    );
    assert_eq!(d.bug.state, BugState::Merged);
    assert_eq!(
        d.bug.deployments[0].status,
        DeploymentStatus::DoesNotContainFix
    );
}

#[test]
fn a_deployment_before_the_merge_is_kept_and_reconciled_when_the_merge_arrives() {
    let mut d = Driver::new();
    d.walk_to_in_review(&["shoplite/src/lib.rs"]);
    d.ok(
        &role(Role::Recorder),
        Command::RecordDeployment {
            deployment: "dep-early".into(),
            commit: sha(3),
        },
    );
    assert_eq!(d.bug.state, BugState::InReview);
    assert_eq!(d.bug.deployments[0].status, DeploymentStatus::Pending);
    d.ok(&owner("ana@desk.test"), Command::Approve { head: sha(1) });
    let oracle = Table(BTreeMap::from([((sha(2), sha(3)), Ancestry::Ahead)]));
    d.ok_with(
        &owner("ana@desk.test"),
        Command::Merge {
            head: sha(1),
            merge_commit: sha(2),
        },
        &Evidence {
            ancestry: Some(&oracle),
            ..Evidence::default()
        },
    );
    assert_eq!(d.bug.state, BugState::Deployed);
    assert_eq!(d.bug.deployments[0].status, DeploymentStatus::ContainsFix);
    assert!(d.jobs.iter().any(|j| j.kind == "ask_fix"));
}

#[test]
fn only_the_recorder_records_deployments_and_a_repeat_is_dropped() {
    let mut d = Driver::new();
    d.walk_to_deployed();
    assert_eq!(
        kind(d.try_(
            &owner("ana@desk.test"),
            Command::RecordDeployment {
                deployment: "x".into(),
                commit: sha(3)
            }
        )),
        RefusalKind::Forbidden
    );
    assert!(
        !d.ok(
            &role(Role::Recorder),
            Command::RecordDeployment {
                deployment: "dep-1".into(),
                commit: sha(3)
            }
        )
        .changed
    );
}

// ── the reporter has the last word ──────────────────────────────────────────────────────────

#[test]
fn a_no_to_the_fix_needs_a_reason_clears_confirmations_and_queues_a_reopen() {
    let mut d = Driver::new();
    d.walk_to_deployed();
    let request = d.question(QuestionKind::Fix, "report-a");
    let bare = d.try_(
        &reporter("report-a"),
        Command::AnswerFix {
            request_id: request.clone(),
            works: false,
            reason: None,
        },
    );
    assert_eq!(bare.unwrap_err().code, "reason_required");
    d.ok(
        &reporter("report-a"),
        Command::AnswerFix {
            request_id: request,
            works: false,
            reason: Some("still negative with two items".into()),
        },
    );
    assert_eq!(d.bug.state, BugState::Reopened);
    assert!(d.bug.confirmations.is_empty());
    assert!(d.bug.questions.is_empty());
    assert!(d
        .jobs
        .iter()
        .any(|j| j.kind == "reopen" && j.payload["reason"] == "still negative with two items"));
    // The loop starts again from reproduction.
    d.ok(&role(Role::Reproducer), Command::StartReproduction);
    assert_eq!(d.bug.state, BugState::Reproducing);
}

#[test]
fn a_later_no_from_another_affected_reporter_reopens_a_verified_bug() {
    let mut d = Driver::new();
    d.ok(
        &Actor::Desk,
        Command::AttachReport {
            report: "report-b".into(),
        },
    );
    d.walk_to_deployed();
    let for_a = d.question(QuestionKind::Fix, "report-a");
    let for_b = d.question(QuestionKind::Fix, "report-b");
    d.ok(
        &reporter("report-a"),
        Command::AnswerFix {
            request_id: for_a,
            works: true,
            reason: None,
        },
    );
    assert_eq!(d.bug.state, BugState::Verified);
    d.ok(
        &reporter("report-b"),
        Command::AnswerFix {
            request_id: for_b,
            works: false,
            reason: Some("not for me".into()),
        },
    );
    assert_eq!(d.bug.state, BugState::Reopened);
    assert!(d.bug.confirmations.is_empty());
}

#[test]
fn an_owner_can_send_a_bug_back_with_a_reason() {
    let mut d = Driver::new();
    d.ok(&role(Role::Reproducer), Command::StartReproduction);
    d.ok(
        &role(Role::Reproducer),
        Command::ReportRedBaseline { run: "r".into() },
    );
    assert_eq!(
        d.try_(
            &owner("ana@desk.test"),
            Command::OwnerReopen { reason: " ".into() }
        )
        .unwrap_err()
        .code,
        "reason_required"
    );
    d.ok(
        &owner("ana@desk.test"),
        Command::OwnerReopen {
            reason: "baseline fixed by hand".into(),
        },
    );
    assert_eq!(d.bug.state, BugState::Reopened);
    assert_eq!(d.bug.needs_human, None);
}

#[test]
fn commit_ids_are_validated() {
    assert!(CommitSha::parse(&"A".repeat(40)).is_ok());
    assert!(CommitSha::parse(&"a".repeat(64)).is_ok());
    assert!(CommitSha::parse("abc").is_err());
    assert!(CommitSha::parse(&"g".repeat(40)).is_err());
}

#[test]
fn only_the_desk_holds_back_a_release_and_the_bug_stays_merged_with_the_reason_in_its_ledger() {
    let hold = || Command::HoldRelease {
        commit: sha(3),
        reason: "the suite failed: tests::coupon_never_pays".into(),
    };
    let mut d = Driver::new();
    d.walk_to_in_review(&["shoplite/src/lib.rs"]);
    assert_eq!(
        kind(d.try_(&Actor::Desk, hold())),
        RefusalKind::Conflict,
        "nothing is held before the merge"
    );
    let mut d = Driver::new();
    d.walk_to_merged();
    for actor in [
        owner("ana@desk.test"),
        role(Role::Recorder),
        role(Role::Fixer),
    ] {
        assert_eq!(
            kind(d.try_(&actor, hold())),
            RefusalKind::Forbidden,
            "{actor:?}"
        );
    }
    assert_eq!(
        kind(d.try_(
            &Actor::Desk,
            Command::HoldRelease {
                commit: sha(3),
                reason: "  ".into()
            }
        )),
        RefusalKind::Invalid
    );
    let asked = d.jobs.len();
    d.ok(&Actor::Desk, hold());
    assert_eq!(d.bug.state, BugState::Merged);
    let held = d.events.last().unwrap();
    assert_eq!(held.kind, "release_held");
    assert_eq!(held.evidence, vec![sha(3).as_str().to_owned()]);
    assert!(held.detail["reason"].contains("coupon_never_pays"));
    assert_eq!(
        d.jobs.len(),
        asked,
        "nobody is asked about a fix that is not live"
    );
}

#[test]
fn a_distrusted_workers_measurement_sends_the_bug_back_to_be_measured_again_and_only_the_desk_says_so(
) {
    let distrust = || Command::DistrustMeasurement {
        worker: "mallory".into(),
    };
    // Awaiting the reporter on a reproduction the worker measured: the question is
    // withdrawn, the round undone, and the crew starts over.
    let mut d = Driver::new();
    d.walk_to_awaiting_reporter();
    assert!(!d.bug.questions.is_empty());
    for actor in [
        owner("ana@desk.test"),
        role(Role::Reproducer),
        role(Role::Manager),
        reporter("r1"),
    ] {
        assert_eq!(
            kind(d.try_(&actor, distrust())),
            RefusalKind::Forbidden,
            "{actor:?}"
        );
    }
    assert_eq!(
        kind(d.try_(
            &Actor::Desk,
            Command::DistrustMeasurement { worker: " ".into() }
        )),
        RefusalKind::Invalid
    );
    d.ok(&Actor::Desk, distrust());
    assert_eq!(d.bug.state, BugState::Reopened);
    assert!(d.bug.questions.is_empty() && d.bug.reproduction.is_none());
    let event = d.events.last().unwrap();
    assert_eq!(event.kind, "measurement_distrusted");
    assert_eq!(event.detail["worker"], "mallory");
    assert_eq!(event.detail["from"], "awaiting_reporter");
    let job = d.jobs.last().unwrap();
    assert_eq!(job.kind, "reopen");
    assert!(job.payload["reason"].contains("worker mallory"));

    // In review on a fix the worker measured: approvals and the pull request go too.
    let mut d = Driver::new();
    d.walk_to_in_review(&["shoplite/src/lib.rs"]);
    d.ok(&Actor::Desk, distrust());
    assert_eq!(d.bug.state, BugState::Reopened);
    assert!(d.bug.pull_request.is_none() && d.bug.approvals.is_empty());

    // Merged: people approved it and the desk's own sandbox gated its release; nothing moves.
    let mut d = Driver::new();
    d.walk_to_merged();
    assert!(!d.ok(&Actor::Desk, distrust()).changed);
    assert_eq!(d.bug.state, BugState::Merged);
}

#[test]
fn an_owner_rolls_a_live_fix_back_and_nobody_is_asked_about_it_until_it_is_live_again() {
    let roll_back = |reason: &str| Command::OwnerRollBack {
        commit: sha(1),
        reason: reason.into(),
    };
    let mut d = Driver::new();
    d.walk_to_merged();
    assert_eq!(
        kind(d.try_(&owner("ana@desk.test"), roll_back("broke checkout"))),
        RefusalKind::Conflict,
        "a fix that was never live is not rolled back"
    );
    let mut d = Driver::new();
    d.walk_to_deployed();
    assert!(d.bug.questions.iter().any(|q| q.kind == QuestionKind::Fix));
    for actor in [
        Actor::Desk,
        role(Role::Recorder),
        role(Role::Fixer),
        reporter("r1"),
    ] {
        assert_eq!(
            kind(d.try_(&actor, roll_back("broke checkout"))),
            RefusalKind::Forbidden,
            "{actor:?}"
        );
    }
    assert_eq!(
        kind(d.try_(&owner("ana@desk.test"), roll_back(" \n "))),
        RefusalKind::Invalid
    );
    let asked = d.jobs.len();
    d.ok(
        &owner("ana@desk.test"),
        roll_back("checkout broke after it"),
    );
    assert_eq!(d.bug.state, BugState::Merged);
    assert!(
        d.bug.questions.iter().all(|q| q.kind != QuestionKind::Fix),
        "the question about a fix that is not live is withdrawn"
    );
    assert_eq!(d.jobs.len(), asked, "nobody is asked");
    let event = d.events.last().unwrap();
    assert_eq!(event.kind, "rolled_back");
    assert_eq!(event.evidence, vec![sha(1).as_str().to_owned()]);
    assert_eq!(event.detail["from"], "deployed");
    assert!(event.detail["reason"].contains("checkout broke"));
}

#[test]
fn a_bug_opened_over_a_strangers_budget_is_kept_at_once_and_its_triage_waits() {
    let now = 1_000_000;
    let opened = open_bug_at("bug-9", "shoplite", "r-1", now, now + 3_600_000);
    assert_eq!(opened.bug.state, BugState::New);
    let triage = opened.jobs.iter().find(|j| j.kind == "triage").unwrap();
    assert_eq!(triage.available_at, now + 3_600_000);
    assert_eq!(
        opened.events[0].detail["crew_budget_until"],
        (now + 3_600_000).to_string()
    );
    // Within the budget: nothing waits, and nothing is said.
    let at_once = open_bug_at("bug-9", "shoplite", "r-1", now, now);
    assert_eq!(at_once.jobs[0].available_at, now);
    assert!(!at_once.events[0].detail.contains_key("crew_budget_until"));
    assert_eq!(at_once, open_bug("bug-9", "shoplite", "r-1", now));
}

#[test]
fn a_rewritten_history_re_binds_an_identical_tree_and_otherwise_goes_to_a_person() {
    // The same tree under a new commit (an amended message): the merge follows it.
    let mut d = Driver::new();
    d.walk_to_merged();
    let merged = d.bug.merge.clone().unwrap().merge_commit;
    assert_eq!(
        kind(d.try_(
            &owner("ana@desk.test"),
            Command::ObserveRewrittenHistory {
                merge: merged.clone(),
                replacement: Some(sha(9)),
            }
        )),
        RefusalKind::Forbidden,
        "only the desk observes the forge's history"
    );
    d.ok(
        &Actor::Desk,
        Command::ObserveRewrittenHistory {
            merge: merged.clone(),
            replacement: Some(sha(9)),
        },
    );
    assert_eq!(d.bug.state, BugState::Merged);
    assert_eq!(d.bug.merge.as_ref().unwrap().merge_commit, sha(9));
    let seen = d.events.last().unwrap();
    assert_eq!(seen.kind, "history_rewritten");
    assert_eq!(seen.detail["same_tree"], "yes");
    assert!(
        d.bug.approvals.iter().all(|a| a.head != sha(9)),
        "no approval is invented"
    );
    // Said again about the old commit: nothing more happens.
    assert!(
        !d.ok(
            &Actor::Desk,
            Command::ObserveRewrittenHistory {
                merge: merged.clone(),
                replacement: None,
            },
        )
        .changed
    );

    // Another tree: a person must look, with the reason, and the owners are told.
    let mut d = Driver::new();
    d.walk_to_merged();
    let merged = d.bug.merge.clone().unwrap().merge_commit;
    d.ok(
        &Actor::Desk,
        Command::ObserveRewrittenHistory {
            merge: merged,
            replacement: None,
        },
    );
    assert_eq!(d.bug.state, BugState::NeedsHuman);
    assert_eq!(d.bug.needs_human, Some(NeedsHumanReason::HistoryRewritten));
    assert!(d.jobs.iter().any(|j| j.kind == "notify_owners"));
}

#[test]
fn an_owner_promotes_a_strangers_bug_once_and_never_a_confirmed_one() {
    let mut d = Driver::new();
    assert!(d.bug.unconfirmed() && d.bug.promotable());
    for actor in [
        role(Role::Manager),
        role(Role::Reproducer),
        reporter("report-a"),
        github("octo"),
    ] {
        assert_eq!(
            kind(d.try_(&actor, Command::OwnerPromote)),
            RefusalKind::Forbidden,
            "{actor:?} may not promote"
        );
    }
    assert_eq!(
        kind(d.try_(&Actor::Anonymous, Command::OwnerPromote)),
        RefusalKind::Unauthenticated
    );
    let promoted = d.ok(&owner("o-1"), Command::OwnerPromote);
    assert!(promoted.changed && d.bug.promoted && !d.bug.unconfirmed());
    assert_eq!(d.bug.state, BugState::New, "promotion moves no state");
    assert_eq!(promoted.events[0].kind, "promoted");
    assert!(promoted.jobs.is_empty());
    // Twice is once.
    assert!(!d.ok(&owner("o-2"), Command::OwnerPromote).changed);

    // A bug a reporter confirmed is paid from the confirmed share already.
    let mut c = Driver::new();
    c.walk_to_in_review(&["src/cart.rs"]);
    assert!(!c.bug.unconfirmed() && !c.bug.promotable());
    let refused = c.try_(&owner("o-1"), Command::OwnerPromote).unwrap_err();
    assert_eq!(refused.kind, RefusalKind::Conflict);
    assert_eq!(refused.code, "already_confirmed");
}
