//! The desk's pure engine. Everything here is a function of its inputs: no clock, no random
//! source, no I/O. Callers pass time and randomness in, so the same rules run on the server,
//! in tests and (compiled to WebAssembly) in the browser.

pub mod actor;
pub mod airlock;
pub mod capability;
pub mod cluster;
pub mod codeowners;
pub mod crew;
pub mod desk_action;
pub mod launch;
pub mod ledger;
pub mod notice;
pub mod project;
pub mod spend;
pub mod state;
pub mod test_paths;
pub mod tier;
pub mod workflow;

pub use actor::Role;
pub use airlock::ReportStatus;
pub use capability::{Capability, CapabilityError, CapabilityHash};
pub use desk_action::DeskAction;
pub use state::BugState;
pub use tier::Tier;
