//! One module a page.

mod demo;
mod desk;
mod home;
mod not_found;
mod report;
mod shoplite;
mod track;

pub use self::shoplite::ShopLite;
pub use demo::Demo;
pub use desk::Desk;
pub use home::Home;
pub use not_found::NotFound;
pub use report::Report;
pub use track::Track;

use leptos::prelude::*;

/// A signal that turns true once the page is hydrated: effects never run on the server, so
/// anything that depends on it works only where the WebAssembly is live.
pub(crate) fn hydrated_signal() -> ReadSignal<bool> {
    let (hydrated, set_hydrated) = signal(false);
    Effect::new(move |_| set_hydrated.set(true));
    hydrated
}
