//! `/desk/bugs/{id}`: the bug view as a hydrated page on the [`desk_bug`] server function.
//! The server renders it whole through the function (so it works without JavaScript); once
//! hydrated, it listens to the bug's change events and fetches the view again through the
//! same function. Its actions ask first in the page's dialog ([`super::confirm`]), which stays
//! outside the part that is redrawn.

use super::bug_view::{BugView, Tabs};
use super::desk::DeskRefusal;
use crate::desk_fns::desk_bug;
use crate::erase::IntoAnySync;
use crate::layout::PageTitle;
use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

/// `/desk/bugs/{id}`.
#[component]
pub fn BugPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let id = move || params.with(|p| p.get("id").unwrap_or_default());
    let asking = super::confirm::Asking::provide();
    Tabs::provide();
    let bug = Resource::new(
        move || {
            (
                id(),
                query.with(|q| (q.get("done"), q.get("diff"))),
                asking.act.version().get(),
            )
        },
        |(id, (done, diff), _)| desk_bug(id, done, diff),
    );
    let status = super::live::status_line(
        move || format!("/desk/live?bug={}", id()),
        None,
        move || bug.refetch(),
        move || matches!(bug.get(), Some(Ok(_))),
    );
    view! {
        <p id="live-status" class="hint" role="status" aria-live="polite">{status}</p>
        <Transition fallback=|| view! { <p class="hint">"Loading the bug…"</p> }>
            {move || Suspend::new(async move {
                match bug.await {
                    Ok(bug) => view! { <BugView bug/> }.into_any_sync(),
                    Err(error) => view! {
                        <PageTitle text="That did not work · Desk · Reporter-to-Release"/>
                        <DeskRefusal error back="/desk".to_owned()/>
                    }.into_any_sync(),
                }
            })}
        </Transition>
        <super::confirm::QuestionDialog/>
    }
}
