//! The one refusal every handler answers with: an HTTP status, a stable error code, plain
//! words for the caller (never an internal message) and, for 429/503, when to try again.
//! The failure's cause goes to the log, with the kind of part that failed (storage, the
//! sandbox, the forge, the desk's scratch files, or the desk itself).

use crate::ratelimit::retry_after_seconds;
use app::dto::ApiError;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use std::collections::BTreeMap;

/// A refusal with its HTTP status (and, for 429, how long to wait).
#[derive(Debug)]
pub struct Refused {
    pub(crate) status: StatusCode,
    pub(crate) error: ApiError,
    pub(crate) retry_after: Option<u64>,
}

impl Refused {
    /// A refusal with a stable code and plain words.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        Refused {
            status,
            error: ApiError {
                error: code.to_owned(),
                message: message.into(),
                fields: BTreeMap::new(),
            },
            retry_after: None,
        }
    }

    /// The one answer for a wrong, malformed or missing capability.
    pub fn not_found() -> Self {
        // One answer for a wrong, malformed or missing capability.
        Refused::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "No report matches this link. Check that you copied the whole link, including \
             everything after the #.",
        )
    }

    /// 404 `unknown_bug`: the id is echoed cut to 40 characters, each control or invisible
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
            StatusCode::NOT_FOUND,
            "unknown_bug",
            format!("No bug \"{shown}\"{cut}."),
        )
    }

    /// A storage failure (logged; the caller hears only that nothing was recorded).
    pub fn storage(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "reporter request: storage failed");
        Refused::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_unavailable",
            "The desk could not reach its database; nothing was recorded. Please try again.",
        )
    }

    /// The desk's own scratch files (a temporary folder, a snapshot's files) could not be
    /// made or written (logged with its cause).
    pub fn workspace(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "scratch files failed");
        Refused::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "workspace_unavailable",
            "The desk could not prepare its scratch files (disk full or not writable?); nothing was recorded. Please try again.",
        )
    }

    /// The desk's git forge failed (logged with its cause).
    pub fn forge(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "forge failed");
        Refused::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "forge_unavailable",
            "The desk could not read or write the project's repository; nothing was recorded. Please try again.",
        )
    }

    /// The sandbox failed to run a job (logged with its cause; the caller hears only that
    /// nothing was recorded).
    pub fn sandbox(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "sandbox run failed");
        Refused::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "sandbox_failed",
            format!("The desk's sandbox could not run the job ({error}); nothing was recorded. Please try again."),
        )
    }

    /// The desk itself failed (a task panicked, a value could not be encoded); logged with
    /// its cause.
    pub fn internal(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "internal failure");
        Refused::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "The desk failed while handling this request; nothing was recorded. Please try again.",
        )
    }

    /// Over a rate limit.
    pub fn rate_limited(wait: std::time::Duration) -> Self {
        let seconds = retry_after_seconds(wait);
        let mut refused = Refused::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("Too many requests from your network; try again in {seconds} s."),
        );
        refused.retry_after = Some(seconds);
        refused
    }
}

impl From<domain::workflow::Refusal> for Refused {
    fn from(refusal: domain::workflow::Refusal) -> Self {
        Refused::new(
            StatusCode::from_u16(refusal.kind.http_status()).unwrap_or(StatusCode::CONFLICT),
            &refusal.code,
            refusal.message,
        )
    }
}

impl Refused {
    /// Tells the caller when to try again (`Retry-After`, seconds).
    pub(crate) fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// Per-field reasons, to add to.
    pub fn fields_mut(&mut self) -> &mut BTreeMap<String, String> {
        &mut self.error.fields
    }
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.error)).into_response();
        if let Some(seconds) = self.retry_after {
            if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
        }
        no_store(response)
    }
}

/// Marks an answer as never to be cached.
pub fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Every API answer: the success or the refusal, never cached.
pub fn respond<T: IntoResponse>(result: Result<T, Refused>) -> Response {
    no_store(result.map_or_else(IntoResponse::into_response, IntoResponse::into_response))
}

/// Refuses JSON that is not valid or that gives a key twice in one object (at any depth).
pub fn duplicate_keys(body: &[u8]) -> Result<(), serde_json::Error> {
    serde_json::from_slice::<strict::NoDuplicateKeys>(body).map(|_| ())
}

pub fn json_body<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Refused> {
    // A key given twice is refused, at any depth: "last one wins" would let two readers of
    // the same body (a proxy, a log, this desk) see two different requests.
    duplicate_keys(body).map_err(|error| {
        Refused::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            format!("The body does not match this operation: {error}."),
        )
    })?;
    serde_json::from_slice(body).map_err(|error| {
        Refused::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            format!("The body does not match this operation: {error}."),
        )
    })
}

/// JSON read only to refuse a key given twice in one object.
mod strict {
    use serde::de::{Deserialize, Deserializer, Error, MapAccess, SeqAccess, Visitor};
    use std::fmt;

    /// Any JSON value none of whose objects names a key twice.
    pub struct NoDuplicateKeys;

    impl<'de> Deserialize<'de> for NoDuplicateKeys {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(Walk).map(|()| NoDuplicateKeys)
        }
    }

    struct Walk;

    impl<'de> Visitor<'de> for Walk {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON value")
        }

        fn visit_bool<E: Error>(self, _: bool) -> Result<(), E> {
            Ok(())
        }

        fn visit_i64<E: Error>(self, _: i64) -> Result<(), E> {
            Ok(())
        }

        fn visit_u64<E: Error>(self, _: u64) -> Result<(), E> {
            Ok(())
        }

        fn visit_f64<E: Error>(self, _: f64) -> Result<(), E> {
            Ok(())
        }

        fn visit_str<E: Error>(self, _: &str) -> Result<(), E> {
            Ok(())
        }

        fn visit_unit<E: Error>(self) -> Result<(), E> {
            Ok(())
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
            Ok(())
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                if !seen.insert(key.clone()) {
                    return Err(A::Error::custom(format!("the key {key:?} is given twice")));
                }
                map.next_value::<NoDuplicateKeys>()?;
            }
            Ok(())
        }
    }

    #[cfg(test)]
    mod tests {
        use super::NoDuplicateKeys;

        #[test]
        fn a_key_given_twice_is_refused_at_any_depth_and_nothing_else_is() {
            for fine in [
                r#"{"a":1,"b":[1,2,{"a":2}],"c":{"a":null,"b":true}}"#,
                r#"[{"x":1},{"x":2}]"#,
                r#""text""#,
                r#"-1.5e3"#,
            ] {
                assert!(
                    serde_json::from_str::<NoDuplicateKeys>(fine).is_ok(),
                    "{fine}"
                );
            }
            for twice in [
                r#"{"title":"a","title":"b"}"#,
                r#"{"a":{"b":1,"b":2}}"#,
                r#"[1,{"k":1,"k":1}]"#,
                r#"{"t\u0069tle":"a","title":"b"}"#,
            ] {
                let error = serde_json::from_str::<NoDuplicateKeys>(twice)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                assert!(error.contains("given twice"), "{twice}: {error}");
            }
        }
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
