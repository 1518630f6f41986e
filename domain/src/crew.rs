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

/// How long an accepted task is the accepting worker's by default: a worker that dies with it
/// (a crash, a `kill -9`) gives it back when the lease runs out, and the task is offered again.
/// Longer than any task takes (two fix attempts with their model calls and sandbox checks).
pub const TASK_LEASE_MS: Millis = 15 * 60_000;

/// Whether a task accepted at `accepted_at` (not completed) is still held at `now`.
pub fn lease_held(
    accepted_at: Option<Millis>,
    completed: bool,
    now: Millis,
    lease_ms: Millis,
) -> bool {
    completed || accepted_at.is_some_and(|at| now.saturating_sub(at) < lease_ms)
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
