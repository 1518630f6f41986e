//! What runs beside the HTTP server, started by [`crate::start`]: the re-asker (questions
//! whose answer window passed), the GitHub event worker, the concierge (deliveries to
//! reporters and owners, over the desk's own API with its own token), and the change counter
//! that wakes the desk's live pages, and the sweep that has a distrusted worker's
//! measurements made again.

pub mod concierge;
pub mod deployer;
pub mod distrust;
pub mod github;
pub mod instances;
pub mod reasker;
pub mod wakeups;
