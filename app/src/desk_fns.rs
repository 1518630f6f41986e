//! The desk's server functions: what the hydrated desk pages load and do, callable from the
//! browser (a POST to `/desk/fn/…`, or a plain form post without JavaScript) and run in place
//! during server rendering. Each one only names its arguments and hands them, with the
//! request's headers, to the server's [`DeskBackend`]: who is asking, whether they may, the
//! CSRF check and every engine guard live on the server, in the same service code as the REST
//! API — nothing here decides anything.

// `desk_act` takes each form field as an argument (what the question's form posts), and the
// browser-side function `#[server]` generates from it cannot carry an attribute of its own.
#![allow(clippy::too_many_arguments)]

#[cfg(feature = "ssr")]
use crate::dto::{ActInput, ProjectInput};
#[cfg(feature = "ssr")]
use crate::dto::{BugDesk, Confirm, CrewDesk, Dashboard, OwnersDesk};
use crate::dto::{DeskError, DeskQuery};
use crate::screen::{BugScreen, CrewScreen, DashboardScreen, OwnersScreen, QuestionScreen};
use leptos::prelude::*;
use leptos::server_fn::codec::Post;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use leptos::server_fn::{Bytes, ContentType, Decodes, Encodes, Format, FormatType};

/// JSON like server_fn's own `JsonEncoding`, but read from text as a resource's value is when
/// the page hydrates: one deserializer per answer type in the WebAssembly instead of two (one
/// for bytes, one for text), the same bytes on the wire.
#[derive(Debug)]
pub struct TextJsonEncoding;

/// [`TextJsonEncoding`] in a POST's answer (what the desk's functions return).
pub type TextJson = Post<TextJsonEncoding>;

impl ContentType for TextJsonEncoding {
    const CONTENT_TYPE: &'static str = "application/json";
}

impl FormatType for TextJsonEncoding {
    const FORMAT_TYPE: Format = Format::Text;
}

impl<T: serde::Serialize> Encodes<T> for TextJsonEncoding {
    type Error = serde_json::Error;

    fn encode(output: &T) -> Result<Bytes, Self::Error> {
        serde_json::to_vec(output).map(Bytes::from)
    }
}

impl<T: serde::de::DeserializeOwned> Decodes<T> for TextJsonEncoding {
    type Error = serde_json::Error;

    fn decode(bytes: Bytes) -> Result<T, Self::Error> {
        let text = std::str::from_utf8(&bytes).map_err(serde::de::Error::custom)?;
        serde_json::from_str(text)
    }
}

impl FromServerFnError for DeskError {
    type Encoder = TextJsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        let code = match &value {
            ServerFnErrorErr::Args(_) | ServerFnErrorErr::Deserialization(_) => "invalid_request",
            ServerFnErrorErr::Request(_) | ServerFnErrorErr::Response(_) => "unreachable",
            _ => "server_fn",
        };
        DeskError::new(code, value.to_string())
    }
}

/// A backend's answer and, sometimes, a cookie for the browser to keep (the invitation a
/// page shows once) or forget.
#[cfg(feature = "ssr")]
#[derive(Debug)]
pub struct WithCookie<T> {
    /// The answer.
    pub value: T,
    /// A `Set-Cookie` value for the response.
    pub set_cookie: Option<http::HeaderValue>,
}

/// What the server gives the desk's server functions (implemented by the server crate over its
/// store, auth and services).
#[cfg(feature = "ssr")]
pub trait DeskBackend: Send + Sync + 'static {
    /// The dashboard for the owner these headers sign in.
    fn dashboard(
        &self,
        headers: http::HeaderMap,
        query: DeskQuery,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Dashboard, DeskError>> + Send>>;

    /// The bug view of bug `id` (with the notice for `done`), for the owner these headers
    /// sign in.
    fn bug(
        &self,
        headers: http::HeaderMap,
        id: String,
        done: Option<String>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<BugDesk, DeskError>> + Send>>;

    /// The crew page, for the owner these headers sign in.
    fn crew(
        &self,
        headers: http::HeaderMap,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<CrewDesk, DeskError>> + Send>>;

    /// The owners page (with the invitation just made, once), for the owner these headers
    /// sign in.
    fn owners(
        &self,
        headers: http::HeaderMap,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<WithCookie<OwnersDesk>, DeskError>> + Send>,
    >;

    /// Marks quarantined report `report` handled, for the owner these headers sign in; answers
    /// the desk address to go to next.
    fn quarantine_handled(
        &self,
        headers: http::HeaderMap,
        report: String,
        csrf: String,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, DeskError>> + Send>>;

    /// What `action` on bug `bug` (or, with no bug, on quarantined report `report`, or on the
    /// desk's owners — pending owner `person`) will do, for the owner these headers sign in.
    /// Changes nothing.
    fn question(
        &self,
        headers: http::HeaderMap,
        bug: String,
        report: Option<String>,
        action: String,
        person: Option<String>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Confirm, DeskError>> + Send>>;

    /// Adds or changes the project `input` describes, for the owner these headers sign in
    /// (its CSRF token checked); answers the desk address to go to next.
    fn project(
        &self,
        headers: http::HeaderMap,
        input: ProjectInput,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, DeskError>> + Send>>;

    /// Does the confirmed `input` for the owner these headers sign in (its CSRF token
    /// checked); answers the desk address to go to next.
    fn act(
        &self,
        headers: http::HeaderMap,
        input: ActInput,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<WithCookie<String>, DeskError>> + Send>,
    >;
}

/// The server's [`DeskBackend`], put in every request's context.
#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct DeskServer(pub std::sync::Arc<dyn DeskBackend>);

#[cfg(feature = "ssr")]
impl std::fmt::Debug for DeskServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeskServer")
    }
}

/// The backend and the request's headers, or why not.
#[cfg(feature = "ssr")]
fn backend() -> Result<(DeskServer, http::HeaderMap), DeskError> {
    let server = use_context::<DeskServer>()
        .ok_or_else(|| DeskError::new("unavailable", "the desk is not serving its functions"))?;
    let parts = use_context::<http::request::Parts>()
        .ok_or_else(|| DeskError::new("unavailable", "no request to answer"))?;
    Ok((server, parts.headers))
}

/// The refusal's HTTP status, for the page being rendered (a 404 for an unknown bug) and for
/// callers that read the answer (the hydrated page, scripts); a plain form post is answered
/// with a redirect back instead, the refusal in its address.
#[cfg(feature = "ssr")]
fn answer<T>(headers: &http::HeaderMap, result: Result<T, DeskError>) -> Result<T, DeskError> {
    if let Err(error) = &result {
        let accepts_html = headers
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/html"));
        let posted = use_context::<http::request::Parts>()
            .is_some_and(|parts| parts.method == http::Method::POST);
        if !(accepts_html && posted) {
            if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
                response.set_status(error.status());
            }
        }
    }
    result
}

/// Puts the backend's cookie, if any, on the response.
#[cfg(feature = "ssr")]
fn keep_cookie<T>(answer: WithCookie<T>) -> T {
    if let (Some(cookie), Some(response)) = (
        answer.set_cookie,
        use_context::<leptos_axum::ResponseOptions>(),
    ) {
        response.append_header(http::header::SET_COOKIE, cookie);
    }
    answer.value
}

/// The dashboard for `query` (the signed-in owner's; `signed_out` otherwise).
#[server(prefix = "/desk/fn", output = TextJson, endpoint = "dashboard")]
pub async fn desk_dashboard(
    #[server(default)] query: DeskQuery,
) -> Result<DashboardScreen, DeskError> {
    let (server, headers) = backend()?;
    let result = server.0.dashboard(headers.clone(), query).await;
    answer(&headers, result).map(crate::pages::dashboard_screen)
}

/// The bug view of bug `id`; `done` names the action just taken (its notice); `diff` is the
/// diff's layout (`split` side by side, otherwise unified).
#[server(prefix = "/desk/fn", output = TextJson, endpoint = "bug")]
pub async fn desk_bug(
    id: String,
    #[server(default)] done: Option<String>,
    #[server(default)] diff: Option<String>,
) -> Result<BugScreen, DeskError> {
    let (server, headers) = backend()?;
    let result = server.0.bug(headers.clone(), id, done).await;
    let split = diff.as_deref() == Some("split");
    answer(&headers, result).map(|bug| crate::pages::bug_screen(bug, split))
}

/// The crew page: each role's heartbeat, spend and recent hand-offs.
#[server(prefix = "/desk/fn", output = TextJson, endpoint = "crew")]
pub async fn desk_crew() -> Result<CrewScreen, DeskError> {
    let (server, headers) = backend()?;
    let result = server.0.crew(headers.clone()).await;
    answer(&headers, result).map(crate::pages::crew_screen)
}

/// Marks a quarantined report handled: it leaves the queue, and who did it and when is kept.
#[server(prefix = "/desk/fn", output = TextJson, endpoint = "quarantine-handled")]
pub async fn quarantine_handled(report: String, csrf: String) -> Result<(), DeskError> {
    let (server, headers) = backend()?;
    let result = server
        .0
        .quarantine_handled(headers.clone(), report, csrf)
        .await;
    let next = answer(&headers, result)?;
    // Without JavaScript the browser follows the answer back to the dashboard, saying so.
    leptos_axum::redirect(&next);
    Ok(())
}

/// The owners page: every owner, who invited and confirmed them, and the invitation just
/// made (this once).
#[server(prefix = "/desk/fn", output = TextJson, endpoint = "owners")]
pub async fn desk_owners() -> Result<OwnersScreen, DeskError> {
    let (server, headers) = backend()?;
    let result = server.0.owners(headers.clone()).await;
    answer(&headers, result)
        .map(keep_cookie)
        .map(crate::pages::owners_screen)
}

/// The question before `action` on bug `bug` (empty for a quarantined report, then `report`
/// names it; empty too for the owners' actions, `person` naming a pending owner): what will
/// happen, in plain words, with the form's hidden values.
#[server(prefix = "/desk/fn", output = TextJson, endpoint = "question")]
pub async fn desk_question(
    #[server(default)] bug: String,
    #[server(default)] report: Option<String>,
    action: String,
    #[server(default)] person: Option<String>,
) -> Result<QuestionScreen, DeskError> {
    let (server, headers) = backend()?;
    let result = server
        .0
        .question(headers.clone(), bug, report, action, person)
        .await;
    answer(&headers, result).map(crate::pages::question_screen)
}

/// Adds (`mode` `add`) or changes (`edit`) a project this desk serves; then the desk goes to
/// the crew page, where the projects are listed.
#[server(prefix = "/desk/fn", output = TextJson, endpoint = "project")]
pub async fn desk_project(
    csrf: String,
    mode: String,
    id: String,
    #[server(default)] name: String,
    #[server(default)] components: String,
    #[server(default)] forge: String,
    #[server(default)] branch: String,
    #[server(default)] profile: String,
    #[server(default)] fix_paths: String,
    #[server(default)] crew: String,
    #[server(default)] github: String,
    #[server(default)] deploy: String,
    #[server(default)] test_paths: String,
    #[server(default)] launch_port: String,
    #[server(default)] launch_args: String,
    #[server(default)] launch_env: String,
    #[server(default)] launch_assets: String,
) -> Result<(), DeskError> {
    let (server, headers) = backend()?;
    let input = ProjectInput {
        csrf,
        mode,
        id,
        name,
        components,
        forge,
        branch,
        profile,
        fix_paths,
        crew,
        github,
        deploy,
        test_paths,
        launch_port,
        launch_args,
        launch_env,
        launch_assets,
    };
    let next = answer(&headers, server.0.project(headers.clone(), input).await)?;
    leptos_axum::redirect(&next);
    Ok(())
}

/// Does an owner's confirmed action; then the desk goes to the page it concerns, saying what
/// was done (with JavaScript in place, without it by the browser following the redirect).
#[server(prefix = "/desk/fn", output = TextJson, endpoint = "act")]
pub async fn desk_act(
    csrf: String,
    action: String,
    #[server(default)] bug: String,
    #[server(default)] report: Option<String>,
    #[server(default)] head: Option<String>,
    #[server(default)] reason: Option<String>,
    #[server(default)] text: Option<String>,
    #[server(default)] of: Option<String>,
    #[server(default)] person: Option<String>,
) -> Result<(), DeskError> {
    let (server, headers) = backend()?;
    let input = ActInput {
        bug,
        report,
        action,
        csrf,
        head,
        reason,
        text,
        of,
        person,
    };
    let next = answer(&headers, server.0.act(headers.clone(), input).await).map(keep_cookie)?;
    leptos_axum::redirect(&next);
    Ok(())
}
