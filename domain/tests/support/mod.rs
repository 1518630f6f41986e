//! Shared helpers for the engine's tests: actors, shas and a driver that walks a bug along
//! the loop.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::new_without_default
)]

use domain::codeowners::CodeOwners;
use domain::workflow::*;
use domain::{BugState, Role};
use std::collections::BTreeMap;

pub const T0: Millis = 1_700_000_000_000;

pub fn sha(n: u8) -> CommitSha {
    CommitSha::parse(&format!("{:02x}", n).repeat(20)).unwrap()
}

pub fn role(role: Role) -> Actor {
    Actor::Role { role }
}

pub fn reporter(report: &str) -> Actor {
    Actor::Reporter {
        report: report.to_owned(),
    }
}

pub fn owner(id: &str) -> Actor {
    Actor::Owner { id: id.to_owned() }
}

pub fn github(login: &str) -> Actor {
    Actor::GitHubUser {
        login: login.to_owned(),
        bot: false,
    }
}

pub fn bot(login: &str) -> Actor {
    Actor::GitHubUser {
        login: login.to_owned(),
        bot: true,
    }
}

pub fn reproduction(n: u8) -> Reproduction {
    Reproduction {
        id: format!("repro-{n}"),
        test_path: "shoplite/tests/coupon.rs".to_owned(),
        test_sha256: format!("{:02x}", n).repeat(32),
        assertion: "assertion `left == right` failed".to_owned(),
        summary: None,
    }
}

/// An ancestry oracle from an explicit table; anything not listed is unknown.
#[derive(Default, Debug)]
pub struct Table(pub BTreeMap<(CommitSha, CommitSha), Ancestry>);

impl AncestryOracle for Table {
    fn relation(&self, base: &CommitSha, candidate: &CommitSha) -> Ancestry {
        if base == candidate {
            return Ancestry::Identical;
        }
        self.0
            .get(&(base.clone(), candidate.clone()))
            .copied()
            .unwrap_or(Ancestry::Unknown)
    }
}

/// Applies commands to one bug, keeping the decisions.
#[derive(Debug)]
pub struct Driver {
    pub bug: Bug,
    pub policy: Policy,
    pub now: Millis,
    pub jobs: Vec<JobDraft>,
    pub events: Vec<EventDraft>,
}

impl Driver {
    pub fn new() -> Self {
        Driver {
            bug: Bug::open("bug-1", "shoplite", "report-a"),
            policy: Policy::default(),
            now: T0,
            jobs: Vec::new(),
            events: Vec::new(),
        }
    }

    pub fn try_with(
        &mut self,
        actor: &Actor,
        command: Command,
        evidence: &Evidence<'_>,
    ) -> Result<Decision, Refusal> {
        self.now += 1_000;
        let decision = decide(&self.bug, &command, actor, evidence, &self.policy, self.now)?;
        if decision.changed {
            assert_eq!(
                decision.bug.version,
                self.bug.version + 1,
                "a change advances the version by one"
            );
        } else {
            assert_eq!(decision.bug, self.bug, "a dropped command changes nothing");
        }
        self.bug = decision.bug.clone();
        self.jobs.extend(decision.jobs.clone());
        self.events.extend(decision.events.clone());
        Ok(decision)
    }

    pub fn try_(&mut self, actor: &Actor, command: Command) -> Result<Decision, Refusal> {
        self.try_with(actor, command, &Evidence::default())
    }

    pub fn ok(&mut self, actor: &Actor, command: Command) -> Decision {
        let name = command.name();
        self.try_(actor, command)
            .unwrap_or_else(|r| panic!("{name} refused: {r}"))
    }

    pub fn ok_with(
        &mut self,
        actor: &Actor,
        command: Command,
        evidence: &Evidence<'_>,
    ) -> Decision {
        let name = command.name();
        self.try_with(actor, command, evidence)
            .unwrap_or_else(|r| panic!("{name} refused: {r}"))
    }

    pub fn question(&self, kind: QuestionKind, report: &str) -> String {
        self.bug
            .questions
            .iter()
            .find(|q| q.kind == kind && q.report == report)
            .map(|q| q.request_id.clone())
            .unwrap_or_else(|| panic!("no open {kind:?} question for {report}"))
    }

    /// new → awaiting_reporter with a measured reproduction.
    pub fn walk_to_awaiting_reporter(&mut self) {
        self.ok(
            &role(Role::Manager),
            Command::RecordTriage {
                note: "triage-1".into(),
            },
        );
        self.ok(&role(Role::Reproducer), Command::StartReproduction);
        self.ok_with(
            &role(Role::Reproducer),
            Command::ProposeReproduction {
                reproduction: reproduction(1),
            },
            &Evidence {
                rerun: Some(Rerun::Reproduced),
                ..Evidence::default()
            },
        );
        assert_eq!(self.bug.state, BugState::AwaitingReporter);
    }

    /// … → in_review with a fix touching `paths`.
    pub fn walk_to_in_review(&mut self, paths: &[&str]) {
        self.walk_to_awaiting_reporter();
        let request = self.question(QuestionKind::Reproduction, "report-a");
        self.ok(
            &reporter("report-a"),
            Command::AnswerReproduction {
                request_id: request,
                confirmed: true,
                reason: None,
            },
        );
        self.ok(&role(Role::Fixer), Command::StartFix);
        self.ok(
            &role(Role::Fixer),
            Command::SubmitFix {
                number: 7,
                head: sha(1),
                changed_paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            },
        );
        assert_eq!(self.bug.state, BugState::InReview);
    }

    /// … → merged (tier 1, one owner approval, merge commit sha(2)).
    pub fn walk_to_merged(&mut self) {
        self.walk_to_in_review(&["shoplite/src/lib.rs"]);
        self.ok(&owner("ana@desk.test"), Command::Approve { head: sha(1) });
        self.ok(
            &owner("ana@desk.test"),
            Command::Merge {
                head: sha(1),
                merge_commit: sha(2),
            },
        );
        assert_eq!(self.bug.state, BugState::Merged);
    }

    /// … → deployed (deployment of sha(3), which is ahead of the merge sha(2)).
    pub fn walk_to_deployed(&mut self) {
        self.walk_to_merged();
        let oracle = Table(BTreeMap::from([((sha(2), sha(3)), Ancestry::Ahead)]));
        self.ok_with(
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
        assert_eq!(self.bug.state, BugState::Deployed);
    }
}

pub fn code_owners(text: &str) -> CodeOwners {
    CodeOwners::parse(text)
}
