//! `GET /live/<service>[/…]`: the public address of the deployed service, passed to the
//! instance the deployer made live (the same instance the recorder checked). Nothing is
//! forwarded but the method, the path and the query; only the answer's status, type and
//! caching come back. The target's pages are served from the desk's origin, so they get the
//! desk's own policy, whatever the target sends: no script at all, and a sandboxed document
//! (an opaque origin: the owners' session cookie and the desk's pages are out of its reach).

use crate::web::AppState;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::time::Duration;

/// The policy of everything served from a live release.
pub const LIVE_POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; frame-ancestors 'none'; sandbox allow-forms";

/// `GET /live/{service}`.
pub async fn root(
    state: State<AppState>,
    Path(service): Path<String>,
    query: RawQuery,
) -> Response {
    forward(state, service, String::new(), query).await
}

/// `GET /live/{service}/{*rest}`.
pub async fn path(
    state: State<AppState>,
    Path((service, rest)): Path<(String, String)>,
    query: RawQuery,
) -> Response {
    forward(state, service, rest, query).await
}

async fn forward(
    State(state): State<AppState>,
    service: String,
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
    let Some(live) = releases.live() else {
        let doing = releases.progress().map_or_else(
            || "the deployer has not released anything yet".to_owned(),
            |p| format!("{} {}: {}", p.step.as_str(), p.commit, p.detail),
        );
        return unavailable(format!("no live release yet ({doing})\n"));
    };
    let mut url = format!("http://127.0.0.1:{}/{}", live.port, rest);
    if let Some(query) = query {
        url.push('?');
        url.push_str(&query);
    }
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(client) => client,
        Err(error) => return unavailable(format!("cannot reach the live release: {error}\n")),
    };
    let answer = match client.get(url).send().await {
        Ok(answer) => answer,
        Err(error) => {
            tracing::warn!(%error, "the live release did not answer");
            return unavailable(format!(
                "the live release of {} did not answer\n",
                live.commit
            ));
        }
    };
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
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
    let body = match answer.bytes().await {
        Ok(body) => body,
        Err(error) => {
            return unavailable(format!("the live release's answer broke off: {error}\n"))
        }
    };
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
