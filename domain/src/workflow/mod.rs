//! The bug workflow: every transition is a command checked against the actor, the evidence
//! and the current state by [`decide`], a pure function that returns either a typed refusal or
//! the new state together with the audit events and outbox jobs it causes.

mod decide;
mod guard;
mod outcome;
mod types;

pub use decide::{decide, open_bug, open_bug_at};
pub use outcome::question_request_id;
pub use types::*;
