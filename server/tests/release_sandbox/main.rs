//! Releases and the sandbox: ShopLite built, gated, started and recorded by the deployer (both
//! backends), the recorder's checks, the acceptance run, and sandbox worker hosts with their
//! leases and outcomes.
//! One module per former test binary; together they link the server once, not once each.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod demo;
mod recorder;
mod sandbox_workers;
