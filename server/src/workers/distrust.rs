//! What a distrusted worker measured is measured again: an owner who stops trusting a worker
//! host (`r2r sandbox distrust-worker`) ends its token at once, and this sweep sends every bug
//! whose standing rests on evidence that worker measured back to the start of the loop,
//! through the engine's `DistrustMeasurement` command, so that the crew measures it again on
//! runners the desk still trusts. Each bug is dealt with once per distrusted worker.

use domain::workflow::{decide, Actor, Command, Evidence, Millis, Policy};
use std::time::Duration;
use store::Store;

/// How often the server looks for bugs a distrusted worker measured.
pub const INTERVAL: Duration = Duration::from_secs(5);

/// Sends back every bug measured by a distrusted worker and not dealt with yet; returns how
/// many bugs changed.
pub async fn settle(
    store: &Store,
    policy: &Policy,
    now: Millis,
) -> Result<usize, store::ApplyError> {
    let mut changed = 0;
    for worker in store.distrusted_sandbox_workers().await? {
        for bug in store.bugs_measured_by(&worker).await? {
            let command = Command::DistrustMeasurement {
                worker: worker.clone(),
            };
            let applied = store
                .apply(&bug, now, |b| {
                    decide(b, &command, &Actor::Desk, &Evidence::default(), policy, now)
                })
                .await?;
            // Applied first, settled next: a crash between the two applies it again, which
            // finds the bug already started over.
            store.settle_distrust(&bug, &worker, now).await?;
            if applied.changed {
                tracing::warn!(bug = %bug, %worker, "measured by a distrusted worker: measured again");
                changed += 1;
            }
        }
    }
    Ok(changed)
}

/// Runs [`settle`] every [`INTERVAL`] until the process ends.
pub async fn run(store: Store, policy: Policy) {
    let mut ticker = tokio::time::interval(INTERVAL);
    loop {
        ticker.tick().await;
        if let Err(error) = settle(&store, &policy, crate::clock::now_ms()).await {
            tracing::warn!(%error, "measuring a distrusted worker's bugs again failed; will retry");
        }
    }
}
