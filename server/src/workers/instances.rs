//! This server's heartbeat among the servers on one database: its instance row is renewed
//! every [`BEAT_EVERY`], so that leaderships it holds stay with it while it lives and pass to
//! another server within seconds once it stops.

use crate::web::ServerSeat;
use std::sync::Arc;
use std::time::Duration;
use store::leaders::Instance;
use store::Store;

/// How often this server beats.
pub const BEAT_EVERY: Duration = Duration::from_secs(2);
/// An instance silent this long is forgotten (its row; what it held passed on long before).
const FORGET_AFTER_MS: i64 = 60 * 60 * 1000;

/// Beats until the server stops.
pub async fn run(store: Store, seat: Arc<ServerSeat>) {
    let instance = Instance {
        id: seat.id.clone(),
        host: crate::service::leadership::this_host(),
        pid: i64::from(std::process::id()),
        address: seat.address.clone(),
        started_at: seat.started_at,
        beat_at: seat.started_at,
    };
    loop {
        let now = crate::clock::now_ms();
        if let Err(error) = store
            .beat_instance(&instance, now, now - FORGET_AFTER_MS)
            .await
        {
            tracing::warn!(%error, "this server's heartbeat did not reach the database");
        }
        tokio::time::sleep(BEAT_EVERY).await;
    }
}
