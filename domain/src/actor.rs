//! Who may act on the desk. Each machine role holds its own bearer token.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A machine role with its own bearer token.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Delivers notifications to reporters; never sees engineering work.
    Concierge,
    /// Crew: routes work between the other crew roles.
    Manager,
    /// Crew: writes the failing test that proves a bug.
    Reproducer,
    /// Crew: drafts a bounded fix.
    Fixer,
    /// Crew: writes advisory review notes.
    Reviewer,
    /// Verifies that an exact commit is live and records the deployment.
    Recorder,
}

impl Role {
    /// Every role, in the order the setup file lists them.
    pub const ALL: [Role; 6] = [
        Role::Concierge,
        Role::Manager,
        Role::Reproducer,
        Role::Fixer,
        Role::Reviewer,
        Role::Recorder,
    ];

    /// The lower-case name used in URLs, logs and configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Concierge => "concierge",
            Role::Manager => "manager",
            Role::Reproducer => "reproducer",
            Role::Fixer => "fixer",
            Role::Reviewer => "reviewer",
            Role::Recorder => "recorder",
        }
    }

    /// The environment variable holding this role's bearer token.
    pub fn token_variable(self) -> &'static str {
        match self {
            Role::Concierge => "R2R_CONCIERGE_TOKEN",
            Role::Manager => "R2R_MANAGER_TOKEN",
            Role::Reproducer => "R2R_REPRODUCER_TOKEN",
            Role::Fixer => "R2R_FIXER_TOKEN",
            Role::Reviewer => "R2R_REVIEWER_TOKEN",
            Role::Recorder => "R2R_RECORDER_TOKEN",
        }
    }

    /// Whether the role belongs to the AI crew (which may draft but never decide).
    pub fn is_crew(self) -> bool {
        matches!(
            self,
            Role::Manager | Role::Reproducer | Role::Fixer | Role::Reviewer
        )
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_has_a_distinct_token_variable_named_after_it() {
        let mut seen = std::collections::HashSet::new();
        for role in Role::ALL {
            let variable = role.token_variable();
            assert!(seen.insert(variable), "{variable} is used twice");
            assert_eq!(
                variable,
                format!("R2R_{}_TOKEN", role.as_str().to_uppercase())
            );
        }
    }

    #[test]
    fn only_the_four_crew_roles_are_crew() {
        let crew: Vec<_> = Role::ALL.into_iter().filter(|r| r.is_crew()).collect();
        assert_eq!(
            crew,
            [Role::Manager, Role::Reproducer, Role::Fixer, Role::Reviewer]
        );
    }
}
