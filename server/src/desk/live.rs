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
/// about it, or, for the dashboard, every bug's version and the quarantine queue.
async fn fingerprint(state: &AppState, bug: Option<&str>) -> Option<String> {
    let doing = state.store.heartbeats().await.ok()?;
    match bug {
        Some(id) => {
            let stored = state.store.load_bug(id).await.ok()??;
            let busy: Vec<String> = doing
                .iter()
                .filter(|(_, _, detail)| detail.contains(id))
                .map(|(role, _, detail)| format!("{role}:{detail}"))
                .collect();
            Some(format!("{}|{}", stored.bug.version, busy.join(",")))
        }
        None => {
            // One indexed aggregate, not every bug: an idle stream stays cheap at any size.
            let (bugs, versions) = state.store.change_count().await.ok()?;
            // The queue's size and its newest entry (the size alone stops at the page's 50).
            let queue = state.store.quarantine_queue(50).await.ok()?;
            let newest = queue.first().map(|r| r.id.as_str()).unwrap_or_default();
            Some(format!("{bugs}|{versions}|{}|{newest}", queue.len()))
        }
    }
}

/// `GET /desk/live[?bug=ID]`: server-sent events. A `changed` event whenever what the page
/// shows changed (checked every second); the hydrated page then fetches its data again
/// through its server function. Owners only.
pub async fn live(
    State(state): State<AppState>,
    credential: Credential,
    Query(query): Query<LiveQuery>,
) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    if owner(&credential).is_none() {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let deadline = std::time::Instant::now() + LIVE_FOR;
    let first = fingerprint(&state, query.bug.as_deref()).await;
    let stream = futures_util::stream::unfold(
        (state, query.bug, first),
        move |(state, bug, mut last)| async move {
            loop {
                if std::time::Instant::now() >= deadline {
                    return None;
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                let now = fingerprint(&state, bug.as_deref()).await;
                if now.is_some() && now != last {
                    last = now.clone();
                    let event = Event::default()
                        .event("changed")
                        .data(now.unwrap_or_default());
                    return Some((Ok::<_, std::convert::Infallible>(event), (state, bug, last)));
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
