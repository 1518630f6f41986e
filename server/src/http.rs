//! The HTTP surface: JSON API routes, the Leptos pages and static files.

use crate::api;
use crate::reporter::{self, ReporterDesk};
use app::dto::{limits, SiteSettings};
use app::dto::{Health, SERVICE_NAME};
use axum::extract::DefaultBodyLimit;
use axum::extract::{FromRef, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use leptos::prelude::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};
use std::sync::Arc;
use std::time::Duration;
use store::Store;
use tower_http::set_header::SetResponseHeaderLayer;

/// How long a health check waits for the database.
const HEALTH_DB_TIMEOUT: Duration = Duration::from_secs(2);

/// Shared state of every handler.
#[derive(Clone, Debug, FromRef)]
pub struct AppState {
    /// Leptos site options (site root, output name).
    pub leptos_options: LeptosOptions,
    /// The ledger.
    pub store: Store,
    /// This installation's id.
    pub instance: String,
    /// The reporter side: components, limits, policy.
    pub reporter: Arc<ReporterDesk>,
    /// Owner sessions and sign-in limits.
    pub auth: Arc<crate::auth::AuthDesk>,
    /// GitHub settings.
    pub github: Arc<crate::github::GitHubConfig>,
    /// The local git forge, when this desk has one.
    pub local_forge: Option<Arc<crate::local_forge::LocalForge>>,
    /// The sandbox the desk re-runs proposed tests in (connected on first use).
    pub sandbox: Arc<crate::rerun::DeskSandbox>,
    /// The model budget.
    pub spend: domain::spend::Budget,
}

impl AppState {
    /// The state for `config`.
    pub fn new(
        leptos_options: LeptosOptions,
        store: Store,
        instance: String,
        config: &crate::config::Config,
    ) -> Self {
        AppState {
            leptos_options,
            store,
            instance,
            reporter: Arc::new(ReporterDesk::new(&config.intake, config.policy.clone())),
            auth: Arc::new(crate::auth::AuthDesk::new(&config.auth)),
            github: Arc::new(config.github.clone()),
            local_forge: config.local_forge.as_ref().map(|path| {
                Arc::new(crate::local_forge::LocalForge::new(
                    path,
                    &config.local_forge_branch,
                ))
            }),
            sandbox: Arc::new(crate::rerun::DeskSandbox::new(config)),
            spend: config.spend,
        }
    }

    /// What the pages need from the configuration.
    pub fn site_settings(&self) -> SiteSettings {
        SiteSettings {
            components: self.reporter.components.clone(),
        }
    }
}

/// The full router.
pub fn router(state: AppState) -> Router {
    // The desk's pages are rendered by their own handlers (owner-only data, no hydration).
    let routes: Vec<_> = generate_route_list(app::App)
        .into_iter()
        .filter(|route| !route.path().starts_with("/desk"))
        .collect();
    let shell_options = state.leptos_options.clone();
    let settings = state.site_settings();
    let reporter_routes = Router::new()
        .route("/api/v1/components", get(reporter::components))
        .route("/api/v1/reports", post(reporter::file_json))
        .route("/api/v1/track", get(reporter::track_json))
        .route("/api/v1/track/answer", post(reporter::answer_json))
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
    let api_routes = Router::new()
        .route("/api/openapi.json", get(api::openapi))
        .route("/api/v1/session", post(api::login).delete(api::logout))
        .route("/api/v1/me", get(api::me))
        .route("/api/v1/owners/invites", post(api::invite))
        .route("/api/v1/owners/accept", post(api::accept_invite))
        .route("/api/v1/bugs", get(api::list_bugs))
        .route("/api/v1/bugs/{id}", get(api::get_bug))
        .route(
            "/api/v1/bugs/{id}/reproduction/start",
            post(api::start_reproduction),
        )
        .route("/api/v1/bugs/{id}/fix/start", post(api::start_fix))
        .route(
            "/api/v1/bugs/{id}/fix/context",
            get(crate::fix::get_context),
        )
        .route(
            "/api/v1/bugs/{id}/fix/candidate",
            post(crate::fix::post_candidate)
                .layer(DefaultBodyLimit::max(crate::fix::CANDIDATE_BYTES)),
        )
        .route("/api/v1/bugs/{id}/diff", get(crate::forge_api::diff))
        .route(
            "/api/v1/deployments",
            post(crate::forge_api::record_deployment),
        )
        .route("/api/v1/bugs/{id}/{action}", post(api::bug_command))
        .route("/api/v1/model-calls", post(crate::spend_api::reserve))
        .route(
            "/api/v1/model-calls/{id}/settle",
            post(crate::spend_api::settle),
        )
        .route("/api/v1/spend", get(crate::spend_api::summary))
        .route("/api/v1/crew", get(crate::crew_api::status))
        .route(
            "/api/v1/crew/tasks",
            post(crate::crew_api::send).get(crate::crew_api::open),
        )
        .route(
            "/api/v1/crew/tasks/{id}/accept",
            post(crate::crew_api::accept),
        )
        .route(
            "/api/v1/crew/tasks/{id}/complete",
            post(crate::crew_api::complete),
        )
        .route("/api/v1/crew/heartbeat", post(crate::crew_api::heartbeat))
        .route(
            "/api/v1/outbox/concierge/claim",
            post(crate::notify_api::claim),
        )
        .route(
            "/api/v1/outbox/jobs/{key}/delivered",
            post(crate::notify_api::delivered),
        )
        .route(
            "/api/v1/outbox/jobs/{key}/fail",
            post(crate::notify_api::fail),
        )
        .route(
            "/api/v1/outbox/jobs/{key}/ack",
            post(crate::notify_api::ack),
        )
        .route(
            "/api/v1/reports/{id}/messages",
            post(crate::notify_api::message_reporter),
        )
        .layer(DefaultBodyLimit::max(limits::BODY_BYTES));
    let webhook_routes = Router::new()
        .route("/webhooks/github", post(crate::github::webhook))
        .layer(DefaultBodyLimit::max(crate::github::MAX_WEBHOOK_BYTES));
    Router::new()
        .route("/api/health", get(health))
        .merge(webhook_routes)
        .merge(reporter_routes)
        .merge(api_routes)
        .leptos_routes_with_context(
            &state,
            routes,
            move || leptos::prelude::provide_context(settings.clone()),
            move || app::shell(shell_options.clone()),
        )
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(
            app::shell,
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
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        .with_state(state)
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
