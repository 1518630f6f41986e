//! Everything a member of the public touches over HTTP: filing a report (JSON API and a
//! script-free form), the private tracking link, and the two questions.
//!
//! The reporter's capability arrives only in the `X-R2R-Capability` header (or, for the
//! script-free forms, a POST body field) — never in a path or query string — and is never
//! logged: handlers log report ids only.

use crate::error::Kind;
use crate::web::AppState;
use crate::web::{client_of, no_store, render_script_free, ClientAddr, LimitedBody, Refused};
use app::dto::{
    Answer, Components, ReportForm, ReportPageState, TrackPageState, Tracking, CAPABILITY_HEADER,
};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use crate::service::reporter::*;

/// `GET /api/v1/components`.
pub async fn components(State(state): State<AppState>) -> Json<Components> {
    Json(Components {
        components: state.reporter.fresh(&state.store).await.components.clone(),
    })
}

/// `POST /api/v1/reports`.
pub async fn file_json(
    State(state): State<AppState>,
    addr: ClientAddr,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        let client = client_of(&state.reporter, addr, &headers);
        let is_json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if !is_json {
            return Err(Refused::new(
                Kind::UnsupportedMediaType,
                "unsupported_media_type",
                "Send the report as JSON with Content-Type: application/json.",
            ));
        }
        let value: Value = crate::web::error::duplicate_keys(&body)
            .and_then(|()| serde_json::from_slice(&body))
            .map_err(|error| {
                Refused::new(
                    Kind::BadRequest,
                    "malformed_json",
                    format!("The body is not valid JSON: {error}."),
                )
            })?;
        let Value::Object(object) = value else {
            return Err(Refused::new(
                Kind::BadRequest,
                "malformed_json",
                "The body must be a JSON object with component, title, what_happened, expected \
                 and steps.",
            ));
        };
        validate_and_file(&state, &object, &client).await
    }
    .await;
    match result {
        Ok(receipt) => no_store((StatusCode::CREATED, Json(receipt)).into_response()),
        Err(refused) => refused.into_response(),
    }
}

/// `POST /report`: the script-free form.
pub async fn file_form(
    State(state): State<AppState>,
    addr: ClientAddr,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let mut object = Map::new();
    for (key, value) in pairs {
        // An empty optional contact field is the same as none.
        if key == "contact" && value.trim().is_empty() {
            continue;
        }
        object.insert(key, Value::String(value));
    }
    let typed = ReportForm {
        component: string_field(&object, "component"),
        title: string_field(&object, "title"),
        what_happened: string_field(&object, "what_happened"),
        expected: string_field(&object, "expected"),
        steps: string_field(&object, "steps"),
        contact: object
            .get("contact")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    let outcome = async {
        // Another site's page cannot make a visitor's browser file a report: the browser's own
        // word (`Sec-Fetch-Site`, else `Origin`) refuses it before anything is counted. The
        // visitor sees the form again with what it carried, so nothing is lost.
        if crate::auth::cross_site(&headers) {
            return Err(cross_site_post("file a report"));
        }
        let client = client_of(&state.reporter, addr, &headers);
        validate_and_file(&state, &object, &client).await
    }
    .await;
    match outcome {
        Ok(receipt) => {
            render(
                &state,
                "/report",
                StatusCode::CREATED,
                None,
                PageContext::Report(ReportPageState::Filed(Box::new(receipt))),
            )
            .await
        }
        Err(refused) => {
            let retry = refused.retry_after;
            render(
                &state,
                "/report",
                refused.status(),
                retry,
                PageContext::Report(ReportPageState::Refused(refused.error, typed)),
            )
            .await
        }
    }
}

fn string_field(object: &Map<String, Value>, key: &str) -> String {
    object
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn header_capability(headers: &HeaderMap) -> Option<&str> {
    headers.get(CAPABILITY_HEADER).and_then(|v| v.to_str().ok())
}

/// `GET /api/v1/track` with the capability in `X-R2R-Capability`.
pub async fn track_json(
    State(state): State<AppState>,
    addr: ClientAddr,
    headers: HeaderMap,
) -> Response {
    let result = async {
        take_token(
            &state.reporter.answers,
            &client_of(&state.reporter, addr, &headers),
        )
        .await?;
        let report = find_report(&state, header_capability(&headers))
            .await?
            .ok_or_else(Refused::not_found)?;
        tracking_view(&state, &report).await
    }
    .await;
    match result {
        Ok(view) => no_store(Json(view).into_response()),
        Err(refused) => refused.into_response(),
    }
}

/// `POST /api/v1/track/answer` with the capability in `X-R2R-Capability`.
pub async fn answer_json(
    State(state): State<AppState>,
    addr: ClientAddr,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        take_token(&state.reporter.answers, &client_of(&state.reporter, addr, &headers)).await?;
        let report = find_report(&state, header_capability(&headers))
            .await?
            .ok_or_else(Refused::not_found)?;
        let answer: Answer = serde_json::from_slice(&body).map_err(|error| {
            Refused::new(
                Kind::BadRequest,
                "malformed_answer",
                format!(
                    "Send JSON {{\"request_id\", \"kind\": \"reproduction\"|\"fix\", \"yes\": true|false, \"reason\"}}: {error}."
                ),
            )
        })?;
        record_answer(&state, &report, &answer).await
    }
    .await;
    match result {
        Ok(outcome) => no_store(Json(outcome).into_response()),
        Err(refused) => refused.into_response(),
    }
}

/// `POST /track`: the script-free way to open a tracking page (the capability in the body).
pub async fn track_form(
    State(state): State<AppState>,
    addr: ClientAddr,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let fields: BTreeMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let capability = fields.get("capability").map(|c| extract_capability(c));
    track_page(&state, addr, &headers, capability, None).await
}

/// A form post another site's page made a visitor's browser send.
fn cross_site_post(what: &str) -> Refused {
    Refused::new(
        Kind::Forbidden,
        "cross_site",
        format!(
            "Another site's page tried to {what} here. Nothing was recorded: use this desk's own page to send it."
        ),
    )
}

/// Accepts a pasted link or a bare capability.
fn extract_capability(text: &str) -> String {
    let text = text.trim();
    text.rsplit_once('#')
        .map_or(text, |(_, fragment)| fragment)
        .trim()
        .to_owned()
}

/// `POST /track/answer`: the script-free answer form.
pub async fn answer_form(
    State(state): State<AppState>,
    addr: ClientAddr,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let fields: BTreeMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let field = |name: &str| fields.get(name).cloned().unwrap_or_default();
    let answer = Answer {
        request_id: field("request_id"),
        kind: field("kind"),
        yes: field("answer") == "yes",
        reason: fields.get("reason").cloned(),
    };
    let refusal = if crate::auth::cross_site(&headers) {
        Some(cross_site_post("answer for a reporter"))
    } else if !matches!(field("answer").as_str(), "yes" | "no") {
        Some(Refused::new(
            Kind::Invalid,
            "invalid_answer",
            "Choose yes or no.",
        ))
    } else {
        None
    };
    if let Some(refused) = refusal {
        return render(
            &state,
            "/track",
            refused.status(),
            None,
            PageContext::Track(TrackPageState::Refused(refused.error)),
        )
        .await;
    }
    track_page(
        &state,
        addr,
        &headers,
        Some(field("capability")),
        Some(answer),
    )
    .await
}

async fn track_page(
    state: &AppState,
    addr: ClientAddr,
    headers: &HeaderMap,
    capability: Option<String>,
    answer: Option<Answer>,
) -> Response {
    let result: Result<Option<(Tracking, Option<String>)>, Refused> = async {
        take_token(
            &state.reporter.answers,
            &client_of(&state.reporter, addr, headers),
        )
        .await?;
        let Some(report) = find_report(state, capability.as_deref()).await? else {
            return Ok(None);
        };
        let notice = match &answer {
            Some(answer) => Some(record_answer(state, &report, answer).await?.message),
            None => None,
        };
        let tracking = tracking_view(state, &report).await?;
        Ok(Some((tracking, notice)))
    }
    .await;
    match result {
        Ok(Some((tracking, notice))) => {
            let capability = capability.unwrap_or_default();
            render(
                state,
                "/track",
                StatusCode::OK,
                None,
                PageContext::Track(TrackPageState::Found {
                    tracking: Box::new(tracking),
                    capability,
                    notice,
                }),
            )
            .await
        }
        Ok(None) => {
            render(
                state,
                "/track",
                StatusCode::NOT_FOUND,
                None,
                PageContext::Track(TrackPageState::NotFound),
            )
            .await
        }
        Err(refused) => {
            let retry = refused.retry_after;
            render(
                state,
                "/track",
                refused.status(),
                retry,
                PageContext::Track(TrackPageState::Refused(refused.error)),
            )
            .await
        }
    }
}

/// What a server-rendered reporter page shows.
#[derive(Clone, Debug)]
pub enum PageContext {
    /// `/report` after a post.
    Report(ReportPageState),
    /// `/track` after a post.
    Track(TrackPageState),
}

/// Renders a page without hydration scripts (the answer to a form post, so it must work
/// without JavaScript and must not hydrate against state the browser does not have).
async fn render(
    state: &AppState,
    path: &str,
    status: StatusCode,
    retry_after: Option<u64>,
    context: PageContext,
) -> Response {
    let mut response = match context {
        PageContext::Report(page) => render_script_free(state, path, status, page).await,
        PageContext::Track(page) => render_script_free(state, path, status, page).await,
    };
    if let Some(seconds) = retry_after {
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasted_link_or_a_bare_capability_both_work() {
        let cap = "ab".repeat(32);
        assert_eq!(
            extract_capability(&format!("https://desk.example/track#{cap}")),
            cap
        );
        assert_eq!(extract_capability(&format!("  {cap} ")), cap);
    }
}
