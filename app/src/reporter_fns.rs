//! The reporter's server functions: what the hydrated report form and tracking page call
//! (a POST to `/report/fn/…` or `/track/fn/…`, run in place during server rendering). Like
//! the desk's, each one only names its arguments and hands them, with the request, to the
//! server's [`ReporterBackend`]: the rate limits, the airlock, the capability check and every
//! engine guard live on the server, in the same service code as `POST /api/v1/reports` and
//! `/api/v1/track` — nothing here decides anything.
//!
//! The capability travels as an argument, in the body of a POST: never in a path or a query
//! string, so never in a log line or the browser's history. Without JavaScript the same pages
//! post plain forms (`/report`, `/track`, `/track/answer`) that the server answers with the
//! page itself.

#[cfg(feature = "ssr")]
use crate::dto::{Answer, ReportForm};
use crate::dto::{AnswerOutcome, ApiError, ReportReceipt, Tracking};
use leptos::prelude::*;
use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};

impl FromServerFnError for ApiError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        let (code, message) = match &value {
            ServerFnErrorErr::Args(_) | ServerFnErrorErr::Deserialization(_) => (
                "invalid_request",
                format!("The desk could not read that request: {value}."),
            ),
            ServerFnErrorErr::Request(_) | ServerFnErrorErr::Response(_) => (
                "network",
                format!(
                    "The desk could not be reached ({value}). Check your connection and try \
                     again; nothing was lost."
                ),
            ),
            _ => ("server_fn", format!("That did not work: {value}.")),
        };
        ApiError {
            error: code.to_owned(),
            message,
            fields: Default::default(),
        }
    }
}

/// A refusal from the server's reporter code: its HTTP status (the same the REST API gives),
/// how long to wait when rate-limited, and the words.
#[cfg(feature = "ssr")]
#[derive(Clone, Debug)]
pub struct Refusal {
    /// The HTTP status.
    pub status: u16,
    /// Seconds until trying again makes sense (a rate limit).
    pub retry_after: Option<u64>,
    /// Code, words and per-field reasons.
    pub error: ApiError,
}

/// A boxed answer from the backend.
#[cfg(feature = "ssr")]
pub type Reply<T> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, Refusal>> + Send>>;

/// What the server gives the reporter's server functions (implemented by the server crate over
/// its store, airlock and rate limits). `request` is the call's request line and headers, with
/// the client's address among its extensions (the rate limits key on it).
#[cfg(feature = "ssr")]
pub trait ReporterBackend: Send + Sync + 'static {
    /// The components a report may name, in the configured order.
    fn components(&self) -> Vec<String>;

    /// Files `form` as `POST /api/v1/reports` would.
    fn file(&self, request: http::request::Parts, form: ReportForm) -> Reply<ReportReceipt>;

    /// What the report `capability` opens shows its reporter (`not_found` for any capability
    /// that opens nothing: wrong, malformed or missing alike).
    fn track(&self, request: http::request::Parts, capability: String) -> Reply<Tracking>;

    /// Records the reporter's `answer` to a question on the report `capability` opens.
    fn answer(
        &self,
        request: http::request::Parts,
        capability: String,
        answer: Answer,
    ) -> Reply<AnswerOutcome>;
}

/// The server's [`ReporterBackend`], put in every request's context.
#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct ReporterServer(pub std::sync::Arc<dyn ReporterBackend>);

#[cfg(feature = "ssr")]
impl std::fmt::Debug for ReporterServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReporterServer")
    }
}

/// The backend and the request, or why not.
#[cfg(feature = "ssr")]
fn backend() -> Result<(ReporterServer, http::request::Parts), ApiError> {
    let unavailable = |why: &str| ApiError {
        error: "unavailable".to_owned(),
        message: format!("The desk cannot answer right now ({why}); nothing was lost."),
        fields: Default::default(),
    };
    let server = use_context::<ReporterServer>()
        .ok_or_else(|| unavailable("the reporter's functions are not served"))?;
    let parts =
        use_context::<http::request::Parts>().ok_or_else(|| unavailable("no request to answer"))?;
    Ok((server, parts))
}

/// The refusal's status (and `Retry-After`) on the response; the words go back as the body.
#[cfg(feature = "ssr")]
fn answer<T>(result: Result<T, Refusal>) -> Result<T, ApiError> {
    result.map_err(|refusal| {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            if let Ok(status) = http::StatusCode::from_u16(refusal.status) {
                response.set_status(status);
            }
            if let Some(seconds) = refusal.retry_after {
                response.insert_header(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
            }
        }
        refusal.error
    })
}

/// The components a report may name (the form's "Where" list).
#[server(prefix = "/report/fn", endpoint = "components")]
pub async fn report_components() -> Result<Vec<String>, ApiError> {
    let (server, _) = backend()?;
    Ok(server.0.components())
}

/// Files a report: through the airlock, into a bug (new or joined), durable before it
/// answers; the receipt holds the private link, shown this once.
#[server(prefix = "/report/fn", endpoint = "file")]
pub async fn file_report(
    component: String,
    title: String,
    what_happened: String,
    #[server(default)] expected: String,
    #[server(default)] steps: String,
    #[server(default)] contact: Option<String>,
) -> Result<ReportReceipt, ApiError> {
    let (server, request) = backend()?;
    let form = ReportForm {
        component,
        title,
        what_happened,
        expected,
        steps,
        // An empty optional field is no address at all.
        contact: contact.filter(|c| !c.trim().is_empty()),
    };
    answer(server.0.file(request, form).await)
}

/// What a reporter's private link shows: their own report, its bug's progress, the open
/// question, messages and the inbox — nothing of other reporters.
#[server(prefix = "/track/fn", endpoint = "view")]
pub async fn track_view(capability: String) -> Result<Tracking, ApiError> {
    let (server, request) = backend()?;
    answer(server.0.track(request, capability).await)
}

/// The reporter's answer to the open question (`kind` `reproduction` or `fix`; a "no" needs a
/// reason, which goes through the airlock).
#[server(prefix = "/track/fn", endpoint = "answer")]
pub async fn track_answer(
    capability: String,
    request_id: String,
    kind: String,
    yes: bool,
    #[server(default)] reason: Option<String>,
) -> Result<AnswerOutcome, ApiError> {
    let (server, request) = backend()?;
    let given = Answer {
        request_id,
        kind,
        yes,
        reason,
    };
    answer(server.0.answer(request, capability, given).await)
}
