//! Who may issue a command: the authorization checks every arm of `decide` starts with.

use super::types::*;
use crate::Role;

pub(super) fn refusal(kind: RefusalKind, code: &str, message: impl Into<String>) -> Refusal {
    Refusal {
        kind,
        code: code.to_owned(),
        message: message.into(),
    }
}

pub(super) fn conflict(bug: &Bug, command: &Command) -> Refusal {
    refusal(
        RefusalKind::Conflict,
        "wrong_state",
        format!(
            "{} is not possible while the bug is {}",
            command.name(),
            bug.state
        ),
    )
}

pub(super) fn unauthenticated() -> Refusal {
    refusal(
        RefusalKind::Unauthenticated,
        "unauthenticated",
        "a valid credential is required",
    )
}

/// Only these machine roles.
pub(super) fn require_role(actor: &Actor, roles: &[Role]) -> Result<Role, Refusal> {
    match actor {
        Actor::Anonymous => Err(unauthenticated()),
        Actor::Role { role } if roles.contains(role) => Ok(*role),
        _ => Err(refusal(
            RefusalKind::Forbidden,
            "forbidden_actor",
            format!(
                "only {} may do this",
                roles
                    .iter()
                    .map(|r| r.as_str())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        )),
    }
}

/// Only an owner (a person signed in to the desk).
pub(super) fn require_owner(actor: &Actor, what: &str) -> Result<(), Refusal> {
    match actor {
        Actor::Anonymous => Err(unauthenticated()),
        Actor::Owner { .. } => Ok(()),
        _ => Err(refusal(
            RefusalKind::Forbidden,
            "forbidden_actor",
            format!("only an owner may {what}"),
        )),
    }
}

/// Only a reporter of a report in this cluster.
pub(super) fn require_reporter<'a>(bug: &Bug, actor: &'a Actor) -> Result<&'a str, Refusal> {
    match actor {
        Actor::Anonymous => Err(unauthenticated()),
        Actor::Reporter { report } if bug.reports.contains(report) => Ok(report),
        _ => Err(refusal(
            RefusalKind::Forbidden,
            "not_a_reporter_of_this_bug",
            "only a reporter of this bug may answer for it",
        )),
    }
}

/// Only a verified person: an owner, or a GitHub user who is not a bot.
pub(super) fn require_human(actor: &Actor) -> Result<Human, Refusal> {
    match actor {
        Actor::Anonymous => Err(unauthenticated()),
        _ => actor.human().ok_or_else(|| {
            refusal(
                RefusalKind::Forbidden,
                "humans_only",
                "only a person may approve or merge; bots, crew roles and reporters may not",
            )
        }),
    }
}

pub(super) fn require_actor(actor: &Actor, wanted: &Actor, who: &str) -> Result<(), Refusal> {
    match actor {
        Actor::Anonymous => Err(unauthenticated()),
        _ if actor == wanted => Ok(()),
        _ => Err(refusal(
            RefusalKind::Forbidden,
            "forbidden_actor",
            format!("only {who} may do this"),
        )),
    }
}
