//! One module a page.

mod bug;
mod bug_view;
mod confirm;
mod crew;
mod dashboard;
mod demo;
mod desk;
mod diff_view;
mod home;
mod live;
mod not_found;
mod owners;
mod report;
mod shoplite;
mod track;

pub use self::shoplite::ShopLite;
pub use bug::BugPage;
pub use confirm::ConfirmPage;
pub use crew::CrewPage;
pub use dashboard::DashboardPage;
pub use demo::Demo;
pub use desk::Desk;
pub use home::Home;
pub use not_found::NotFound;
pub use owners::OwnersPage;
pub use report::Report;
pub use track::Track;

use crate::erase::IntoAnySync;
use leptos::prelude::*;

/// A signal that turns true once the page is hydrated: effects never run on the server, so
/// anything that depends on it works only where the WebAssembly is live.
pub(crate) fn hydrated_signal() -> ReadSignal<bool> {
    let (hydrated, set_hydrated) = signal(false);
    Effect::new(move |_| set_hydrated.set(true));
    hydrated
}

/// Every desk page, one lazy chunk (split further, each desk page's chunks shared with the
/// visitors' pages multiplied and the tracking page opened with more bytes in all): the
/// dashboard, the bug view, the questions before an action, the crew and owners pages are
/// hydrated on their server functions; sign-in, accepting an invitation and a refusal are
/// rendered by the server alone (their data comes in the request's context).
#[component]
pub fn DeskPages() -> impl IntoView {
    // A page the server rendered with its data in context (a refusal) is that page, whatever
    // its address; otherwise the address says which page it is.
    let server_page = use_context::<crate::dto::DeskPage>().is_some();
    let path = leptos_router::hooks::use_location()
        .pathname
        .get_untracked();
    let path = path.trim_end_matches('/');
    let bug_view = path.starts_with("/desk/bugs/") && path.matches('/').count() == 3;
    let question = ((path.starts_with("/desk/bugs/") || path.starts_with("/desk/reports/"))
        && path.ends_with("/confirm")
        && path.matches('/').count() == 4)
        || path == "/desk/owners/confirm";
    if server_page {
        view! { <Desk/> }.into_any_sync()
    } else if path == "/desk" {
        view! { <DashboardPage/> }.into_any_sync()
    } else if bug_view {
        view! { <BugPage/> }.into_any_sync()
    } else if question {
        view! { <ConfirmPage/> }.into_any_sync()
    } else if path == "/desk/crew" {
        view! { <CrewPage/> }.into_any_sync()
    } else if path == "/desk/owners" {
        view! { <OwnersPage/> }.into_any_sync()
    } else {
        view! { <Desk/> }.into_any_sync()
    }
}
