//! `/desk`: the dashboard as a hydrated page on the [`desk_dashboard`] server function. The
//! server renders it whole (the function runs in place, so the page works without
//! JavaScript); once hydrated, the page listens to the desk's change events and fetches the
//! dashboard again through the same function — no page reload, no HTML swapping — and
//! quarantine items are marked handled in place.

use super::desk::DeskRefusal;
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
    // The server's HTML: its action buttons ask in the dialog; a quarantine item's "handled"
    // form (`data-handled`) goes to `handled` in place.
    let ask = asking.on_submit();
    let on_submit = move |event: leptos::ev::SubmitEvent| {
        #[cfg(feature = "hydrate")]
        if let Some(form) = super::confirm::form_marked(&event, "data-handled") {
            event.prevent_default();
            if handled.pending().get_untracked() {
                return;
            }
            let field = super::confirm::form_fields(&form);
            handled.dispatch(QuarantineHandled {
                report: field("report").unwrap_or_default(),
                csrf: field("csrf").unwrap_or_default(),
            });
            return;
        }
        ask(event);
    };
    view! {
        // Outside the suspended part: the server writes the document's head before the data
        // arrives, so a title set inside it would be missing from the HTML.
        <PageTitle text="Bugs · Desk · Reporter-to-Release"/>
        <p id="live-status" class="hint" role="status" aria-live="polite">{status}</p>
        <Transition fallback=|| view! { <p class="hint">"Loading the desk…"</p> }>
            {move || {
                let on_submit = on_submit.clone();
                Suspend::new(async move {
                    match dashboard.await {
                        Ok(dashboard) => view! {
                            <div class="fragment" on:submit=on_submit>
                                <div class="fragment" inner_html=dashboard.counts_html.into_inner()></div>
                                <section class="panel">
                                    <div class="fragment" inner_html=dashboard.filters_html.into_inner()></div>
                                    <div class="fragment" inner_html=dashboard.list_html.into_inner()></div>
                                </section>
                                <div class="fragment" inner_html=dashboard.quarantine_html.into_inner()></div>
                            </div>
                        }.into_any_sync(),
                        Err(error) => view! { <DeskRefusal error back="/desk".to_owned()/> }.into_any_sync(),
                    }
                })
            }}
        </Transition>
        // Its own words for the code, never the message: without JavaScript the refusal comes
        // back in the address, where anyone could have written it.
        {move || handled.value().get().and_then(Result::err).map(|error| view! {
            <p class="error" role="alert" data-testid="quarantine-error">{error.words()}</p>
        })}
        <super::confirm::QuestionDialog/>
    }
}
