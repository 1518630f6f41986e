//! What the desk does, independent of HTTP: commands through the engine, the forge's
//! pull requests, merges and deployments. Every function takes the state and typed input and
//! returns a typed result or a [`crate::web::Refused`]; routes and desk pages only parse,
//! call one of these and answer.

pub mod commands;
pub mod forge;
