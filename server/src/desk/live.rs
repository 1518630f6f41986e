//! `/desk/live`: server-sent events telling an open desk page that what it shows changed.

use super::*;
// ---------------------------------------------------------------------------------------------
// Live updates

/// How long one live connection lasts before the browser reconnects (EventSource does).
const LIVE_FOR: std::time::Duration = std::time::Duration::from_secs(600);

#[derive(Debug, Deserialize)]
pub struct LiveQuery {
    bug: Option<String>,
}

/// What a page shows changes when this changes: a bug's version and what the crew is doing
/// about it, or, for the dashboard, everything the desk's pages show.
async fn fingerprint(state: &AppState, bug: Option<&str>) -> Option<String> {
    tracing::debug!(bug = ?bug, "a live stream looks at its page");
    match bug {
        Some(id) => {
            let doing = state.store.heartbeats().await.ok()?;
            let stored = state.store.load_bug(id).await.ok()??;
            let busy: Vec<String> = doing
                .iter()
                .filter(|(_, _, detail)| detail.contains(id))
                .map(|(role, _, detail)| format!("{role}:{detail}"))
                .collect();
            Some(format!("{}|{}", stored.bug.version, busy.join(",")))
        }
        None => crate::changes::fingerprint(&state.store).await,
    }
}

/// `GET /desk/live[?bug=ID]`: server-sent events. A `changed` event whenever what the page
/// shows changed; the hydrated page then fetches its data again through its server function.
/// The stream looks at its page only when the server's change counter moves
/// ([`crate::changes`]): idle, it costs nothing. Owners only.
pub async fn live(
    State(state): State<AppState>,
    credential: Credential,
    Query(query): Query<LiveQuery>,
) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    if owner(&credential).is_none() {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let deadline = tokio::time::Instant::now() + LIVE_FOR;
    // Subscribed before the first look: a change made meanwhile still wakes the stream.
    let woken = state.changes.subscribe();
    let first = fingerprint(&state, query.bug.as_deref()).await;
    let stream = futures_util::stream::unfold(
        (state, query.bug, first, woken),
        move |(state, bug, mut last, mut woken)| async move {
            loop {
                tokio::select! {
                    moved = woken.changed() => {
                        if moved.is_err() {
                            return None;
                        }
                    }
                    () = tokio::time::sleep_until(deadline) => return None,
                }
                let now = fingerprint(&state, bug.as_deref()).await;
                if now.is_some() && now != last {
                    last = now.clone();
                    let event = Event::default()
                        .event("changed")
                        .data(now.unwrap_or_default());
                    return Some((
                        Ok::<_, std::convert::Infallible>(event),
                        (state, bug, last, woken),
                    ));
                }
            }
        },
    );
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    response
}
