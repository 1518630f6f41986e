use crate::layout::PageTitle;
use leptos::prelude::*;

/// Any path the desk does not serve; answers with HTTP 404.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        <PageTitle text="Not found · Reporter-to-Release"/>
        <section class="panel">
            <h1>"Nothing here"</h1>
            <p>"This page does not exist. " <a href="/">"Go to the home page"</a> "."</p>
        </section>
    }
}
