//! The desk's pages (Leptos components rendered on the server, then hydrated in the browser)
//! and the data shapes the server and the browser share.
//!
//! Build with exactly one of the features `ssr` (server) or `hydrate` (WASM bundle).

pub mod dto;
mod layout;
pub mod net;
mod pages;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, Link, Meta, MetaTags, Stylesheet};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{path, SsrMode};

/// The `Content-Security-Policy` of every HTML page, for the response's `nonce`: scripts only
/// from this origin or carrying the nonce (Leptos puts it on its hydration script), never
/// inline handlers, `javascript:` URLs, plugins, a foreign `<base>` or framing. A stranger's
/// markup that slipped past escaping still could not run.
pub fn content_security_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
         object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    )
}

/// Puts [`content_security_policy`] with this response's nonce on the response (on the
/// server; the browser never renders the shell).
fn set_security_policy() {
    #[cfg(feature = "ssr")]
    if let (Some(nonce), Some(response)) = (
        leptos::nonce::use_nonce(),
        use_context::<leptos_axum::ResponseOptions>(),
    ) {
        if let Ok(value) = http::HeaderValue::from_str(&content_security_policy(&nonce)) {
            response.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
        }
    }
}

/// The HTML document around the app; the server renders it for every page.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    set_security_policy();
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The same document without the hydration scripts: the answer to a form post, which must
/// work without JavaScript and must not hydrate against state the browser does not hold.
pub fn shell_without_scripts(_options: LeptosOptions) -> impl IntoView {
    set_security_policy();
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The application: routes and the frame every page shares.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // Marks the document once the WebAssembly is live, so browser tests (and curious humans
    // in devtools) can tell a hydrated page from server-rendered HTML.
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(root) = document().document_element() {
            let _ = root.set_attribute("data-hydrated", "true");
        }
    });
    view! {
        <Stylesheet id="leptos" href="/pkg/r2r.css"/>
        <Link rel="icon" href="/favicon.svg" type_="image/svg+xml"/>
        <Meta name="description" content="Reporter-to-Release: a bug desk where the reporter has the last word."/>
        <Router>
            <layout::Frame>
                <Routes fallback=pages::NotFound>
                    <Route path=path!("/") view=pages::Home/>
                    <Route path=path!("/shoplite") view=pages::ShopLite/>
                    <Route path=path!("/report") view=pages::Report ssr=SsrMode::InOrder/>
                    <Route path=path!("/track") view=pages::Track/>
                    <Route path=path!("/demo") view=pages::Demo/>
                    <Route path=path!("/desk") view=pages::Desk/>
                    <Route path=path!("/desk/crew") view=pages::Desk/>
                    <Route path=path!("/desk/sign-in") view=pages::Desk/>
                    <Route path=path!("/desk/bugs/:id") view=pages::Desk/>
                    <Route path=path!("/desk/bugs/:id/act") view=pages::Desk/>
                    <Route path=path!("/desk/reports/:id/act") view=pages::Desk/>
                    <Route path=path!("/desk/owners") view=pages::Desk/>
                    <Route path=path!("/desk/owners/act") view=pages::Desk/>
                    <Route path=path!("/desk/invite") view=pages::Desk/>
                </Routes>
            </layout::Frame>
        </Router>
    }
}
