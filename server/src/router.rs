//! The router: the only module that names every route — the `/api` operations (built from
//! the operation table, [`crate::web::OPERATIONS`]), the reporter's form posts, the owners'
//! desk pages, the GitHub webhook, the Leptos pages and static files — and the headers every
//! answer carries.

use crate::routes::reporter;
use crate::routes::{bugs, meta, owners};
use crate::web::{AppState, Op};
use app::dto::limits;
use axum::body::Body;
use axum::extract::DefaultBodyLimit;
use axum::extract::{Path, Request, State};
use axum::http::Uri;
use axum::http::{header, HeaderValue};
use axum::routing::{get, post};
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower_http::set_header::SetResponseHeaderLayer;

/// The full router.
pub fn router(state: AppState) -> Router {
    // The desk's pages are rendered by their own handlers (owner-only data, no hydration).
    let routes: Vec<_> = generate_route_list(app::App)
        .into_iter()
        .filter(|route| !route.path().starts_with("/desk"))
        .collect();
    let shell_options = state.leptos_options.clone();
    let settings = state.site_settings();
    // The desk's server functions (`/desk/fn/…`) and the reporter's (`/report/fn/…`,
    // `/track/fn/…`), routed by `leptos_routes_with_context`.
    let desk = crate::desk::fns::desk_server(&state);
    let reporter_fns = crate::routes::reporter_fns::reporter_server(&state);
    let page_routes = Router::new()
        .route("/report", post(reporter::file_form))
        .route("/track", post(reporter::track_form))
        .route("/track/answer", post(reporter::answer_form))
        .route("/live/{service}", get(crate::routes::live::root))
        .route("/live/{service}/{*rest}", get(crate::routes::live::path))
        .route(
            "/release/{service}/{commit}",
            get(crate::routes::live::release_root),
        )
        .route(
            "/release/{service}/{commit}/{*rest}",
            get(crate::routes::live::release_path),
        )
        .route("/desk", get(crate::desk::dashboard))
        .route("/desk/crew", get(crate::desk::crew))
        .route("/desk/live", get(crate::desk::live))
        .route(
            "/desk/sign-in",
            get(crate::desk::sign_in_page).post(crate::desk::sign_in),
        )
        .route("/desk/sign-out", post(crate::desk::sign_out))
        .route("/desk/bugs/{id}", get(crate::desk::bug))
        .route("/desk/bugs/{id}/confirm", get(crate::desk::confirm_bug))
        .route("/desk/owners", get(crate::desk::owners))
        .route("/desk/owners/confirm", get(crate::desk::owners))
        .route(
            "/desk/invite",
            get(crate::desk::invite_page).post(crate::desk::invite_accept),
        )
        .route(
            "/desk/reports/{id}/confirm",
            get(crate::desk::confirm_report),
        )
        .layer(DefaultBodyLimit::max(limits::BODY_BYTES));
    let api_routes = api_router().layer(DefaultBodyLimit::max(limits::BODY_BYTES));
    let webhook_routes = Router::new()
        .route("/webhooks/github", post(crate::routes::webhooks::webhook))
        .layer(DefaultBodyLimit::max(
            crate::routes::webhooks::MAX_WEBHOOK_BYTES,
        ));
    let leptos_fallback = leptos_axum::file_and_error_handler::<AppState, _>(app::shell);
    Router::new()
        .merge(webhook_routes)
        .merge(page_routes)
        .merge(api_routes)
        .leptos_routes_with_context(
            &state,
            routes,
            move || {
                leptos::prelude::provide_context(settings.clone());
                leptos::prelude::provide_context(desk.clone());
                leptos::prelude::provide_context(reporter_fns.clone());
            },
            move || app::shell(shell_options.clone()),
        )
        .fallback(
            move |uri: Uri, state: State<AppState>, request: Request<Body>| {
                let leptos_fallback = leptos_fallback.clone();
                async move {
                    if uri.path().starts_with("/api/") {
                        meta::undeclared_api_path().await
                    } else {
                        leptos_fallback(uri, state, request).await
                    }
                }
            },
        )
        .layer(axum::middleware::from_fn(server_fn_statuses))
        // A handler that panics is answered 500 in the API's error body, not cut off.
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            crate::web::error::panicked,
        ))
        // Method, path and status only: no headers (a capability travels in one) and never
        // a query string worth logging (capabilities are never put in one).
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::REFERRER_POLICY,
            // Tracking links carry their secret in the fragment; never leak the URL onward.
            HeaderValue::from_static("no-referrer"),
        ))
        // Pages set their own policy with a fresh nonce (`app::content_security_policy`);
        // everything else (JSON, static files, plain-text refusals) may run nothing at all.
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            ),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        .with_state(state)
}

/// Every `/api` route, built from the operation table ([`crate::web::OPERATIONS`]): each operation's
/// path and method come from the table, and its handler from [`api_handler`]. No `/api` route
/// is added anywhere else, so none can exist without the table's authorisation rules (a test
/// walks every declared operation over HTTP, and one reads this crate's sources for strays).
pub fn api_router() -> Router<AppState> {
    let mut router = Router::new();
    for op in crate::web::OPERATIONS {
        let Ok(method) = op.method.parse::<axum::http::Method>() else {
            tracing::error!(
                operation = op.id,
                "operation with an unknown method: not served"
            );
            continue;
        };
        let Ok(filter) = MethodFilter::try_from(method) else {
            tracing::error!(
                operation = op.id,
                "operation with an unroutable method: not served"
            );
            continue;
        };
        router = router.route(op.path, api_handler(op.op, filter));
    }
    router
}

/// The handler of operation `op`, routed for `filter` (the table's method): one match over
/// every operation, so an operation without a handler does not compile.
pub fn api_handler(op: Op, filter: MethodFilter) -> MethodRouter<AppState> {
    use crate::routes::fix;
    use crate::routes::{crew as crew_api, outbox as notify_api, spend as spend_api};
    match op {
        Op::Health => on(filter, meta::health),
        Op::OpenApi => on(filter, meta::openapi),
        Op::Components => on(filter, reporter::components),
        Op::FileReport => on(filter, reporter::file_json),
        Op::Track => on(filter, reporter::track_json),
        Op::Answer => on(filter, reporter::answer_json),
        Op::Login => on(filter, owners::login),
        Op::Logout => on(filter, owners::logout),
        Op::AcceptInvite => on(filter, owners::accept_invite),
        Op::Me => on(filter, owners::me),
        Op::Invite => on(filter, owners::invite),
        Op::ListOwners => on(filter, owners::list_owners),
        Op::ConfirmOwner => on(filter, owners::confirm_owner_route),
        Op::ListBugs => on(filter, bugs::list_bugs),
        Op::GetBug => on(filter, bugs::get_bug),
        Op::Triage
        | Op::StartFix
        | Op::StartReproduction
        | Op::ProposeReproduction
        | Op::AddNote
        | Op::Approve
        | Op::Reopen
        | Op::Retry
        | Op::TakeOver
        | Op::Promote
        | Op::MarkDuplicate
        | Op::HandToHuman
        | Op::Merge => bug_command(filter, op),
        Op::GetFixContext => on(filter, fix::get_context),
        Op::GetReproductionContext => on(filter, fix::get_reproduction_context),
        Op::SubmitFixCandidate => {
            on(filter, fix::post_candidate).layer(DefaultBodyLimit::max(fix::CANDIDATE_BYTES))
        }
        Op::GetDiff => on(filter, crate::routes::forge::diff),
        Op::RecordDeployment => on(filter, crate::routes::forge::record_deployment),
        Op::RollBack => on(filter, crate::routes::forge::roll_back),
        Op::ReserveModelCall => on(filter, spend_api::reserve),
        Op::SettleModelCall => on(filter, spend_api::settle),
        Op::GetSpend => on(filter, spend_api::summary),
        Op::SendTask => on(filter, crew_api::send),
        Op::OpenTasks => on(filter, crew_api::open),
        Op::AcceptTask => on(filter, crew_api::accept),
        Op::CompleteTask => on(filter, crew_api::complete),
        Op::RenewTask => on(filter, crew_api::renew),
        Op::GetCrewStep => on(filter, crew_api::bug_step),
        Op::Heartbeat => on(filter, crew_api::heartbeat),
        Op::CrewStatus => on(filter, crew_api::status),
        Op::ClaimNotifications => on(filter, notify_api::claim),
        Op::RecordDelivery => on(filter, notify_api::delivered),
        Op::FailNotification => on(filter, notify_api::fail),
        Op::AckNotification => on(filter, notify_api::ack),
        Op::MessageReporter => on(filter, notify_api::message_reporter),
        Op::ClaimSandboxJob => on(filter, crate::routes::sandbox::claim),
        Op::RenewSandboxJob => on(filter, crate::routes::sandbox::renew),
        Op::FinishSandboxJob => on(filter, crate::routes::sandbox::finish),
    }
}

/// A bug command's route: the operation is fixed here, never taken from the path.
fn bug_command(filter: MethodFilter, op: Op) -> MethodRouter<AppState> {
    on(
        filter,
        move |State(state): State<AppState>,
              credential: crate::auth::Credential,
              headers: axum::http::HeaderMap,
              Path(bug): Path<String>,
              crate::web::LimitedBody(body): crate::web::LimitedBody| async move {
            bugs::bug_operation(state, credential, headers, bug, op, body).await
        },
    )
}

/// Where a desk server function's answer to a plain form post may send the browser: back to a
/// page of this desk only. server_fn redirects to the `Referer` as sent; a foreign origin,
/// a scheme-relative `//host` or `/\host`, or anything that is not a path becomes `/desk`.
fn same_desk_location(location: &str, host: Option<&str>) -> String {
    let path = match location.split_once("://") {
        Some((scheme, rest)) if scheme == "http" || scheme == "https" => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            if Some(authority) == host && !authority.contains('@') {
                if path.is_empty() {
                    "/"
                } else {
                    path
                }
            } else {
                return "/desk".to_owned();
            }
        }
        Some(_) => return "/desk".to_owned(),
        None => location,
    };
    let safe = path.starts_with('/')
        && !path.starts_with("//")
        && !path.starts_with("/\\")
        && !path.chars().any(|c| c.is_control() || c == '\\');
    if safe {
        path.to_owned()
    } else {
        "/desk".to_owned()
    }
}

/// Whose server function a path names: the desk's (owners) or the reporter's (the public);
/// `None` for every other path.
fn server_fn_of(path: &str) -> Option<ServerFnSide> {
    if path.starts_with("/desk/fn/") {
        Some(ServerFnSide::Desk)
    } else if path.starts_with("/report/fn/") || path.starts_with("/track/fn/") {
        Some(ServerFnSide::Reporter)
    } else {
        None
    }
}

/// The two families of server functions answer refusals in their own shapes: the desk's as
/// `DeskError` (`code`), the reporter's as the REST API's `ApiError` (`error`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ServerFnSide {
    Desk,
    Reporter,
}

impl ServerFnSide {
    fn refusal(self, code: &str, message: String) -> Vec<u8> {
        match self {
            ServerFnSide::Desk => serde_json::to_vec(&app::dto::DeskError::new(code, message)),
            ServerFnSide::Reporter => serde_json::to_vec(&app::dto::ApiError {
                error: code.to_owned(),
                message,
                fields: Default::default(),
            }),
        }
        .unwrap_or_default()
    }

    /// How many bytes of arguments to read. The reporter's arrive form-encoded, where every
    /// byte of non-ASCII text takes three (`%E9`): a report at its per-field limits in Chinese
    /// is about 180 KiB that way, 60 KiB as the REST API's JSON, so the reporter's functions
    /// read up to three times the desk's usual 64 KiB (the fields' own limits still apply).
    fn body_limit(self) -> usize {
        match self {
            ServerFnSide::Desk => limits::BODY_BYTES,
            ServerFnSide::Reporter => 3 * limits::BODY_BYTES,
        }
    }

    /// A refusal answered before the function runs and before its body is read.
    fn refuse(
        self,
        status: axum::http::StatusCode,
        code: &str,
        message: String,
    ) -> axum::response::Response {
        let mut answer = axum::response::Response::new(Body::from(self.refusal(code, message)));
        *answer.status_mut() = status;
        let headers = answer.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        // The rest of the body is never read, so this connection cannot carry another request:
        // say so, or a client that pooled it sends the next one into a connection being
        // closed (a test's next call failed that way).
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        answer
    }

    fn code_of(self, body: &[u8]) -> String {
        let key = match self {
            ServerFnSide::Desk => "code",
            ServerFnSide::Reporter => "error",
        };
        serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get(key).and_then(|c| c.as_str()).map(str::to_owned))
            .unwrap_or_default()
    }
}

/// The server functions' answers, made right: arguments they cannot read (a missing or
/// malformed field, decided before the function runs) are answered 500 by server_fn — that is
/// the caller's mistake, so 400 with the same body; a form post's redirect goes back to this
/// desk only ([`same_desk_location`]); and nothing of theirs is cached (answers carry the
/// session's CSRF token and owner data, or a reporter's own report).
async fn server_fn_statuses(
    request: Request<Body>,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let Some(side) = server_fn_of(request.uri().path()) else {
        return next.run(request).await;
    };
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    // A server function's arguments are a form's worth, like any other body of this desk: read
    // no more than that, and no slower than R2R_BODY_TIMEOUT allows, before anyone is even
    // known (the same answers as every other route: 413, 408, 400). A body read without that
    // limit let a few stalled posts hold every connection the listener allows.
    // The reporter's functions answer the hydrated pages, in JSON. A plain form post (a page
    // of another site, say) would be run and then redirected back to its Referer, so the
    // receipt with the one private link — or the outcome of an answer — would be lost on the
    // way: such posts belong to `/report` and `/track`, which answer with the page.
    let wants_json = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("application/json"));
    if side == ServerFnSide::Reporter && !wants_json {
        return side.refuse(
            axum::http::StatusCode::NOT_ACCEPTABLE,
            "not_acceptable",
            "These functions answer the desk's own pages in JSON (Accept: application/json); \
             without JavaScript, post the form at /report or /track. Nothing was recorded."
                .to_owned(),
        );
    }
    // Only this desk's own pages call its functions. Another site's page cannot make an
    // owner's browser run one (the session cookie is SameSite=Strict, and every mutation needs
    // the session's CSRF token besides) nor a visitor's file a report in their name: the
    // browser's own word (`Sec-Fetch-Site`, else `Origin`) refuses it before anything runs.
    if crate::auth::cross_site(request.headers()) {
        return side.refuse(
            axum::http::StatusCode::FORBIDDEN,
            "cross_site",
            "Another site's page cannot call this desk's functions. Nothing was done.".to_owned(),
        );
    }
    let (parts, body) = request.into_parts();
    let request = match crate::web::read_body(&parts, body, side.body_limit()).await {
        Ok(bytes) => Request::from_parts(parts, Body::from(bytes)),
        Err(refused) => {
            return side.refuse(
                refused.status(),
                &refused.error.error,
                refused.error.message,
            )
        }
    };
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(location) = response
        .headers()
        .get(header::LOCATION)
        .and_then(|l| l.to_str().ok())
    {
        let safe = same_desk_location(location, host.as_deref());
        if let Ok(value) = HeaderValue::from_str(&safe) {
            response.headers_mut().insert(header::LOCATION, value);
        }
    }
    if response.status() != axum::http::StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        parts.status = axum::http::StatusCode::INTERNAL_SERVER_ERROR;
        return axum::response::Response::from_parts(parts, Body::empty());
    };
    if side.code_of(&bytes) == "invalid_request" {
        parts.status = axum::http::StatusCode::BAD_REQUEST;
    }
    axum::response::Response::from_parts(parts, Body::from(bytes))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_form_posts_redirect_stays_on_this_desk() {
        let host = Some("127.0.0.1:3000");
        for (location, expected) in [
            ("http://127.0.0.1:3000/desk?state=new", "/desk?state=new"),
            ("http://127.0.0.1:3000", "/"),
            ("/desk?__err=x", "/desk?__err=x"),
            ("https://evil.example/", "/desk"),
            ("http://127.0.0.1:3000.evil.example/", "/desk"),
            ("http://127.0.0.1:3000@evil.example/", "/desk"),
            ("//evil.example/x", "/desk"),
            ("/\\evil.example", "/desk"),
            ("javascript:alert(1)?__err=x", "/desk"),
            ("desk", "/desk"),
            ("", "/desk"),
        ] {
            assert_eq!(
                super::same_desk_location(location, host),
                expected,
                "{location}"
            );
        }
        assert_eq!(
            super::same_desk_location("http://127.0.0.1:3000/desk", None),
            "/desk"
        );
    }

    use super::*;

    #[test]
    fn every_operation_is_declared_once_with_a_routable_method() {
        // Handlers are bound by an exhaustive match over `Op` (the compiler checks that one);
        // the table must name every operation exactly once, at a method the router can serve,
        // and no path twice for one method.
        for op in Op::ALL {
            let entries: Vec<_> = crate::web::OPERATIONS
                .iter()
                .filter(|entry| entry.op == *op)
                .collect();
            assert_eq!(
                entries.len(),
                1,
                "{op:?} is declared {} times",
                entries.len()
            );
            assert_eq!(op.spec().map(|spec| spec.op), Some(*op));
        }
        assert_eq!(crate::web::OPERATIONS.len(), Op::ALL.len());
        let mut seen = std::collections::BTreeSet::new();
        for op in crate::web::OPERATIONS {
            let method: axum::http::Method = op.method.parse().unwrap_or_default();
            let filter = MethodFilter::try_from(method);
            assert!(filter.is_ok(), "{} has method {}", op.id, op.method);
            assert!(
                seen.insert((op.method, op.path)),
                "{} {} twice",
                op.method,
                op.path
            );
            assert!(seen.insert(("id", op.id)), "operationId {} twice", op.id);
            if let Ok(filter) = filter {
                let _handler = api_handler(op.op, filter);
            }
        }
    }
}
