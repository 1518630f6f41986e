//! Server-side rendering of the Leptos app without hydration scripts: the answers to the
//! reporter's form posts and the owners' desk pages.

use super::{no_store, AppState};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};

/// Renders the app at `path` with `page` in its context and without hydration scripts (the
/// reporter's form answers and the owners' desk pages), never cached.
pub async fn render_script_free<P: Clone + Send + Sync + 'static>(
    state: &AppState,
    path: &str,
    status: StatusCode,
    page: P,
) -> Response {
    let options = state.leptos_options.clone();
    let context_options = options.clone();
    let settings = state.site_settings();
    // As for the hydrated pages: the nonce is chosen here and the policy set on the answer
    // here. Left to the streamed render's response options, an answer now and then went out
    // before the shell had set it, with the fallback policy that blocks the page's own
    // stylesheet (seen once in the browser suite under load).
    let nonce = hex::encode(rand::random::<[u8; 16]>());
    let Ok(policy) = axum::http::HeaderValue::from_str(&app::content_security_policy(&nonce))
    else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let handler = leptos_axum::render_app_to_stream_in_order_with_context(
        move || {
            leptos::prelude::provide_context(leptos::nonce::Nonce::from_value(nonce.clone()));
            leptos::prelude::provide_context(context_options.clone());
            leptos::prelude::provide_context(settings.clone());
            leptos::prelude::provide_context(page.clone());
        },
        move || app::shell_without_scripts(options.clone()),
    );
    let request = match Request::builder().uri(path).body(Body::empty()) {
        Ok(request) => request,
        Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    };
    let mut response = handler(request).await.into_response();
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(axum::http::header::CONTENT_SECURITY_POLICY, policy);
    no_store(response)
}

/// Renders the app for `request` (its path, query and headers: the page's server functions
/// run in place and see who is asking) with the hydration scripts and `backend` in context
/// (what those functions call), never cached: the hydrated desk pages.
pub async fn render_hydrated<B: Clone + Send + Sync + 'static>(
    state: &AppState,
    request: Request<Body>,
    backend: B,
) -> Response {
    let options = state.leptos_options.clone();
    let context_options = options.clone();
    let settings = state.site_settings();
    let desk = backend;
    // The page's nonce is chosen here and its policy set on the answer here, whatever the
    // rendering does with its response options (a whole-page render once answered without
    // it, and the browser then refused the page's own scripts).
    let nonce = hex::encode(rand::random::<[u8; 16]>());
    let policy = axum::http::HeaderValue::from_str(&app::content_security_policy(&nonce));
    let page_nonce = nonce.clone();
    // Whole (not streamed): the page's title and head come from its data.
    let handler = leptos_axum::render_app_async_with_context(
        move || {
            leptos::prelude::provide_context(leptos::nonce::Nonce::from_value(page_nonce.clone()));
            leptos::prelude::provide_context(context_options.clone());
            leptos::prelude::provide_context(settings.clone());
            leptos::prelude::provide_context(desk.clone());
        },
        move || app::shell(options.clone()),
    );
    let mut response = handler(request).await.into_response();
    match policy {
        Ok(policy) => {
            response
                .headers_mut()
                .insert(axum::http::header::CONTENT_SECURITY_POLICY, policy);
        }
        Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
    no_store(response)
}
