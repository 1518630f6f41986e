//! The crew's hand-offs and heartbeats, as rules.
//!
//! A hand-off is a task one crew role addresses to another, recorded by the desk with its
//! sender, its addressee and the SHA-256 of its exact body text. A role accepts a task only
//! by naming its id, its own role as the addressee and the hash of the body it read — so a
//! task cannot be taken by another role, nor acted on in a form other than the one sent.
//! The desk calls the crew connected only when all four roles sent a heartbeat in the last
//! 90 seconds.

use crate::workflow::Millis;
use crate::Role;
use sha2::{Digest, Sha256};

/// The four roles that make up the crew (the recorder and the concierge stand apart).
pub const CREW_ROLES: [Role; 4] = [Role::Manager, Role::Reproducer, Role::Fixer, Role::Reviewer];

/// A heartbeat older than this does not count.
pub const HEARTBEAT_FRESH_MS: Millis = 90_000;

/// Longest task body (bytes).
pub const MAX_TASK_BODY: usize = 16 * 1024;

/// The hash a task body is known by: SHA-256 of its exact text, lower-case hex.
pub fn body_hash(body: &str) -> String {
    hex::encode(Sha256::digest(body.as_bytes()))
}

/// How long an accepted task is the accepting worker's by default without a renewal: a worker
/// that dies with it (a crash, a `kill -9`) gives it back when the lease runs out, and the task
/// is offered again. A live worker renews it every third of it while it works, however long
/// the work takes, so it can be short: a restarted desk goes on within about this long.
pub const TASK_LEASE_MS: Millis = 20_000;

/// Whether a task accepted at `accepted_at` (not completed) is still held at `now`.
pub fn lease_held(
    accepted_at: Option<Millis>,
    completed: bool,
    now: Millis,
    lease_ms: Millis,
) -> bool {
    completed || accepted_at.is_some_and(|at| now.saturating_sub(at) < lease_ms)
}

/// The crew's step for a bug in `state`: the task kind that moves it on and the role it is
/// addressed to, or `None` when the crew holds no step there (every other state waits for a
/// person, a reporter or the release). A `new` bug goes to the reproducer when the manager's
/// own triage gave no answer.
pub fn crew_step(state: crate::BugState) -> Option<(&'static str, Role)> {
    use crate::BugState as S;
    match state {
        S::New | S::Triaged | S::Reopened | S::Reproducing => Some(("reproduce", Role::Reproducer)),
        S::Confirmed | S::Fixing => Some(("fix", Role::Fixer)),
        _ => None,
    }
}

/// How often a crew step that ended without moving its bug on is tried again, and how long
/// the crew waits in between: after the n-th failure, `backoff_ms · 2^(n-1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all (the first included), at least 1.
    pub attempts: u32,
    /// The wait after the first failure.
    pub backoff_ms: Millis,
}

/// The default: three tries, 30 s then 60 s apart.
pub const RETRY_POLICY: RetryPolicy = RetryPolicy {
    attempts: 3,
    backoff_ms: 30_000,
};

/// What the desk knows of one task of a bug, for [`step_verdict`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepTask {
    /// Its kind (`reproduce`, `fix`, …).
    pub kind: String,
    /// When it was sent.
    pub created_at: Millis,
    /// When it was completed.
    pub completed_at: Option<Millis>,
}

/// Where a bug's crew step stands, and what the manager is to do about it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum StepVerdict {
    /// A task of the step is open: a worker has it, or takes it next (a dead worker's lease
    /// runs out and the task is offered again). Nothing to do.
    Working,
    /// The last try ended without moving the bug on; the next may be sent at `until`.
    Waiting {
        /// Tries that ended so far.
        failed: u32,
        /// When the next try may be sent (ms since the epoch).
        until: Millis,
    },
    /// Send try number `attempt` (1 for the first).
    HandOff {
        /// Its number.
        attempt: u32,
    },
    /// Every try ended without moving the bug on: a person must step in.
    GiveUp {
        /// Tries that ended.
        failed: u32,
    },
}

/// The verdict for a bug whose crew step is `kind`, unchanged since `since` (the time of its
/// last recorded change), given its tasks. Only tasks of this step count: open ones (however
/// old: the task whose worker made the change is one of them, and a dead worker's is offered
/// again when its lease runs out) and those completed since the change. A completed task
/// whose bug is still at this step ended without moving it on — the sandbox or the desk was
/// unreachable, the worker gave up — and counts as a failed try.
pub fn step_verdict(
    kind: &str,
    since: Millis,
    tasks: &[StepTask],
    now: Millis,
    policy: RetryPolicy,
) -> StepVerdict {
    let ours = tasks
        .iter()
        .filter(|t| t.kind == kind && t.completed_at.is_none_or(|at| at >= since));
    let mut failed = 0u32;
    let mut last_end = since;
    for task in ours {
        match task.completed_at {
            None => return StepVerdict::Working,
            Some(at) => {
                failed += 1;
                last_end = last_end.max(at);
            }
        }
    }
    if failed == 0 {
        return StepVerdict::HandOff { attempt: 1 };
    }
    if failed >= policy.attempts.max(1) {
        return StepVerdict::GiveUp { failed };
    }
    let wait = policy
        .backoff_ms
        .saturating_mul(1_i64 << (failed - 1).min(20));
    let until = last_end.saturating_add(wait);
    if now < until {
        StepVerdict::Waiting { failed, until }
    } else {
        StepVerdict::HandOff {
            attempt: failed + 1,
        }
    }
}

/// A recorded task, as far as the rules need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskFacts {
    /// Who sent it.
    pub sender: Role,
    /// Whom it is for.
    pub addressed_to: Role,
    /// Hash of its body.
    pub body_sha256: String,
    /// Whether it is taken: completed, or accepted under a lease that has not run out
    /// ([`lease_held`]).
    pub accepted: bool,
}

/// Why a hand-off was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskRefusal {
    /// Sender or addressee is not a crew role, or a role addressed itself.
    BadAddress(String),
    /// The body is empty or too long.
    BadBody(String),
    /// The caller is not the addressee, or named another one.
    NotYours(String),
    /// The body hash does not match.
    BodyChanged,
    /// Someone accepted it already.
    AlreadyAccepted,
}

impl std::fmt::Display for TaskRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskRefusal::BadAddress(why)
            | TaskRefusal::BadBody(why)
            | TaskRefusal::NotYours(why) => f.write_str(why),
            TaskRefusal::BodyChanged => f.write_str(
                "the body hash does not match the task as it was sent; act only on the exact body",
            ),
            TaskRefusal::AlreadyAccepted => f.write_str("this task was accepted already"),
        }
    }
}

/// Checks a new hand-off from `sender` to `addressed_to` with `body`.
pub fn check_new(sender: Role, addressed_to: Role, body: &str) -> Result<(), TaskRefusal> {
    if !sender.is_crew() || !addressed_to.is_crew() {
        return Err(TaskRefusal::BadAddress(format!(
            "hand-offs go between the crew's roles (manager, reproducer, fixer, reviewer), not {} → {}",
            sender.as_str(),
            addressed_to.as_str()
        )));
    }
    if sender == addressed_to {
        return Err(TaskRefusal::BadAddress(format!(
            "{} cannot hand a task to itself",
            sender.as_str()
        )));
    }
    if body.trim().is_empty() || body.len() > MAX_TASK_BODY {
        return Err(TaskRefusal::BadBody(format!(
            "body: 1 to {MAX_TASK_BODY} bytes (got {})",
            body.len()
        )));
    }
    Ok(())
}

/// Checks `caller`'s acceptance of `task`, naming `addressed_to` and the body's hash.
pub fn check_accept(
    task: &TaskFacts,
    caller: Role,
    addressed_to: Role,
    body_sha256: &str,
) -> Result<(), TaskRefusal> {
    if caller != task.addressed_to || addressed_to != task.addressed_to {
        return Err(TaskRefusal::NotYours(format!(
            "this task is addressed to the {}; {} named {}",
            task.addressed_to.as_str(),
            caller.as_str(),
            addressed_to.as_str()
        )));
    }
    if !body_sha256.eq_ignore_ascii_case(&task.body_sha256) {
        return Err(TaskRefusal::BodyChanged);
    }
    if task.accepted {
        return Err(TaskRefusal::AlreadyAccepted);
    }
    Ok(())
}

/// One role's connection as the desk shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RoleConnection {
    /// The role.
    pub role: Role,
    /// Its last heartbeat.
    pub last_seen: Option<Millis>,
    /// How old that is.
    pub age_ms: Option<Millis>,
    /// Younger than [`HEARTBEAT_FRESH_MS`].
    pub fresh: bool,
}

/// Each crew role's connection at `now`, from `(role, last heartbeat)` pairs.
pub fn connections(heartbeats: &[(Role, Millis)], now: Millis) -> Vec<RoleConnection> {
    CREW_ROLES
        .iter()
        .map(|role| connection(heartbeats, *role, now))
        .collect()
}

/// One role's connection at `now` (the crew's four, or the recorder beside them).
pub fn connection(heartbeats: &[(Role, Millis)], role: Role, now: Millis) -> RoleConnection {
    let last_seen = heartbeats
        .iter()
        .filter(|(r, _)| *r == role)
        .map(|(_, at)| *at)
        .max();
    let age_ms = last_seen.map(|at| now.saturating_sub(at).max(0));
    RoleConnection {
        role,
        last_seen,
        age_ms,
        fresh: age_ms.is_some_and(|age| age < HEARTBEAT_FRESH_MS),
    }
}

/// Connected only when all four roles are fresh.
pub fn connected(connections: &[RoleConnection]) -> bool {
    connections.len() == CREW_ROLES.len() && connections.iter().all(|c| c.fresh)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> TaskFacts {
        TaskFacts {
            sender: Role::Manager,
            addressed_to: Role::Fixer,
            body_sha256: body_hash("{\"bug\":\"bug-1\"}"),
            accepted: false,
        }
    }

    #[test]
    fn a_step_is_sent_once_retried_after_a_growing_wait_then_given_to_a_person() {
        let policy = RetryPolicy {
            attempts: 3,
            backoff_ms: 1_000,
        };
        let task = |kind: &str, created_at, completed_at| StepTask {
            kind: kind.into(),
            created_at,
            completed_at,
        };
        // Nothing sent since the bug changed (at 100): send the first try.
        assert_eq!(
            step_verdict("reproduce", 100, &[], 150, policy),
            StepVerdict::HandOff { attempt: 1 }
        );
        // Tasks of an earlier round (completed before the change) and of another kind do not
        // count.
        let old = [task("reproduce", 10, Some(90)), task("fix", 120, Some(130))];
        assert_eq!(
            step_verdict("reproduce", 100, &old, 150, policy),
            StepVerdict::HandOff { attempt: 1 }
        );
        // Sent before the change, still open (its worker made the change, or died): working.
        let open = [task("reproduce", 90, None)];
        assert_eq!(
            step_verdict("reproduce", 100, &open, 10_000, policy),
            StepVerdict::Working
        );
        // One try ended at 200 without moving the bug: wait 1 s, then try again.
        let one = [task("reproduce", 90, Some(200))];
        assert_eq!(
            step_verdict("reproduce", 100, &one, 1_199, policy),
            StepVerdict::Waiting {
                failed: 1,
                until: 1_200
            }
        );
        assert_eq!(
            step_verdict("reproduce", 100, &one, 1_200, policy),
            StepVerdict::HandOff { attempt: 2 }
        );
        // Two ended: the wait doubles from the last end.
        let two = [
            task("reproduce", 90, Some(200)),
            task("reproduce", 1_300, Some(1_500)),
        ];
        assert_eq!(
            step_verdict("reproduce", 100, &two, 2_000, policy),
            StepVerdict::Waiting {
                failed: 2,
                until: 3_500
            }
        );
        assert_eq!(
            step_verdict("reproduce", 100, &two, 3_500, policy),
            StepVerdict::HandOff { attempt: 3 }
        );
        // Three ended: a person.
        let three = [
            task("reproduce", 90, Some(200)),
            task("reproduce", 1_300, Some(1_500)),
            task("reproduce", 3_600, Some(3_700)),
        ];
        assert_eq!(
            step_verdict("reproduce", 100, &three, 1_000_000, policy),
            StepVerdict::GiveUp { failed: 3 }
        );
        // A try still open wins over any count.
        let mut busy = three.to_vec();
        busy.push(task("reproduce", 3_800, None));
        assert_eq!(
            step_verdict("reproduce", 100, &busy, 1_000_000, policy),
            StepVerdict::Working
        );
        // A policy of zero tries still sends one.
        let none = RetryPolicy {
            attempts: 0,
            backoff_ms: 0,
        };
        assert_eq!(
            step_verdict("fix", 0, &[], 0, none),
            StepVerdict::HandOff { attempt: 1 }
        );
        assert_eq!(
            step_verdict("fix", 0, &[task("fix", 1, Some(2))], 3, none),
            StepVerdict::GiveUp { failed: 1 }
        );
    }

    #[test]
    fn every_state_the_crew_holds_has_a_step_and_no_other_does() {
        use crate::BugState as S;
        for state in S::ALL {
            let expected = match state {
                S::New | S::Triaged | S::Reopened | S::Reproducing => {
                    Some(("reproduce", Role::Reproducer))
                }
                S::Confirmed | S::Fixing => Some(("fix", Role::Fixer)),
                _ => None,
            };
            assert_eq!(crew_step(state), expected, "{state:?}");
        }
    }

    #[test]
    fn a_lease_holds_until_it_runs_out_and_a_completed_task_is_held_for_good() {
        assert!(
            !lease_held(None, false, 5_000, 1_000),
            "never accepted: free"
        );
        assert!(lease_held(Some(4_500), false, 5_000, 1_000));
        assert!(
            !lease_held(Some(4_000), false, 5_000, 1_000),
            "ran out exactly at the lease"
        );
        assert!(lease_held(Some(1), true, 1_000_000, 1_000), "completed");
    }

    #[test]
    fn only_the_addressee_with_the_exact_body_accepts() {
        let task = task();
        let hash = body_hash("{\"bug\":\"bug-1\"}");
        assert_eq!(check_accept(&task, Role::Fixer, Role::Fixer, &hash), Ok(()));
        assert_eq!(
            check_accept(&task, Role::Fixer, Role::Fixer, &hash.to_uppercase()),
            Ok(())
        );
        assert!(matches!(
            check_accept(&task, Role::Reviewer, Role::Fixer, &hash),
            Err(TaskRefusal::NotYours(_))
        ));
        assert!(matches!(
            check_accept(&task, Role::Fixer, Role::Reviewer, &hash),
            Err(TaskRefusal::NotYours(_))
        ));
        assert_eq!(
            check_accept(
                &task,
                Role::Fixer,
                Role::Fixer,
                &body_hash("{\"bug\":\"bug-2\"}")
            ),
            Err(TaskRefusal::BodyChanged)
        );
        let taken = TaskFacts {
            accepted: true,
            ..task
        };
        assert_eq!(
            check_accept(&taken, Role::Fixer, Role::Fixer, &hash),
            Err(TaskRefusal::AlreadyAccepted)
        );
    }

    #[test]
    fn hand_offs_stay_inside_the_crew() {
        assert_eq!(check_new(Role::Manager, Role::Reproducer, "{}"), Ok(()));
        for (from, to) in [
            (Role::Manager, Role::Manager),
            (Role::Recorder, Role::Fixer),
            (Role::Manager, Role::Concierge),
        ] {
            assert!(matches!(
                check_new(from, to, "{}"),
                Err(TaskRefusal::BadAddress(_))
            ));
        }
        assert!(check_new(Role::Manager, Role::Fixer, " ").is_err());
        assert!(check_new(Role::Manager, Role::Fixer, &"x".repeat(MAX_TASK_BODY + 1)).is_err());
        assert_eq!(
            body_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn the_crew_is_connected_only_with_four_fresh_heartbeats() {
        let now = 1_000_000;
        let all: Vec<(Role, Millis)> = CREW_ROLES.iter().map(|r| (*r, now - 1_000)).collect();
        assert!(connected(&connections(&all, now)));
        let mut stale = all.clone();
        stale[2].1 = now - HEARTBEAT_FRESH_MS;
        let view = connections(&stale, now);
        assert!(!connected(&view));
        assert!(!view[2].fresh);
        assert_eq!(view[2].age_ms, Some(HEARTBEAT_FRESH_MS));
        assert!(!connected(&connections(&all[..3], now)), "three of four");
        // A newer heartbeat of the same role wins; other roles' beats do not count for it.
        stale.push((CREW_ROLES[2], now - 5));
        assert!(connected(&connections(&stale, now)));
        let recorder_only = [(Role::Recorder, now)];
        assert!(connections(&recorder_only, now).iter().all(|c| !c.fresh));
    }
}
