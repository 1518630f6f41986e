//! The desk's pages (Leptos components rendered on the server, then hydrated in the browser)
//! and the data shapes the server and the browser share.
//!
//! Build with exactly one of the features `ssr` (server) or `hydrate` (WASM bundle).

pub mod desk_fns;
pub mod diff;
pub mod dto;
mod erase;
mod layout;
pub mod net;
mod pages;
pub mod reporter_fns;
pub mod screen;

use erase::IntoAnySync;
use leptos::prelude::*;
use leptos_meta::{provide_meta_context, Link, Meta, MetaTags, Stylesheet};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{lazy_route, Lazy, LazyRoute};
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

/// A page loaded on its own: with `cargo leptos --split` each is a separate WebAssembly chunk
/// fetched the first time a visitor opens it, so a reporter never downloads the desk, and the
/// first load holds only the frame, the router and the home page.
macro_rules! lazy_page {
    ($route:ident, $page:path) => {
        #[derive(Debug)]
        struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                $route
            }

            fn view(_this: Self) -> AnyView {
                view! { <$page/> }.into_any_sync()
            }
        }
    };
}

lazy_page!(DashboardRoute, pages::DashboardPages);
lazy_page!(BugRoute, pages::BugPage);
lazy_page!(DeskRoute, pages::DeskPages);
lazy_page!(ReportRoute, pages::Report);
lazy_page!(TrackRoute, pages::Track);
lazy_page!(DemoRoute, pages::Demo);
lazy_page!(ShopLiteRoute, pages::ShopLite);

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
                    <Route path=path!("/shoplite") view={Lazy::<ShopLiteRoute>::new()}/>
                    <Route path=path!("/report") view={Lazy::<ReportRoute>::new()} ssr=SsrMode::InOrder/>
                    <Route path=path!("/track") view={Lazy::<TrackRoute>::new()}/>
                    <Route path=path!("/demo") view={Lazy::<DemoRoute>::new()}/>
                    <Route path=path!("/desk") view={Lazy::<DashboardRoute>::new()}/>
                    <Route path=path!("/desk/crew") view={Lazy::<DeskRoute>::new()}/>
                    <Route path=path!("/desk/sign-in") view={Lazy::<DeskRoute>::new()}/>
                    <Route path=path!("/desk/bugs/:id") view={Lazy::<BugRoute>::new()}/>
                    <Route path=path!("/desk/bugs/:id/confirm") view={Lazy::<DeskRoute>::new()}/>
                    <Route path=path!("/desk/reports/:id/confirm") view={Lazy::<DeskRoute>::new()}/>
                    <Route path=path!("/desk/owners") view={Lazy::<DeskRoute>::new()}/>
                    <Route path=path!("/desk/owners/confirm") view={Lazy::<DeskRoute>::new()}/>
                    <Route path=path!("/desk/invite") view={Lazy::<DeskRoute>::new()}/>
                </Routes>
            </layout::Frame>
        </Router>
    }
}
