//! Browser-side calls to the desk's JSON API (only in the hydrated app; on the server these
//! are never reached because effects and event handlers do not run there).

use crate::dto::{ApiError, CAPABILITY_HEADER};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// What came back: the typed body on success, the desk's error otherwise.
pub(crate) type Answer<T> = Result<T, ApiError>;

fn network_error(detail: impl std::fmt::Display) -> ApiError {
    ApiError {
        error: "network".to_owned(),
        message: format!("The desk could not be reached ({detail}). Check your connection and try again; nothing was lost."),
        fields: Default::default(),
    }
}

/// Sends a request; `capability` goes in its header, `body` as JSON. The browser's fetch
/// future is single-threaded; it is wrapped so resources (which want `Send`) can hold it.
#[cfg(feature = "hydrate")]
pub(crate) fn call<T: DeserializeOwned + 'static, B: Serialize>(
    method: &str,
    url: &str,
    capability: Option<&str>,
    body: Option<&B>,
) -> impl std::future::Future<Output = Answer<T>> + Send {
    let method = method.to_owned();
    let url = url.to_owned();
    let capability = capability.map(str::to_owned);
    let body = body.map(|b| serde_json::to_string(b).map_err(network_error));
    send_wrapper::SendWrapper::new(call_local(method, url, capability, body))
}

#[cfg(feature = "hydrate")]
async fn call_local<T: DeserializeOwned>(
    method: String,
    url: String,
    capability: Option<String>,
    body: Option<Result<String, ApiError>>,
) -> Answer<T> {
    use gloo_net::http::{Method, RequestBuilder};
    let method = if method == "POST" {
        Method::POST
    } else {
        Method::GET
    };
    let mut builder = RequestBuilder::new(&url)
        .method(method)
        .header("Accept", "application/json");
    if let Some(capability) = &capability {
        builder = builder.header(CAPABILITY_HEADER, capability);
    }
    let request = match body {
        Some(body) => builder
            .header("Content-Type", "application/json")
            .body(body?)
            .map_err(network_error)?,
        None => builder.build().map_err(network_error)?,
    };
    let response = request.send().await.map_err(network_error)?;
    let text = response.text().await.map_err(network_error)?;
    if response.ok() {
        serde_json::from_str(&text).map_err(network_error)
    } else {
        Err(
            serde_json::from_str::<ApiError>(&text).unwrap_or_else(|_| ApiError {
                error: format!("http_{}", response.status()),
                message: format!(
                    "The desk answered {} {}.",
                    response.status(),
                    response.status_text()
                ),
                fields: Default::default(),
            }),
        )
    }
}

/// Not available outside the browser.
#[cfg(not(feature = "hydrate"))]
pub(crate) async fn call<T: DeserializeOwned + 'static, B: Serialize>(
    _method: &str,
    _url: &str,
    _capability: Option<&str>,
    _body: Option<&B>,
) -> Answer<T> {
    let _ = CAPABILITY_HEADER;
    Err(network_error("not in a browser"))
}

/// `2026-11-30 08:03 UTC` from milliseconds since the epoch (the same text on the server and
/// in the browser, so hydration matches).
pub fn format_time(ms: i64) -> String {
    let seconds = ms.div_euclid(1000);
    let days = seconds.div_euclid(86_400);
    let of_day = seconds.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        of_day / 3600,
        (of_day % 3600) / 60
    )
}

#[cfg(test)]
mod tests {
    use super::format_time;

    #[test]
    fn times_format_as_utc_dates() {
        assert_eq!(format_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_time(951_782_400_000), "2000-02-29 00:00 UTC");
        assert_eq!(format_time(1_796_025_780_000), "2026-11-30 08:03 UTC");
    }
}
