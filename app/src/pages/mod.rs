//! One module a page.

mod bug;
mod bug_view;
mod confirm;
mod crew;
mod dashboard;
mod demo;
mod desk;
#[cfg(feature = "ssr")]
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
#[cfg(feature = "ssr")]
pub(crate) use {
    bug_view::bug_screen,
    confirm::question_screen,
    desk::{crew_screen, dashboard_screen},
    owners::owners_screen,
};

use crate::erase::IntoAnySync;
use leptos::prelude::*;

/// A signal that turns true once the page is hydrated: effects never run on the server, so
/// anything that depends on it works only where the WebAssembly is live.
pub(crate) fn hydrated_signal() -> ReadSignal<bool> {
    let (hydrated, set_hydrated) = signal(false);
    Effect::new(move |_| set_hydrated.set(true));
    hydrated
}

/// `/desk`: the dashboard, hydrated on its server function. The server also renders a refusal
/// there from a [`DeskPage`](crate::dto::DeskPage) context, script-free, so the browser never
/// needs that view.
#[component]
pub fn DashboardPages() -> impl IntoView {
    match server_desk_page() {
        Some(page) => page,
        None => view! { <DashboardPage/> }.into_any_sync(),
    }
}

/// The owners' desk pages other than the dashboard and the bug view (each its own lazy chunk,
/// so the desk opens with the code of one page): the questions before an action, the crew and
/// owners pages are hydrated on their server functions; sign-in and accepting an invitation
/// are rendered by the server alone, script-free (their data comes in the request's context).
#[component]
pub fn DeskPages() -> impl IntoView {
    if let Some(page) = server_desk_page() {
        return page;
    }
    let path = leptos_router::hooks::use_location()
        .pathname
        .get_untracked();
    let path = path.trim_end_matches('/');
    let question = ((path.starts_with("/desk/bugs/") || path.starts_with("/desk/reports/"))
        && path.ends_with("/confirm")
        && path.matches('/').count() == 4)
        || path == "/desk/owners/confirm";
    if question {
        view! { <ConfirmPage/> }.into_any_sync()
    } else if path == "/desk/crew" {
        view! { <CrewPage/> }.into_any_sync()
    } else if path == "/desk/owners" {
        view! { <OwnersPage/> }.into_any_sync()
    } else {
        view! { <Desk/> }.into_any_sync()
    }
}

/// A desk page the server rendered from a [`DeskPage`](crate::dto::DeskPage) in its context
/// (sign-in, an invitation, a refusal), whatever its address. Those answers load no scripts,
/// so the WebAssembly bundle carries none of their views.
fn server_desk_page() -> Option<AnyView> {
    #[cfg(feature = "ssr")]
    if use_context::<crate::dto::DeskPage>().is_some() {
        return Some(view! { <Desk/> }.into_any_sync());
    }
    None
}
