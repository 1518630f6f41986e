//! The concierge: the worker that tells people what happened. It holds the concierge's own
//! token (no engineering or repository power) and talks to the desk over HTTP like any other
//! client. Each round it leases outbox jobs, delivers every channel still due
//! (`domain::notice::channels_due`) — the tracking-page inbox always, email over SMTP when the
//! reporter left an address (the owners' notices: to every owner) and SMTP is configured, the
//! owners' Slack-compatible webhook when configured — records each channel as it goes through, and acknowledges the job. A failed
//! channel reports the failure and the job returns after a backoff; channels that went through
//! are not repeated. Delivery is at-least-once: every email carries a `Message-ID` and every
//! webhook call an `Idempotency-Key` derived from the job's key, so a receiver can drop a
//! repeat, and the inbox shows a job once whatever happens.

use crate::config::NotifyConfig;
use api_types::{ClaimedJob, ClaimedJobs};
use crew::desk::{Desk, DeskError};
use domain::notice::{channels_due, Channel, Reach};
use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::time::Duration;

/// How long one SMTP or webhook delivery may take.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(20);

/// Why a round could not run.
#[derive(Debug, thiserror::Error)]
pub enum ConciergeError {
    /// The desk did not answer as expected.
    #[error(transparent)]
    Desk(#[from] DeskError),
    /// The configuration does not make a working transport.
    #[error("{0}")]
    Setup(String),
}

/// What one round did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// Jobs leased.
    pub leased: usize,
    /// Jobs whose every due channel went through (acknowledged).
    pub done: usize,
    /// Jobs that failed a channel and will come back.
    pub failed: usize,
    /// Channels delivered in this round.
    pub delivered: usize,
    /// Jobs left for a later claim: too little of their lease was left to start them.
    pub deferred: usize,
}

/// A job is started only with this much of its lease left (two slow channels and a margin),
/// so nothing is sent after the lease could have passed to another worker.
const LEASE_NEEDED_MS: i64 = 2 * DELIVERY_TIMEOUT.as_millis() as i64 + 5_000;

/// The concierge worker.
pub struct Concierge {
    desk: Desk,
    smtp: Option<(AsyncSmtpTransport<Tokio1Executor>, Mailbox)>,
    webhook: Option<(reqwest::Client, String)>,
}

impl std::fmt::Debug for Concierge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Concierge")
            .field("desk", &self.desk)
            .field("smtp", &self.smtp.is_some())
            .field("webhook", &self.webhook.is_some())
            .finish()
    }
}

/// A stable id for what a job sends: the same job always yields the same id.
pub fn delivery_id(key: &str) -> String {
    hex::encode(&Sha256::digest(key.as_bytes())[..16])
}

impl Concierge {
    /// A concierge for the desk at `desk_url` with the concierge's token.
    pub fn new(
        desk_url: &str,
        token: &str,
        notify: &NotifyConfig,
    ) -> Result<Concierge, ConciergeError> {
        let desk = Desk::new(desk_url, token)?;
        let smtp = match (&notify.smtp_url, &notify.smtp_from) {
            (Some(url), Some(from)) => {
                let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url.expose())
                    .map_err(|e| ConciergeError::Setup(format!("R2R_SMTP_URL: {e}")))?
                    .timeout(Some(DELIVERY_TIMEOUT))
                    .build();
                let from: Mailbox = from
                    .parse()
                    .map_err(|e| ConciergeError::Setup(format!("R2R_SMTP_FROM: {e}")))?;
                Some((transport, from))
            }
            _ => None,
        };
        let webhook = match &notify.webhook_url {
            Some(url) => Some((
                reqwest::Client::builder()
                    .timeout(DELIVERY_TIMEOUT)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| ConciergeError::Setup(format!("webhook client: {e}")))?,
                url.expose().to_owned(),
            )),
            None => None,
        };
        Ok(Concierge {
            desk,
            smtp,
            webhook,
        })
    }

    fn reach(&self) -> Reach {
        Reach {
            smtp: self.smtp.is_some(),
            webhook: self.webhook.is_some(),
        }
    }

    /// Leases the next jobs and delivers them.
    pub async fn round(&self) -> Result<Round, ConciergeError> {
        self.round_within(None).await
    }

    /// As [`Concierge::round`], first waiting up to `wait` for a job to be queued when none
    /// is ready (the desk answers the moment one is).
    pub async fn round_within(&self, wait: Option<Duration>) -> Result<Round, ConciergeError> {
        let path = match wait {
            Some(wait) => format!(
                "/api/v1/outbox/concierge/claim?wait_ms={}",
                wait.as_millis()
                    .clamp(1, u128::from(crate::web::wait::MOST_WAIT_MS))
            ),
            None => "/api/v1/outbox/concierge/claim".to_owned(),
        };
        let claimed: ClaimedJobs = self.desk.post_as(&path, &json!({})).await?;
        let jobs = claimed.jobs;
        let mut round = Round {
            leased: jobs.len(),
            ..Round::default()
        };
        for job in &jobs {
            let key = job.key.as_str();
            let lease = job.lease_id.as_str();
            if job.leased_until - crate::clock::now_ms() < LEASE_NEEDED_MS {
                // Its lease runs out and a later claim takes it whole.
                round.deferred += 1;
                continue;
            }
            let path = |what: &str| job_path(key, what);
            let (answer, outcome) = match self.deliver(job, &mut round).await {
                Ok(()) => {
                    round.done += 1;
                    (
                        self.desk
                            .post(&path("ack"), &json!({"lease_id": lease}))
                            .await,
                        "acknowledged",
                    )
                }
                Err(error) => {
                    tracing::warn!(job = key, %error, "notification not delivered; it will be retried");
                    round.failed += 1;
                    (
                        self.desk
                            .post(&path("fail"), &json!({"lease_id": lease, "error": error}))
                            .await,
                        "reported as failed",
                    )
                }
            };
            // The lease lapses by itself; the other jobs of the batch still go out.
            if let Err(error) = answer {
                tracing::warn!(job = key, %error, "the job could not be {outcome}");
            }
        }
        Ok(round)
    }

    /// Delivers every channel still due for `job`, recording each; the first failure ends it.
    async fn deliver(&self, job: &ClaimedJob, round: &mut Round) -> Result<(), String> {
        if let Some(error) = &job.error {
            return Err(error.clone());
        }
        let Some(notice) = &job.notice else {
            return Err("the desk sent the job without its notice".to_owned());
        };
        let key = job.key.as_str();
        let lease = job.lease_id.as_str();
        let emails: Vec<&str> = notice.emails.iter().map(String::as_str).collect();
        let delivered: Vec<Channel> = job
            .delivered
            .iter()
            .filter_map(|c| Channel::parse(c))
            .collect();
        let parsed = domain::notice::Notice {
            audience: match &notice.audience {
                api_types::Audience::Reporter(report) => {
                    domain::notice::Audience::Reporter(report.clone())
                }
                api_types::Audience::Owners => domain::notice::Audience::Owners,
            },
            bug: notice.bug.clone(),
            subject: notice.subject.clone(),
            body: notice.body.clone(),
            webhook_text: notice.webhook_text.clone(),
        };
        for channel in channels_due(&parsed, !emails.is_empty(), self.reach(), &delivered) {
            let detail = match channel {
                Channel::Inbox => "tracking page".to_owned(),
                Channel::Email => self.send_email(key, &emails, &parsed).await?,
                Channel::Webhook => self.call_webhook(key, &parsed).await?,
            };
            self.desk
                .post(
                    &job_path(key, "delivered"),
                    &json!({"lease_id": lease, "channel": channel.as_str(), "detail": detail}),
                )
                .await
                .map_err(|e| format!("recording the {} delivery: {e}", channel.as_str()))?;
            round.delivered += 1;
        }
        Ok(())
    }

    /// Sends the notice to every usable address; none usable is recorded as skipped (retrying
    /// cannot fix an address). Errors name no address (they end up in logs and the outbox).
    async fn send_email(
        &self,
        key: &str,
        to: &[&str],
        notice: &domain::notice::Notice,
    ) -> Result<String, String> {
        let Some((transport, from)) = &self.smtp else {
            return Err("SMTP is not configured".to_owned());
        };
        let host = from.email.domain().to_owned();
        let mut builder = Message::builder().from(from.clone());
        // A reporter's one address, or every owner's.
        let usable: Vec<Mailbox> = to.iter().filter_map(|a| a.trim().parse().ok()).collect();
        if usable.is_empty() {
            return Ok("skipped: no usable address".to_owned());
        }
        for mailbox in usable {
            builder = builder.to(mailbox);
        }
        let message = builder
            .subject(&notice.subject)
            .message_id(Some(format!("<r2r-{}@{host}>", delivery_id(key))))
            .header(ContentType::TEXT_PLAIN)
            .body(notice.body.clone())
            .map_err(|e| format!("building the email: {e}"))?;
        let response = transport
            .send(message)
            .await
            .map_err(|e| match e.status() {
                Some(code) => format!("SMTP answered {code}"),
                None if e.is_timeout() => "SMTP timed out".to_owned(),
                None => "SMTP: no answer from the server".to_owned(),
            })?;
        Ok(format!(
            "SMTP {}",
            response
                .code()
                .to_string()
                .chars()
                .take(3)
                .collect::<String>()
        ))
    }

    async fn call_webhook(
        &self,
        key: &str,
        notice: &domain::notice::Notice,
    ) -> Result<String, String> {
        let Some((client, url)) = &self.webhook else {
            return Err("no webhook is configured".to_owned());
        };
        let response = client
            .post(url)
            .header("Idempotency-Key", delivery_id(key))
            .json(&json!({"text": notice.webhook_text}))
            .send()
            .await
            .map_err(|e| format!("webhook: {}", e.without_url()))?;
        let status = response.status();
        if status.is_success() {
            Ok(format!("HTTP {}", status.as_u16()))
        } else {
            Err(format!("webhook answered HTTP {}", status.as_u16()))
        }
    }
}

/// `/api/v1/outbox/jobs/{key}/{what}`.
fn job_path(key: &str, what: &str) -> String {
    format!("/api/v1/outbox/jobs/{}/{what}", url_segment(key))
}

/// Percent-encodes a job key for a path segment (keys hold `:`).
fn url_segment(key: &str) -> String {
    key.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// Runs rounds until aborted. An idle round waits at the desk for a job to be queued (up to
/// `poll`, the longest a job whose retry time came waits to be picked up); a failed round
/// is tried again after `poll`.
pub async fn run(concierge: Concierge, poll: Duration) {
    loop {
        match concierge.round_within(Some(poll)).await {
            Ok(round) if round.leased > 0 => tracing::info!(
                leased = round.leased,
                done = round.done,
                failed = round.failed,
                delivered = round.delivered,
                "concierge round"
            ),
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "concierge round failed");
                tokio::time::sleep(poll).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_safe_path_segments() {
        assert_eq!(
            url_segment("ask:fix:b-1:r-2:v3"),
            "ask%3Afix%3Ab-1%3Ar-2%3Av3"
        );
    }

    #[test]
    fn the_same_job_always_sends_under_the_same_id() {
        assert_eq!(delivery_id("message:r-1:1"), delivery_id("message:r-1:1"));
        assert_ne!(delivery_id("message:r-1:1"), delivery_id("message:r-1:2"));
        assert_eq!(delivery_id("k").len(), 32);
    }
}
