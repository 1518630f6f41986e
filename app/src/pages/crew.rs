//! `/desk/crew`: the crew page as a hydrated page on the [`desk_crew`] server function,
//! fetched again when the desk's events say something changed and every 10 s (heartbeats
//! are its content, and they change without any bug changing).

use super::desk::DeskRefusal;
use crate::desk_fns::desk_crew;
use crate::erase::IntoAnySync;
use crate::layout::PageTitle;
use leptos::prelude::*;

/// `/desk/crew`.
#[component]
pub fn CrewPage() -> impl IntoView {
    let crew = Resource::new(|| (), |_| desk_crew());
    let status = super::live::status_line(
        || "/desk/live".to_owned(),
        Some(std::time::Duration::from_secs(10)),
        move || crew.refetch(),
        move || matches!(crew.get(), Some(Ok(_))),
    );
    view! {
        <PageTitle text="Crew · Desk · Reporter-to-Release"/>
        <p id="live-status" class="hint" role="status" aria-live="polite">{status}</p>
        <Transition fallback=|| view! { <p class="hint">"Loading the crew…"</p> }>
            {move || Suspend::new(async move {
                match crew.await {
                    Ok(crew) => view! { <div class="fragment" inner_html=crew.html.into_inner()></div> }.into_any_sync(),
                    Err(error) => view! { <DeskRefusal error back="/desk".to_owned()/> }.into_any_sync(),
                }
            })}
        </Transition>
    }
}
