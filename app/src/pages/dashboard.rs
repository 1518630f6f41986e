//! `/desk`: the dashboard as a hydrated page on the [`desk_dashboard`] server function. The
//! server renders it whole (the function runs in place, so the page works without
//! JavaScript); once hydrated, the page listens to the desk's change events and fetches the
//! dashboard again through the same function — no page reload, no HTML swapping — and
//! quarantine items are marked handled in place.

use super::desk::{DashboardView, DeskRefusal};
use crate::desk_fns::{desk_dashboard, QuarantineHandled};
use crate::dto::DeskQuery;
use crate::erase::IntoAnySync;
use crate::layout::PageTitle;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// `/desk`.
#[component]
pub fn DashboardPage() -> impl IntoView {
    let query_map = use_query_map();
    let query = move || {
        query_map.with(|q| DeskQuery {
            state: q.get("state"),
            component: q.get("component"),
            tier: q.get("tier"),
            age: q.get("age"),
            q: q.get("q"),
            sort: q.get("sort"),
            page: q.get("page"),
            done: q.get("done"),
        })
    };
    let handled = ServerAction::<QuarantineHandled>::new();
    let asking = super::confirm::Asking::provide();
    // Fetched again when the query changes, after an action, and when the desk says so.
    let dashboard = Resource::new(
        move || (query(), handled.version().get(), asking.act.version().get()),
        |(query, _, _)| desk_dashboard(query),
    );
    let status = super::live::status_line(
        || "/desk/live".to_owned(),
        None,
        move || dashboard.refetch(),
        move || matches!(dashboard.get(), Some(Ok(_))),
    );
    view! {
        // Outside the suspended part: the server writes the document's head before the data
        // arrives, so a title set inside it would be missing from the HTML.
        <PageTitle text="Bugs · Desk · Reporter-to-Release"/>
        <p id="live-status" class="hint" role="status" aria-live="polite">{status}</p>
        <Transition fallback=|| view! { <p class="hint">"Loading the desk…"</p> }>
            {move || Suspend::new(async move {
                match dashboard.await {
                    Ok(dashboard) => view! { <DashboardView dashboard handled/> }.into_any_sync(),
                    Err(error) => view! { <DeskRefusal error back="/desk".to_owned()/> }.into_any_sync(),
                }
            })}
        </Transition>
        <super::confirm::QuestionDialog/>
    }
}
