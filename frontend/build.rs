//! Link flags for the WebAssembly build.
//!
//! `cargo leptos --split` cuts the linked module into the main module and one piece per page,
//! and each piece must carry the read-only data its code uses. When wasm-ld merges the data
//! segments into one, identical strings from different pages share an address and the
//! splitter (wasm_split_cli_support 0.2, cargo-leptos#679) can end up writing that segment
//! out longer than it was; it then gives up and puts every page's data into the main module,
//! which every visitor downloads (+43 KB gzipped, and which way it falls changed with
//! unrelated edits). Keeping the segments apart lets each page's data travel with its page.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg-cdylib=--no-merge-data-segments");
    }
}
