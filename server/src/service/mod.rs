//! What the desk does, independent of HTTP: commands through the engine, the forge's
//! pull requests, merges and deployments. Every function takes the state and typed input and
//! returns a typed result or a [`crate::error::Refused`] (a kind, never an HTTP status); routes and desk pages only parse,
//! call one of these and answer.

pub mod commands;
pub mod crew;
pub mod detect;
pub mod fix;
pub mod forge;
pub mod github_events;
pub mod leadership;
pub mod notify;
pub mod owners;
pub mod recorder;
pub mod release;
pub mod reporter;
pub mod repro_context;
pub mod reproduction;
pub mod rollback;
pub mod snapshot;

/// An owner's free text as the desk keeps it: lines and tabs stay; other control characters
/// (NUL, escape sequences) and every character that renders as nothing (zero-width spaces,
/// the bidirectional overrides that can make a ledger line read backwards, …) are dropped, so
/// a message of nothing visible is empty.
pub fn plain_text(text: &str) -> String {
    text.chars()
        .filter(|c| {
            (!c.is_control() || matches!(c, '\n' | '\t'))
                && !domain::airlock::unicode::is_default_ignorable(*c)
        })
        .collect()
}
