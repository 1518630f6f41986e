//! The `/api` handlers, one file per resource. Each is thin: check the operation's guard,
//! parse the body, call a [`crate::service`] function, answer. The router
//! ([`crate::router`]) builds every route from the operation table.

pub mod forge;
