//! The HTTP surface: JSON API routes, the Leptos pages and static files.

use crate::api;
use crate::reporter::{self};
use crate::web::AppState;
use app::dto::limits;
use app::dto::{Health, SERVICE_NAME};
use axum::body::Body;
use axum::extract::DefaultBodyLimit;
use axum::extract::{Path, Request, State};
use axum::http::Uri;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::{Json, Router};
use leptos_axum::{generate_route_list, LeptosRoutes};
use std::time::Duration;
use tower_http::set_header::SetResponseHeaderLayer;

/// How long a health check waits for the database.
const HEALTH_DB_TIMEOUT: Duration = Duration::from_secs(2);

/// The full router.
pub fn router(state: AppState) -> Router {
    // The desk's pages are rendered by their own handlers (owner-only data, no hydration).
    let routes: Vec<_> = generate_route_list(app::App)
        .into_iter()
        .filter(|route| !route.path().starts_with("/desk"))
        .collect();
    let shell_options = state.leptos_options.clone();
    let settings = state.site_settings();
    let page_routes = Router::new()
        .route("/report", post(reporter::file_form))
        .route("/track", post(reporter::track_form))
        .route("/track/answer", post(reporter::answer_form))
        .route("/desk", get(crate::desk_pages::dashboard))
        .route("/desk/crew", get(crate::desk_pages::crew))
        .route("/desk/live", get(crate::desk_pages::live))
        .route(
            "/desk/sign-in",
            get(crate::desk_pages::sign_in_page).post(crate::desk_pages::sign_in),
        )
        .route("/desk/sign-out", post(crate::desk_pages::sign_out))
        .route("/desk/bugs/{id}", get(crate::desk_pages::bug))
        .route("/desk/bugs/{id}/act", post(crate::desk_pages::act))
        .route("/desk/owners", get(crate::desk_pages::owners))
        .route("/desk/owners/act", post(crate::desk_pages::owners_act))
        .route(
            "/desk/invite",
            get(crate::desk_pages::invite_page).post(crate::desk_pages::invite_accept),
        )
        .route(
            "/desk/reports/{id}/act",
            post(crate::desk_pages::act_on_report),
        )
        .layer(DefaultBodyLimit::max(limits::BODY_BYTES));
    let api_routes = api_router().layer(DefaultBodyLimit::max(limits::BODY_BYTES));
    let webhook_routes = Router::new()
        .route("/webhooks/github", post(crate::github::webhook))
        .layer(DefaultBodyLimit::max(crate::github::MAX_WEBHOOK_BYTES));
    let leptos_fallback = leptos_axum::file_and_error_handler::<AppState, _>(app::shell);
    Router::new()
        .merge(webhook_routes)
        .merge(page_routes)
        .merge(api_routes)
        .leptos_routes_with_context(
            &state,
            routes,
            move || leptos::prelude::provide_context(settings.clone()),
            move || app::shell(shell_options.clone()),
        )
        .fallback(
            move |uri: Uri, state: State<AppState>, request: Request<Body>| {
                let leptos_fallback = leptos_fallback.clone();
                async move {
                    if uri.path().starts_with("/api/") {
                        undeclared_api_path().await
                    } else {
                        leptos_fallback(uri, state, request).await
                    }
                }
            },
        )
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
        match api_handler(op.id, filter) {
            Some(handler) => router = router.route(op.path, handler),
            None => tracing::error!(operation = op.id, "declared operation without a handler"),
        }
    }
    router
}

/// The handler of operation `id`, routed for `filter` (the table's method).
pub fn api_handler(id: &str, filter: MethodFilter) -> Option<MethodRouter<AppState>> {
    use crate::{crew_api, fix, notify_api, spend_api};
    Some(match id {
        "health" => on(filter, health),
        "openapi" => on(filter, api::openapi),
        "components" => on(filter, reporter::components),
        "fileReport" => on(filter, reporter::file_json),
        "track" => on(filter, reporter::track_json),
        "answer" => on(filter, reporter::answer_json),
        "login" => on(filter, api::login),
        "logout" => on(filter, api::logout),
        "acceptInvite" => on(filter, api::accept_invite),
        "me" => on(filter, api::me),
        "invite" => on(filter, api::invite),
        "listOwners" => on(filter, api::list_owners),
        "confirmOwner" => on(filter, api::confirm_owner_route),
        "listBugs" => on(filter, api::list_bugs),
        "getBug" => on(filter, api::get_bug),
        "triage"
        | "startFix"
        | "startReproduction"
        | "proposeReproduction"
        | "addNote"
        | "approve"
        | "reopen"
        | "submitFix"
        | "merge" => bug_command(filter, id)?,
        "getFixContext" => on(filter, fix::get_context),
        "submitFixCandidate" => {
            on(filter, fix::post_candidate).layer(DefaultBodyLimit::max(fix::CANDIDATE_BYTES))
        }
        "getDiff" => on(filter, crate::routes::forge::diff),
        "recordDeployment" => on(filter, crate::routes::forge::record_deployment),
        "reserveModelCall" => on(filter, spend_api::reserve),
        "settleModelCall" => on(filter, spend_api::settle),
        "getSpend" => on(filter, spend_api::summary),
        "sendTask" => on(filter, crew_api::send),
        "openTasks" => on(filter, crew_api::open),
        "acceptTask" => on(filter, crew_api::accept),
        "completeTask" => on(filter, crew_api::complete),
        "heartbeat" => on(filter, crew_api::heartbeat),
        "crewStatus" => on(filter, crew_api::status),
        "claimNotifications" => on(filter, notify_api::claim),
        "recordDelivery" => on(filter, notify_api::delivered),
        "failNotification" => on(filter, notify_api::fail),
        "ackNotification" => on(filter, notify_api::ack),
        "messageReporter" => on(filter, notify_api::message_reporter),
        _ => return None,
    })
}

/// A bug command's route: the operation id is fixed here, never taken from the path.
fn bug_command(filter: MethodFilter, id: &str) -> Option<MethodRouter<AppState>> {
    let op: &'static str = crate::web::operation(id)?.id;
    Some(on(
        filter,
        move |State(state): State<AppState>,
              credential: crate::auth::Credential,
              headers: axum::http::HeaderMap,
              Path(bug): Path<String>,
              crate::web::LimitedBody(body): crate::web::LimitedBody| async move {
            api::bug_operation(state, credential, headers, bug, op, body).await
        },
    ))
}

/// Any other `/api` path: a JSON 404 that names no operation.
async fn undeclared_api_path() -> Response {
    crate::web::respond::<Response>(Err(crate::web::Refused::new(
        StatusCode::NOT_FOUND,
        "unknown_operation",
        "No such operation: see /api/openapi.json for every operation this desk serves.",
    )))
}

/// `GET /api/health`: 200 when the database answers, 503 with the reason when not.
async fn health(State(state): State<AppState>) -> Response {
    let storage = state.store.backend().as_str().to_owned();
    let reachable = match tokio::time::timeout(HEALTH_DB_TIMEOUT, state.store.ping()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            tracing::warn!(%error, "health: database ping failed");
            Err(format!("database unreachable: {storage} did not answer"))
        }
        Err(_) => Err(format!(
            "database unreachable: {storage} did not answer within {} s",
            HEALTH_DB_TIMEOUT.as_secs()
        )),
    };
    let schema_version = match reachable {
        Ok(()) => state.store.schema_version().await.ok().flatten(),
        Err(_) => None,
    };
    let (code, status) = match &reachable {
        Ok(()) => (StatusCode::OK, "ok".to_owned()),
        Err(reason) => (StatusCode::SERVICE_UNAVAILABLE, reason.clone()),
    };
    let body = Health {
        service: SERVICE_NAME.to_owned(),
        version: crate::build_info::VERSION.to_owned(),
        commit: crate::build_info::COMMIT.to_owned(),
        storage,
        status,
        database_reachable: reachable.is_ok(),
        schema_version,
        instance: Some(state.instance.clone()),
    };
    let mut response = (code, Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_operation_has_a_handler_and_a_routable_method() {
        for op in crate::web::OPERATIONS {
            let method: axum::http::Method = op.method.parse().unwrap_or_default();
            let filter = MethodFilter::try_from(method);
            assert!(filter.is_ok(), "{} has method {}", op.id, op.method);
            if let Ok(filter) = filter {
                assert!(
                    api_handler(op.id, filter).is_some(),
                    "{} has no handler",
                    op.id
                );
            }
        }
        assert!(api_handler("noSuchOperation", MethodFilter::POST).is_none());
    }
}
