//! What runs beside the HTTP server, started by [`crate::start`]: the re-asker (questions
//! whose answer window passed), the GitHub event worker, and the concierge (deliveries to
//! reporters and owners, over the desk's own API with its own token).

pub mod concierge;
pub mod deployer;
pub mod github;
pub mod reasker;
