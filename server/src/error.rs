//! The desk's one refusal, beneath every layer that answers: its kind (never an HTTP status:
//! `web::error` alone turns a kind into a status and a body), the stable code the API
//! documents, plain words for the caller and, for a refusal that passes, when to try again.
//! A failure of a part of the desk (storage, the sandbox, the forge, scratch files) is logged
//! with its cause where it is built; the caller hears only which part failed and that nothing
//! was recorded.

use app::dto::ApiError;
use std::collections::BTreeMap;

/// What kind of refusal: decides the answer's status in one place (`web::error`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The request is malformed (not the kind of request this operation takes at all).
    BadRequest,
    /// No credential, or one the desk does not accept.
    Unauthenticated,
    /// A valid credential without the right to do this.
    Forbidden,
    /// Nothing of that name (or a capability that matches nothing).
    NotFound,
    /// The caller will not accept any answer the desk can give.
    NotAcceptable,
    /// The caller took too long to send its request.
    TimedOut,
    /// The request contradicts the current state (a guard, a version, a duplicate).
    Conflict,
    /// The request is larger than the desk takes.
    TooLarge,
    /// A body of a type the operation does not read.
    UnsupportedMediaType,
    /// A field or a value is not acceptable; the fields say which.
    Invalid,
    /// Over a limit; `retry_after` says when to try again.
    RateLimited,
    /// The desk itself failed.
    Internal,
    /// A service the desk asked (the forge, a model, a released instance) answered wrongly.
    Upstream,
    /// A part the desk needs (its database, sandbox, scratch files) is unavailable for now.
    Unavailable,
    /// The desk's disk or a configured space limit is full.
    OutOfSpace,
}

/// A refusal: its kind, its stable code and words, and (for a refusal that passes) when to
/// try again.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}", .error.error, .error.message)]
pub struct Refused {
    pub(crate) kind: Kind,
    pub(crate) error: ApiError,
    pub(crate) retry_after: Option<u64>,
}

impl Refused {
    /// A refusal with a stable code and plain words.
    pub fn new(kind: Kind, code: &str, message: impl Into<String>) -> Self {
        Refused {
            kind,
            error: ApiError {
                error: code.to_owned(),
                message: message.into(),
                fields: BTreeMap::new(),
            },
            retry_after: None,
        }
    }

    /// Its kind.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The one answer for a wrong, malformed or missing capability.
    pub fn not_found() -> Self {
        Refused::new(
            Kind::NotFound,
            "not_found",
            "No report matches this link. Check that you copied the whole link, including \
             everything after the #.",
        )
    }

    /// `unknown_bug`: the id is echoed cut to 40 characters, each control or invisible
    /// formatting character shown as `�`, so a caller's megabyte of text or its terminal
    /// escapes never come back.
    pub fn unknown_bug(id: &str) -> Self {
        let shown: String = id
            .chars()
            .take(40)
            .map(|c| {
                if c.is_control() || domain::airlock::unicode::is_default_ignorable(c) {
                    '\u{fffd}'
                } else {
                    c
                }
            })
            .collect();
        let cut = if id.chars().count() > 40 { "…" } else { "" };
        Refused::new(
            Kind::NotFound,
            "unknown_bug",
            format!("No bug \"{shown}\"{cut}."),
        )
    }

    /// A storage failure (logged; the caller hears only that nothing was recorded).
    pub fn storage(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "reporter request: storage failed");
        Refused::new(
            Kind::Unavailable,
            "storage_unavailable",
            "The desk could not reach its database; nothing was recorded. Please try again.",
        )
    }

    /// The desk's own scratch files (a temporary folder, a snapshot's files) could not be
    /// made or written (logged with its cause).
    pub fn workspace(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "scratch files failed");
        Refused::new(
            Kind::Unavailable,
            "workspace_unavailable",
            "The desk could not prepare its scratch files (disk full or not writable?); nothing was recorded. Please try again.",
        )
    }

    /// The desk's git forge failed (logged with its cause).
    pub fn forge(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "forge failed");
        Refused::new(
            Kind::Unavailable,
            "forge_unavailable",
            "The desk could not read or write the project's repository; nothing was recorded. Please try again.",
        )
    }

    /// The sandbox failed to run a job (logged with its cause; the caller hears only that
    /// nothing was recorded).
    pub fn sandbox(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "sandbox run failed");
        Refused::new(
            Kind::Unavailable,
            "sandbox_failed",
            format!("The desk's sandbox could not run the job ({error}); nothing was recorded. Please try again."),
        )
    }

    /// The desk itself failed (a task panicked, a value could not be encoded); logged with
    /// its cause.
    pub fn internal(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "internal failure");
        Refused::new(
            Kind::Internal,
            "internal",
            "The desk failed while handling this request; nothing was recorded. Please try again.",
        )
    }

    /// Over a rate limit.
    pub fn rate_limited(wait: std::time::Duration) -> Self {
        let seconds = crate::ratelimit::retry_after_seconds(wait);
        Refused::new(
            Kind::RateLimited,
            "rate_limited",
            format!("Too many requests from your network; try again in {seconds} s."),
        )
        .with_retry_after(seconds)
    }

    /// Tells the caller when to try again (seconds).
    pub(crate) fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// Per-field reasons, to add to.
    pub fn fields_mut(&mut self) -> &mut BTreeMap<String, String> {
        &mut self.error.fields
    }
}

impl From<domain::workflow::RefusalKind> for Kind {
    fn from(kind: domain::workflow::RefusalKind) -> Self {
        use domain::workflow::RefusalKind;
        match kind {
            RefusalKind::Unauthenticated => Kind::Unauthenticated,
            RefusalKind::Forbidden => Kind::Forbidden,
            RefusalKind::Conflict => Kind::Conflict,
            RefusalKind::Invalid => Kind::Invalid,
        }
    }
}

impl From<domain::workflow::Refusal> for Refused {
    fn from(refusal: domain::workflow::Refusal) -> Self {
        Refused::new(refusal.kind.into(), &refusal.code, refusal.message)
    }
}

impl From<store::StoreError> for Refused {
    fn from(error: store::StoreError) -> Self {
        Refused::storage(error)
    }
}

#[cfg(test)]
mod tests {
    use super::Refused;

    #[test]
    fn an_unknown_bug_is_echoed_short_and_quoted() {
        let long = format!("bug-{}", "x".repeat(100_000));
        let refused = Refused::unknown_bug(&long);
        assert_eq!(refused.error.error, "unknown_bug");
        assert!(
            refused.error.message.len() < 80,
            "{}",
            refused.error.message
        );
        assert!(refused.error.message.ends_with("…."));
        let hostile = Refused::unknown_bug("bug-1\u{1b}[31m<script>\n");
        assert!(
            !hostile.error.message.contains('\u{1b}') && !hostile.error.message.contains('\n'),
            "{}",
            hostile.error.message
        );
        for flood in ["\u{1b}".repeat(200), "\u{202e}".repeat(100)] {
            let message = Refused::unknown_bug(&flood).error.message;
            assert!(message.chars().count() < 60, "{message}");
            assert!(!message.contains('\u{202e}') && !message.contains('\u{1b}'));
        }
        assert_eq!(
            Refused::unknown_bug("bug-1").error.message,
            "No bug \"bug-1\"."
        );
    }
}
