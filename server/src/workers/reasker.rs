//! The desk's own automation for the two questions: a question that expired unanswered
//! (23 hours) is replaced by a fresh one with a new request id, through the engine's
//! `ReaskExpired` command.

use domain::workflow::{decide, Actor, Command, Evidence, Millis, Policy};
use domain::BugState;
use std::time::Duration;
use store::Store;

/// How often the server looks for expired questions.
pub const INTERVAL: Duration = Duration::from_secs(60);

/// Re-asks every expired question at `now`; returns how many bugs changed.
pub async fn reask_expired(
    store: &Store,
    policy: &Policy,
    now: Millis,
) -> Result<usize, store::ApplyError> {
    let mut changed = 0;
    for bug in store
        .bug_ids_in_states(&[BugState::AwaitingReporter, BugState::Deployed])
        .await?
    {
        let applied = store
            .apply(&bug, now, |b| {
                decide(
                    b,
                    &Command::ReaskExpired,
                    &Actor::Desk,
                    &Evidence::default(),
                    policy,
                    now,
                )
            })
            .await?;
        if applied.changed {
            tracing::info!(bug = %bug, "expired questions asked again");
            changed += 1;
        }
    }
    Ok(changed)
}

/// Runs [`reask_expired`] every [`INTERVAL`] until the process ends.
pub async fn run(store: Store, policy: Policy) {
    let mut ticker = tokio::time::interval(INTERVAL);
    loop {
        ticker.tick().await;
        if let Err(error) = reask_expired(&store, &policy, crate::clock::now_ms()).await {
            tracing::warn!(%error, "re-asking expired questions failed; will retry");
        }
    }
}
