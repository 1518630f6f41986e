//! `GET /live/<service>[/…]`: the public address of the deployed service, passed to the
//! instance the deployer made live (the same instance the recorder checked), and
//! `GET /release/<service>/<commit>[/…]`: the immutable address of one release, answered only
//! while exactly that commit's instance is live. The instance runs in the desk's sandbox in a
//! network namespace of its own; the desk reaches it from inside that namespace
//! ([`crate::instance`]). Nothing is forwarded but the path and the query; only the
//! answer's status, type and caching come back. The target's pages are served from the desk's
//! origin, so they get the desk's own policy, whatever the target sends: no script at all, and
//! a sandboxed document (an opaque origin: the owners' session cookie and the desk's pages are
//! out of its reach).

use crate::web::AppState;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The policy of everything served from a live release.
pub const LIVE_POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; frame-ancestors 'none'; sandbox allow-forms";

/// `GET /live/{service}`.
pub async fn root(
    state: State<AppState>,
    headers: HeaderMap,
    Path(service): Path<String>,
    query: RawQuery,
) -> Response {
    forward_to(state, &headers, service, None, String::new(), query).await
}

/// `GET /live/{service}/{*rest}`.
pub async fn path(
    state: State<AppState>,
    headers: HeaderMap,
    Path((service, rest)): Path<(String, String)>,
    query: RawQuery,
) -> Response {
    forward_to(state, &headers, service, None, rest, query).await
}

/// `GET /release/{service}/{commit}`: the immutable address of one release, answered only
/// while the instance of exactly that commit is the live one (the recorder checks it beside
/// the public address).
pub async fn release_root(
    state: State<AppState>,
    headers: HeaderMap,
    Path((service, commit)): Path<(String, String)>,
    query: RawQuery,
) -> Response {
    forward_to(state, &headers, service, Some(commit), String::new(), query).await
}

/// `GET /release/{service}/{commit}/{*rest}`.
pub async fn release_path(
    state: State<AppState>,
    headers: HeaderMap,
    Path((service, commit, rest)): Path<(String, String, String)>,
    query: RawQuery,
) -> Response {
    forward_to(state, &headers, service, Some(commit), rest, query).await
}

/// Marks a request one desk server passed to the server that leads the service's deployer
/// (its value: the sender's server id); such a request is never passed on again.
pub const FORWARDED_BY: &str = "x-r2r-forwarded-by";
/// The most of a live answer one server passes on from another.
const FORWARDED_BYTES: usize = 16 * 1024 * 1024;
/// How many answers one server passes on from the leader at once (each up to
/// [`FORWARDED_BYTES`]).
const FORWARDS_AT_ONCE: usize = 16;
/// How long one server waits for the leader's answer.
const FORWARD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

async fn forward_to(
    State(state): State<AppState>,
    headers: &HeaderMap,
    service: String,
    commit: Option<String>,
    rest: String,
    RawQuery(query): RawQuery,
) -> Response {
    let unavailable = |text: String| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CACHE_CONTROL, "no-store")],
            text,
        )
            .into_response()
    };
    let Some(releases) = state.releases_serving(&service) else {
        return (StatusCode::NOT_FOUND, "no such live service\n").into_response();
    };
    // A path that climbs (`..`) or names `.` is not a page of the release: refused before
    // it travels anywhere (another server's URL handling would resolve it out of /live).
    if rest.split('/').any(|part| part == "." || part == "..") {
        return (
            StatusCode::NOT_FOUND,
            [(header::CACHE_CONTROL, "no-store")],
            "no such page in the release\n",
        )
            .into_response();
    }
    let live = releases.live();
    if live.is_none() && !headers.contains_key(FORWARDED_BY) {
        if let Some(leader) = releases.leader_elsewhere() {
            let mut target = match &commit {
                Some(commit) => format!(
                    "{leader}/release/{}/{}",
                    encode_path(&service),
                    encode_path(commit)
                ),
                None => format!("{leader}/live/{}", encode_path(&service)),
            };
            if !rest.is_empty() {
                target.push('/');
                target.push_str(&encode_path(&rest));
            }
            if let Some(query) = &query {
                target.push('?');
                target.push_str(query);
            }
            return from_leader(&state, &target).await;
        }
    }
    let Some(live) = live else {
        let doing = releases.progress().map_or_else(
            || "the deployer has not released anything yet".to_owned(),
            |p| format!("{} {}: {}", p.step.as_str(), p.commit, p.detail),
        );
        return unavailable(format!("no live release yet ({doing})\n"));
    };
    if commit.is_some_and(|commit| commit != live.commit) {
        return (
            StatusCode::NOT_FOUND,
            [(header::CACHE_CONTROL, "no-store")],
            "no instance of that commit is live\n",
        )
            .into_response();
    }
    // Only the path and the query travel; the path is the router's own decoding of the
    // request, percent-encoded again where it must be.
    let mut target = format!("/{}", encode_path(&rest));
    if let Some(query) = query {
        target.push('?');
        target.push_str(&query);
    }
    let answer = match crate::instance::get(&live.dialer, live.addr, &target).await {
        Ok(answer) => answer,
        Err(error) => {
            tracing::warn!(%error, "the live release did not answer");
            return unavailable(format!(
                "the live release of {} did not answer\n",
                live.commit
            ));
        }
    };
    let kept: Vec<(header::HeaderName, HeaderValue)> =
        [header::CONTENT_TYPE, header::CACHE_CONTROL]
            .into_iter()
            .filter_map(|name| {
                let value = answer.headers.get(name.as_str())?;
                HeaderValue::from_bytes(value.as_bytes())
                    .ok()
                    .map(|v| (name, v))
            })
            .collect();
    let mut response = (answer.status, answer.body).into_response();
    for (name, value) in kept {
        response.headers_mut().insert(name, value);
    }
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(LIVE_POLICY),
    );
    response
}

/// The answer of the server that leads the service's deployer to `target` (a GET), with the
/// same policy as a local one: status, type and caching come back, within
/// [`FORWARDED_BYTES`].
async fn from_leader(state: &AppState, target: &str) -> Response {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    let client = CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .timeout(FORWARD_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default()
    });
    let unavailable = || {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CACHE_CONTROL, "no-store")],
            "the desk server that serves this release did not answer\n",
        )
            .into_response()
    };
    // Each forward may hold up to FORWARDED_BYTES: only so many at once.
    static FORWARDS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(FORWARDS_AT_ONCE);
    let Ok(_slot) = FORWARDS.try_acquire() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CACHE_CONTROL, "no-store"), (header::RETRY_AFTER, "1")],
            "this desk server is passing on as many release pages as it may; try again in a second\n",
        )
            .into_response();
    };
    let answer = match client
        .get(target)
        .header(FORWARDED_BY, state.server.id.as_str())
        .send()
        .await
    {
        Ok(answer) => answer,
        Err(error) => {
            tracing::warn!(%error, "the server leading the deployer did not answer");
            return unavailable();
        }
    };
    let status = answer.status();
    let kept: Vec<(header::HeaderName, HeaderValue)> =
        [header::CONTENT_TYPE, header::CACHE_CONTROL]
            .into_iter()
            .filter_map(|name| {
                let value = answer.headers().get(name.as_str())?;
                HeaderValue::from_bytes(value.as_bytes())
                    .ok()
                    .map(|v| (name, v))
            })
            .collect();
    if answer
        .content_length()
        .is_some_and(|n| n > FORWARDED_BYTES as u64)
    {
        return unavailable();
    }
    let mut body = Vec::new();
    let mut answer = answer;
    loop {
        match answer.chunk().await {
            Ok(Some(chunk)) if body.len() + chunk.len() <= FORWARDED_BYTES => {
                body.extend_from_slice(&chunk)
            }
            Ok(None) => break,
            _ => return unavailable(),
        }
    }
    let mut response = (status, body).into_response();
    for (name, value) in kept {
        response.headers_mut().insert(name, value);
    }
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(LIVE_POLICY),
    );
    response
}

/// A decoded path, percent-encoded again for the request line: unreserved characters and `/`
/// stay, everything else (spaces, controls, `?`, `#`, non-ASCII) is encoded.
fn encode_path(path: &str) -> String {
    let mut encoded = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_path_is_encoded_again_before_it_travels() {
        assert_eq!(super::encode_path("api/health"), "api/health");
        assert_eq!(
            super::encode_path("a b?c#d\r\n€"),
            "a%20b%3Fc%23d%0D%0A%E2%82%AC"
        );
    }
}
