use crate::dto::{Answer, ApiError, QuestionView, TrackPageState, Tracking};
use crate::erase::IntoAnySync;
use crate::layout::PageTitle;
use crate::net::{format_time, machine_time};
use domain::workflow::QuestionKind;
use leptos::prelude::*;

/// `/track#<capability>`: a reporter's private page. The capability stays in the fragment and
/// travels to the desk only as a server function's argument in a POST body. Without JavaScript
/// the reporter pastes the link into a form instead (a POST body too, never a URL).
#[component]
pub fn Track() -> impl IntoView {
    let posted = use_context::<TrackPageState>();
    view! {
        <PageTitle text="Your report · Reporter-to-Release"/>
        <section class="panel">
            <h1>"Your report"</h1>
            <p class="lede">"Follow your bug from report to release, and answer the desk's two questions."</p>
        </section>
        {match posted {
            Some(state) => view! { <StaticTrack state=state/> }.into_any_sync(),
            None => view! { <LiveTrack/> }.into_any_sync(),
        }}
    }
}

/// A page rendered on the server after a form post (no scripts).
#[component]
fn StaticTrack(state: TrackPageState) -> impl IntoView {
    match state {
        TrackPageState::Found {
            tracking,
            capability,
            notice,
        } => view! {
            {notice.map(|n| view! { <p class="notice" role="status" data-testid="answer-notice">{n}</p> })}
            <TrackingView tracking=*tracking mode=AnswerMode::Form(capability)/>
        }
        .into_any_sync(),
        TrackPageState::NotFound => view! {
            <p class="error" role="alert" data-testid="track-missing">
                "No report matches this link. Check that you copied the whole link, including everything after the #."
            </p>
            <PasteForm/>
        }
        .into_any_sync(),
        TrackPageState::Refused(error) => view! {
            <p class="error" role="alert" data-testid="track-refused">{error.message}</p>
            <PasteForm/>
        }
        .into_any_sync(),
    }
}

/// The hydrated page: reads the fragment, asks the desk through the `track_view` server
/// function and answers through `track_answer`.
#[component]
fn LiveTrack() -> impl IntoView {
    let tracking = RwSignal::new(None::<Tracking>);
    let problem = RwSignal::new(None::<ApiError>);
    let notice = RwSignal::new(None::<String>);
    let capability = RwSignal::new(None::<String>);
    let loading = RwSignal::new(false);

    let load = move || {
        let Some(cap) = capability.get_untracked() else {
            return;
        };
        loading.set(true);
        leptos::task::spawn_local(async move {
            match crate::reporter_fns::track_view(cap.clone()).await {
                Ok(view) => {
                    problem.set(None);
                    crate::net::remember(&view.report.id, &format!("/track#{cap}"));
                    tracking.set(Some(view));
                }
                Err(error) => {
                    tracking.set(None);
                    problem.set(Some(error));
                }
            }
            loading.set(false);
        });
    };

    // Live updates: every 10 s the page asks again and redraws only when something the
    // reporter sees changed (state, history, question, messages) — never under their typing.
    let refresh = move || {
        let Some(cap) = capability.get_untracked() else {
            return;
        };
        if loading.get_untracked() {
            return;
        }
        leptos::task::spawn_local(async move {
            if let Ok(view) = crate::reporter_fns::track_view(cap).await {
                let seen = |t: &Tracking| {
                    (
                        t.bug.as_ref().map(|b| (b.state, b.timeline.len())),
                        t.question.as_ref().map(|q| q.request_id.clone()),
                        t.messages.len(),
                        t.inbox.len(),
                    )
                };
                let changed = tracking
                    .with_untracked(|current| current.as_ref().map(seen) != Some(seen(&view)));
                if changed {
                    tracking.set(Some(view));
                }
            }
        });
    };
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        leptos::prelude::set_interval(refresh, std::time::Duration::from_secs(10));
        #[cfg(not(feature = "hydrate"))]
        let _ = refresh;
    });

    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        {
            let hash = window().location().hash().unwrap_or_default();
            let cap = hash.trim_start_matches('#').trim().to_owned();
            if !cap.is_empty() {
                capability.set(Some(cap));
                load();
            }
        }
    });

    let answer = Callback::new(move |answer: Answer| {
        let Some(cap) = capability.get_untracked() else {
            return;
        };
        leptos::task::spawn_local(async move {
            let sent = crate::reporter_fns::track_answer(
                cap,
                answer.request_id,
                answer.kind,
                answer.yes,
                answer.reason,
            );
            match sent.await {
                Ok(outcome) => {
                    problem.set(None);
                    notice.set(Some(outcome.message));
                    load();
                }
                Err(error) => problem.set(Some(error)),
            }
        });
    });

    let open_pasted = Callback::new(move |pasted: String| {
        let cap = pasted
            .trim()
            .rsplit_once('#')
            .map_or(pasted.trim(), |(_, f)| f)
            .trim()
            .to_owned();
        #[cfg(feature = "hydrate")]
        {
            // Keep it in the fragment (bookmarkable, never sent as part of a URL).
            let _ = window().location().set_hash(&cap);
        }
        capability.set(Some(cap));
        notice.set(None);
        load();
    });

    view! {
        <div role="status" aria-live="polite" class="status-slot">
            {move || loading.get().then(|| view! { <p data-testid="track-loading">"Reading your report…"</p> })}
            {move || notice.get().map(|n| view! { <p class="notice" data-testid="answer-notice">{n}</p> })}
        </div>
        {move || problem.get().map(|e| view! {
            <div role="alert" class="error-summary" data-testid=if e.error == "not_found" { "track-missing" } else { "track-refused" }>
                <p class="error">{e.message.clone()}</p>
                <ul>{e.fields.iter().map(|(f, r)| view! { <li>{f.clone()}": "{r.clone()}</li> }).collect_view()}</ul>
            </div>
        })}
        {move || match tracking.get() {
            Some(view) => view! { <TrackingView tracking=view mode=AnswerMode::Live(answer)/> }.into_any_sync(),
            None => view! {
                <Remembered on_open=open_pasted/>
                <PasteForm on_open=open_pasted/>
            }.into_any_sync(),
        }}
    }
}

/// The reports this browser remembers (filed or opened here), to reopen with one click; and
/// a way to forget them (a shared computer). Empty on the server and until hydrated.
#[component]
fn Remembered(on_open: Callback<String>) -> impl IntoView {
    let list = RwSignal::new(Vec::<crate::net::Remembered>::new());
    Effect::new(move |_| list.set(crate::net::remembered()));
    let forget = move |_| {
        crate::net::forget_all();
        list.set(Vec::new());
    };
    move || {
        (!list.with(Vec::is_empty)).then(|| view! {
            <section class="panel" aria-labelledby="remembered-heading" data-testid="remembered">
                <h2 id="remembered-heading">"Reports from this browser"</h2>
                <ul class="plain">
                    {list.get().into_iter().map(|r| {
                        let link = r.link.clone();
                        view! {
                            <li>
                                <a href=r.link.clone() on:click=move |ev| { ev.prevent_default(); on_open.run(link.clone()); }>
                                    {format!("Report {}", r.report)}
                                </a>
                            </li>
                        }
                    }).collect_view()}
                </ul>
                <p class="hint">"Kept only in this browser. On a shared computer, forget them when you are done."</p>
                <button type="button" class="button secondary" on:click=forget>"Forget these links"</button>
            </section>
        })
    }
}

/// Where answers go.
#[derive(Clone)]
enum AnswerMode {
    /// A plain form post carrying the capability in a hidden field.
    Form(String),
    /// The hydrated page's server function.
    Live(Callback<Answer>),
}

#[component]
fn PasteForm(#[prop(optional)] on_open: Option<Callback<String>>) -> impl IntoView {
    let pasted = RwSignal::new(String::new());
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        if let Some(open) = on_open {
            ev.prevent_default();
            open.run(pasted.get_untracked());
        }
    };
    view! {
        <section class="panel" aria-labelledby="paste-heading">
            <h2 id="paste-heading">"Open your report"</h2>
            <form method="post" action="/track" class="report-form" on:submit=on_submit>
                <div class="field">
                    <label for="capability">"Your private link"</label>
                    <p class="hint" id="capability-hint">"Paste the whole link you were given, or just the part after the #."</p>
                    <input id="capability" name="capability" type="password" autocomplete="off"
                        aria-describedby="capability-hint" required=true
                        on:input=move |ev| pasted.set(event_target_value(&ev))/>
                </div>
                <button type="submit" class="button">"Open"</button>
            </form>
        </section>
    }
}

#[component]
fn TrackingView(tracking: Tracking, mode: AnswerMode) -> impl IntoView {
    let report = tracking.report.clone();
    let quarantined = report.status == crate::dto::ReportStatus::Quarantined;
    view! {
        <section class="panel" aria-labelledby="state-heading" data-testid="tracking">
            <h2 id="state-heading">"Where it stands"</h2>
            {match &tracking.bug {
                Some(bug) => view! {
                    <p class="state" data-testid="bug-state" data-state=bug.state.as_str()>{bug.state_label.clone()}</p>
                    <p class="hint">
                        {format!("Bug {} · {} report(s) of it, yours included. Each reporter sees only their own report.", bug.id, bug.reports)}
                    </p>
                    {(!bug.next.is_empty()).then(|| view! {
                        <p class="next-step" data-testid="next-step"><strong>"What happens next: "</strong>{bug.next.clone()}</p>
                    })}
                }.into_any_sync(),
                None => view! {
                    <p class="state" data-testid="bug-state" data-state="quarantined">
                        "Received, but its words were not kept: parts of your report read like instructions to an automated system, so the desk stored only when, where and why, and nobody — no person, no automation — will read it. An owner may write to you here (and by email, if you left an address). If you saw a real bug, please report it again in your own words."
                    </p>
                }.into_any_sync(),
            }}
        </section>
        {tracking.question.clone().map(|q| view! { <QuestionPanel question=q tracking=tracking.clone() mode=mode.clone()/> })}
        {(!tracking.messages.is_empty()).then(|| view! {
            <section class="panel" aria-labelledby="messages-heading">
                <h2 id="messages-heading">"Messages from the owners"</h2>
                <ul class="messages">
                    {tracking.messages.iter().map(|m| view! {
                        <li><span class="when"><LocalTime at=m.at/></span>" " {m.body.clone()}</li>
                    }).collect_view()}
                </ul>
            </section>
        })}
        {(!tracking.inbox.is_empty()).then(|| view! {
            <section class="panel" aria-labelledby="inbox-heading" data-testid="inbox">
                <h2 id="inbox-heading">"Inbox"</h2>
                <ul class="messages inbox">
                    {tracking.inbox.iter().rev().map(|n| view! {
                        <li>
                            <span class="when"><LocalTime at=n.at/></span>" "
                            <strong>{n.subject.clone()}</strong>
                            <p>{n.body.clone()}</p>
                        </li>
                    }).collect_view()}
                </ul>
            </section>
        })}
        {tracking.bug.clone().map(|bug| view! {
            <section class="panel" aria-labelledby="timeline-heading">
                <h2 id="timeline-heading">"History"</h2>
                <ol class="timeline" data-testid="timeline">
                    {bug.timeline.iter().map(|entry| view! {
                        <li><span class="when"><LocalTime at=entry.at/></span>" " {entry.label.clone()}</li>
                    }).collect_view()}
                </ol>
            </section>
        })}
        <section class="panel" aria-labelledby="yours-heading">
            <h2 id="yours-heading">"Your report, as the desk keeps it"</h2>
            {if quarantined {
                view! { <p>"Nothing of its text was kept — only the time, the component and a fingerprint."</p> }.into_any_sync()
            } else {
                view! {
                    <dl class="facts" data-testid="own-report">
                        <dt>"Component"</dt><dd>{report.component.clone()}</dd>
                        <dt>"Title"</dt><dd data-testid="own-title">{report.title.clone().unwrap_or_default()}</dd>
                        <dt>"What happened"</dt><dd class="prose">{report.what_happened.clone().unwrap_or_default()}</dd>
                        <dt>"Expected"</dt><dd class="prose">{report.expected.clone().unwrap_or_default()}</dd>
                        <dt>"Steps"</dt>
                        <dd><ol>{report.steps.iter().map(|s| view! { <li>{s.clone()}</li> }).collect_view()}</ol></dd>
                        <dt>"Filed"</dt><dd><LocalTime at=report.submitted_at/></dd>
                    </dl>
                    {(!report.redactions.is_empty()).then(|| view! {
                        <p class="hint" data-testid="redactions">
                            "Removed before anyone read it: "
                            {report.redactions.iter().map(|(k, n)| format!("{n} {}", k.replace('_', " "))).collect::<Vec<_>>().join(", ")}
                            "."
                        </p>
                    })}
                }.into_any_sync()
            }}
        </section>
    }
}

#[component]
fn QuestionPanel(question: QuestionView, tracking: Tracking, mode: AnswerMode) -> impl IntoView {
    let reason = RwSignal::new(String::new());
    let evidence = match question.kind {
        QuestionKind::Reproduction => tracking.bug.as_ref().and_then(|b| b.reproduction.clone()).map(|r| view! {
            // What the test shows in the reporter's terms first; the raw output is for the
            // curious, behind "Technical details".
            <p data-testid="test-summary">{match r.summary {
                Some(summary) => format!("The crew wrote a test that fails on the current code. What it shows: {summary}"),
                None => "The crew wrote a test that fails on the current code the way your report describes.".to_owned(),
            }}</p>
            <details class="technical">
                <summary>"Technical details"</summary>
                <dl class="facts">
                    <dt>"Test"</dt><dd><code data-testid="test-path">{r.test_path}</code></dd>
                    <dt>"Failure"</dt><dd><pre class="output" data-testid="test-failure">{r.failure}</pre></dd>
                </dl>
            </details>
        }.into_any_sync()),
        QuestionKind::Fix => tracking.bug.as_ref().and_then(|b| b.release.clone()).map(|r| {
            let steps = tracking.report.steps.clone();
            view! {
                <p><span class="label">"live run"</span>" A fix is live. The desk checked that this exact commit is deployed:"</p>
                <dl class="facts">
                    <dt>"Commit"</dt><dd><code data-testid="release-commit">{r.commit}</code></dd>
                    <dt>"Live since"</dt><dd><LocalTime at=r.at/></dd>
                </dl>
                {r.try_at.map(|address| view! {
                    <p data-testid="try-live">
                        "Try it yourself: "
                        <a href=address.clone() target="_blank" rel="noopener noreferrer" data-testid="try-live-link">
                            {format!("open the live {} ({address})", tracking.report.component)}
                        </a>
                        {(!steps.is_empty()).then_some(" and repeat the steps you gave:")}
                    </p>
                    {(!steps.is_empty()).then(|| view! {
                        <ol class="steps" data-testid="try-live-steps">
                            {steps.iter().map(|s| view! { <li>{s.clone()}</li> }).collect_view()}
                        </ol>
                    })}
                })}
            }
        }.into_any_sync()),
    };
    let reason_label = if question.kind == QuestionKind::Reproduction {
        "If not, what is different from what you saw? (needed for “No”)"
    } else {
        "If not, what still goes wrong? (needed for “No”)"
    };
    let buttons = match mode {
        AnswerMode::Form(capability) => view! {
            <form method="post" action="/track/answer" class="report-form">
                <input type="hidden" name="capability" value=capability/>
                <input type="hidden" name="request_id" value=question.request_id.clone()/>
                <input type="hidden" name="kind" value=question.kind.as_str()/>
                <div class="field">
                    <label for="reason">{reason_label}</label>
                    <textarea id="reason" name="reason" rows="3"></textarea>
                </div>
                <div class="answer-buttons">
                    <button type="submit" name="answer" value="yes" class="button">"Yes"</button>
                    <button type="submit" name="answer" value="no" class="button secondary">"No"</button>
                </div>
            </form>
        }
        .into_any_sync(),
        AnswerMode::Live(answer) => {
            let request_id = question.request_id.clone();
            let kind = question.kind.as_str().to_owned();
            let send = move |yes: bool| {
                let text = reason.get_untracked();
                answer.run(Answer {
                    request_id: request_id.clone(),
                    kind: kind.clone(),
                    yes,
                    reason: (!text.trim().is_empty()).then_some(text),
                });
            };
            let send_no = send.clone();
            // "No" needs a reason: said next to the field, with the focus there, before
            // anything is sent (the desk refuses it too).
            let missing = RwSignal::new(false);
            let field = NodeRef::<leptos::html::Textarea>::new();
            let no = move |_| {
                if reason.get_untracked().trim().is_empty() {
                    missing.set(true);
                    if let Some(field) = field.get_untracked() {
                        let _ = field.focus();
                    }
                    return;
                }
                send_no(false);
            };
            view! {
                <div class="report-form">
                    <div class="field" class:has-error=move || missing.get()>
                        <label for="reason">{reason_label}</label>
                        <textarea id="reason" name="reason" rows="3" node_ref=field
                            aria-invalid=move || missing.get().then_some("true")
                            aria-describedby=move || missing.get().then_some("reason-error")
                            on:input=move |ev| {
                                reason.set(event_target_value(&ev));
                                missing.set(false);
                            }></textarea>
                        {move || missing.get().then(|| view! {
                            <p id="reason-error" class="field-error" role="alert" data-testid="reason-error">"A reason is needed for “No”: say what is different, so the crew can try again."</p>
                        })}
                    </div>
                    <div class="answer-buttons">
                        <button type="button" class="button" on:click=move |_| send(true)>"Yes"</button>
                        <button type="button" class="button secondary" on:click=no>"No"</button>
                    </div>
                </div>
            }
            .into_any_sync()
        }
    };
    view! {
        <section class="panel question" aria-labelledby="question-heading" data-testid="question" data-kind=question.kind.as_str()>
            <h2 id="question-heading">{question.prompt.clone()}</h2>
            {evidence}
            <p class="hint">"Please answer by " <LocalTime at=question.expires_at/> "; after that the desk asks again."</p>
            {buttons}
        </section>
    }
}

/// A moment in the reader's own time zone once the page is live (the server, not knowing it,
/// writes UTC; the exact instant is in `datetime`).
#[component]
fn LocalTime(at: i64) -> impl IntoView {
    let text = RwSignal::new(format_time(at));
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        {
            let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(at as f64));
            let local: String = date
                .to_locale_string("default", &wasm_bindgen::JsValue::UNDEFINED)
                .into();
            if !local.is_empty() {
                text.set(local);
            }
        }
    });
    view! { <time datetime=machine_time(at) title=format_time(at)>{move || text.get()}</time> }
}
