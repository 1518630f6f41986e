//! `r2r sandbox worker`: a host that runs the desk's sandbox jobs. It claims the oldest
//! waiting job over HTTP with its own token, unpacks it into a scratch folder only it can
//! enter, runs it in this host's sandbox (Docker or bubblewrap) with this host's toolchains,
//! renews the lease while it runs, and reports the outcome (a build's artifact with it).
//! It never holds a database URL or any credential of the desk but its own token.

use crate::routes::sandbox::{ClaimedJob, Finished, Renewal};
use sandbox::wire::WireOutcome;
use sandbox::Toolchains;
use std::process::ExitCode;
use std::time::Duration;

/// The longest wait between tries after the desk could not be reached.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Runs jobs until stopped (or `jobs` of them).
pub async fn work(
    desk: &str,
    token: &str,
    backend: sandbox::Backend,
    image: &str,
    idle: Duration,
    jobs: Option<u64>,
) -> anyhow::Result<ExitCode> {
    let sandbox = match sandbox::connect(backend, image).await {
        Ok(sandbox) => sandbox,
        Err(error) => {
            eprintln!("{error}");
            return Ok(ExitCode::from(2));
        }
    };
    let toolchains = Toolchains::detect();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()?;
    let base = desk.trim_end_matches('/').to_owned();
    let mut done = 0u64;
    let mut backoff = Duration::from_millis(250);
    tracing::info!(desk = %base, backend = sandbox.backend(), "sandbox worker started");
    while jobs.is_none_or(|n| done < n) {
        let claimed = client
            // The desk answers as soon as a job is queued, or after 20 s with none.
            .post(format!("{base}/api/v1/sandbox/jobs/claim?wait_ms=20000"))
            .bearer_auth(token)
            .json(&serde_json::json!({}))
            .timeout(Duration::from_secs(120))
            .send()
            .await;
        let response = match claimed {
            Ok(response) => response,
            Err(error) => {
                tracing::warn!(%error, wait_ms = backoff.as_millis() as u64, "cannot reach the desk; trying again");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        match response.status().as_u16() {
            204 => {
                backoff = Duration::from_millis(250);
                tokio::time::sleep(idle).await;
                continue;
            }
            401 | 403 => {
                let body = response.text().await.unwrap_or_default();
                anyhow::bail!("the desk refused this worker's token ({body}); ask an owner for a new one (r2r sandbox add-worker)");
            }
            200 => {}
            status => {
                let body = response.text().await.unwrap_or_default();
                tracing::warn!(status, %body, "the desk did not hand out a job; trying again");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        }
        let claimed: ClaimedJob = match response.json().await {
            Ok(claimed) => {
                backoff = Duration::from_millis(250);
                claimed
            }
            Err(error) => {
                // A desk of another version, say: wait before the next claim, so that this
                // worker does not use up every waiting job's claims in a moment.
                tracing::warn!(%error, "the desk's job does not read (a desk of another version?); its lease will run out");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        run_one(
            &client,
            &base,
            token,
            sandbox.as_ref(),
            &toolchains,
            claimed,
        )
        .await;
        done += 1;
    }
    Ok(ExitCode::SUCCESS)
}

async fn run_one(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    sandbox: &dyn sandbox::Sandbox,
    toolchains: &Toolchains,
    claimed: ClaimedJob,
) {
    let ClaimedJob {
        id,
        purpose,
        lease_id,
        lease_ms,
        job,
        ..
    } = claimed;
    tracing::info!(job = %id, %purpose, "running a sandbox job");
    // Renew the lease at a third of its length until the outcome is in.
    let renewer = {
        let client = client.clone();
        let url = format!("{base}/api/v1/sandbox/jobs/{id}/renew");
        let token = token.to_owned();
        let lease_id = lease_id.clone();
        let every = Duration::from_millis(u64::try_from(lease_ms / 3).unwrap_or(1_000).max(100));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let renewed = client
                    .post(&url)
                    .bearer_auth(&token)
                    .json(&Renewal {
                        lease_id: lease_id.clone(),
                    })
                    .timeout(every)
                    .send()
                    .await;
                match renewed {
                    Ok(r) if r.status() == 409 => {
                        tracing::warn!(url, "the lease was lost; the outcome will be refused");
                        return;
                    }
                    Ok(_) => {}
                    Err(error) => tracing::warn!(%error, "cannot renew the lease; trying again"),
                }
            }
        })
    };
    let outcome = match tempfile::tempdir() {
        Err(error) => WireOutcome {
            ran: None,
            error: Some(format!("the worker cannot make a scratch folder: {error}")),
        },
        Ok(scratch) => {
            let unpacked = {
                let path = scratch.path().to_path_buf();
                let toolchains = toolchains.clone();
                tokio::task::spawn_blocking(move || job.unpack(&path, &toolchains)).await
            };
            match unpacked {
                Ok(Ok(job)) => {
                    let result = sandbox.run(&job).await;
                    tokio::task::spawn_blocking(move || WireOutcome::of(&job, result))
                        .await
                        .unwrap_or_else(|e| WireOutcome {
                            ran: None,
                            error: Some(format!("the worker could not pack the outcome: {e}")),
                        })
                }
                Ok(Err(error)) => WireOutcome {
                    ran: None,
                    error: Some(error.to_string()),
                },
                Err(error) => WireOutcome {
                    ran: None,
                    error: Some(format!("unpacking the job stopped: {error}")),
                },
            }
        }
    };
    let report = Finished { lease_id, outcome };
    for attempt in 1..=5u32 {
        let sent = client
            .post(format!("{base}/api/v1/sandbox/jobs/{id}/outcome"))
            .bearer_auth(token)
            .json(&report)
            .timeout(Duration::from_secs(300))
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => {
                tracing::info!(job = %id, "sandbox job reported");
                break;
            }
            Ok(r) if r.status() == 409 => {
                tracing::warn!(job = %id, "the desk took the job back before its outcome came; dropped");
                break;
            }
            Ok(r) => {
                let status = r.status();
                // A desk busy receiving other outcomes says when to come back (the lease is
                // renewed meanwhile).
                let wait = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(|s| Duration::from_secs(s.min(30)));
                let body = r.text().await.unwrap_or_default();
                if let Some(wait) = wait {
                    tracing::warn!(job = %id, %status, attempt, "the desk is busy; sending the outcome again later");
                    tokio::time::sleep(wait).await;
                    continue;
                }
                tracing::warn!(job = %id, %status, %body, attempt, "the desk refused the outcome");
                // 408 (the body was late) and 429 are worth another try; other refusals are not.
                if status.is_client_error() && status != 408 && status != 429 {
                    break;
                }
            }
            Err(error) => {
                tracing::warn!(job = %id, %error, attempt, "cannot report the outcome; trying again")
            }
        }
        tokio::time::sleep(Duration::from_millis(500) * attempt).await;
    }
    renewer.abort();
}
