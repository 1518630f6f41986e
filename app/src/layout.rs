//! The frame around every page: skip link, header with navigation, footer.

use leptos::prelude::*;
use leptos_router::components::A;

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
                    <li><a href="/api/health">"Health"</a></li>
                </ul>
            </nav>
        </header>
        <main id="main" tabindex="-1">{children()}</main>
        <footer class="site-footer">
            <p>"Agents draft. People decide. Evidence moves the state. The reporter has the last word."</p>
        </footer>
    }
}
