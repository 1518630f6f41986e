//! One module a page.

mod dashboard;
mod demo;
mod desk;
mod home;
mod live;
mod not_found;
mod report;
mod shoplite;
mod track;

pub use self::shoplite::ShopLite;
pub use dashboard::DashboardPage;
pub use demo::Demo;
pub use desk::Desk;
pub use home::Home;
pub use not_found::NotFound;
pub use report::Report;
pub use track::Track;

use leptos::prelude::*;

/// A signal that turns true once the page is hydrated: effects never run on the server, so
/// anything that depends on it works only where the WebAssembly is live.
pub(crate) fn hydrated_signal() -> ReadSignal<bool> {
    let (hydrated, set_hydrated) = signal(false);
    Effect::new(move |_| set_hydrated.set(true));
    hydrated
}

/// Every desk page: the dashboard is hydrated on its server function; the others are still
/// rendered by the server alone (their data comes in the request's context).
#[component]
pub fn DeskPages() -> impl IntoView {
    // A page the server rendered with its data in context (a refusal, a confirmation) is that
    // page, whatever its address; otherwise `/desk` is the dashboard.
    let server_page = use_context::<crate::dto::DeskPage>().is_some();
    let path = leptos_router::hooks::use_location()
        .pathname
        .get_untracked();
    if !server_page && path.trim_end_matches('/') == "/desk" {
        view! { <DashboardPage/> }.into_any()
    } else {
        view! { <Desk/> }.into_any()
    }
}
