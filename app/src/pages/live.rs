//! Hearing of changes: the desk's server-sent events (`changed`), for pages that then fetch
//! their data again through their server function.

/// Calls `changed` on every `changed` event of the stream at `url`, for as long as the
/// current reactive owner lives (the stream is closed when it goes).
#[cfg(feature = "hydrate")]
pub(crate) fn on_change(url: &str, mut changed: impl FnMut() + 'static) {
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
    let callback = Closure::<dyn FnMut(web_sys::Event)>::new(move |_event| changed());
    let _ = source.add_event_listener_with_callback("changed", callback.as_ref().unchecked_ref());
    let held = send_wrapper::SendWrapper::new((source, callback));
    on_cleanup(move || held.0.close());
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
