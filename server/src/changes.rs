//! What wakes the desk's open live streams (`/desk/live`): one counter per server, moved when
//! something a desk page shows changed. Every stream waits on it and looks at its own page
//! only when it moves, so an idle stream costs nothing, however many bugs the desk holds.
//!
//! On PostgreSQL the counter moves when the database says so (triggers `NOTIFY` at commit,
//! whoever wrote: this server, another server on the same database, a command-line tool).
//! On SQLite, which has no channel between processes, this server compares a fingerprint of
//! what the pages show once a second — one look per server, not per stream, and none while
//! no page is open.

use std::sync::Arc;
use std::time::Duration;
use store::Store;
use tokio::sync::watch;

/// How often SQLite's fingerprint is compared while a page is open.
const POLL: Duration = Duration::from_secs(1);

/// The server's change counter.
#[derive(Clone, Debug)]
pub struct Changes {
    counter: Arc<watch::Sender<u64>>,
}

impl Default for Changes {
    fn default() -> Self {
        Changes {
            counter: Arc::new(watch::channel(0).0),
        }
    }
}

impl Changes {
    /// A receiver that sees every later change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.counter.subscribe()
    }

    /// Something a page shows changed.
    pub fn bump(&self) {
        self.counter.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Whether any page is open.
    fn watched(&self) -> bool {
        self.counter.receiver_count() > 0
    }
}

/// What every desk page's content depends on: bugs and their versions, the quarantine queue
/// and what each crew role says it is doing. Equal fingerprints, nothing shown changed.
pub async fn fingerprint(store: &Store) -> Option<String> {
    let (bugs, versions) = store.change_count().await.ok()?;
    let (quarantined, handled) = store.quarantine_counts().await.ok()?;
    let doing: Vec<String> = store
        .heartbeats()
        .await
        .ok()?
        .into_iter()
        .map(|(role, _, detail)| format!("{role}:{detail}"))
        .collect();
    Some(format!(
        "{bugs}|{versions}|{quarantined}|{handled}|{}",
        doing.join(",")
    ))
}

/// Moves `changes` whenever the store changes, until the server stops.
pub async fn run(store: Store, changes: Changes) {
    match store.change_listener().await {
        Ok(Some(listener)) => listen(listener, changes).await,
        Ok(None) => poll(store, changes).await,
        Err(error) => {
            tracing::warn!(%error, "cannot listen for the database's change notices; comparing fingerprints each second instead");
            poll(store, changes).await;
        }
    }
}

async fn listen(mut listener: store::ChangeListener, changes: Changes) {
    tracing::info!("live desk pages are woken by the database's change notices");
    loop {
        match listener.next().await {
            Ok(true) => changes.bump(),
            // Notices may have gone unheard while the connection was down: look again.
            Ok(false) => changes.bump(),
            Err(error) => {
                tracing::warn!(%error, "the database's change notices stopped; trying again in a second");
                tokio::time::sleep(POLL).await;
                changes.bump();
            }
        }
    }
}

async fn poll(store: Store, changes: Changes) {
    let mut last = None;
    loop {
        tokio::time::sleep(POLL).await;
        if !changes.watched() {
            // Nobody looks: the next page to open compares from scratch.
            last = None;
            continue;
        }
        // The first look after a page opened wakes it too: it compares with what it has.
        let now = fingerprint(&store).await;
        if now.is_some() && now != last {
            changes.bump();
            last = now;
        }
    }
}
