//! The desk's sandbox when its runs go to worker hosts (`R2R_SANDBOX_RUNNER=workers`): each
//! run becomes a job on the database's queue (`store::sandbox_jobs`), a `r2r sandbox worker`
//! claims it, runs it in its own sandbox and reports the outcome, which the waiting desk reads
//! back as if it had run the job itself. The hosts that run untrusted code then need no
//! database access and no desk credential: only their own worker token.
//!
//! Nothing waits silently: a job no worker claims within the claim timeout is given up with
//! the reason (start a worker), and so is one whose workers all stopped answering.
//!
//! A worker host is believed only so far: every outcome names the worker that ran it (from
//! its token, never from what it says of itself), and a test run (a reproduction, a baseline,
//! a fix candidate's suite) is run again by a second worker that never saw the first answer
//! before it moves anything (`R2R_SANDBOX_CONFIRM`: `auto`, the default, confirms whenever two
//! workers hold tokens). When the two disagree the desk believes neither and says so.

use crate::clock::now_ms;
pub use crate::config::Confirm;
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
    confirm: Confirm,
}

impl QueuedSandbox {
    /// Over `store`'s queue; a job nobody claims within `claim_timeout` is given up; test
    /// runs are confirmed by a second worker as `confirm` says.
    pub fn new(store: Store, claim_timeout: Duration, confirm: Confirm) -> Self {
        QueuedSandbox {
            store,
            claim_timeout,
            confirm,
        }
    }

    /// Whether this test run needs a second worker's run.
    async fn confirming(&self) -> bool {
        match self.confirm {
            Confirm::Never => false,
            Confirm::Always => true,
            // Unknown reads as two: a confirmation that cannot be had says so, an
            // unconfirmed run that should have been confirmed says nothing.
            Confirm::Auto => self
                .store
                .active_sandbox_workers()
                .await
                .map_or(true, |workers| workers >= 2),
        }
    }

    /// Whether `worker` still holds a valid token (an owner may have distrusted it while
    /// its outcome waited to be read or confirmed).
    async fn still_trusted(&self, worker: &str) -> Result<(), SandboxError> {
        match self.store.sandbox_worker_active(worker).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(failed(format!(
                "worker {worker} lost its token (revoked or distrusted) before its outcome was used: the desk does not use it"
            ))),
            Err(error) => Err(failed(format!(
                "cannot tell whether worker {worker} is still trusted: {error}"
            ))),
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
        drop(packed);
        let purpose = if job.output.is_some() {
            "build"
        } else {
            "test"
        };
        let (mut first, worker) = self.run_once(job, purpose, &spec, None).await?;
        self.still_trusted(&worker).await?;
        if purpose == "build" || !self.confirming().await {
            first.workers = vec![worker];
            return Ok(first);
        }
        let (second, confirmer) = self.run_once(job, purpose, &spec, Some(&worker)).await?;
        self.still_trusted(&worker).await?;
        self.still_trusted(&confirmer).await?;
        if let Some(difference) = sandbox::confirm::disagreement(&first, &second) {
            tracing::warn!(%worker, %confirmer, %difference, "two workers disagree about one sandbox job");
            return Err(failed(format!(
                "worker {worker} and worker {confirmer} ran the same job and disagree ({difference}): the desk believes neither; an owner can distrust the one that lies (r2r sandbox distrust-worker --name NAME)"
            )));
        }
        first.workers = vec![worker, confirmer];
        first.confirmation = Some(Box::new(second));
        Ok(first)
    }
}

impl QueuedSandbox {
    /// One run of the encoded job through the queue, by any worker but `excluded`: its
    /// outcome and the worker that ran it.
    async fn run_once(
        &self,
        job: &SandboxJob,
        purpose: &str,
        spec: &str,
        excluded: Option<&str>,
    ) -> Result<(RunOutcome, String), SandboxError> {
        let id = new_job_id();
        self.store
            .enqueue_sandbox_job(&id, purpose, spec, excluded, now_ms())
            .await
            .map_err(|e| failed(format!("cannot queue the job: {e}")))?;
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
                    let outcome = tokio::task::spawn_blocking(move || outcome.into_outcome(&job))
                        .await
                        .map_err(|e| failed(format!("reading the outcome stopped: {e}")))??;
                    return Ok((outcome, worker));
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
                        .map(|queue| {
                            queue.iter().any(|(_, worker, _)| {
                                worker.is_some() && worker.as_deref() != excluded
                            })
                        })
                        .unwrap_or(false);
                    if busy && started.elapsed() < bound {
                        continue;
                    }
                    abandoned.store = None;
                    let reason = match excluded {
                        None => format!(
                            "no sandbox worker claimed the job within {} s (R2R_SANDBOX_CLAIM_TIMEOUT) and none is at work: start `r2r sandbox worker` on a host with a sandbox",
                            self.claim_timeout.as_secs()
                        ),
                        Some(first) => format!(
                            "worker {first}'s run waits for a second worker to confirm it, and none claimed the confirming run within {} s (R2R_SANDBOX_CLAIM_TIMEOUT): start `r2r sandbox worker` on another host, or set R2R_SANDBOX_CONFIRM=never to take one worker's word",
                            self.claim_timeout.as_secs()
                        ),
                    };
                    return give_up(SandboxError::Unavailable {
                        backend: "worker",
                        reason,
                    })
                    .await;
                }
                SandboxJobStatus::Waiting {
                    worker: Some(worker),
                    claims,
                    leased_until,
                    lapsed,
                } if claims >= MAX_SANDBOX_CLAIMS
                    && leased_until.is_some_and(|until| until <= now) =>
                {
                    abandoned.store = None;
                    let mut involved = lapsed;
                    involved.push(worker);
                    return give_up(failed(format!(
                        "the job was claimed {claims} times and each worker stopped answering: {}",
                        involved.join(", ")
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
