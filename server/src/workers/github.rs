//! The GitHub worker: leases queued webhook events and applies each through the engine
//! ([`crate::service::github_events::apply_event`]), with the evidence fetched from GitHub
//! first; an event GitHub could not be asked about is retried with backoff.

use crate::clock::now_ms;
use crate::config::GitHubConfig;
use crate::projects::Projects;
use crate::service::github_events::*;
use domain::workflow::Consumer;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use store::Store;

/// The longest an idle worker waits before looking for an event whose retry time came.
const RETRY_LOOK: Duration = Duration::from_millis(500);

/// Claims queued GitHub events and applies them, until the process ends.
pub async fn run_worker(store: Store, config: GitHubConfig, projects: Arc<Projects>) {
    // Deliveries filed before the desk kept body hashes: record theirs, so a captured old
    // body is recognised too.
    match store
        .backfill_webhook_deliveries(SOURCE, "github:", body_sha256)
        .await
    {
        Ok(0) => {}
        Ok(recorded) => tracing::info!(
            recorded,
            "github: recorded the bodies of earlier deliveries"
        ),
        Err(error) => tracing::warn!(%error, "github: could not record earlier deliveries' bodies"),
    }
    // Woken the moment an event is queued (by this server or, on PostgreSQL, any other);
    // an event whose retry time came is picked up within `RETRY_LOOK`.
    let mut woken = store.work_added();
    loop {
        let pause = match work_once(&store, &config, &projects).await {
            Ok(0) => RETRY_LOOK,
            Ok(_) => continue,
            Err(error) => {
                tracing::warn!(%error, "github worker: will retry");
                RETRY_LOOK
            }
        };
        crate::web::wait::for_work(&mut woken, tokio::time::Instant::now() + pause).await;
    }
}

/// One pass over the queue; returns how many events were applied.
pub async fn work_once(
    store: &Store,
    config: &GitHubConfig,
    projects: &Projects,
) -> Result<usize, store::StoreError> {
    let jobs = store
        .claim_jobs(Consumer::Forge.as_str(), 10, now_ms())
        .await?;
    if jobs.is_empty() {
        return Ok(0);
    }
    let scope = projects.fresh(store).await;
    let mut done = 0;
    for job in jobs {
        let body = job.payload.get("body").map_or("", String::as_str);
        let body_hash = body_sha256(body.as_bytes());
        let payload: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let repository = payload["repository"]["full_name"]
            .as_str()
            .unwrap_or_default();
        let forge = config.forge(repository);
        let event = job.payload.get("event").map_or("", String::as_str);
        match apply_event(store, &forge, config, &scope, event, &payload).await {
            Ok(outcome) => {
                tracing::info!(key = %job.key, changed = outcome.changed.len(), refused = outcome.refused.len(), "github event applied");
                let recorded = json!({
                    "changed": outcome.changed,
                    "refused": outcome.refused,
                    "notes": outcome.notes,
                });
                store
                    .record_webhook_outcome(
                        SOURCE,
                        &body_hash,
                        &recorded.to_string(),
                        Some(now_ms()),
                    )
                    .await?;
                store.ack_job(&job.key, &job.lease_id, now_ms()).await?;
                done += 1;
            }
            Err(error) => {
                let error = error.to_string();
                tracing::warn!(key = %job.key, %error, "github event not applied yet; will retry");
                store
                    .record_webhook_outcome(
                        SOURCE,
                        &body_hash,
                        &json!({"not_applied_yet": error}).to_string(),
                        None,
                    )
                    .await?;
                store
                    .fail_job(&job.key, &job.lease_id, &error, now_ms())
                    .await?;
            }
        }
    }
    Ok(done)
}
