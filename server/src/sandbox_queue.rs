//! The desk's sandbox when its runs go to worker hosts (`R2R_SANDBOX_RUNNER=workers`): each
//! run becomes a job on the database's queue (`store::sandbox_jobs`), a `r2r sandbox worker`
//! claims it, runs it in its own sandbox and reports the outcome, which the waiting desk reads
//! back as if it had run the job itself. The hosts that run untrusted code then need no
//! database access and no desk credential: only their own worker token.
//!
//! Nothing waits silently: a job no worker claims within the claim timeout is given up with
//! the reason (start a worker), and so is one whose workers all stopped answering.

use crate::clock::now_ms;
use async_trait::async_trait;
use sandbox::wire::{WireJob, WireOutcome};
use sandbox::{RunOutcome, Sandbox, SandboxError, SandboxJob};
use std::time::{Duration, Instant};
use store::sandbox_jobs::{SandboxJobStatus, MAX_SANDBOX_CLAIMS};
use store::Store;

/// How often the waiting desk looks at its job.
const POLL: Duration = Duration::from_millis(100);
/// Slack over a job's own deadline per claim (unpacking, reporting, a lease running out).
const SLACK: Duration = Duration::from_secs(60);

/// Removes a job whose waiter went away before it was over (the caller's request dropped).
struct Abandoned {
    store: Option<Store>,
    id: String,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        if let Some(store) = self.store.take() {
            let id = std::mem::take(&mut self.id);
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    if let Err(error) = store.delete_sandbox_job(&id).await {
                        tracing::warn!(job = %id, %error, "cannot remove an abandoned sandbox job");
                    } else {
                        tracing::info!(job = %id, "sandbox job removed: nobody waits for it any more");
                    }
                });
            }
        }
    }
}

/// Runs every job through the queue.
#[derive(Debug)]
pub struct QueuedSandbox {
    store: Store,
    claim_timeout: Duration,
}

impl QueuedSandbox {
    /// Over `store`'s queue; a job nobody claims within `claim_timeout` is given up.
    pub fn new(store: Store, claim_timeout: Duration) -> Self {
        QueuedSandbox {
            store,
            claim_timeout,
        }
    }
}

fn failed(reason: String) -> SandboxError {
    SandboxError::Failed {
        backend: "worker",
        reason,
    }
}

fn new_job_id() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 12];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("sbx-{}", hex::encode(bytes))
}

#[async_trait]
impl Sandbox for QueuedSandbox {
    fn backend(&self) -> &'static str {
        "worker"
    }

    async fn run(&self, job: &SandboxJob) -> Result<RunOutcome, SandboxError> {
        let packed = {
            let job = job.clone();
            tokio::task::spawn_blocking(move || WireJob::pack(&job))
                .await
                .map_err(|e| failed(format!("packing the job stopped: {e}")))??
        };
        let spec = serde_json::to_string(&packed).map_err(|e| failed(e.to_string()))?;
        let purpose = if job.output.is_some() {
            "build"
        } else {
            "test"
        };
        let id = new_job_id();
        self.store
            .enqueue_sandbox_job(&id, purpose, &spec, now_ms())
            .await
            .map_err(|e| failed(format!("cannot queue the job: {e}")))?;
        drop(spec);
        let started = Instant::now();
        let bound = self.claim_timeout + (job.deadline + SLACK) * MAX_SANDBOX_CLAIMS;
        // If this wait is dropped (the caller went away), the job goes with it: nobody would
        // read its outcome.
        let mut abandoned = Abandoned {
            store: Some(self.store.clone()),
            id: id.clone(),
        };
        let give_up = |reason: SandboxError| async {
            if let Err(error) = self.store.delete_sandbox_job(&id).await {
                tracing::warn!(job = %id, %error, "cannot remove a given-up sandbox job");
            }
            Err(reason)
        };
        // Since when no worker has held the job (queued, or its last lease ran out).
        let mut unheld_since = Some(Instant::now());
        loop {
            tokio::time::sleep(POLL).await;
            let status = match self.store.sandbox_job_status(&id).await {
                Ok(status) => status,
                Err(error) if started.elapsed() < bound => {
                    tracing::warn!(job = %id, %error, "cannot read a sandbox job's status; retrying");
                    continue;
                }
                Err(error) => {
                    abandoned.store = None;
                    return give_up(failed(format!("cannot read the job: {error}"))).await;
                }
            };
            let now = now_ms();
            if let SandboxJobStatus::Waiting {
                worker,
                leased_until,
                ..
            } = &status
            {
                let held = worker.is_some() && leased_until.is_some_and(|until| until > now);
                unheld_since = match (held, unheld_since) {
                    (true, _) => None,
                    (false, None) => Some(Instant::now()),
                    (false, since) => since,
                };
            }
            if matches!(
                status,
                SandboxJobStatus::Finished { .. } | SandboxJobStatus::Missing
            ) || started.elapsed() >= bound
            {
                abandoned.store = None;
            }
            match status {
                SandboxJobStatus::Finished { worker, outcome } => {
                    if let Err(error) = self.store.delete_sandbox_job(&id).await {
                        tracing::warn!(job = %id, %error, "cannot remove a finished sandbox job");
                    }
                    let outcome: WireOutcome = serde_json::from_str(&outcome).map_err(|e| {
                        failed(format!(
                            "worker {worker} sent an outcome that does not read: {e}"
                        ))
                    })?;
                    tracing::info!(job = %id, %worker, "sandbox job came back");
                    let job = job.clone();
                    return tokio::task::spawn_blocking(move || outcome.into_outcome(&job))
                        .await
                        .map_err(|e| failed(format!("reading the outcome stopped: {e}")))?;
                }
                SandboxJobStatus::Missing => {
                    return Err(failed("the job left the queue before it finished".into()))
                }
                SandboxJobStatus::Waiting { .. }
                    if unheld_since.is_some_and(|since| since.elapsed() >= self.claim_timeout) =>
                {
                    // Workers busy with other jobs will come to this one: wait on (within the
                    // bound) while any job is held; give up only when no worker is at work.
                    let busy = self
                        .store
                        .sandbox_queue()
                        .await
                        .map(|queue| queue.iter().any(|(_, worker, _)| worker.is_some()))
                        .unwrap_or(false);
                    if busy && started.elapsed() < bound {
                        continue;
                    }
                    abandoned.store = None;
                    return give_up(SandboxError::Unavailable {
                        backend: "worker",
                        reason: format!(
                            "no sandbox worker claimed the job within {} s (R2R_SANDBOX_CLAIM_TIMEOUT) and none is at work: start `r2r sandbox worker` on a host with a sandbox",
                            self.claim_timeout.as_secs()
                        ),
                    })
                    .await;
                }
                SandboxJobStatus::Waiting {
                    worker: Some(worker),
                    claims,
                    leased_until,
                } if claims >= MAX_SANDBOX_CLAIMS
                    && leased_until.is_some_and(|until| until <= now) =>
                {
                    abandoned.store = None;
                    return give_up(failed(format!(
                        "the job was claimed {claims} times and each worker stopped answering (last: {worker})"
                    )))
                    .await;
                }
                SandboxJobStatus::Waiting { .. } if started.elapsed() >= bound => {
                    return give_up(failed(format!(
                        "the job did not finish within {} s",
                        bound.as_secs()
                    )))
                    .await;
                }
                SandboxJobStatus::Waiting { .. } => {}
            }
        }
    }
}
