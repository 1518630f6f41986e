//! `/demo`: a labelled walk through the loop on sample data. Nothing here reaches the desk's
//! state: every button is a sandbox action that moves only this page's example forward, and
//! says so. Without JavaScript the whole walk is shown at once.

use crate::layout::PageTitle;
use leptos::prelude::*;

struct Stage {
    title: &'static str,
    who: &'static str,
    action: &'static str,
    evidence: &'static str,
}

const STAGES: &[Stage] = &[
    Stage {
        title: "A reporter files a report",
        who: "Reporter (example)",
        action: "File example report",
        evidence: "“SAVE300 on a ₹200 cart asks me to pay −₹100.” The airlock removes the e-mail address in it and finds no instructions aimed at a model: admitted.",
    },
    Stage {
        title: "The crew proves the bug",
        who: "Reproducer (scripted example)",
        action: "Run example reproduction",
        evidence: "tests/coupon_save300.rs fails in the sandbox on its assertion: left −₹100, right ₹0. The desk re-ran it itself after the shop's own suite passed.",
    },
    Stage {
        title: "The reporter confirms: that is my bug",
        who: "Reporter (example)",
        action: "Confirm as example reporter",
        evidence: "Answered yes on the private tracking page.",
    },
    Stage {
        title: "The crew drafts a bounded fix",
        who: "Fixer (scripted example)",
        action: "Draft example fix",
        evidence: "One file changed (src/lib.rs): the discount is capped at the subtotal. Suite, formatter and linter green in the sandbox; draft pull request #1.",
    },
    Stage {
        title: "A person reviews the exact commit",
        who: "Owner (example)",
        action: "Record example human review",
        evidence: "Approved commit 3f2a…c9 — that commit only; a new push would clear it.",
    },
    Stage {
        title: "A person merges",
        who: "Owner (example)",
        action: "Merge example fix",
        evidence: "Merged into main as 8d41…07.",
    },
    Stage {
        title: "The recorder proves it is live",
        who: "Recorder (example)",
        action: "Record example deployment",
        evidence: "The live shop answers its health check with exactly 8d41…07.",
    },
    Stage {
        title: "The reporter has the last word",
        who: "Reporter (example)",
        action: "Confirm example fix",
        evidence: "Answered yes: verified. A “no” with a reason would have reopened the bug.",
    },
];

/// `/demo`.
#[component]
pub fn Demo() -> impl IntoView {
    let reached = RwSignal::new(0usize);
    let hydrated = super::hydrated_signal();
    let finished = move || hydrated.get() && reached.get() == STAGES.len();
    view! {
        <PageTitle text="Demo · Reporter-to-Release"/>
        <section class="panel deliberate" aria-labelledby="demo-h">
            <h1 id="demo-h">"Demo: the loop on sample data"</h1>
            <p data-testid="demo-label"><strong>"Sandbox actions only."</strong>" Every button on this page moves this example forward and nothing else: no real bug, report, commit or person is touched. Its evidence is labelled "<span class="label">"simulated demo"</span>"."</p>
            <p class="hint">"Real work happens on the desk, with real evidence from the sandbox."</p>
        </section>
        <ol class="demo-steps" data-testid="demo-steps">
            {STAGES.iter().enumerate().map(|(index, stage)| {
                let done = move || !hydrated.get() || reached.get() > index;
                let current = move || hydrated.get() && reached.get() == index;
                view! {
                    <li class="panel" class:done=done aria-current=move || current().then_some("step")>
                        <h2>{format!("{}. {}", index + 1, stage.title)}</h2>
                        <p class="hint">{stage.who}</p>
                        <Show when=done fallback=|| view! { <p class="hint">"Not yet."</p> }>
                            <p><span class="label">"simulated demo"</span>" "{stage.evidence}</p>
                        </Show>
                        <Show when=current>
                            <button type="button" class="button" data-testid="demo-action"
                                on:click=move |_| reached.update(|r| *r += 1)>
                                {format!("{} (sandbox action)", stage.action)}
                            </button>
                        </Show>
                    </li>
                }
            }).collect_view()}
        </ol>
        <Show when=finished>
            <p class="notice" role="status" data-testid="demo-done">"The example reached verified. "
                <button type="button" class="button secondary" on:click=move |_| reached.set(0)>"Start the example again"</button>
            </p>
        </Show>
    }
}
