//! What this binary is: version and the git commit it was built from.

/// The crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The full git commit (40 hex characters), or `unknown` outside a git checkout.
pub const COMMIT: &str = env!("R2R_GIT_COMMIT");

/// Whether tracked files differed from that commit at build time.
pub const DIRTY: &str = env!("R2R_GIT_DIRTY");
