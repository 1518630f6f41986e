//! What an owner can do from the desk, by name: the one list the server's questions and
//! actions, its server functions and the hydrated pages share, so a page that offers an
//! action the server does not know is a compile error, not a refusal found in use. On the
//! wire (forms, JSON) each is its snake_case name.

use serde::{Deserialize, Serialize};

/// An owner's action on the desk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeskAction {
    /// Approve a fix's exact head.
    Approve,
    /// Merge the approved head.
    Merge,
    /// Send the bug back to the start of the loop, with a reason.
    Reopen,
    /// Give a bug that waits for a person back to the crew.
    Retry,
    /// Take a bug over from the crew.
    TakeOver,
    /// Vouch for a bug no reporter has confirmed yet.
    Promote,
    /// Write to one reporter.
    Contact,
    /// Merge the bug's reports into another bug.
    Duplicate,
    /// Invite another owner.
    Invite,
    /// Confirm an owner another owner invited.
    ConfirmOwner,
    /// Serve an earlier release of a service again.
    Rollback,
}

impl DeskAction {
    /// Every action.
    pub const ALL: [DeskAction; 11] = [
        DeskAction::Approve,
        DeskAction::Merge,
        DeskAction::Reopen,
        DeskAction::Retry,
        DeskAction::TakeOver,
        DeskAction::Promote,
        DeskAction::Contact,
        DeskAction::Duplicate,
        DeskAction::Invite,
        DeskAction::ConfirmOwner,
        DeskAction::Rollback,
    ];

    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            DeskAction::Approve => "approve",
            DeskAction::Merge => "merge",
            DeskAction::Reopen => "reopen",
            DeskAction::Retry => "retry",
            DeskAction::TakeOver => "take_over",
            DeskAction::Promote => "promote",
            DeskAction::Contact => "contact",
            DeskAction::Duplicate => "duplicate",
            DeskAction::Invite => "invite",
            DeskAction::ConfirmOwner => "confirm_owner",
            DeskAction::Rollback => "rollback",
        }
    }

    /// Reads a name; `None` for anything else.
    pub fn parse(name: &str) -> Option<DeskAction> {
        DeskAction::ALL.into_iter().find(|a| a.as_str() == name)
    }

    /// Whether it is done on one bug (or, for [`DeskAction::Contact`], on a quarantined
    /// report): asked on the bug view.
    pub fn on_a_bug(self) -> bool {
        !matches!(
            self,
            DeskAction::Invite | DeskAction::ConfirmOwner | DeskAction::Rollback
        )
    }

    /// Whether it is one of the owners page's (about the desk's owners, not a bug).
    pub fn on_the_owners(self) -> bool {
        matches!(self, DeskAction::Invite | DeskAction::ConfirmOwner)
    }
}

impl std::fmt::Display for DeskAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn each_name_reads_back_and_is_its_wire_name() {
        for action in DeskAction::ALL {
            assert_eq!(DeskAction::parse(action.as_str()), Some(action));
            assert_eq!(
                serde_json::to_string(&action).unwrap(),
                format!("\"{}\"", action.as_str())
            );
        }
        for stranger in ["", "Approve", "approve ", "delete", "take-over"] {
            assert_eq!(DeskAction::parse(stranger), None, "{stranger:?}");
        }
        let on_bugs = DeskAction::ALL.iter().filter(|a| a.on_a_bug()).count();
        let on_owners = DeskAction::ALL.iter().filter(|a| a.on_the_owners()).count();
        assert_eq!((on_bugs, on_owners), (8, 2));
    }
}
