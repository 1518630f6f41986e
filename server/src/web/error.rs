//! The one place a refusal becomes an HTTP answer: its kind decides the status, the body is
//! the stable code and plain words (never an internal message) and, for 429/503, when to try
//! again. The refusal itself ([`Refused`]) belongs to the services and knows nothing of HTTP.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;

pub use crate::error::{Kind, Refused};

/// The HTTP status of a refusal of kind `kind`.
pub fn status_of(kind: Kind) -> StatusCode {
    match kind {
        Kind::BadRequest => StatusCode::BAD_REQUEST,
        Kind::Unauthenticated => StatusCode::UNAUTHORIZED,
        Kind::Forbidden => StatusCode::FORBIDDEN,
        Kind::NotFound => StatusCode::NOT_FOUND,
        Kind::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
        Kind::TimedOut => StatusCode::REQUEST_TIMEOUT,
        Kind::Conflict => StatusCode::CONFLICT,
        Kind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Kind::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Kind::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
        Kind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        Kind::Upstream => StatusCode::BAD_GATEWAY,
        Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Kind::OutOfSpace => StatusCode::INSUFFICIENT_STORAGE,
    }
}

impl Refused {
    /// The HTTP status this refusal answers with.
    pub fn status(&self) -> StatusCode {
        status_of(self.kind)
    }
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let mut response = (self.status(), Json(self.error)).into_response();
        if let Some(seconds) = self.retry_after {
            if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
        }
        no_store(response)
    }
}

/// The answer to a request whose handler panicked (the listener would otherwise drop the
/// connection without a word): 500 `internal`, in the API's error body, and the panic in the
/// log. What the request had already written stays written, so the words do not promise
/// that nothing was recorded.
pub fn panicked(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    tracing::error!(panic = what, "a request's handler panicked");
    let mut refused = Refused::internal(what);
    refused.error.message = "The desk failed while handling this request. Look at what you asked for before trying again: part of it may have been recorded.".to_owned();
    refused.into_response()
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
            Kind::Invalid,
            "invalid_body",
            format!("The body does not match this operation: {error}."),
        )
    })?;
    serde_json::from_slice(body).map_err(|error| {
        Refused::new(
            Kind::Invalid,
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
mod status_tests {
    use super::{status_of, Kind, Refused};
    use domain::workflow::{Refusal, RefusalKind};

    #[test]
    fn refusals_map_to_http_statuses() {
        let status = |kind| {
            Refused::from(Refusal {
                kind,
                code: "x".to_owned(),
                message: String::new(),
            })
            .status()
            .as_u16()
        };
        assert_eq!(status(RefusalKind::Unauthenticated), 401);
        assert_eq!(status(RefusalKind::Forbidden), 403);
        assert_eq!(status(RefusalKind::Conflict), 409);
        assert_eq!(status(RefusalKind::Invalid), 422);
        // Every kind answers a client or server error, never a success.
        for kind in [
            Kind::BadRequest,
            Kind::Unauthenticated,
            Kind::Forbidden,
            Kind::NotFound,
            Kind::NotAcceptable,
            Kind::TimedOut,
            Kind::Conflict,
            Kind::TooLarge,
            Kind::UnsupportedMediaType,
            Kind::Invalid,
            Kind::RateLimited,
            Kind::Internal,
            Kind::Upstream,
            Kind::Unavailable,
            Kind::OutOfSpace,
        ] {
            assert!(status_of(kind).as_u16() >= 400, "{kind:?}");
        }
    }
}

#[cfg(test)]
mod panic_tests {
    #![allow(clippy::unwrap_used)]
    use tower::ServiceExt;

    #[tokio::test]
    async fn a_handler_that_panics_is_answered_500_in_the_error_body() {
        let app = axum::Router::new()
            .route(
                "/boom",
                axum::routing::get(|| async {
                    if std::hint::black_box(true) {
                        panic!("the store returned nonsense");
                    }
                    "never"
                }),
            )
            .layer(tower_http::catch_panic::CatchPanicLayer::custom(
                super::panicked,
            ));
        let response = app
            .oneshot(
                axum::http::Request::get("/boom")
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), 500);
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"], "internal");
        assert!(
            !body.to_string().contains("nonsense"),
            "the panic's words stay in the log: {body}"
        );
    }
}
