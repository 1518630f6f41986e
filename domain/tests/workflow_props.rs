//! Property tests: random command sequences from random actors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use domain::codeowners::CodeOwners;
use domain::workflow::*;
use domain::{BugState, Role};
use proptest::prelude::*;
use std::collections::BTreeMap;
use support::*;

fn actors() -> Vec<Actor> {
    vec![
        Actor::Anonymous,
        reporter("report-a"),
        reporter("report-b"),
        reporter("report-stranger"),
        owner("ana@desk.test"),
        owner("bob@desk.test"),
        github("octocat"),
        bot("robot[bot]"),
        role(Role::Manager),
        role(Role::Reproducer),
        role(Role::Fixer),
        role(Role::Reviewer),
        role(Role::Concierge),
        role(Role::Recorder),
        Actor::Forge,
        Actor::Desk,
    ]
}

const PATHS: [&[&str]; 3] = [
    &["README.md"],
    &["shoplite/src/lib.rs"],
    &["shoplite/src/lib.rs", "server/src/auth/session.rs"],
];

/// Builds the `choice`-th command, using the bug's own data so that sequences get deep.
fn command(bug: &Bug, choice: u8, pick: u8) -> Command {
    let question = |kind| {
        bug.questions
            .iter()
            .filter(|q| q.kind == kind)
            .nth(usize::from(pick) % 2)
            .map(|q| q.request_id.clone())
            .unwrap_or_else(|| format!("random-{pick}"))
    };
    let head = bug
        .pull_request
        .as_ref()
        .filter(|_| !pick.is_multiple_of(4))
        .map(|pr| pr.head.clone())
        .unwrap_or_else(|| sha(pick % 5 + 10));
    let reason = (!pick.is_multiple_of(3)).then(|| "because".to_owned());
    match choice % 19 {
        0 => Command::AttachReport {
            report: if pick.is_multiple_of(2) {
                "report-b".into()
            } else {
                "report-c".into()
            },
        },
        1 => Command::RecordTriage { note: "t".into() },
        2 => Command::StartReproduction,
        3 => Command::ReportRedBaseline { run: "r".into() },
        4 => Command::ProposeReproduction {
            reproduction: reproduction(pick % 3),
        },
        5 => Command::AnswerReproduction {
            request_id: question(QuestionKind::Reproduction),
            confirmed: pick.is_multiple_of(2),
            reason,
        },
        6 => Command::StartFix,
        7 => Command::FailFixAttempt { run: "f".into() },
        8 => Command::SubmitFix {
            number: 1,
            head: sha(pick % 3 + 1),
            changed_paths: PATHS[usize::from(pick) % 3]
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
        },
        9 => Command::NewHead {
            head: sha(pick % 3 + 1),
        },
        10 => Command::Approve { head },
        11 => Command::Merge {
            head,
            merge_commit: sha(20),
        },
        12 => Command::RecordDeployment {
            deployment: format!("dep-{}", pick % 3),
            commit: sha(21 + pick % 2),
        },
        13 => Command::AnswerFix {
            request_id: question(QuestionKind::Fix),
            works: pick.is_multiple_of(2),
            reason,
        },
        14 => Command::ReaskExpired,
        15 => Command::AddNote { note: "n".into() },
        18 => Command::FailReproductionAttempt { run: "x".into() },
        // Rare: a duplicate is closed for good, which would end most sequences early.
        17 if pick < 64 => Command::MarkDuplicate { of: "bug-q".into() },
        _ => Command::OwnerReopen { reason: "r".into() },
    }
}

/// The transition table, written independently of the engine.
fn allowed(command: &str, from: BugState, to: BugState) -> bool {
    use BugState as S;
    let same = from == to;
    match command {
        "attach_report" | "add_note" | "reask_expired" => same,
        "mark_duplicate" => to == S::Duplicate && !matches!(from, S::Verified | S::Duplicate),
        "record_triage" => from == S::New && to == S::Triaged,
        "start_reproduction" => {
            matches!(from, S::New | S::Triaged | S::Reopened)
                && matches!(to, S::Reproducing | S::NeedsHuman)
        }
        "report_red_baseline" => from == S::Reproducing && to == S::NeedsHuman,
        "fail_reproduction_attempt" => {
            from == S::Reproducing && matches!(to, S::Reproducing | S::NeedsHuman)
        }
        "propose_reproduction" => from == S::Reproducing && to == S::AwaitingReporter,
        "answer_reproduction" => {
            from == S::AwaitingReporter && matches!(to, S::Confirmed | S::Reproducing)
        }
        "start_fix" => from == S::Confirmed && matches!(to, S::Fixing | S::NeedsHuman),
        "fail_fix_attempt" => from == S::Fixing && matches!(to, S::Fixing | S::NeedsHuman),
        "submit_fix" => from == S::Fixing && to == S::InReview,
        "new_head" => matches!(from, S::InReview | S::Approved) && to == S::InReview,
        "approve" => {
            (from == S::InReview && matches!(to, S::InReview | S::Approved))
                || (from == S::Approved && to == S::Approved)
        }
        "merge" => from == S::Approved && matches!(to, S::Merged | S::Deployed),
        "record_deployment" => same || (from == S::Merged && to == S::Deployed),
        "answer_fix" => {
            matches!(from, S::Deployed | S::Verified) && matches!(to, S::Verified | S::Reopened)
        }
        "owner_reopen" => to == S::Reopened && !matches!(from, S::New | S::Reopened),
        _ => false,
    }
}

fn check_invariants(bug: &Bug) {
    use BugState as S;
    let decided = matches!(
        bug.state,
        S::Approved | S::Merged | S::Deployed | S::Verified
    );
    if decided {
        let pr = bug
            .pull_request
            .as_ref()
            .expect("a decided bug has a pull request");
        assert!(
            bug.confirmations
                .iter()
                .any(|c| c.kind == QuestionKind::Reproduction && bug.reports.contains(&c.report)),
            "{:?} without a reporter's confirmation of the reproduction",
            bug.state
        );
        assert!(bug.reproduction.is_some());
        let (people, code_owner) = bug.approvals_of_head();
        assert!(
            people >= pr.tier.required_humans(),
            "{:?} with {people} approvals of the head",
            bug.state
        );
        assert!(
            !pr.tier.requires_code_owner() || code_owner,
            "tier 2 without a code owner"
        );
        assert!(
            bug.approvals.iter().all(|a| a.head == pr.head),
            "an approval of another head survived"
        );
    }
    if matches!(bug.state, S::Merged | S::Deployed | S::Verified) {
        let merge = bug.merge.as_ref().expect("merged without a merge record");
        assert_eq!(
            Some(&merge.head),
            bug.pull_request.as_ref().map(|pr| &pr.head)
        );
    }
    if matches!(bug.state, S::Deployed | S::Verified) {
        assert!(bug
            .deployments
            .iter()
            .any(|d| d.status == DeploymentStatus::ContainsFix));
    }
    if bug.state == S::Verified {
        assert!(bug
            .confirmations
            .iter()
            .any(|c| c.kind == QuestionKind::Fix && bug.reports.contains(&c.report)));
    }
}

/// (focused?, actor, command, pick, rerun, time step, evidence kind)
type Step = (bool, u8, u8, u8, bool, u8, u8);

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (
            prop::bool::weighted(0.8),
            0u8..16,
            0u8..18,
            any::<u8>(),
            any::<bool>(),
            0u8..4,
            0u8..4,
        ),
        1..120,
    )
}

/// A command that fits the bug's state, from the actor who would normally send it: keeps
/// random sequences moving along the loop (the unfocused steps try everything else).
fn focused(bug: &Bug, pick: u8) -> (Actor, u8) {
    use BugState as S;
    let choices: &[u8] = match bug.state {
        S::New => &[1, 2, 0],
        S::Triaged | S::Reopened => &[2],
        S::Reproducing => &[4, 4, 4, 18, 3],
        S::AwaitingReporter => &[5, 5, 14],
        S::Confirmed => &[6],
        S::Fixing => &[8, 8, 7],
        S::NeedsHuman => &[16, 16, 17],
        S::InReview => &[10, 10, 9, 12],
        S::Approved => &[11, 11, 10, 9],
        S::Merged => &[12],
        S::Deployed | S::Verified => &[13, 13, 12],
        S::Duplicate => &[16],
    };
    let choice = choices[usize::from(pick) % choices.len()];
    let people = [
        owner("ana@desk.test"),
        owner("bob@desk.test"),
        github("octocat"),
    ];
    let actor = match choice {
        0 | 14 => Actor::Desk,
        1 => role(Role::Manager),
        2..=4 | 18 => role(Role::Reproducer),
        5 | 13 => reporter(if pick.is_multiple_of(3) {
            "report-b"
        } else {
            "report-a"
        }),
        6..=8 => role(Role::Fixer),
        9 => Actor::Forge,
        10 | 11 => people[usize::from(pick / 3) % 3].clone(),
        12 => role(Role::Recorder),
        15 => role(Role::Reviewer),
        _ => owner("ana@desk.test"),
    };
    (actor, choice)
}

/// Runs one random sequence, checking every decision; returns the states the bug visited.
fn run_sequence(steps: &[Step]) -> Vec<BugState> {
    let actors = actors();
    let owners = CodeOwners::parse("* @octocat\n/server/src/auth/ ana@desk.test\n");
    let oracle = Table(BTreeMap::from([
        ((sha(20), sha(21)), Ancestry::Ahead),
        ((sha(20), sha(22)), Ancestry::Behind),
    ]));
    let mut bug = Bug::open("bug-p", "shoplite", "report-a");
    let policy = Policy::default();
    let mut now = T0;
    let mut visited = vec![bug.state];
    for &(focus, actor, choice, pick, rerun, time_step, evidence_kind) in steps {
        let (actor, choice) = if focus {
            focused(&bug, pick)
        } else {
            (actors[usize::from(actor)].clone(), choice)
        };
        let actor = &actor;
        let command = command(&bug, choice, pick);
        now += [1_000, 1_000, QUESTION_TTL_MS / 2, QUESTION_TTL_MS][usize::from(time_step)];
        let evidence = Evidence {
            rerun: rerun.then_some(Rerun::Reproduced),
            ancestry: (evidence_kind & 1 == 1).then_some(&oracle as &dyn AncestryOracle),
            code_owners: (evidence_kind & 2 == 2).then_some(&owners),
        };
        let before = bug.clone();
        match decide(&bug, &command, actor, &evidence, &policy, now) {
            Err(refusal) => {
                if *actor == Actor::Anonymous {
                    assert_eq!(refusal.kind, RefusalKind::Unauthenticated);
                }
            }
            Ok(decision) if !decision.changed => {
                assert_eq!(&decision.bug, &before);
                assert!(decision.events.is_empty() && decision.jobs.is_empty());
            }
            Ok(decision) => {
                assert!(*actor != Actor::Anonymous);
                assert_eq!(
                    decision.bug.version,
                    before.version + 1,
                    "versions grow by one"
                );
                assert!(
                    !decision.events.is_empty(),
                    "a change without an audit event"
                );
                assert!(
                    allowed(command.name(), before.state, decision.bug.state),
                    "{} moved {:?} → {:?}",
                    command.name(),
                    before.state,
                    decision.bug.state
                );
                if decision.bug.state == BugState::Reopened && before.state != BugState::Reopened {
                    assert!(
                        decision.bug.confirmations.is_empty(),
                        "confirmations survived a reopen"
                    );
                }
                if let Actor::Role { role } = actor {
                    assert!(
                        !matches!(
                            command,
                            Command::Approve { .. }
                                | Command::Merge { .. }
                                | Command::AnswerFix { .. }
                                | Command::AnswerReproduction { .. }
                        ),
                        "{role} did {}",
                        command.name()
                    );
                }
                bug = decision.bug;
                check_invariants(&bug);
                visited.push(bug.state);
            }
        }
    }
    visited
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn random_sequences_never_skip_the_required_evidence(steps in steps()) {
        run_sequence(&steps);
    }
}

/// The property above is only worth something if random sequences reach the late states.
#[test]
fn random_sequences_do_reach_every_state() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..2_000 {
        let steps = steps().new_tree(&mut runner).unwrap().current();
        seen.extend(run_sequence(&steps));
    }
    for state in BugState::ALL {
        assert!(seen.contains(&state), "no random sequence reached {state}");
    }
}
