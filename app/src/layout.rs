//! The frame around every page: skip link, header with navigation, footer.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

/// The document's title. Use this, never `leptos_meta::Title` directly: leptos_meta writes the
/// title's text into the server's HTML exactly as given, and a title can carry a stranger's
/// words (a bug's title), so the server escapes it here. In the browser the text goes to
/// `document.title`, which is never parsed as markup.
#[component]
pub fn PageTitle(#[prop(into)] text: String) -> impl IntoView {
    view! { <Title text=raw_text_content(text)/> }
}

/// Text for an element whose content the renderer writes into the server's HTML unescaped
/// (`<title>` through leptos_meta, `<textarea>` children through tachys): escaped on the
/// server, as it is in the browser (where it becomes a text node, never markup).
pub fn raw_text_content(text: String) -> String {
    if cfg!(feature = "ssr") {
        escape_text(&text)
    } else {
        text
    }
}

/// Escapes text for an HTML text or RCDATA context (`<title>`, `<textarea>`, element content).
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Header, main landmark and footer.
#[component]
pub fn Frame(children: Children) -> impl IntoView {
    view! {
        <a class="skip-link" href="#main">"Skip to content"</a>
        <header class="site-header">
            <a class="brand" href="/">
                <span class="brand-mark" aria-hidden="true">"R→R"</span>
                <span>"Reporter-to-Release"</span>
            </a>
            <nav aria-label="Main">
                <ul>
                    <li><A href="/">"Home"</A></li>
                    <li><A href="/report">"Report a bug"</A></li>
                    <li><A href="/track">"Your report"</A></li>
                    <li><A href="/shoplite">"ShopLite demo"</A></li>
                    <li><A href="/demo">"Demo"</A></li>
                    <li><a href="/desk" rel="external">"Desk"</a></li>
                </ul>
            </nav>
        </header>
        <main id="main" tabindex="-1">{children()}</main>
        <footer class="site-footer">
            <p>"Agents draft. People decide. Evidence moves the state. The reporter has the last word."</p>
        </footer>
    }
}
