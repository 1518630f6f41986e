//! The bug view's content: the header with the owner's actions and a summary of the proof,
//! then its sections — reports, evidence (with the diff viewer), review, release, ledger — as
//! tabs once hydrated (keyboard and screen-reader correct, the selected one in the address's
//! fragment so a link opens it), and as one page of anchored sections without JavaScript.

use super::confirm::Asking;
use crate::layout::PageTitle;
use crate::screen::BugScreen;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use {
    super::confirm::Ask,
    super::desk::{state_words, DeskNav},
    super::diff_view::DiffViewer,
    crate::dto::{BugDesk, DeskAction, EvidenceView},
    crate::erase::IntoAnySync,
    crate::net::format_time,
    crate::screen::ServerHtml,
};

/// The bug view's sections: (fragment, tab label).
const SECTIONS: [(&str, &str); 5] = [
    ("reports", "Reports"),
    ("evidence", "Evidence"),
    ("review", "Review"),
    ("release", "Release"),
    ("ledger", "Ledger"),
];

/// Which section the bug view shows: `None` until hydrated (every section, one under the
/// other, as without JavaScript), then the one named by the address's fragment. Kept by the
/// page, so a live redraw of the view keeps the owner's tab.
#[derive(Clone, Copy)]
pub(crate) struct Tabs {
    selected: RwSignal<Option<&'static str>>,
}

impl Tabs {
    /// The page's tabs, put in context; once hydrated, the fragment's section (or the first).
    pub(crate) fn provide() -> Self {
        let tabs = Tabs {
            selected: RwSignal::new(None),
        };
        Effect::new(move |_| {
            #[cfg(feature = "hydrate")]
            {
                // The fragment's section, now and whenever the fragment changes (a link to
                // `#ledger` followed on this page).
                let follow = move |first: bool| {
                    let hash = window().location().hash().unwrap_or_default();
                    let wanted = hash.trim_start_matches('#');
                    match SECTIONS.iter().find(|(id, _)| *id == wanted) {
                        Some((id, _)) => tabs.selected.set(Some(id)),
                        None if first => tabs.selected.set(Some(SECTIONS[0].0)),
                        None => {}
                    }
                };
                follow(true);
                let listener =
                    window_event_listener(leptos::ev::hashchange, move |_| follow(false));
                on_cleanup(move || listener.remove());
            }
        });
        provide_context(tabs);
        tabs
    }

    /// The page's tabs, or none (every section shown).
    fn here() -> Self {
        use_context::<Tabs>().unwrap_or(Tabs {
            selected: RwSignal::new(None),
        })
    }

    fn on(self) -> bool {
        self.selected.get().is_some()
    }

    /// `role` while the sections are tabs.
    fn role(self, role: &'static str) -> impl Fn() -> Option<&'static str> + Copy {
        move || self.on().then_some(role)
    }

    /// Whether section `id` is hidden (another tab is selected).
    fn hides(self, id: &'static str) -> impl Fn() -> bool + Copy {
        move || self.selected.get().is_some_and(|s| s != id)
    }

    /// Selects section `id`: shown, named in the address (replaced, not a new history entry),
    /// its tab focused when `focus`.
    fn select(self, id: &'static str, focus: bool) {
        self.selected.set(Some(id));
        #[cfg(feature = "hydrate")]
        {
            if let Ok(history) = window().history() {
                let _ = history.replace_state_with_url(
                    &wasm_bindgen::JsValue::NULL,
                    "",
                    Some(&format!("#{id}")),
                );
            }
            if focus {
                use wasm_bindgen::JsCast;
                if let Some(tab) = document()
                    .get_element_by_id(&format!("tab-{id}"))
                    .and_then(|e| e.dyn_into::<leptos::web_sys::HtmlElement>().ok())
                {
                    let _ = tab.focus();
                }
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = focus;
    }
}

/// The sections' tab list: links to each section without JavaScript; hydrated, ARIA tabs
/// (arrow keys, Home and End move between them; one tab stop).
#[component]
fn SectionTabs() -> impl IntoView {
    let tabs = Tabs::here();
    let keys = move |event: leptos::ev::KeyboardEvent| {
        let Some(current) = tabs.selected.get_untracked() else {
            return;
        };
        let at = SECTIONS
            .iter()
            .position(|(id, _)| *id == current)
            .unwrap_or(0);
        let last = SECTIONS.len() - 1;
        let next = match event.key().as_str() {
            "ArrowRight" => {
                if at == last {
                    0
                } else {
                    at + 1
                }
            }
            "ArrowLeft" => {
                if at == 0 {
                    last
                } else {
                    at - 1
                }
            }
            "Home" => 0,
            "End" => last,
            _ => return,
        };
        event.prevent_default();
        tabs.select(SECTIONS[next].0, true);
    };
    view! {
        <nav class="tabs" aria-label="Bug sections">
            <ul role=tabs.role("tablist") on:keydown=keys>
                {SECTIONS.iter().map(|&(id, label)| {
                    let selected = move || tabs.selected.get() == Some(id);
                    view! {
                        <li role=tabs.role("presentation")>
                            <a href=format!("#{id}") id=format!("tab-{id}") data-testid=format!("tab-{id}")
                                role=tabs.role("tab")
                                aria-controls=move || tabs.on().then_some(id)
                                aria-selected=move || tabs.on().then(|| selected().to_string())
                                tabindex=move || tabs.on().then(|| if selected() { "0" } else { "-1" })
                                on:click=move |event| {
                                    if tabs.on() {
                                        event.prevent_default();
                                        tabs.select(id, false);
                                    }
                                }>
                                {label}
                            </a>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </nav>
    }
}

/// The proof at a glance, above the tabs: the failing test, the fix's checks, the head, the
/// tier and what is still required.
#[cfg(feature = "ssr")]
struct Summary;

#[cfg(feature = "ssr")]
impl Summary {
    fn of(bug: &BugDesk) -> impl IntoView {
        let rerun = bug
            .evidence
            .iter()
            .rev()
            .find(|e| e.kind == "reproduction_rerun");
        let failing = match (&bug.confirmed_test, rerun) {
            (Some(path), Some(run)) => format!("{path} — {}", run.outcome),
            (Some(path), None) => path.clone(),
            (None, Some(run)) => run.outcome.clone(),
            (None, None) => "none yet".to_owned(),
        };
        let attempt = bug.evidence.iter().rev().find(|e| e.kind == "fix_attempt");
        let checks = match attempt {
            None => "no fix attempt yet".to_owned(),
            Some(a) if a.checks.is_empty() => a.outcome.clone(),
            Some(a) => {
                let passed = a.checks.iter().filter(|c| c.passed).count();
                let names: Vec<String> = a
                    .checks
                    .iter()
                    .map(|c| format!("{} {}", if c.passed { "✓" } else { "✗" }, c.name))
                    .collect();
                format!(
                    "{passed} of {} passed ({})",
                    a.checks.len(),
                    names.join(", ")
                )
            }
        };
        let (head, tier) = match &bug.pull_request {
            Some((number, head, reasons, _)) => (
                format!(
                    "{} (draft pull request #{number})",
                    head.chars().take(12).collect::<String>()
                ),
                format!(
                    "{}{}",
                    bug.bug.tier.map(|t| format!("{t}: ")).unwrap_or_default(),
                    reasons.join("; ")
                ),
            ),
            None => ("no fix yet".to_owned(), "—".to_owned()),
        };
        let still = if bug.still_required.is_empty() {
            "nothing".to_owned()
        } else {
            bug.still_required.join("; ")
        };
        view! {
            <dl class="summary" data-testid="proof-summary" aria-label="The proof at a glance">
                <div><dt>"Failing test"</dt><dd>{failing}</dd></div>
                <div><dt>"Checks"</dt><dd>{checks}</dd></div>
                <div><dt>"Head"</dt><dd><code>{head}</code></dd></div>
                <div><dt>"Tier"</dt><dd>{tier}</dd></div>
                <div><dt>"Still required"</dt><dd>{still}</dd></div>
                <div><dt>"Crew budget"</dt><dd data-testid="crew-budget">{bug.crew_budget.clone()}</dd></div>
                <div><dt>"Project"</dt><dd data-testid="bug-project">{bug.project.clone()}</dd></div>
            </dl>
        }
        .into_any_sync()
    }
}

#[cfg(feature = "ssr")]
#[component]
fn Evidence(item: EvidenceView) -> impl IntoView {
    view! {
        <article class="evidence" data-kind=item.kind.clone()>
            <h3>{item.kind.replace('_', " ")}</h3>
            <dl class="provenance">
                <dt>"Written by"</dt>
                <dd data-testid="written-by">{item.written_by.clone().unwrap_or_else(|| "the project's own test suite".to_owned())}</dd>
                <dt>"Measured by"</dt>
                <dd><span class="label" data-testid="evidence-label">{item.measured_by.clone()}</span></dd>
            </dl>
            <p class="hint">
                {format_time(item.at)}
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
#[cfg(feature = "ssr")]
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

#[cfg(feature = "ssr")]
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

/// The bug view as the server sends it: the navigation, the head (title, state, what it
/// waits for, the actions, the proof at a glance) and each section's content, drawn here;
/// `split` lays the diff out side by side.
#[cfg(feature = "ssr")]
pub(crate) fn bug_screen(bug: BugDesk, split: bool) -> BugScreen {
    let id = bug.bug.id.clone();
    let action = |wanted: DeskAction| bug.actions.contains(&wanted);
    let (approve, merge, reopen) = (
        action(DeskAction::Approve),
        action(DeskAction::Merge),
        action(DeskAction::Reopen),
    );
    let (retry, take_over) = (action(DeskAction::Retry), action(DeskAction::TakeOver));
    let (duplicate, promote) = (action(DeskAction::Duplicate), action(DeskAction::Promote));
    let summary = Summary::of(&bug);
    let head = ServerHtml::render(view! {
        <p class="hint"><a href="/desk" rel="external">"All bugs"</a></p>
            <h1>{bug.bug.title.clone()}</h1>
            <p>
                <code>{id.clone()}</code>" · "{bug.bug.component.clone()}" · "
                <span class=format!("state state-{}", bug.bug.state.as_str()) data-testid="bug-state">{state_words(bug.bug.state)}</span>
                {bug.bug.tier.map(|t| format!(" · tier {t}"))}
                {format!(" · version {}", bug.version)}
            </p>
            {bug.notice.clone().map(|n| view! { <p class="notice" role="status" data-testid="desk-notice">{n}</p> })}
        {bug.duplicate_of.clone().map(|of| view! {
            <p class="deliberate panel" data-testid="duplicate-of">
                "A duplicate of " <a href=format!("/desk/bugs/{of}")>{of.clone()}</a>
                ": its reports joined that bug, and nothing more happens here."
            </p>
        })}
            {bug.bug.waiting_for.clone().map(|w| view! { <p class="deliberate panel" data-testid="waiting-for">{format!("Waiting for: {w}")}</p> })}
            {(!bug.crew_working.is_empty()).then(|| view! {
                <p class="notice" data-testid="crew-working">{format!("The crew is working on it: {}", bug.crew_working.join("; "))}</p>
            })}
    });
    // The buttons and the summary are parts of their own: a live redraw of the head (the
    // crew's work, a new version) must not replace a button under an owner's pointer.
    let actions = ServerHtml::render(view! {
        <div class="actions">
            {approve.then(|| view! { <Ask bug=id.clone() action=DeskAction::Approve label="Approve this exact head…".to_owned()/> })}
            {merge.then(|| view! { <Ask bug=id.clone() action=DeskAction::Merge label="Merge…".to_owned()/> })}
            {retry.then(|| view! { <Ask bug=id.clone() action=DeskAction::Retry label="Try again…".to_owned()/> })}
            {promote.then(|| view! { <Ask bug=id.clone() action=DeskAction::Promote label="Promote…".to_owned()/> })}
            {take_over.then(|| view! { <Ask bug=id.clone() action=DeskAction::TakeOver label="Take it over…".to_owned()/> })}
            {duplicate.then(|| view! { <Ask bug=id.clone() action=DeskAction::Duplicate label="Mark as duplicate of…".to_owned()/> })}
        {reopen.then(|| view! { <Ask bug=id.clone() action=DeskAction::Reopen label="Reopen…".to_owned()/> })}
        </div>
    });
    let summary = ServerHtml::render(summary);

    let reports = bug.reports.clone();
    let reports = ServerHtml::render(view! {
        <h2 id="reports-h">{format!("Reports ({})", reports.len())}</h2>
        <p class="hint">"Each reporter's report as the airlock admitted it: redacted, never the raw text."</p>
        {reports.into_iter().map(|r| { let report_id = r.id.clone(); view! {
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
                <Ask bug=id.clone() action=DeskAction::Contact label=format!("Write to the reporter of {report_id}…") report=report_id.clone()/>
            </article>
        }}).collect_view()}
    });
    let evidence = bug.evidence.clone();
    let diff = bug.diff.clone();
    let evidence = ServerHtml::render(view! {
        <h2 id="evidence-h">"Evidence"</h2>
        {if evidence.is_empty() {
            view! { <p>"No evidence yet: the crew has not run anything for this bug."</p> }.into_any_sync()
        } else {
            evidence.into_iter().map(|item| view! { <Evidence item/> }).collect_view().into_any_sync()
        }}
        {diff.map(|diff| view! {
            <h3>"The fix's diff"</h3>
            <DiffViewer diff confirmed_test=bug.confirmed_test.clone() split/>
        })}
        {(!bug.notes.is_empty()).then(|| view! {
            <h3>"Advisory notes (never decisions)"</h3>
            <ul class="plain" data-testid="notes">{bug.notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}</ul>
        })}
    });
    let review = ServerHtml::render(view! {
        <h2 id="review-h">"Review"</h2>
        {match bug.pull_request.clone() {
            None => view! { <p>"No fix yet."</p> }.into_any_sync(),
            Some((number, head, reasons, paths)) => view! {
                <dl class="dossier">
                    <dt>"Draft pull request"</dt><dd>{format!("#{number}")}</dd>
                    <dt>"Head"</dt><dd><code data-testid="head">{head}</code></dd>
                    <dt>"Tier"</dt><dd>{bug.bug.tier.map(|t| format!("{t}: ")).unwrap_or_default()}{reasons.join("; ")}</dd>
                    <dt>"Changes"</dt><dd>{paths.join(", ")}</dd>
                    <dt>"Approvals"</dt><dd data-testid="approvals">{if bug.approvals.is_empty() { "none".to_owned() } else { bug.approvals.iter().map(|(who, head)| format!("{who} at {}", head.chars().take(12).collect::<String>())).collect::<Vec<_>>().join("; ") }}</dd>
                    <dt>"Still required"</dt><dd>{if bug.still_required.is_empty() { "nothing".to_owned() } else { bug.still_required.join("; ") }}</dd>
                </dl>
            }.into_any_sync(),
        }}
    });
    let release = ServerHtml::render(view! {
        <h2 id="release-h">"Release"</h2>
        {if bug.deployments.is_empty() {
            view! { <p>"No deployment recorded."</p> }.into_any_sync()
        } else {
            view! {
                <p class="hint">"Each deployment was recorded by the recorder after it read the running service's health twice (its exact commit); the desk then checked that commit's ancestry."</p>
                <ul class="plain" data-testid="deployments">
                    {bug.deployments.iter().map(|(id, commit, status)| view! {
                        <li><span class="label">"live run"</span>" "<code>{id.clone()}</code>" · "<code>{commit.chars().take(12).collect::<String>()}</code>" · "{status.replace('_', " ")}</li>
                    }).collect_view()}
                </ul>
            }.into_any_sync()
        }}
    });
    let ledger = bug.ledger.clone();
    let ledger = ServerHtml::render(view! {
        <h2 id="ledger-h">"Ledger"</h2>
        <p data-testid="ledger-status"><strong>{format!("Hash chain: {}", bug.ledger_status)}</strong></p>
        <ol class="ledger">
            {ledger.into_iter().map(|e| view! {
                <li>
                    <strong>{e.kind.replace('_', " ")}</strong>" · "{e.actor}" · "{format_time(e.at)}
                    {(!e.detail.is_empty()).then(|| format!(" · {}", e.detail.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", ")))}
                    <br/><code class="hash">{e.hash.chars().take(16).collect::<String>()}</code>
                </li>
            }).collect_view()}
        </ol>
    });
    BugScreen {
        page_title: format!("{} · Desk · Reporter-to-Release", bug.bug.title),
        nav_html: ServerHtml::render(view! { <DeskNav owner=bug.owner.clone()/> }),
        head_html: head,
        actions_html: actions,
        summary_html: summary,
        sections_html: vec![reports, evidence, review, release, ledger],
        data: bug,
    }
}

/// The bug view: the server's HTML, with its tabs and its actions' dialog live.
#[component]
pub(crate) fn BugView(bug: BugScreen) -> impl IntoView {
    let tabs = Tabs::here();
    let ask = expect_context::<Asking>().on_submit();
    view! {
        <PageTitle text=bug.page_title/>
        <div class="fragment" inner_html=bug.nav_html.into_inner()></div>
        <section class="panel" on:submit=ask.clone()>
            <div class="fragment" inner_html=bug.head_html.into_inner()></div>
            <div class="fragment" inner_html=bug.actions_html.into_inner()></div>
            <div class="fragment" inner_html=bug.summary_html.into_inner()></div>
            <SectionTabs/>
        </section>
        {bug.sections_html.into_iter().zip(SECTIONS).map(|(html, (id, _))| view! {
            <section class="panel" id=id aria-labelledby=format!("{id}-h")
                role=tabs.role("tabpanel") hidden=tabs.hides(id) on:submit=ask.clone()
                inner_html=html.into_inner()></section>
        }).collect_view()}
    }
}
