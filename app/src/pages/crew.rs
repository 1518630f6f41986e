//! `/desk/crew`: the crew page as a hydrated page on the [`desk_crew`] server function,
//! fetched again when the desk's events say something changed and every 10 s (heartbeats
//! are its content, and they change without any bug changing).

use super::desk::DeskRefusal;
use crate::desk_fns::{desk_crew, DeskProject};
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
    // The project form lives outside the refreshed HTML: it is drawn once the first answer
    // gives the session's CSRF token, and what an owner types survives every refresh.
    let csrf = Memo::new(move |previous: Option<&Option<String>>| {
        crew.get()
            .and_then(Result::ok)
            .map(|crew| crew.csrf)
            .filter(|csrf| !csrf.is_empty())
            .or_else(|| previous.cloned().flatten())
    });
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
            // Inside the boundary, so the server draws it once the page's data is in; it is
            // drawn again only if the token changes, never on a refresh.
            {move || csrf.get().map(|csrf| view! { <ProjectForm csrf/> })}
        </Transition>
    }
}

/// Adds or changes a project: a form that posts to [`desk_project`](crate::desk_fns::desk_project)
/// (sent in place once hydrated). The server checks the session, the CSRF token and the
/// whole definition, as `r2r project add` and `edit` do.
#[component]
fn ProjectForm(csrf: String) -> impl IntoView {
    use leptos::server_fn::ServerFn;
    let save = ServerAction::<DeskProject>::new();
    let on_submit = move |event: leptos::ev::SubmitEvent| {
        #[cfg(feature = "hydrate")]
        if let Some(form) = super::confirm::form_marked(&event, "data-project") {
            event.prevent_default();
            if save.pending().get_untracked() {
                return;
            }
            let field = super::confirm::form_fields(&form);
            save.dispatch(DeskProject {
                csrf: field("csrf").unwrap_or_default(),
                mode: field("mode").unwrap_or_default(),
                id: field("id").unwrap_or_default(),
                name: field("name").unwrap_or_default(),
                components: field("components").unwrap_or_default(),
                forge: field("forge").unwrap_or_default(),
                branch: field("branch").unwrap_or_default(),
                profile: field("profile").unwrap_or_default(),
                fix_paths: field("fix_paths").unwrap_or_default(),
                crew: field("crew").unwrap_or_default(),
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = event;
    };
    let problem = move || {
        save.value().get().and_then(Result::err).map(|error| {
            let words = if save.version().get_untracked() > 0 {
                error.message.clone()
            } else {
                error.words().to_owned()
            };
            view! { <p class="error" role="alert" data-testid="project-problem">{words}</p> }
        })
    };
    view! {
        <section class="panel">
            <h2 id="project-form">"Add or change a project"</h2>
            <p class="hint">"Adding: every field but the name, branch, folders and crew is needed. Changing: give the id, and only the fields that change (an empty field keeps its value)."</p>
            {problem}
            <form method="post" action=DeskProject::url() class="cart-form" data-project="" on:submit=on_submit aria-labelledby="project-form">
                <input type="hidden" name="csrf" value=csrf/>
                <div class="field">
                    <label for="project-mode">"What to do"</label>
                    <select id="project-mode" name="mode">
                        <option value="add">"Add a project"</option>
                        <option value="edit">"Change a project"</option>
                    </select>
                </div>
                <div class="field">
                    <label for="project-id">"Id (lower-case letters, digits and dashes)"</label>
                    <input id="project-id" name="id" type="text" required maxlength="40" autocomplete="off"/>
                </div>
                <div class="field">
                    <label for="project-name">"Name"</label>
                    <input id="project-name" name="name" type="text" maxlength="80" autocomplete="off"/>
                </div>
                <div class="field">
                    <label for="project-components">"Components its reports name (comma-separated)"</label>
                    <input id="project-components" name="components" type="text" maxlength="400" autocomplete="off"/>
                </div>
                <div class="field">
                    <label for="project-forge">"Its bare git repository (absolute path on the desk's host)"</label>
                    <input id="project-forge" name="forge" type="text" maxlength="1000" autocomplete="off"/>
                </div>
                <div class="field">
                    <label for="project-branch">"Branch fixes go into (default main)"</label>
                    <input id="project-branch" name="branch" type="text" maxlength="100" autocomplete="off"/>
                </div>
                <div class="field">
                    <label for="project-profile">"How its tests run"</label>
                    <select id="project-profile" name="profile">
                        <option value="">"(keep, or choose when adding)"</option>
                        {["rust", "node", "vitest", "python", "go", "junit"].into_iter().map(|p| view! { <option value=p>{p}</option> }).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="project-fix-paths">"Folders a fix may change (comma-separated, default src/)"</label>
                    <input id="project-fix-paths" name="fix_paths" type="text" maxlength="400" autocomplete="off"/>
                </div>
                <div class="field">
                    <label for="project-crew">"The crew works its bugs"</label>
                    <select id="project-crew" name="crew">
                        <option value="">"(keep; on when adding)"</option>
                        <option value="on">"on"</option>
                        <option value="off">"off"</option>
                    </select>
                </div>
                <div class="actions">
                    <button type="submit" class="button" data-testid="save-project">"Save the project"</button>
                </div>
            </form>
        </section>
    }
}
