//! The owners' desk: dashboard, bug view, crew page, sign-in and confirmations. Rendered on
//! the server for the signed-in owner (the data comes in a [`DeskPage`] context) and served
//! without hydration scripts, so every view and every action works without JavaScript and
//! with a keyboard alone: actions are forms, each confirmed on a page that says plainly what
//! will happen.

use crate::dto::{
    BugDesk, Confirm, CrewDesk, Dashboard, DeskPage, EvidenceView, InvitePage, OwnersDesk,
};
use crate::layout::PageTitle;
use crate::net::{format_time, machine_time, relative_time};
use leptos::prelude::*;

/// `/desk`, `/desk/bugs/{id}`, `/desk/crew`, `/desk/sign-in`.
#[component]
pub fn Desk() -> impl IntoView {
    match use_context::<DeskPage>() {
        Some(DeskPage::SignIn { error, next }) => view! { <SignIn error next/> }.into_any(),
        Some(DeskPage::Confirm(confirm)) => view! { <ConfirmView confirm=*confirm/> }.into_any(),
        Some(DeskPage::Owners(owners)) => view! { <OwnersView owners=*owners/> }.into_any(),
        Some(DeskPage::Invite(invite)) => view! { <InviteView invite=*invite/> }.into_any(),
        Some(DeskPage::Problem {
            owner,
            message,
            back,
        }) => view! {
            <PageTitle text="Problem · Desk · Reporter-to-Release"/>
            {owner.map(|owner| view! { <DeskNav owner/> })}
            <section class="panel">
                <h1>"That did not work"</h1>
                <p class="error" role="alert" data-testid="desk-problem">{message}</p>
                <p><a href=back>"Back"</a></p>
            </section>
        }
        .into_any(),
        // Reached by client-side navigation: the desk needs a full page load.
        None => view! {
            <section class="panel">
                <h1>"Desk"</h1>
                <p><a href="/desk" rel="external">"Open the desk"</a></p>
            </section>
        }
        .into_any(),
    }
}

#[component]
fn DeskNav(owner: String) -> impl IntoView {
    view! {
        <nav class="desk-nav" aria-label="Desk">
            <ul>
                <li><a href="/desk" rel="external">"Bugs"</a></li>
                <li><a href="/desk/crew" rel="external">"Crew"</a></li>
                <li><a href="/desk/owners" rel="external">"Owners"</a></li>
            </ul>
            <form method="post" action="/desk/sign-out" class="inline-form">
                <span class="hint">"Signed in as " <strong data-testid="desk-owner">{owner}</strong></span>
                " "
                <button type="submit" class="button secondary">"Sign out"</button>
            </form>
        </nav>
    }
}

#[component]
fn SignIn(error: Option<String>, next: String) -> impl IntoView {
    view! {
        <PageTitle text="Sign in · Desk · Reporter-to-Release"/>
        <section class="panel narrow">
            <h1>"Owners sign in"</h1>
            <p class="lede">"The desk is where people decide: approve exact commits, merge, reopen."</p>
            {error.map(|e| view! { <p class="error" role="alert" data-testid="sign-in-error">{e}</p> })}
            <form method="post" action="/desk/sign-in" class="cart-form">
                <input type="hidden" name="next" value=next/>
                <div class="field">
                    <label for="email">"Email"</label>
                    <input id="email" name="email" type="email" autocomplete="username" required/>
                </div>
                <div class="field">
                    <label for="password">"Password"</label>
                    <input id="password" name="password" type="password" autocomplete="current-password" required/>
                </div>
                <button type="submit" class="button">"Sign in"</button>
            </form>
        </section>
    }
}

/// A moment as "3 hours ago", with the exact time on hover and for machines.
#[component]
fn When(at: i64, now: i64) -> impl IntoView {
    view! { <time datetime=machine_time(at) title=format_time(at)>{relative_time(at, now)}</time> }
}

fn state_words(state: &str) -> String {
    state.replace('_', " ")
}

/// A desk server function's refusal: signed out (with the way back in) or the reason.
#[component]
pub(crate) fn DeskRefusal(error: crate::dto::DeskError, back: String) -> impl IntoView {
    let sign_in = error
        .is_signed_out()
        .then(|| format!("/desk/sign-in?next={back}"));
    view! {
        <section class="panel">
            <h1>{if sign_in.is_some() { "Sign in again" } else { "That did not work" }}</h1>
            <p class="error" role="alert" data-testid="desk-problem">{error.message}</p>
            {match sign_in {
                Some(href) => view! { <p><a href=href rel="external">"Sign in"</a></p> }.into_any(),
                None => view! { <p><a href=back rel="external">"Back"</a></p> }.into_any(),
            }}
        </section>
    }
}

/// The dashboard's content; its quarantine items are marked handled through `handled`.
#[component]
pub(crate) fn DashboardView(
    dashboard: Dashboard,
    handled: ServerAction<crate::desk_fns::QuarantineHandled>,
) -> impl IntoView {
    let filter = dashboard.filter.clone();
    let selected = |current: &Option<String>, value: &str| current.as_deref() == Some(value);
    let states: Vec<String> = dashboard.counts.iter().map(|(s, _)| s.clone()).collect();
    let shown = dashboard.bugs.len();
    let paging = dashboard.paging.clone();
    let csrf = dashboard.csrf.clone();
    let now = dashboard.now;
    view! {
        <DeskNav owner=dashboard.owner.clone()/>
        <section class="panel">
            <h1>"Bugs"</h1>
            {dashboard.notice.clone().map(|n| view! { <p class="notice" role="status" data-testid="desk-notice">{n}</p> })}
            <p class="hint" data-testid="crew-connection">
                {if dashboard.crew_connected { "The crew is connected." } else { "The crew is not connected: see the crew page." }}
            </p>
            <ul class="counts" aria-label="Bugs by state" data-testid="state-counts">
                {dashboard.counts.iter().map(|(state, count)| view! {
                    <li>
                        <a href=format!("/desk?state={state}") rel="external">
                            <span class="count">{*count}</span>" "{state_words(state)}
                        </a>
                    </li>
                }).collect_view()}
            </ul>
        </section>
        <section class="panel">
            <h2 id="filters">"Find bugs"</h2>
            <form method="get" action="/desk" class="filters" aria-labelledby="filters">
                <div class="field">
                    <label for="f-q">"Search"</label>
                    <input id="f-q" name="q" type="search" value=filter.q.clone().unwrap_or_default()/>
                </div>
                <div class="field">
                    <label for="f-state">"State"</label>
                    <select id="f-state" name="state">
                        <option value="">"Any"</option>
                        {states.iter().map(|s| view! {
                            <option value=s.clone() selected=selected(&filter.state, s)>{state_words(s)}</option>
                        }).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="f-component">"Component"</label>
                    <select id="f-component" name="component">
                        <option value="">"Any"</option>
                        {dashboard.components.iter().map(|c| view! {
                            <option value=c.clone() selected=selected(&filter.component, c)>{c.clone()}</option>
                        }).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="f-tier">"Tier"</label>
                    <select id="f-tier" name="tier">
                        <option value="">"Any"</option>
                        {[0u8, 1, 2].into_iter().map(|t| view! {
                            <option value=t.to_string() selected=filter.tier == Some(t)>{format!("Tier {t}")}</option>
                        }).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="f-age">"At least this many days old"</label>
                    <input id="f-age" name="age" type="number" min="0" max="3650" value=filter.min_age_days.map(|d| d.to_string()).unwrap_or_default()/>
                </div>
                <div class="field">
                    <label for="f-sort">"Sort"</label>
                    <select id="f-sort" name="sort">
                        {[("waiting", "Waiting for a person first"), ("newest", "Newest first"), ("oldest", "Oldest first"), ("state", "By state")].into_iter().map(|(value, words)| view! {
                            <option value=value selected=filter.sort == value>{words}</option>
                        }).collect_view()}
                    </select>
                </div>
                <button type="submit" class="button">"Show"</button>
            </form>
            <p class="hint" role="status" data-testid="shown-count">{
                if shown == 0 {
                    format!("0 of {} bugs", dashboard.total)
                } else if paging.pages > 1 {
                    format!(
                        "{}–{} of {} matching ({} bugs in all) · page {} of {}",
                        paging.first,
                        paging.first + shown - 1,
                        paging.matching,
                        dashboard.total,
                        paging.page,
                        paging.pages
                    )
                } else {
                    format!("{} of {} bugs", paging.matching.max(shown), dashboard.total)
                }
            }</p>
            <div class="table-wrap" tabindex="0" role="region" aria-label="Bugs">
                <table class="bugs" data-testid="bug-table">
                    <caption class="visually-hidden">"Bugs, what waits for a person first"</caption>
                    <thead>
                        <tr><th scope="col">"Bug"</th><th scope="col">"State"</th><th scope="col">"Waiting for"</th><th scope="col">"Component"</th><th scope="col">"Reports"</th><th scope="col">"Opened"</th></tr>
                    </thead>
                    <tbody>
                        {dashboard.bugs.into_iter().map(|bug| view! {
                            <tr data-bug=bug.id.clone()>
                                <td><a href=format!("/desk/bugs/{}", bug.id) rel="external">{bug.title.clone()}</a><br/><code>{bug.id.clone()}</code></td>
                                <td data-label="State"><span class=format!("state state-{}", bug.state)>{state_words(&bug.state)}</span>{bug.tier.map(|t| format!(" · tier {t}"))}</td>
                                <td data-label="Waiting for">{bug.waiting_for.clone().unwrap_or_else(|| "—".into())}</td>
                                <td data-label="Component">{bug.component.clone()}</td>
                                <td data-label="Reports">{bug.reports}</td>
                                <td data-label="Opened"><When at=bug.opened_at now/></td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
            {(paging.previous.is_some() || paging.next.is_some()).then(|| view! {
                <nav class="pager" aria-label="Pages of bugs" data-testid="pager">
                    {paging.previous.clone().map(|href| view! { <a href=href rel="external prev">"← Previous page"</a> })}
                    " "
                    {paging.next.clone().map(|href| view! { <a href=href rel="external next">"Next page →"</a> })}
                </nav>
            })}
        </section>
        <section class="panel">
            <h2>"Quarantine"</h2>
            <p class="hint">"Reports the airlock held back. Their text was never stored: only when, where and why. Mark an item handled once you have looked at it (and written to its reporter, if they left a way back)."</p>
            // Its own words for the code, never the message: without JavaScript the refusal
            // comes back in the address, where anyone could have written it.
            {move || handled.value().get().and_then(Result::err).map(|error| view! {
                <p class="error" role="alert" data-testid="quarantine-error">{error.words()}</p>
            })}
            {if dashboard.quarantine.is_empty() {
                view! { <p data-testid="quarantine-empty">"Nothing in quarantine."</p> }.into_any()
            } else {
                view! {
                    <ul class="plain" data-testid="quarantine">
                        {dashboard.quarantine.into_iter().map(|q| { let target = format!("/desk/reports/{}/act", q.id); let csrf = csrf.clone(); view! {
                            <li>
                                <code>{q.id.clone()}</code>" · "{q.component}" · "<When at=q.at now/>" · "{q.families.join(", ")}
                                " · "{if q.contact { "the reporter left an email address" } else { "no way back to the reporter but their tracking page" }}
                                <ActionForm target=target csrf=csrf.clone() action="contact" label=format!("Write to the reporter of {}…", q.id)/>
                                <leptos::form::ActionForm action=handled>
                                    <input type="hidden" name="report" value=q.id.clone()/>
                                    <input type="hidden" name="csrf" value=csrf.clone()/>
                                    <button type="submit" class="button secondary" data-testid="quarantine-handled">
                                        {format!("Mark {} handled", q.id)}
                                    </button>
                                </leptos::form::ActionForm>
                            </li>
                        }}).collect_view()}
                    </ul>
                }.into_any()
            }}
        </section>
    }
}

#[component]
fn Evidence(item: EvidenceView) -> impl IntoView {
    view! {
        <article class="evidence" data-kind=item.kind.clone()>
            <h3>
                {item.kind.replace('_', " ")}" "
                <span class="label" data-testid="evidence-label">{item.label.clone()}</span>
            </h3>
            <p class="hint">
                {format_time(item.at)}
                {item.backend.clone().map(|b| format!(" · {b} sandbox"))}
                {item.model.clone().map(|m| format!(" · written by {m}"))}
                {item.commit.clone().map(|c| format!(" · at {}", c.chars().take(12).collect::<String>()))}
                {item.duration_ms.map(|d| format!(" · {d} ms"))}
                {item.exit_code.map(|c| format!(" · exit {c}"))}
            </p>
            <p><strong>{item.outcome.clone()}</strong></p>
            {item.test_source.clone().map(|source| view! {
                <details>
                    <summary>{format!("The test: {}", item.test_path.clone().unwrap_or_default())}</summary>
                    <pre class="code rust" tabindex="0"><code>{highlight(&source)}</code></pre>
                </details>
            })}
            {(!item.checks.is_empty()).then(|| view! {
                <ul class="checks">
                    {item.checks.iter().map(|c| view! {
                        <li class=if c.passed { "check passed" } else { "check failed" }>
                            {if c.passed { "✓ " } else { "✗ " }}<strong>{c.name.clone()}</strong>
                            {format!(" — {} ({} ms)", c.detail, c.duration_ms)}
                        </li>
                    }).collect_view()}
                </ul>
            })}
            {(!item.output.is_empty()).then(|| view! {
                <details>
                    <summary>"Output"</summary>
                    <pre class="code" tabindex="0">{item.output.clone()}</pre>
                </details>
            })}
        </article>
    }
}

/// Light syntax highlighting without scripts: keywords, strings and comments get classes.
fn highlight(source: &str) -> impl IntoView {
    const KEYWORDS: &[&str] = &[
        "fn",
        "let",
        "use",
        "pub",
        "mod",
        "struct",
        "enum",
        "impl",
        "match",
        "if",
        "else",
        "for",
        "in",
        "return",
        "mut",
        "const",
        "assert",
        "assert_eq",
        "assert_ne",
    ];
    let mut parts = Vec::new();
    for line in source.split_inclusive('\n') {
        if let Some(at) = line.find("//") {
            parts.extend(words(&line[..at], KEYWORDS));
            parts.push(("comment", line[at..].to_owned()));
        } else {
            parts.extend(words(line, KEYWORDS));
        }
    }
    parts
        .into_iter()
        .map(|(class, text)| view! { <span class=class>{text}</span> })
        .collect_view()
}

fn words(text: &str, keywords: &[&str]) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_string = false;
    let flush = |current: &mut String, out: &mut Vec<(&'static str, String)>| {
        if !current.is_empty() {
            let word = current.trim_end_matches('!');
            let class = if keywords.contains(&word) { "kw" } else { "" };
            out.push((class, std::mem::take(current)));
        }
    };
    for c in text.chars() {
        if in_string {
            current.push(c);
            if c == '"' {
                out.push(("str", std::mem::take(&mut current)));
                in_string = false;
            }
        } else if c == '"' {
            flush(&mut current, &mut out);
            current.push(c);
            in_string = true;
        } else if c.is_alphanumeric() || c == '_' || c == '!' {
            current.push(c);
        } else {
            flush(&mut current, &mut out);
            out.push(("", c.to_string()));
        }
    }
    if in_string {
        out.push(("str", current));
    } else {
        flush(&mut current, &mut out);
    }
    out
}

/// A button that asks first: it posts `step=confirm` and the desk answers with a page that
/// says what will happen (`/dialog.js` shows that page's question as a modal dialog).
#[component]
fn ActionForm(
    target: String,
    csrf: String,
    action: &'static str,
    label: String,
    #[prop(optional)] report: Option<String>,
    #[prop(optional)] person: Option<String>,
) -> impl IntoView {
    let testid = format!("action-{action}");
    view! {
        <form method="post" action=target class="inline-form" data-confirm="">
            <input type="hidden" name="csrf" value=csrf/>
            <input type="hidden" name="action" value=action/>
            <input type="hidden" name="step" value="confirm"/>
            {report.map(|r| view! { <input type="hidden" name="report" value=r/> })}
            {person.map(|p| view! { <input type="hidden" name="person" value=p/> })}
            // Sending the bug back to the start is not the same kind of click as approving it.
            <button type="submit" class=if action == "reopen" { "button danger" } else { "button" } data-testid=testid>{label}</button>
        </form>
    }
}

/// The bug view's content (sections, evidence, review, release, ledger and the actions).
#[component]
pub(crate) fn BugView(bug: BugDesk) -> impl IntoView {
    let id = bug.bug.id.clone();
    let csrf = bug.csrf.clone();
    let action = |name: &str| bug.actions.iter().any(|a| a == name);
    let (approve, merge, reopen) = (action("approve"), action("merge"), action("reopen"));
    let (retry, take_over) = (action("retry"), action("take_over"));
    let act = format!("/desk/bugs/{id}/act");
    view! {
        <PageTitle text=format!("{} · Desk · Reporter-to-Release", bug.bug.title)/>
        <DeskNav owner=bug.owner.clone()/>
        <section class="panel">
            <p class="hint"><a href="/desk" rel="external">"All bugs"</a></p>
            <h1>{bug.bug.title.clone()}</h1>
            <p>
                <code>{id.clone()}</code>" · "{bug.bug.component.clone()}" · "
                <span class=format!("state state-{}", bug.bug.state) data-testid="bug-state">{state_words(&bug.bug.state)}</span>
                {bug.bug.tier.map(|t| format!(" · tier {t}"))}
                {format!(" · version {}", bug.version)}
            </p>
            {bug.notice.clone().map(|n| view! { <p class="notice" role="status" data-testid="desk-notice">{n}</p> })}
            {bug.bug.waiting_for.clone().map(|w| view! { <p class="deliberate panel" data-testid="waiting-for">{format!("Waiting for: {w}")}</p> })}
            {(!bug.crew_working.is_empty()).then(|| view! {
                <p class="notice" data-testid="crew-working">{format!("The crew is working on it: {}", bug.crew_working.join("; "))}</p>
            })}
            <div class="actions">
                {approve.then(|| view! { <ActionForm target=act.clone() csrf=csrf.clone() action="approve" label="Approve this exact head…".to_owned()/> })}
                {merge.then(|| view! { <ActionForm target=act.clone() csrf=csrf.clone() action="merge" label="Merge…".to_owned()/> })}
                {retry.then(|| view! { <ActionForm target=act.clone() csrf=csrf.clone() action="retry" label="Try again…".to_owned()/> })}
                {take_over.then(|| view! { <ActionForm target=act.clone() csrf=csrf.clone() action="take_over" label="Take it over…".to_owned()/> })}
                {reopen.then(|| view! { <ActionForm target=act.clone() csrf=csrf.clone() action="reopen" label="Reopen…".to_owned()/> })}
            </div>
            <nav class="tabs" aria-label="Bug sections">
                <ul>
                    <li><a href="#reports">"Reports"</a></li>
                    <li><a href="#evidence">"Evidence"</a></li>
                    <li><a href="#review">"Review"</a></li>
                    <li><a href="#release">"Release"</a></li>
                    <li><a href="#ledger">"Ledger"</a></li>
                </ul>
            </nav>
        </section>
        <section class="panel" id="reports" aria-labelledby="reports-h">
            <h2 id="reports-h">{format!("Reports ({})", bug.reports.len())}</h2>
            <p class="hint">"Each reporter's report as the airlock admitted it: redacted, never the raw text."</p>
            {bug.reports.into_iter().map(|r| { let report_id = r.id.clone(); view! {
                <article class="report" data-report=report_id>
                    <h3>{r.title}</h3>
                    <p class="hint"><code>{r.id}</code>" · filed "{format_time(r.filed_at)}</p>
                    <dl class="dossier">
                        <dt>"What happened"</dt><dd>{r.what_happened}</dd>
                        <dt>"Expected"</dt><dd>{r.expected}</dd>
                        <dt>"Steps"</dt><dd><ol>{r.steps.into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}</ol></dd>
                        <dt>"Answers"</dt><dd>{if r.answers.is_empty() { "none yet".to_owned() } else { r.answers.join("; ") }}</dd>
                        <dt>"Contact"</dt><dd>{if r.has_contact { "email address on file (the concierge emails your messages)" } else { "tracking link only" }}</dd>
                    </dl>
                    <ActionForm target=act.clone() csrf=csrf.clone() action="contact" label=format!("Write to the reporter of {report_id}…") report=report_id.clone()/>
                </article>
            }}).collect_view()}
        </section>
        <section class="panel" id="evidence" aria-labelledby="evidence-h">
            <h2 id="evidence-h">"Evidence"</h2>
            {if bug.evidence.is_empty() {
                view! { <p>"No evidence yet: the crew has not run anything for this bug."</p> }.into_any()
            } else {
                bug.evidence.into_iter().map(|item| view! { <Evidence item/> }).collect_view().into_any()
            }}
            {bug.diff.clone().map(|diff| view! {
                <h3>"The fix's diff"</h3>
                <pre class="code diff" tabindex="0" data-testid="diff">{diff}</pre>
            })}
            {(!bug.notes.is_empty()).then(|| view! {
                <h3>"Advisory notes (never decisions)"</h3>
                <ul class="plain" data-testid="notes">{bug.notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}</ul>
            })}
        </section>
        <section class="panel" id="review" aria-labelledby="review-h">
            <h2 id="review-h">"Review"</h2>
            {match bug.pull_request.clone() {
                None => view! { <p>"No fix yet."</p> }.into_any(),
                Some((number, head, reasons, paths)) => view! {
                    <dl class="dossier">
                        <dt>"Draft pull request"</dt><dd>{format!("#{number}")}</dd>
                        <dt>"Head"</dt><dd><code data-testid="head">{head}</code></dd>
                        <dt>"Tier"</dt><dd>{bug.bug.tier.map(|t| format!("{t}: ")).unwrap_or_default()}{reasons.join("; ")}</dd>
                        <dt>"Changes"</dt><dd>{paths.join(", ")}</dd>
                        <dt>"Approvals"</dt><dd data-testid="approvals">{if bug.approvals.is_empty() { "none".to_owned() } else { bug.approvals.iter().map(|(who, head)| format!("{who} at {}", head.chars().take(12).collect::<String>())).collect::<Vec<_>>().join("; ") }}</dd>
                        <dt>"Still required"</dt><dd>{if bug.still_required.is_empty() { "nothing".to_owned() } else { bug.still_required.join("; ") }}</dd>
                    </dl>
                }.into_any(),
            }}
        </section>
        <section class="panel" id="release" aria-labelledby="release-h">
            <h2 id="release-h">"Release"</h2>
            {if bug.deployments.is_empty() {
                view! { <p>"No deployment recorded."</p> }.into_any()
            } else {
                view! {
                    <p class="hint">"Each deployment was recorded by the recorder after it read the running service's health twice (its exact commit); the desk then checked that commit's ancestry."</p>
                    <ul class="plain" data-testid="deployments">
                        {bug.deployments.iter().map(|(id, commit, status)| view! {
                            <li><span class="label">"live run"</span>" "<code>{id.clone()}</code>" · "<code>{commit.chars().take(12).collect::<String>()}</code>" · "{status.replace('_', " ")}</li>
                        }).collect_view()}
                    </ul>
                }.into_any()
            }}
        </section>
        <section class="panel" id="ledger" aria-labelledby="ledger-h">
            <h2 id="ledger-h">"Ledger"</h2>
            <p data-testid="ledger-status"><strong>{format!("Hash chain: {}", bug.ledger_status)}</strong></p>
            <ol class="ledger">
                {bug.ledger.into_iter().map(|e| view! {
                    <li>
                        <strong>{e.kind.replace('_', " ")}</strong>" · "{e.actor}" · "{format_time(e.at)}
                        {(!e.detail.is_empty()).then(|| format!(" · {}", e.detail.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", ")))}
                        <br/><code class="hash">{e.hash.chars().take(16).collect::<String>()}</code>
                    </li>
                }).collect_view()}
            </ol>
        </section>
    }
}

/// The crew page's content.
#[component]
pub(crate) fn CrewView(crew: CrewDesk) -> impl IntoView {
    let (committed, settled, total) = crew.spend;
    let dollars =
        |micros: u64| format!("${}.{:04}", micros / 1_000_000, (micros % 1_000_000) / 100);
    view! {
        <PageTitle text="Crew · Desk · Reporter-to-Release"/>
        <DeskNav owner=crew.owner.clone()/>
        <section class="panel">
            <h1>"Crew"</h1>
            <p data-testid="crew-status" class=if crew.connected { "ok" } else { "error" }>
                {if crew.connected {
                    "Connected: all four roles sent a heartbeat in the last 90 seconds."
                } else {
                    "Not connected: a role has not sent a heartbeat in the last 90 seconds."
                }}
            </p>
            <div class="table-wrap" tabindex="0" role="region" aria-label="Crew roles">
                <table data-testid="crew-roles">
                    <caption class="visually-hidden">"Each role's last heartbeat"</caption>
                    <thead><tr><th scope="col">"Role"</th><th scope="col">"Last heartbeat"</th><th scope="col">"Connection"</th><th scope="col">"Doing"</th></tr></thead>
                    <tbody>
                        {crew.roles.into_iter().map(|(role, seen, age, fresh, doing)| { let key = role.clone(); view! {
                            <tr data-role=key>
                                <th scope="row">{role}</th>
                                <td>{match (seen, age) { (Some(at), Some(age)) => format!("{} ({} s ago)", format_time(at), age / 1000), _ => "never".to_owned() }}</td>
                                <td>{if fresh { "connected" } else { "not connected" }}</td>
                                <td>{doing}</td>
                            </tr>
                        }}).collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
        <section class="panel">
            <h2>"Spend"</h2>
            <p data-testid="crew-spend">{format!("{} committed ({} settled) of a {} budget; {} of {} calls in the last hour.", dollars(committed), dollars(settled), dollars(total), crew.calls.0, crew.calls.1)}</p>
        </section>
        <section class="panel">
            <h2>"Recent tasks"</h2>
            {if crew.tasks.is_empty() {
                view! { <p>"No hand-offs yet."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap" tabindex="0" role="region" aria-label="Recent hand-offs">
                        <table data-testid="crew-tasks">
                            <thead><tr><th scope="col">"Task"</th><th scope="col">"Bug"</th><th scope="col">"From → to"</th><th scope="col">"Where it is"</th><th scope="col">"Body hash"</th></tr></thead>
                            <tbody>
                                {crew.tasks.into_iter().map(|(kind, bug, from, to, outcome, hash)| view! {
                                    <tr><td>{kind}</td><td><code>{bug}</code></td><td>{format!("{from} → {to}")}</td><td>{outcome}</td><td><code>{hash}</code></td></tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
}

#[component]
fn ConfirmView(confirm: Confirm) -> impl IntoView {
    let title = match confirm.action.as_str() {
        "approve" => "Approve this exact head?",
        "merge" => "Merge this fix?",
        "contact" => "Write to this reporter?",
        "invite" => "Invite another owner?",
        "confirm_owner" => "Confirm this owner?",
        "retry" => "Give this bug back to the crew?",
        "take_over" => "Take this bug over from the crew?",
        _ => "Reopen this bug?",
    };
    let back = if matches!(confirm.action.as_str(), "invite" | "confirm_owner") {
        "/desk/owners".to_owned()
    } else if confirm.bug.is_empty() {
        "/desk".to_owned()
    } else {
        format!("/desk/bugs/{}", confirm.bug)
    };
    let target = confirm.target.clone();
    view! {
        <PageTitle text=format!("{title} · Desk · Reporter-to-Release")/>
        <DeskNav owner=confirm.owner.clone()/>
        <section class="panel narrow" role="alertdialog" aria-labelledby="confirm-h" aria-describedby="confirm-what">
            <h1 id="confirm-h">{title}</h1>
            <ul id="confirm-what" data-testid="consequences">
                {confirm.consequences.iter().map(|c| view! { <li>{c.clone()}</li> }).collect_view()}
            </ul>
            <form method="post" action=target class="cart-form">
                <input type="hidden" name="csrf" value=confirm.csrf.clone()/>
                <input type="hidden" name="action" value=confirm.action.clone()/>
                <input type="hidden" name="step" value="do"/>
                {confirm.head.clone().map(|head| view! { <input type="hidden" name="head" value=head/> })}
                {confirm.report.clone().map(|r| view! { <input type="hidden" name="report" value=r/> })}
                {confirm.person.clone().map(|p| view! { <input type="hidden" name="person" value=p/> })}
                {(confirm.action == "contact").then(|| view! {
                    <div class="field">
                        <label for="text">{format!("Your message to the reporter of {}", confirm.report.clone().unwrap_or_default())}</label>
                        <textarea id="text" name="text" rows="5" required maxlength="4000"></textarea>
                    </div>
                })}
                {(confirm.action == "reopen").then(|| view! {
                    <div class="field">
                        <label for="reason">"Why (the reporters will see that it was reopened)"</label>
                        <input id="reason" name="reason" type="text" required maxlength="2000"/>
                    </div>
                })}
                <div class="actions">
                    <button type="submit" class=if confirm.action == "reopen" { "button danger" } else { "button" } data-testid="confirm">{match confirm.action.as_str() { "contact" => "Yes, send the message".to_owned(), "invite" => "Yes, make the link".to_owned(), "confirm_owner" => "Yes, confirm".to_owned(), "retry" => "Yes, give it back to the crew".to_owned(), "take_over" => "Yes, take it over".to_owned(), other => format!("Yes, {other}") }}</button>
                    <a class="button secondary" href=back>"Cancel"</a>
                </div>
            </form>
        </section>
    }
}

#[component]
fn OwnersView(owners: OwnersDesk) -> impl IntoView {
    view! {
        <PageTitle text="Owners · Desk · Reporter-to-Release"/>
        <DeskNav owner=owners.owner.clone()/>
        <script src="/dialog.js" defer></script>
        <section class="panel">
            <h1>"Owners"</h1>
            <p class="hint">"People who can approve, merge, reopen and invite. A tier-2 change needs two of them, one a code owner. Once the desk has two owners, a new owner counts only after an owner other than the one who invited them confirms them."</p>
            <ul class="plain" data-testid="owners">
                {owners.owners.iter().map(|o| {
                    let how = match (&o.invited_by, &o.confirmed_by) {
                        (None, _) => "first owner".to_owned(),
                        (Some(by), None) => format!("invited by {by}"),
                        (Some(by), Some(confirmed)) => format!("invited by {by}, confirmed by {confirmed}"),
                    };
                    view! {
                        <li data-testid="owner-line">
                            <strong>{o.email.clone()}</strong>
                            " · " {how}
                            {o.pending.then(|| view! { " · " <span class="badge" data-testid="owner-pending">"waiting for a second owner's confirmation"</span> })}
                            {o.can_confirm.then(|| view! {
                                " "
                                <ActionForm target="/desk/owners/act".to_owned() csrf=owners.csrf.clone() action="confirm_owner" label=format!("Confirm {}…", o.email) person=o.id.clone()/>
                            })}
                        </li>
                    }
                }).collect_view()}
            </ul>
            {match owners.invite_link.clone() {
                Some(link) => view! {
                    <div class="notice" role="status">
                        <p><strong>"The invitation, shown this once:"</strong></p>
                        <p><code class="hash" data-testid="invite-link">{link}</code></p>
                        <p class="hint">{format!("Put it after this desk's address and send it privately. It works once, until {}.", owners.expires_at.map(format_time).unwrap_or_default())}</p>
                    </div>
                }.into_any(),
                None => view! {
                    <ActionForm target="/desk/owners/act".to_owned() csrf=owners.csrf.clone() action="invite" label="Invite another owner…".to_owned()/>
                }.into_any(),
            }}
        </section>
    }
}

#[component]
fn InviteView(invite: InvitePage) -> impl IntoView {
    if invite.created && invite.pending {
        return view! {
            <PageTitle text="Almost there · Desk · Reporter-to-Release"/>
            <section class="panel narrow">
                <h1>"Your account waits for a second owner"</h1>
                <p role="status" data-testid="invite-pending">{format!("The account {} exists, but it counts only once an owner other than the one who invited you confirms it on the desk's Owners page. Until then you cannot sign in. Ask them to confirm you.", invite.email)}</p>
            </section>
        }
        .into_any();
    }
    if invite.created {
        return view! {
            <PageTitle text="Welcome · Desk · Reporter-to-Release"/>
            <section class="panel narrow">
                <h1>"You are an owner now"</h1>
                <p role="status" data-testid="invite-created">{format!("The account {} exists. Sign in with it.", invite.email)}</p>
                <p><a class="button" href="/desk/sign-in" rel="external">"Sign in"</a></p>
            </section>
        }
        .into_any();
    }
    view! {
        <PageTitle text="Accept an invitation · Desk · Reporter-to-Release"/>
        <section class="panel narrow">
            <h1>"Become an owner of this desk"</h1>
            <p class="hint">"An owner invited you. Choose the email and password you will sign in with."</p>
            {invite.error.clone().map(|e| view! { <p class="error" role="alert" data-testid="invite-error">{e}" The password was not kept: type it again."</p> })}
            <form method="post" action="/desk/invite" class="report-form">
                <div class="field">
                    <label for="invite-token">"Invitation"</label>
                    <p class="hint" id="invite-token-hint">"The whole link you were sent, or the part after the #. Filled in for you when the page can read it."</p>
                    <input id="invite-token" name="token" type="password" autocomplete="off" required aria-describedby="invite-token-hint" value=invite.token.clone()/>
                </div>
                <div class="field">
                    <label for="invite-email">"Email"</label>
                    <input id="invite-email" name="email" type="email" autocomplete="username" required value=invite.email.clone()/>
                </div>
                <div class="field">
                    <label for="invite-password">"Password (at least 12 characters)"</label>
                    <input id="invite-password" name="password" type="password" autocomplete="new-password" required minlength="12"/>
                </div>
                <button type="submit" class="button">"Create my owner account"</button>
            </form>
        </section>
        <script src="/invite.js" defer></script>
    }
    .into_any()
}
