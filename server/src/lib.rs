//! The `r2r` binary's library: configuration, the HTTP server and the CLI subcommands.
//!
//! Errors: `thiserror` enums inside modules; `anyhow` only in [`cli`]; HTTP answers carry a
//! stable error code and never an internal message.

pub mod airlock_cli;
pub mod airlock_data;
pub mod api;
pub mod auth;
pub mod bench;
pub mod bench_reporter;
pub mod build_info;
pub mod cli;
pub mod clock;
pub mod cluster_cli;
pub mod concierge;
pub mod config;
pub mod crew_api;
pub mod demo;
pub mod demo_drive;
pub mod demo_run;
pub mod desk_pages;
pub mod fix;
pub mod github;
pub mod http;
pub mod notify_api;
pub mod ratelimit;
pub mod reasker;
pub mod recorder;
pub mod reporter;
pub mod rerun;
pub mod routes;
pub mod sandbox_cli;
pub mod secret;
pub mod serve;
pub mod service;
pub mod setup;
mod snapshot;
pub mod spend_api;
pub mod web;
