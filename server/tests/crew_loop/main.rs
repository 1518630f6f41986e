//! The crew through the whole loop: its routes and hand-offs, the crew service in-process and
//! as separate processes, the fixer's bounded attempts, the desk's re-runs of proposed tests,
//! and the fault suite (SIGKILL at every step).
//! One module per former test binary; together they link the server once, not once each.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod crew;
mod crew_service;
mod fixer;
mod rerun;
