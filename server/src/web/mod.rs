//! The HTTP plumbing every route and desk page shares, and nothing a route does: the state,
//! the one refusal type, extractors, the operation table that drives routing and
//! authorisation, session cookies and the script-free renderer.

pub mod error;
pub mod extract;
pub mod listen;
pub mod ops;
pub mod render;
pub mod session;
pub mod state;
pub mod wait;

pub use error::{json_body, no_store, respond, Refused};
pub use extract::{
    client_key_of, client_of, read_body, read_body_to_file, ClientAddr, LimitedBody,
};
pub use ops::{guard, Op, Operation, OPERATIONS};
pub use render::{render_hydrated, render_script_free};
pub use state::{
    desk_sandbox, AppState, LiveInstance, ReleaseProgress, ReleaseStep, Releases, ReporterDesk,
    Rollback, ServerSeat,
};
