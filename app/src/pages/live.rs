//! Hearing of changes: the desk's server-sent events (`changed`), for pages that then fetch
//! their data again through their server function.

/// Calls `changed` on every `changed` event of the stream at `url` and `opened` each time the
/// stream (re)opens, for as long as the current reactive owner lives (the stream is closed
/// when it goes). A change made between the page's render and the stream's opening, or while
/// it was reconnecting, is never sent as an event: `opened` is where a page catches up.
#[cfg(feature = "hydrate")]
pub(crate) fn on_change(
    url: &str,
    mut changed: impl FnMut() + 'static,
    mut opened: impl FnMut() + 'static,
) {
    use leptos::prelude::on_cleanup;
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;
    let Ok(source) = web_sys::EventSource::new_with_event_source_init_dict(url, &{
        let init = web_sys::EventSourceInit::new();
        init.set_with_credentials(false);
        init
    }) else {
        return;
    };
    let callback =
        Closure::<dyn FnMut(web_sys::Event)>::new(move |_event: web_sys::Event| changed());
    let on_open = Closure::<dyn FnMut(web_sys::Event)>::new(move |_event: web_sys::Event| opened());
    let _ = source.add_event_listener_with_callback("changed", callback.as_ref().unchecked_ref());
    let _ = source.add_event_listener_with_callback("open", on_open.as_ref().unchecked_ref());
    let held = send_wrapper::SendWrapper::new((source, callback, on_open));
    on_cleanup(move || held.0.close());
}

/// What the status line says while fresh data is on its way after a change.
const UPDATING: &str = "Updating…";
/// What it says once the page listens for changes (and has caught up with any it missed).
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
const LIVE: &str = "Live: this page updates itself when anything changes.";

/// The polite status line of a page that redraws itself: once hydrated, each `changed` event
/// of `events` (a `/desk/live` address) and, with `every`, each tick calls `refetch`; the line
/// says "Updating…" and, once `loaded` says the fresh data arrived, when it was updated.
pub(crate) fn status_line(
    events: impl Fn() -> String + 'static,
    every: Option<std::time::Duration>,
    refetch: impl Fn() + Clone + 'static,
    loaded: impl Fn() -> bool + 'static,
) -> leptos::prelude::ReadSignal<String> {
    use leptos::prelude::*;
    let (status, set_status) = signal(String::new());
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        {
            let again = refetch.clone();
            let catch_up = refetch.clone();
            on_change(
                &events(),
                move || {
                    set_status.set(UPDATING.to_owned());
                    again();
                },
                move || {
                    set_status.set(LIVE.to_owned());
                    catch_up();
                },
            );
            if let Some(every) = every {
                let again = refetch.clone();
                if let Ok(handle) = set_interval_with_handle(again, every) {
                    on_cleanup(move || handle.clear());
                }
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (&events, every, &refetch);
    });
    Effect::new(move |_| {
        if loaded() && status.get_untracked() == UPDATING {
            set_status.set(format!("Updated {}.", clock_now()));
        }
    });
    status
}

/// The browser's local time of day (`14:03:07`), or nothing on the server.
pub(crate) fn clock_now() -> String {
    #[cfg(feature = "hydrate")]
    {
        let date = js_sys::Date::new_0();
        format!(
            "{:02}:{:02}:{:02}",
            date.get_hours(),
            date.get_minutes(),
            date.get_seconds()
        )
    }
    #[cfg(not(feature = "hydrate"))]
    String::new()
}
