//! The desk's API, pages and command line over HTTP against the real binary on 127.0.0.1:
//! sign-in and every route's credentials, the reporter's intake and tracking, the concierge,
//! projects, GitHub's webhooks through its double, the ledger and airlock commands, serving
//! under slow and broken clients, spend, and the attack suite (one module per area under
//! `attacks/`).
//! One module per former test binary; together they link the server once, not once each.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod airlock_cli;
mod attacks;
mod auth;
mod concierge;
mod desk_projects;
mod github;
mod health_unavailable;
mod ledger_cli;
mod local_forge;
mod reporter;
mod serve;
mod spend;
