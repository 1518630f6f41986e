//! Asking before an owner acts. Every action button of the desk is a small GET form to the
//! question's page (`/desk/bugs/{id}/confirm?action=…`, `/desk/reports/{id}/confirm`,
//! `/desk/owners/confirm`), so it works without JavaScript; once hydrated, the page that
//! [`Asking::provide`]s asks the same question — fetched from [`desk_question`], the same
//! words — in a modal dialog instead. Either way the answer is a form the server drew that
//! posts to [`desk_act`] (hydrated, sent in place by a `ServerAction`): the server checks the
//! session, its CSRF token and every engine guard, then the desk goes to the page the action
//! concerns.

use super::desk::DeskRefusal;
use crate::desk_fns::{desk_question, DeskAct};
use crate::dto::{question_words, DeskAction, DeskError};
use crate::erase::IntoAnySync;
use crate::layout::PageTitle;
use crate::screen::QuestionScreen;
use leptos::prelude::*;
use leptos_router::hooks::{use_location, use_params_map, use_query_map};
#[cfg(feature = "ssr")]
use {super::desk::DeskNav, crate::dto::Confirm, crate::screen::ServerHtml};

/// What the dialog of a page shows (none, a question, or why the question could not be
/// asked) and the action its form runs.
#[derive(Clone, Copy)]
pub(crate) struct Asking {
    question: RwSignal<Option<Result<QuestionScreen, DeskError>>>,
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    loading: RwSignal<bool>,
    /// The owner's confirmed action.
    pub(crate) act: ServerAction<DeskAct>,
}

impl Asking {
    /// A dialog for this page, put in context for its action buttons.
    pub(crate) fn provide() -> Self {
        let asking = Asking {
            question: RwSignal::new(None),
            loading: RwSignal::new(false),
            act: ServerAction::<DeskAct>::new(),
        };
        provide_context(asking);
        asking
    }

    /// Asks `action` on `bug` (or on quarantined report `report`) in the dialog: one question
    /// at a time, a second click while it loads is ignored.
    #[cfg(feature = "hydrate")]
    fn ask(self, bug: String, report: Option<String>, action: String, person: Option<String>) {
        if self.loading.get_untracked() || self.question.with_untracked(Option::is_some) {
            return;
        }
        self.loading.set(true);
        self.act.clear();
        leptos::task::spawn_local(async move {
            let question = desk_question(bug, report, action, person).await;
            self.loading.set(false);
            self.question.set(Some(question));
        });
    }
}

impl Asking {
    /// The handler for a part of the page the server drew: a submitted action button (a form
    /// with `data-ask`, see [`Ask`]) asks its question in the dialog instead of going to the
    /// question's page.
    pub(crate) fn on_submit(self) -> impl Fn(leptos::ev::SubmitEvent) + Clone + 'static {
        move |event: leptos::ev::SubmitEvent| {
            #[cfg(feature = "hydrate")]
            if let Some(form) = form_marked(&event, "data-ask") {
                event.prevent_default();
                let data = |name: &str| form.get_attribute(&format!("data-{name}"));
                self.ask(
                    data("bug").unwrap_or_default(),
                    data("report"),
                    data("ask").unwrap_or_default(),
                    data("person"),
                );
            }
            #[cfg(not(feature = "hydrate"))]
            let _ = (self, event);
        }
    }
}

/// The submitted form, when it carries attribute `marker`.
#[cfg(feature = "hydrate")]
pub(crate) fn form_marked(
    event: &leptos::ev::SubmitEvent,
    marker: &str,
) -> Option<leptos::web_sys::HtmlFormElement> {
    use wasm_bindgen::JsCast;
    event
        .target()?
        .dyn_into::<leptos::web_sys::HtmlFormElement>()
        .ok()
        .filter(|form| form.has_attribute(marker))
}

/// A form's fields by name (what it would post): `None` for a field it does not have.
#[cfg(feature = "hydrate")]
pub(crate) fn form_fields(
    form: &leptos::web_sys::HtmlFormElement,
) -> impl Fn(&str) -> Option<String> {
    let fields = leptos::web_sys::FormData::new_with_form(form).ok();
    move |name: &str| fields.as_ref().and_then(|f| f.get(name).as_string())
}

/// Whether `action` is one of the owners page's (invite, confirm an owner).
#[cfg(feature = "ssr")]
fn owners_action(action: DeskAction) -> bool {
    action.on_the_owners()
}

/// An action button that asks first (`action-{action}` for tests): a GET form to the
/// question's page, which is what it does without JavaScript; its `data-` attributes let the
/// hydrated page ask in its dialog instead ([`Asking::on_submit`]). Drawn by the server only.
#[cfg(feature = "ssr")]
#[component]
pub(crate) fn Ask(
    /// The bug; empty for a quarantined report.
    bug: String,
    action: DeskAction,
    label: String,
    /// The report written to, for `contact`.
    #[prop(optional)]
    report: Option<String>,
    /// The pending owner, for `confirm_owner`.
    #[prop(optional)]
    person: Option<String>,
) -> impl IntoView {
    let target = if owners_action(action) {
        "/desk/owners/confirm".to_owned()
    } else if bug.is_empty() {
        format!(
            "/desk/reports/{}/confirm",
            report.clone().unwrap_or_default()
        )
    } else {
        format!("/desk/bugs/{bug}/confirm")
    };
    let in_address = report.clone().filter(|_| !bug.is_empty());
    let person_field = person.clone();
    let action = action.as_str();
    let class = if action == DeskAction::Reopen.as_str() {
        "button danger"
    } else {
        "button"
    };
    view! {
        <form method="get" action=target class="inline-form" data-ask=action data-bug=bug
            data-report=report data-person=person>
            <input type="hidden" name="action" value=action/>
            {in_address.map(|r| view! { <input type="hidden" name="report" value=r/> })}
            {person_field.map(|p| view! { <input type="hidden" name="person" value=p/> })}
            <button type="submit" class=class data-testid=format!("action-{action}")>{label}</button>
        </form>
    }
}

/// The question as the server sends it: the heading's words, the desk's navigation, and what
/// will happen with the form.
#[cfg(feature = "ssr")]
pub(crate) fn question_screen(question: Confirm) -> QuestionScreen {
    let heading = question_words(question.action).0;
    QuestionScreen {
        heading: heading.to_owned(),
        nav_html: ServerHtml::render(view! { <DeskNav owner=question.owner.clone()/> }),
        form_html: ServerHtml::render(view! { <QuestionForm question=question.clone()/> }),
        data: question,
    }
}

/// A refusal of the owner's confirmed action. One that came back in the address (a post
/// without JavaScript) is shown in the desk's own words: anyone could have written its
/// message there.
#[component]
pub(crate) fn ActRefusal(act: ServerAction<DeskAct>) -> impl IntoView {
    move || {
        act.value().get().and_then(Result::err).map(|error| {
            let words = if act.version().get_untracked() > 0 {
                error.message.clone()
            } else {
                error.words().to_owned()
            };
            view! { <p class="error" role="alert" data-testid="desk-problem">{words}</p> }
        })
    }
}

/// The handler for the question's form (`data-act`): the owner's answer goes to `act` in
/// place (without JavaScript the form posts to [`desk_act`](crate::desk_fns::desk_act)).
pub(crate) fn act_on_submit(
    act: ServerAction<DeskAct>,
) -> impl Fn(leptos::ev::SubmitEvent) + 'static {
    move |event: leptos::ev::SubmitEvent| {
        #[cfg(feature = "hydrate")]
        if let Some(form) = form_marked(&event, "data-act") {
            event.prevent_default();
            // One answer at a time: a double click must not send the message (or make the
            // invitation) twice.
            if act.pending().get_untracked() {
                return;
            }
            let field = form_fields(&form);
            act.dispatch(DeskAct {
                csrf: field("csrf").unwrap_or_default(),
                action: field("action").unwrap_or_default(),
                bug: field("bug").unwrap_or_default(),
                report: field("report"),
                head: field("head"),
                reason: field("reason"),
                text: field("text"),
                of: field("of"),
                person: field("person"),
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (act, event);
    }
}

/// What will happen and the form: the field a person must fill in (a reopen's reason, a
/// message), "Yes, …" and Cancel. The form posts to [`desk_act`](crate::desk_fns::desk_act)
/// without JavaScript; hydrated pages send it in place ([`act_on_submit`]).
#[cfg(feature = "ssr")]
#[component]
fn QuestionForm(question: Confirm) -> impl IntoView {
    use leptos::server_fn::ServerFn;
    let (_, yes, danger) = question_words(question.action);
    let back = if owners_action(question.action) {
        "/desk/owners".to_owned()
    } else if question.bug.is_empty() {
        "/desk".to_owned()
    } else {
        format!("/desk/bugs/{}", question.bug)
    };
    let report = question.report.clone().unwrap_or_default();
    view! {
        <ul id="confirm-what" data-testid="consequences">
            {question.consequences.iter().map(|c| view! { <li>{c.clone()}</li> }).collect_view()}
        </ul>
        <form method="post" action=DeskAct::url() class="cart-form" data-act="">
            <input type="hidden" name="csrf" value=question.csrf.clone()/>
            <input type="hidden" name="action" value=question.action.as_str()/>
            <input type="hidden" name="bug" value=question.bug.clone()/>
            {question.report.clone().map(|r| view! { <input type="hidden" name="report" value=r/> })}
            {question.person.clone().map(|p| view! { <input type="hidden" name="person" value=p/> })}
            {question.head.clone().map(|head| view! { <input type="hidden" name="head" value=head/> })}
            {(question.action == DeskAction::Contact).then(|| view! {
                <div class="field">
                    <label for="text">{format!("Your message to the reporter of {report}")}</label>
                    <textarea id="text" name="text" rows="5" required maxlength="4000"></textarea>
                </div>
            })}
            {(question.action == DeskAction::Duplicate).then(|| {
                let none = question.choices.is_empty();
                view! {
                    <div class="field">
                        <label for="of">"The bug it duplicates (that one stays)"</label>
                        <select id="of" name="of" required>
                            <option value="">{if none { "There is no other open bug" } else { "Choose a bug…" }}</option>
                            {question.choices.iter().map(|(id, words)| view! { <option value=id.clone()>{words.clone()}</option> }).collect_view()}
                        </select>
                    </div>
                }
            })}
            {(question.action == DeskAction::Reopen).then(|| view! {
                <div class="field">
                    <label for="reason">"Why (the reporters will see that it was reopened)"</label>
                    <input id="reason" name="reason" type="text" required maxlength="2000"/>
                </div>
            })}
            <div class="actions">
                <button type="submit" class=if danger { "button danger" } else { "button" } data-testid="confirm">{yes}</button>
                <a class="button secondary" href=back rel="external" data-cancel="">"Cancel"</a>
            </div>
        </form>
    }
}

/// The page's dialog for [`Asking`]: modal (the rest of the page inert), labelled by its
/// heading and described by what will happen, Tab kept inside, Escape or Cancel closing it
/// with nothing changed and focus back on the button that opened it.
#[component]
pub(crate) fn QuestionDialog() -> impl IntoView {
    let asking = expect_context::<Asking>();
    let dialog = NodeRef::<leptos::html::Dialog>::new();
    // The button that opened the dialog (only in the browser: the server never opens one).
    #[cfg(feature = "hydrate")]
    let opener = StoredValue::new_local(None::<leptos::web_sys::HtmlElement>);
    Effect::new(move |_| {
        if asking.question.with(Option::is_none) {
            return;
        }
        let Some(element) = dialog.get() else { return };
        if element.open() {
            return;
        }
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            opener.set_value(
                document()
                    .active_element()
                    .and_then(|e| e.dyn_into::<leptos::web_sys::HtmlElement>().ok()),
            );
        }
        let _ = element.show_modal();
        // Where a person types, start there; otherwise on Cancel, the choice that changes
        // nothing.
        #[cfg(feature = "hydrate")]
        request_animation_frame(move || {
            if let Some(element) = dialog.get_untracked() {
                focus_first(
                    &element,
                    "textarea, input[type=text], select, a.secondary, button",
                );
            }
        });
    });
    // Done: the desk goes to the page the action concerns; the question is over.
    Effect::new(move |_| {
        if matches!(asking.act.value().get(), Some(Ok(()))) {
            if let Some(element) = dialog.get_untracked() {
                element.close();
            }
        }
    });
    let closed = move |_| {
        asking.question.set(None);
        #[cfg(feature = "hydrate")]
        if let Some(opener) = opener.get_value() {
            if opener.is_connected() {
                let _ = opener.focus();
            }
        }
    };
    // Cancel (a link to the page the question came from) closes the dialog instead.
    let cancel = move |event: leptos::ev::MouseEvent| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            let on_cancel = event
                .target()
                .and_then(|t| t.dyn_into::<leptos::web_sys::Element>().ok())
                .and_then(|e| e.closest("[data-cancel]").ok().flatten())
                .is_some();
            if let (true, Some(element)) = (on_cancel, dialog.get_untracked()) {
                event.prevent_default();
                element.close();
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = event;
    };
    let keep_tab_inside = move |event: leptos::ev::KeyboardEvent| {
        #[cfg(feature = "hydrate")]
        if event.key() == "Tab" {
            if let Some(element) = dialog.get_untracked() {
                trap_tab(&element, &event);
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = event;
    };
    view! {
        <dialog node_ref=dialog class="panel narrow confirm-dialog" role="alertdialog" aria-modal="true"
            aria-labelledby="confirm-h" aria-describedby="confirm-what"
            on:close=closed on:keydown=keep_tab_inside>
            {move || asking.question.get().map(|question| match question {
                Ok(question) => view! {
                    <h2 id="confirm-h">{question.heading}</h2>
                    <ActRefusal act=asking.act/>
                    <div class="fragment" on:submit=act_on_submit(asking.act) on:click=cancel
                        inner_html=question.form_html.into_inner()></div>
                }.into_any_sync(),
                Err(error) => view! {
                    <h2 id="confirm-h">"That cannot be asked now"</h2>
                    <p id="confirm-what" class="error" role="alert" data-testid="desk-problem">{error.message}</p>
                    <form method="dialog"><button type="submit" class="button secondary">"Close"</button></form>
                }.into_any_sync(),
            })}
        </dialog>
    }
}

/// What a person can reach with Tab inside `root`.
#[cfg(feature = "hydrate")]
const FOCUSABLE: &str = "a[href], button:not([disabled]), textarea:not([disabled]), select:not([disabled]), input:not([type=hidden]):not([disabled])";

#[cfg(feature = "hydrate")]
fn focusables(
    root: &leptos::web_sys::Element,
    selector: &str,
) -> Vec<leptos::web_sys::HtmlElement> {
    use wasm_bindgen::JsCast;
    let Ok(list) = root.query_selector_all(selector) else {
        return Vec::new();
    };
    (0..list.length())
        .filter_map(|i| list.item(i))
        .filter_map(|node| node.dyn_into::<leptos::web_sys::HtmlElement>().ok())
        .filter(|element| element.get_client_rects().length() > 0)
        .collect()
}

#[cfg(feature = "hydrate")]
fn focus_first(root: &leptos::web_sys::Element, selector: &str) {
    if let Some(first) = focusables(root, selector).first() {
        let _ = first.focus();
    }
}

/// Tab from the last element goes to the first, Shift+Tab from the first to the last.
#[cfg(feature = "hydrate")]
fn trap_tab(root: &leptos::web_sys::Element, event: &leptos::web_sys::KeyboardEvent) {
    let items = focusables(root, FOCUSABLE);
    let (Some(first), Some(last)) = (items.first(), items.last()) else {
        return;
    };
    let active = document().active_element();
    let is = |element: &leptos::web_sys::HtmlElement| {
        active
            .as_ref()
            .is_some_and(|a| a == AsRef::<leptos::web_sys::Element>::as_ref(element))
    };
    if event.shift_key() && is(first) {
        event.prevent_default();
        let _ = last.focus();
    } else if !event.shift_key() && is(last) {
        event.prevent_default();
        let _ = first.focus();
    }
}

/// `/desk/bugs/{id}/confirm?action=…[&report=…]`, `/desk/reports/{id}/confirm` and
/// `/desk/owners/confirm?action=…[&person=…]`: the question as a page.
#[component]
pub fn ConfirmPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let path = use_location().pathname.get_untracked();
    let on_report = path.starts_with("/desk/reports/");
    let on_owners = path.starts_with("/desk/owners/");
    let key = move || {
        let id = params.with(|p| p.get("id").unwrap_or_default());
        let action = query.with(|q| q.get("action").unwrap_or_default());
        if on_owners {
            (String::new(), None, action, query.with(|q| q.get("person")))
        } else if on_report {
            (String::new(), Some(id), action, None)
        } else {
            (id, query.with(|q| q.get("report")), action, None)
        }
    };
    let question = Resource::new(key, |(bug, report, action, person)| {
        desk_question(bug, report, action, person)
    });
    let act = ServerAction::<DeskAct>::new();
    let title = DeskAction::parse(&key().2).map_or("Which action?", |a| question_words(a).0);
    let back = if on_owners {
        "/desk/owners".to_owned()
    } else if on_report {
        "/desk".to_owned()
    } else {
        format!("/desk/bugs/{}", key().0)
    };
    view! {
        <PageTitle text=format!("{title} · Desk · Reporter-to-Release")/>
        <Transition fallback=|| view! { <p class="hint">"Loading the question…"</p> }>
            {move || {
                let back = back.clone();
                Suspend::new(async move {
                    match question.await {
                        Ok(question) => view! {
                            <div class="fragment" inner_html=question.nav_html.into_inner()></div>
                            <section class="panel narrow" role="alertdialog" aria-labelledby="confirm-h" aria-describedby="confirm-what"
                                on:submit=act_on_submit(act)>
                                <h1 id="confirm-h">{question.heading}</h1>
                                <ActRefusal act/>
                                <div class="fragment" inner_html=question.form_html.into_inner()></div>
                            </section>
                        }.into_any_sync(),
                        Err(error) => view! { <DeskRefusal error back/> }.into_any_sync(),
                    }
                })
            }}
        </Transition>
    }
}
