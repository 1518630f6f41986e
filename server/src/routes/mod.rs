//! The `/api` handlers, one file per resource. Each is thin: check the operation's guard,
//! parse the body, call a [`crate::service`] function, answer. The router
//! ([`crate::router`]) builds every route from the operation table.

pub mod bugs;
pub mod crew;
pub mod fix;
pub mod forge;
pub mod live;
pub mod meta;
pub mod outbox;
pub mod owners;
pub mod reporter;
pub mod reporter_fns;
pub mod sandbox;
pub mod spend;
pub mod webhooks;
