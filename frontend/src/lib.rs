//! The browser entry point. cargo-leptos builds this crate to WebAssembly and the page's
//! hydration script calls [`hydrate`], which attaches the reactive app to the server's HTML.

/// Attaches the app to the server-rendered page.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_lazy(app::App);
}
