//! Running the crew's test code, and judging what the run proves.
//!
//! [`process`] runs one command with a clean environment and a wall-clock deadline that kills
//! the whole process group. [`classify`] reads a test runner's output and decides whether a
//! run is a genuine reproduction: the runner finished, printed its summary, and the new test
//! failed on an assertion. A compile error, a panic outside an assertion or a timeout is not.
//!
//! The isolating backends (Docker and bubblewrap) build on the same [`process::Job`] and
//! [`process::RunOutcome`] types; the host runner here is labelled `host` in every outcome so
//! evidence never claims isolation it did not have.

pub mod classify;
pub mod process;

pub use classify::{classify_cargo_test, NotReproduced, Verdict};
pub use process::{run_on_host, Job, RunOutcome};
