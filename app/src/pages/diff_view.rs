//! The fix's diff as a code review tool shows it: a header per file (collapsible without
//! JavaScript: a `<details>`), line numbers on both sides, added and removed lines coloured
//! and named for screen readers, unified or side by side (`?diff=split`, a link, so it works
//! without JavaScript too), and the confirmed test marked read-only.

use crate::diff::{parse, side_by_side, DiffFile, DiffLine, LineKind};
use crate::erase::IntoAnySync;
use leptos::prelude::*;

fn marker(kind: LineKind) -> (&'static str, &'static str, &'static str) {
    // (row class, visible marker, words for a screen reader)
    match kind {
        LineKind::Added => ("add", "+", "added: "),
        LineKind::Removed => ("del", "−", "removed: "),
        LineKind::Context => ("ctx", " ", ""),
        LineKind::Note => ("note", " ", ""),
    }
}

fn number(n: Option<u32>) -> String {
    n.map(|n| n.to_string()).unwrap_or_default()
}

/// One line's code cell: the marker, hidden words saying what it is, the text.
fn code_cell(line: Option<&DiffLine>, class: &str) -> impl IntoView {
    match line {
        None => view! { <td class="code empty"></td> }.into_any_sync(),
        Some(line) => {
            let (_, mark, words) = marker(line.kind);
            view! {
                <td class=format!("code {class}")>
                    <span class="marker" aria-hidden="true">{mark}</span>
                    {(!words.is_empty()).then(|| view! { <span class="visually-hidden">{words}</span> })}
                    <code>{line.text.clone()}</code>
                </td>
            }
            .into_any_sync()
        }
    }
}

fn unified(file: &DiffFile) -> impl IntoView {
    view! {
        <table class="diff-table">
            <thead class="visually-hidden">
                <tr><th scope="col">"Old line"</th><th scope="col">"New line"</th><th scope="col">"Code"</th></tr>
            </thead>
            {file.hunks.iter().map(|hunk| view! {
                <tbody>
                    <tr class="hunk"><td colspan="3"><code>{hunk.header.clone()}</code></td></tr>
                    {hunk.lines.iter().map(|line| view! {
                        <tr class=marker(line.kind).0>
                            <td class="ln">{number(line.old)}</td>
                            <td class="ln">{number(line.new)}</td>
                            {code_cell(Some(line), "")}
                        </tr>
                    }).collect_view()}
                </tbody>
            }).collect_view()}
        </table>
    }
}

fn side_by_side_table(file: &DiffFile) -> impl IntoView {
    view! {
        <table class="diff-table split">
            <thead class="visually-hidden">
                <tr><th scope="col">"Old line"</th><th scope="col">"Before"</th><th scope="col">"New line"</th><th scope="col">"After"</th></tr>
            </thead>
            {file.hunks.iter().map(|hunk| view! {
                <tbody>
                    <tr class="hunk"><td colspan="4"><code>{hunk.header.clone()}</code></td></tr>
                    {side_by_side(hunk).into_iter().map(|(old, new)| {
                        let class = |line: Option<&DiffLine>| line.map_or("empty", |l| marker(l.kind).0);
                        view! {
                            <tr>
                                <td class=format!("ln {}", class(old))>{number(old.and_then(|l| l.old))}</td>
                                {code_cell(old, class(old))}
                                <td class=format!("ln {}", class(new))>{number(new.and_then(|l| l.new))}</td>
                                {code_cell(new, class(new))}
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            }).collect_view()}
        </table>
    }
}

/// The diff of the fix; `confirmed_test` is the test a reporter confirmed (the fixer may not
/// change it); `split` lays it out side by side.
#[component]
pub(crate) fn DiffViewer(
    diff: String,
    confirmed_test: Option<String>,
    split: bool,
) -> impl IntoView {
    let files = parse(&diff);
    let side = split;
    let (added, removed) = files
        .iter()
        .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed));
    let count = files.len();
    view! {
        <div class="diff-viewer" data-testid="diff">
            <div class="diff-toolbar">
                <p><strong>{format!("{count} file{} changed", if count == 1 { "" } else { "s" })}</strong>
                    " " <span class="count-add">{format!("+{added}")}</span>
                    " " <span class="count-del">{format!("−{removed}")}</span></p>
                <p class="diff-layout">
                    "Layout: "
                    <a href="?diff=unified#evidence" aria-current=(!side).then_some("true")>"Unified"</a>
                    " · "
                    <a href="?diff=split#evidence" aria-current=side.then_some("true")>"Side by side"</a>
                </p>
            </div>
            {files.into_iter().map(|file| {
                let path = file.path().to_owned();
                let read_only = confirmed_test.as_deref() == Some(path.as_str());
                let body = file.clone();
                view! {
                    <details class="diff-file" open>
                        <summary>
                            <code class="path">{path.clone()}</code>
                            " " <span class="count-add">{format!("+{}", file.added)}</span>
                            " " <span class="count-del">{format!("−{}", file.removed)}</span>
                            {file.status().map(|s| view! { " " <span class="label">{s}</span> })}
                            {read_only.then(|| view! { " " <span class="label read-only" data-testid="read-only-test">"the confirmed test · read-only"</span> })}
                        </summary>
                        <div class="table-wrap" tabindex="0" role="region" aria-label=format!("Changes to {path}")>
                            {if file.binary {
                                view! { <p class="hint">"A binary file: nothing to show line by line."</p> }.into_any_sync()
                            } else {
                                if side { side_by_side_table(&body).into_any_sync() } else { unified(&body).into_any_sync() }
                            }}
                        </div>
                    </details>
                }
            }).collect_view()}
        </div>
    }
    .into_any_sync()
}
