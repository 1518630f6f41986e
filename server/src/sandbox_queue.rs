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
        let give_up = |reason: SandboxError| async {
            if let Err(error) = self.store.delete_sandbox_job(&id).await {
                tracing::warn!(job = %id, %error, "cannot remove a given-up sandbox job");
            }
            Err(reason)
        };
        loop {
            tokio::time::sleep(POLL).await;
            let status = match self.store.sandbox_job_status(&id).await {
                Ok(status) => status,
                Err(error) if started.elapsed() < bound => {
                    tracing::warn!(job = %id, %error, "cannot read a sandbox job's status; retrying");
                    continue;
                }
                Err(error) => {
                    return give_up(failed(format!("cannot read the job: {error}"))).await
                }
            };
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
                SandboxJobStatus::Waiting { worker: None, .. }
                    if started.elapsed() >= self.claim_timeout =>
                {
                    return give_up(SandboxError::Unavailable {
                        backend: "worker",
                        reason: format!(
                            "no sandbox worker claimed the job within {} s (R2R_SANDBOX_CLAIM_TIMEOUT): start `r2r sandbox worker` on a host with a sandbox",
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
                    && leased_until.is_some_and(|until| until <= now_ms()) =>
                {
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
