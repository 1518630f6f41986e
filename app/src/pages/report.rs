use crate::dto::{limits, ApiError, ReportForm, ReportPageState, ReportReceipt, SiteSettings};
use crate::erase::IntoAnySync;
use crate::layout::PageTitle;
use leptos::prelude::*;

/// Loads the component list: from the server's settings while rendering there, from its
/// server function when the browser navigates here without a server render.
async fn load_components(settings: Option<SiteSettings>) -> Result<Vec<String>, String> {
    if let Some(settings) = settings {
        return Ok(settings.components);
    }
    crate::reporter_fns::report_components()
        .await
        .map_err(|e| e.message)
}

/// `/report`: the public report form. Works without JavaScript (a normal form post the server
/// answers with this page); with it, the report goes to the `file_report` server function and
/// the private link appears in place.
#[component]
pub fn Report() -> impl IntoView {
    let posted = use_context::<ReportPageState>();
    let settings = use_context::<SiteSettings>();
    let components = Resource::new(
        || (),
        move |_| {
            let settings = settings.clone();
            load_components(settings)
        },
    );
    let (initial, initial_error, initial_receipt) = match posted {
        Some(ReportPageState::Filed(receipt)) => (ReportForm::default(), None, Some(*receipt)),
        Some(ReportPageState::Refused(error, form)) => (form, Some(error), None),
        None => (ReportForm::default(), None, None),
    };
    let form = RwSignal::new(initial);
    let error = RwSignal::new(initial_error);
    let receipt = RwSignal::new(initial_receipt);
    let sending = RwSignal::new(false);
    let hydrated = super::hydrated_signal();

    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        if !hydrated.get_untracked() {
            return; // not live yet: let the browser post the form
        }
        ev.prevent_default();
        if sending.get_untracked() {
            return;
        }
        sending.set(true);
        let body = form.get_untracked();
        leptos::task::spawn_local(async move {
            let result = crate::reporter_fns::file_report(
                body.component,
                body.title,
                body.what_happened,
                body.expected,
                body.steps,
                body.contact,
            )
            .await;
            match result {
                Ok(filed) => {
                    error.set(None);
                    receipt.set(Some(filed));
                }
                Err(refused) => error.set(Some(refused)),
            }
            sending.set(false);
        });
    };

    view! {
        <PageTitle text="Report a bug · Reporter-to-Release"/>
        <section class="panel">
            <h1>"Report a bug"</h1>
            <p class="lede">
                "No account needed. Before anything automated reads your words, the desk removes "
                "personal data (emails, phone numbers, card numbers, addresses, keys) and sets aside "
                "text that tries to give orders. You get a private link to follow your bug."
            </p>
        </section>
        {move || match receipt.get() {
            Some(filed) => view! { <Receipt receipt=filed/> }.into_any_sync(),
            None => view! {
                <section class="panel" aria-labelledby="form-heading">
                    <h2 id="form-heading">"What went wrong?"</h2>
                    <ErrorSummary error=error/>
                    <form method="post" action="/report" class="report-form" on:submit=on_submit novalidate=true>
                        <div class="field">
                            <label for="component">"Where"</label>
                            <Suspense fallback=|| view! { <p>"Loading the list…"</p> }>
                                {move || Suspend::new(async move {
                                    let list = components.await.unwrap_or_default();
                                    let current = form.with_untracked(|f| f.component.clone());
                                    view! {
                                        <select id="component" name="component" required=true
                                            aria-invalid=move || field_invalid(error, "component")
                                            aria-describedby="component-error"
                                            on:change=move |ev| form.update(|f| f.component = event_target_value(&ev))>
                                            <option value="" selected=current.is_empty()>"Choose…"</option>
                                            {list.into_iter().map(|c| {
                                                let selected = c == current;
                                                view! { <option value=c.clone() selected=selected>{component_label(&c)}</option> }
                                            }).collect_view()}
                                        </select>
                                    }
                                })}
                            </Suspense>
                            <FieldError error=error name="component"/>
                        </div>
                        <TextField form=form error=error name="title" label="Title" max=limits::TITLE
                            hint="One line, e.g. “SAVE300 makes the total negative”." multiline=false/>
                        <TextField form=form error=error name="what_happened" label="What happened" max=limits::WHAT_HAPPENED
                            hint="What you saw, as exactly as you can." multiline=true/>
                        <TextField form=form error=error name="expected" label="What you expected" max=limits::EXPECTED
                            hint="Optional." multiline=true/>
                        <TextField form=form error=error name="steps" label="Steps to reproduce" max=limits::STEPS
                            hint="Optional. One step per line." multiline=true/>
                        <TextField form=form error=error name="contact" label="Email (optional)" max=limits::CONTACT
                            hint="Only the desk's owners see it; the AI crew never does." multiline=false/>
                        <button type="submit" class="button" disabled=move || sending.get()>
                            {move || if sending.get() { "Sending…" } else { "Send report" }}
                        </button>
                    </form>
                </section>
            }.into_any_sync(),
        }}
    }
}

fn field_value(form: &ReportForm, name: &str) -> String {
    match name {
        "title" => form.title.clone(),
        "what_happened" => form.what_happened.clone(),
        "expected" => form.expected.clone(),
        "steps" => form.steps.clone(),
        "contact" => form.contact.clone().unwrap_or_default(),
        _ => String::new(),
    }
}

fn set_field(form: &mut ReportForm, name: &str, value: String) {
    match name {
        "title" => form.title = value,
        "what_happened" => form.what_happened = value,
        "expected" => form.expected = value,
        "steps" => form.steps = value,
        "contact" => form.contact = (!value.is_empty()).then_some(value),
        _ => {}
    }
}

fn field_invalid(error: RwSignal<Option<ApiError>>, name: &str) -> Option<&'static str> {
    error.with(|e| {
        e.as_ref()
            .is_some_and(|e| e.fields.contains_key(name))
            .then_some("true")
    })
}

#[component]
fn TextField(
    form: RwSignal<ReportForm>,
    error: RwSignal<Option<ApiError>>,
    name: &'static str,
    label: &'static str,
    max: usize,
    hint: &'static str,
    multiline: bool,
) -> impl IntoView {
    let initial = form.with_untracked(|f| field_value(f, name));
    let hint_id = format!("{name}-hint");
    let described = format!("{name}-hint {name}-error");
    let control = if multiline {
        view! {
            <textarea id=name name=name rows="4" maxlength=max.to_string()
                aria-describedby=described.clone()
                aria-invalid=move || field_invalid(error, name)
                on:input=move |ev| form.update(|f| set_field(f, name, event_target_value(&ev)))>
                {crate::layout::raw_text_content(initial)}
            </textarea>
        }
        .into_any_sync()
    } else {
        view! {
            <input id=name name=name type=if name == "contact" { "email" } else { "text" }
                maxlength=max.to_string() value=initial
                autocomplete=if name == "contact" { "email" } else { "off" }
                aria-describedby=described.clone()
                aria-invalid=move || field_invalid(error, name)
                on:input=move |ev| form.update(|f| set_field(f, name, event_target_value(&ev)))/>
        }
        .into_any_sync()
    };
    view! {
        <div class="field">
            <label for=name>{label}</label>
            <p class="hint" id=hint_id>{hint}</p>
            {control}
            <FieldError error=error name=name/>
        </div>
    }
}

/// A field as its label names it (the error summary links to the field by these words).
fn field_label(field: &str) -> String {
    match field {
        "component" => "Where".to_owned(),
        "title" => "Title".to_owned(),
        "what_happened" => "What happened".to_owned(),
        "expected" => "What you expected".to_owned(),
        "steps" => "Steps to reproduce".to_owned(),
        "contact" => "Email".to_owned(),
        other => other.replace('_', " "),
    }
}

/// A component as a person reads it: `shoplite` is the demo shop; others lose their dashes.
/// Component ids are ASCII slugs (the configuration refuses anything else), so the ASCII
/// capital is the whole story — and keeps Unicode's case tables out of the page's code.
fn component_label(slug: &str) -> String {
    match slug {
        "shoplite" => "ShopLite (the demo shop)".to_owned(),
        other => {
            let mut words = other.replace(['-', '_'], " ");
            if let Some(first) = words.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            words
        }
    }
}

#[component]
fn FieldError(error: RwSignal<Option<ApiError>>, name: &'static str) -> impl IntoView {
    let message = move || error.with(|e| e.as_ref().and_then(|e| e.fields.get(name).cloned()));
    view! {
        <p class="field-error" id=format!("{name}-error") data-testid=format!("error-{name}")>
            {message}
        </p>
    }
}

#[component]
fn ErrorSummary(error: RwSignal<Option<ApiError>>) -> impl IntoView {
    view! {
        <div role="alert" class="error-summary-slot">
            {move || error.get().map(|e| view! {
                <div class="error-summary" data-testid="error-summary">
                    <p class="error">{e.message.clone()}</p>
                    <ul>
                        {e.fields.iter().map(|(field, reason)| view! {
                            <li><a href=format!("#{field}")>{field_label(field)}</a>": " {reason.clone()}</li>
                        }).collect_view()}
                    </ul>
                </div>
            })}
        </div>
    }
}

#[component]
fn Receipt(receipt: ReportReceipt) -> impl IntoView {
    let link = receipt.tracking_link.clone();
    let quarantined = receipt.status == crate::dto::ReportStatus::Quarantined;
    // In the browser: the whole address (to paste anywhere), remembered here so "Your report"
    // reopens it. The page the server renders without scripts shows the path.
    #[cfg(feature = "hydrate")]
    let whole = {
        crate::net::remember(&receipt.report_id, &link);
        window()
            .location()
            .origin()
            .map(|origin| format!("{origin}{link}"))
            .unwrap_or_else(|_| link.clone())
    };
    #[cfg(not(feature = "hydrate"))]
    let whole = link.clone();
    let hydrated = super::hydrated_signal();
    let copied = RwSignal::new(None::<&'static str>);
    let to_copy = whole.clone();
    let copy = move |_| {
        let text = to_copy.clone();
        leptos::task::spawn_local(async move {
            copied.set(Some(if crate::net::copy(text).await {
                "Copied."
            } else {
                "Could not copy: select the link and copy it yourself."
            }));
        });
    };
    view! {
        <section class="panel receipt" aria-labelledby="receipt-heading" data-testid="receipt">
            <h2 id="receipt-heading">{if quarantined { "Received and set aside" } else { "Thank you — your report is filed" }}</h2>
            <p data-testid="receipt-message">{receipt.message.clone()}</p>
            <p><strong>"Your private link"</strong>" (the only way back to your report; the desk keeps just a fingerprint of it, so it cannot send it again):"</p>
            <p class="private-link"><a href=link.clone() rel="external" data-testid="tracking-link">{whole}</a></p>
            {move || hydrated.get().then(|| view! {
                <p class="actions">
                    <button type="button" class="button secondary" data-testid="copy-link" on:click=copy.clone()>"Copy link"</button>
                    <span role="status" aria-live="polite" data-testid="copy-status">{move || copied.get()}</span>
                </p>
            })}
            <p class="hint">"Bookmark it or copy it somewhere safe: anyone with the link can answer for you. This browser remembers it too (\"Your report\" in the menu), and never sends it anywhere."</p>
            <dl class="facts">
                <dt>"Report"</dt><dd data-testid="report-id">{receipt.report_id.clone()}</dd>
                <dt>"Bug"</dt><dd data-testid="bug-id">{receipt.bug_id.clone().unwrap_or_else(|| "none yet".to_owned())}</dd>
            </dl>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::component_label;

    #[test]
    fn components_read_as_words_with_a_capital() {
        assert_eq!(component_label("shoplite"), "ShopLite (the demo shop)");
        assert_eq!(component_label("point-of-sale"), "Point of sale");
        assert_eq!(component_label("api_v2"), "Api v2");
        assert_eq!(component_label("2fa"), "2fa");
        assert_eq!(component_label(""), "");
    }
}
