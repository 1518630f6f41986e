//! `/desk/crew`: the crew page as a hydrated page on the [`desk_crew`] server function,
//! fetched again when the desk's events say something changed and every 10 s (heartbeats
//! are its content, and they change without any bug changing) — except while the project
//! form holds unsaved input.

use super::desk::DeskRefusal;
use crate::desk_fns::{desk_crew, DeskProject};
use crate::erase::IntoAnySync;
use crate::layout::PageTitle;
use leptos::prelude::*;

/// `/desk/crew`.
#[component]
pub fn CrewPage() -> impl IntoView {
    let crew = Resource::new(|| (), |_| desk_crew());
    // The release list's rollbacks: sent in place once hydrated, refused in words.
    let act = ServerAction::<crate::desk_fns::DeskAct>::new();
    // While the owner has unsent input in the project form, the page does not fetch itself
    // again (a refresh draws the form anew): nothing typed is lost.
    let editing = RwSignal::new(false);
    let status = super::live::status_line(
        || "/desk/live".to_owned(),
        Some(std::time::Duration::from_secs(10)),
        move || {
            if !editing.get_untracked() {
                crew.refetch();
            }
        },
        move || matches!(crew.get(), Some(Ok(_))),
    );
    view! {
        <PageTitle text="Crew · Desk · Reporter-to-Release"/>
        <p id="live-status" class="hint" role="status" aria-live="polite">{status}</p>
        <super::confirm::ActRefusal act/>
        <Transition fallback=|| view! { <p class="hint">"Loading the crew…"</p> }>
            {move || Suspend::new(async move {
                match crew.await {
                    // One element, as every desk page's answer is: the drawn page, then the form.
                    Ok(crew) => view! {
                        <div>
                            <div class="fragment" inner_html=crew.html.into_inner() on:submit=super::confirm::act_on_submit(act) on:input=move |_| editing.set(true)></div>
                            <ProjectForm csrf=crew.form_csrf editing/>
                        </div>
                    }.into_any_sync(),
                    Err(error) => view! { <DeskRefusal error back="/desk".to_owned()/> }.into_any_sync(),
                }
            })}
        </Transition>
    }
}

/// Adds or changes a project: a form that posts to [`desk_project`](crate::desk_fns::desk_project)
/// (sent in place once hydrated). The server checks the session, the CSRF token and the
/// whole definition, as `r2r project add` and `edit` do. `editing` is set while it holds
/// input not yet saved.
#[component]
fn ProjectForm(csrf: String, editing: RwSignal<bool>) -> impl IntoView {
    use leptos::server_fn::ServerFn;
    let save = ServerAction::<DeskProject>::new();
    // Saved: the page may fetch itself again (and shows the project); refused: the input
    // stays for the owner to correct.
    Effect::new(move |_| {
        if matches!(save.value().get(), Some(Ok(()))) {
            editing.set(false);
        }
    });
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
                github: field("github").unwrap_or_default(),
                deploy: field("deploy").unwrap_or_default(),
                test_paths: field("test_paths").unwrap_or_default(),
                launch_port: field("launch_port").unwrap_or_default(),
                launch_args: field("launch_args").unwrap_or_default(),
                launch_env: field("launch_env").unwrap_or_default(),
                launch_assets: field("launch_assets").unwrap_or_default(),
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
            <form method="post" action=DeskProject::url() class="cart-form" data-project="" on:submit=on_submit on:input=move |_| editing.set(true) on:change=move |_| editing.set(true) aria-labelledby="project-form">
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
                        // Written out: a list drawn in a loop leaves a marker comment inside the
                        // <select>, which the browser's parser does not keep (and hydration
                        // then fails).
                        <option value="rust">"rust"</option>
                        <option value="node">"node"</option>
                        <option value="vitest">"vitest"</option>
                        <option value="python">"python"</option>
                        <option value="go">"go"</option>
                        <option value="junit">"junit"</option>
                    </select>
                </div>
                <div class="field">
                    <label for="project-fix-paths">"Folders a fix may change (comma-separated, default src/)"</label>
                    <input id="project-fix-paths" name="fix_paths" type="text" maxlength="400" autocomplete="off"/>
                </div>
                <div class="field">
                    <label for="project-test-paths">"Where its tests live (comma-separated patterns such as tests/**/*.rs; empty keeps them, default: what its profile's runner collects)"</label>
                    <input id="project-test-paths" name="test_paths" type="text" maxlength="2000" autocomplete="off"/>
                </div>
                <div class="field">
                    <label for="project-crew">"The crew works its bugs"</label>
                    <select id="project-crew" name="crew">
                        <option value="">"(keep; on when adding)"</option>
                        <option value="on">"on"</option>
                        <option value="off">"off"</option>
                    </select>
                </div>
                <div class="field">
                    <label for="project-github">"GitHub repository its fixes go to (owner/name, optional; none takes it away)"</label>
                    <input id="project-github" name="github" type="text" maxlength="140" autocomplete="off"/>
                </div>
                <div class="field">
                    <label for="project-deploy">"Service the desk releases from its branch (a Rust project's binary, served at /live/<service>; optional; none stops it)"</label>
                    <input id="project-deploy" name="deploy" type="text" maxlength="64" autocomplete="off"/>
                </div>
                <fieldset class="field">
                    <legend>"How the released program starts (in its own sandbox; empty keeps, none takes away)"</legend>
                    <label for="project-launch-port">"Port it listens on inside its sandbox (default 8080)"</label>
                    <input id="project-launch-port" name="launch_port" type="text" inputmode="numeric" maxlength="5" autocomplete="off"/>
                    <label for="project-launch-args">"Its arguments, separated by spaces ({addr} and {port} are filled in; default --addr {addr})"</label>
                    <input id="project-launch-args" name="launch_args" type="text" maxlength="1000" autocomplete="off"/>
                    <label for="project-launch-env">"Its environment: NAME=VALUE pairs separated by ; (never the desk's own R2R_ settings)"</label>
                    <input id="project-launch-env" name="launch_env" type="text" maxlength="8000" autocomplete="off"/>
                    <label for="project-launch-assets">"Folder of the files it serves as they are, checked against the build (default static)"</label>
                    <input id="project-launch-assets" name="launch_assets" type="text" maxlength="200" autocomplete="off"/>
                </fieldset>
                <div class="actions">
                    <button type="submit" class="button" data-testid="save-project">"Save the project"</button>
                </div>
            </form>
        </section>
    }
}
