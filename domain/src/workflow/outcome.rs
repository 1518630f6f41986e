//! Building an accepted decision: the new bug, its audit events and its outbox jobs.

use super::guard::refusal;
use super::types::*;
use crate::BugState;
use std::collections::BTreeMap;

/// The uuid v5 of the job that asks a question: retries address the same request.
pub fn question_request_id(job_key: &str) -> String {
    let namespace = uuid::Uuid::new_v5(
        &uuid::Uuid::NAMESPACE_URL,
        b"urn:reporter-to-release:question",
    );
    uuid::Uuid::new_v5(&namespace, job_key.as_bytes()).to_string()
}

/// Accumulates the consequences of one accepted command.
pub(super) struct Outcome<'a> {
    pub(super) bug: Bug,
    pub(super) actor: &'a Actor,
    pub(super) now: Millis,
    pub(super) events: Vec<EventDraft>,
    pub(super) jobs: Vec<JobDraft>,
}

impl<'a> Outcome<'a> {
    pub(super) fn new(bug: &Bug, actor: &'a Actor, now: Millis) -> Self {
        Outcome {
            bug: bug.clone(),
            actor,
            now,
            events: Vec::new(),
            jobs: Vec::new(),
        }
    }

    pub(super) fn next_version(&self) -> u64 {
        self.bug.version + 1
    }

    pub(super) fn event(&mut self, kind: &str, evidence: &[&str], detail: &[(&str, String)]) {
        let (actor_kind, actor_id) = self.actor.audit_ref();
        let mut details: BTreeMap<String, String> = detail
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        details.insert("state".to_owned(), self.bug.state.as_str().to_owned());
        self.events.push(EventDraft {
            kind: kind.to_owned(),
            actor_kind: actor_kind.to_owned(),
            actor_id,
            at: self.now,
            evidence: evidence.iter().map(|e| (*e).to_owned()).collect(),
            detail: details,
        });
    }

    pub(super) fn job(
        &mut self,
        key: String,
        kind: &str,
        consumer: Consumer,
        payload: &[(&str, String)],
    ) {
        let mut payload: BTreeMap<String, String> = payload
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        payload.insert("bug".to_owned(), self.bug.id.clone());
        self.jobs.push(JobDraft {
            idempotency_key: key,
            kind: kind.to_owned(),
            consumer,
            available_at: self.now,
            payload,
        });
    }

    /// Asks every given reporter one question, each through its own job.
    pub(super) fn ask(&mut self, kind: QuestionKind, reports: &[String]) {
        let (name, job_kind) = match kind {
            QuestionKind::Reproduction => ("reproduction", "ask_reproduction"),
            QuestionKind::Fix => ("fix", "ask_fix"),
        };
        for report in reports {
            let key = format!(
                "ask:{name}:{}:{report}:v{}",
                self.bug.id,
                self.next_version()
            );
            let request_id = question_request_id(&key);
            self.bug.questions.push(Question {
                request_id: request_id.clone(),
                kind,
                report: report.clone(),
                asked_at: self.now,
                expires_at: self.now + QUESTION_TTL_MS,
            });
            self.job(
                key,
                job_kind,
                Consumer::Concierge,
                &[("report", report.clone()), ("request_id", request_id)],
            );
        }
    }

    pub(super) fn escalate_to_human(&mut self, reason: NeedsHumanReason, evidence: &[&str]) {
        self.bug.state = BugState::NeedsHuman;
        self.bug.needs_human = Some(reason);
        let reason_text = serde_plain(reason);
        self.event("needs_human", evidence, &[("reason", reason_text.clone())]);
        let key = format!("needs_human:{}:v{}", self.bug.id, self.next_version());
        self.job(
            key,
            "notify_owners",
            Consumer::Concierge,
            &[("reason", reason_text)],
        );
    }

    /// Clears the fix round so the loop can start again.
    pub(super) fn reset_round(&mut self) {
        let bug = &mut self.bug;
        bug.confirmations.clear();
        bug.questions.clear();
        bug.reproduction = None;
        bug.fix_attempts = 0;
        bug.reproduction_attempts = 0;
        bug.pull_request = None;
        bug.approvals.clear();
        bug.merge = None;
        bug.needs_human = None;
    }

    pub(super) fn finish(mut self) -> Decision {
        self.bug.version = self.next_version();
        Decision {
            bug: self.bug,
            events: self.events,
            jobs: self.jobs,
            changed: true,
        }
    }
}

pub(super) fn serde_plain(reason: NeedsHumanReason) -> String {
    reason.as_str().to_owned()
}

/// Acknowledged, nothing recorded.
pub(super) fn dropped(bug: &Bug) -> Decision {
    Decision {
        bug: bug.clone(),
        events: Vec::new(),
        jobs: Vec::new(),
        changed: false,
    }
}

pub(super) fn required_reason(reason: &Option<String>) -> Result<String, Refusal> {
    match reason.as_deref().map(str::trim) {
        Some(text) if !text.is_empty() => Ok(text.to_owned()),
        _ => Err(refusal(
            RefusalKind::Invalid,
            "reason_required",
            "a “no” needs a reason, in your own words",
        )),
    }
}
