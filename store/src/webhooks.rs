//! Signed webhooks the desk accepted. A webhook's signature covers its body, not the delivery
//! id the sender puts in a header, so a captured body can be re-sent under any delivery id and
//! still verify. Each accepted webhook is therefore recorded by the SHA-256 of its raw signed
//! body *and* by its delivery id, in the same transaction as the job that applies it: a body
//! or a delivery id seen before files nothing.

use crate::{Pool, Store, StoreError};
use domain::workflow::{JobDraft, Millis};
use std::collections::BTreeMap;

/// A verified webhook to file.
#[derive(Clone, Copy, Debug)]
pub struct NewWebhook<'a> {
    /// Who sent it (`github`).
    pub source: &'a str,
    /// Hex SHA-256 of the raw body exactly as signed.
    pub body_sha256: &'a str,
    /// The sender's delivery id (`X-GitHub-Delivery`).
    pub delivery: &'a str,
    /// The event name (`X-GitHub-Event`).
    pub event: &'a str,
}

/// One accepted webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookDelivery {
    /// Who sent it.
    pub source: String,
    /// Hex SHA-256 of the raw signed body.
    pub body_sha256: String,
    /// The sender's delivery id.
    pub delivery: String,
    /// The event name.
    pub event: String,
    /// The outbox job that applies it.
    pub job_key: String,
    /// When it was accepted.
    pub received_at: Millis,
    /// What applying it did, or why it did not count (`None` until the worker wrote it).
    pub outcome: Option<String>,
    /// When it was applied (`None` while it waits or retries).
    pub applied_at: Option<Millis>,
}

const INSERT: &str = "INSERT INTO webhook_deliveries \
     (source, body_sha256, delivery, event, job_key, received_at, outcome, applied_at) \
     VALUES ($1, $2, $3, $4, $5, $6, NULL, $7) ON CONFLICT DO NOTHING";

type Row = (
    String,
    String,
    String,
    String,
    String,
    i64,
    Option<String>,
    Option<i64>,
);

impl Store {
    /// Files `job` for a verified webhook unless its body (by SHA-256) or its delivery id was
    /// accepted before. The delivery's row and the job commit together. Returns whether the
    /// job was filed.
    pub async fn enqueue_webhook(
        &self,
        webhook: &NewWebhook<'_>,
        job: &JobDraft,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let payload =
            serde_json::to_string(&job.payload).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let filed = for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            let recorded = sqlx::query(INSERT)
                .bind(webhook.source)
                .bind(webhook.body_sha256)
                .bind(webhook.delivery)
                .bind(webhook.event)
                .bind(&job.idempotency_key)
                .bind(now)
                .bind(None::<i64>)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            // A fresh body whose job key already exists is a delivery filed before body
            // hashes were kept: the row is kept (its body is known from now on), no job.
            let filed = if recorded == 1 {
                insert_job!(tx, job, None::<&str>, &payload, now)
            } else {
                0
            };
            tx.commit().await?;
            filed
        });
        if filed == 1 {
            self.wake();
        }
        Ok(filed == 1)
    }

    /// Records what applying a webhook did (or, with `applied_at` `None`, why it has not
    /// been applied yet).
    pub async fn record_webhook_outcome(
        &self,
        source: &str,
        body_sha256: &str,
        outcome: &str,
        applied_at: Option<Millis>,
    ) -> Result<(), StoreError> {
        let outcome: String = outcome.chars().take(4_000).collect();
        let sql = "UPDATE webhook_deliveries SET outcome = $1, applied_at = $2 \
                   WHERE source = $3 AND body_sha256 = $4";
        match &self.pool {
            Pool::Sqlite(pool) => {
                sqlx::query(sql)
                    .bind(&outcome)
                    .bind(applied_at)
                    .bind(source)
                    .bind(body_sha256)
                    .execute(pool)
                    .await?;
            }
            Pool::Postgres(pool) => {
                sqlx::query(sql)
                    .bind(&outcome)
                    .bind(applied_at)
                    .bind(source)
                    .bind(body_sha256)
                    .execute(pool)
                    .await?;
            }
        }
        Ok(())
    }

    /// The accepted webhook with this delivery id.
    pub async fn webhook_delivery(
        &self,
        source: &str,
        delivery: &str,
    ) -> Result<Option<WebhookDelivery>, StoreError> {
        let sql = "SELECT source, body_sha256, delivery, event, job_key, received_at, outcome, \
                   applied_at FROM webhook_deliveries WHERE source = $1 AND delivery = $2";
        let row: Option<Row> = match &self.pool {
            Pool::Sqlite(pool) => {
                sqlx::query_as(sql)
                    .bind(source)
                    .bind(delivery)
                    .fetch_optional(pool)
                    .await?
            }
            Pool::Postgres(pool) => {
                sqlx::query_as(sql)
                    .bind(source)
                    .bind(delivery)
                    .fetch_optional(pool)
                    .await?
            }
        };
        Ok(row.map(
            |(source, body_sha256, delivery, event, job_key, received_at, outcome, applied_at)| {
                WebhookDelivery {
                    source,
                    body_sha256,
                    delivery,
                    event,
                    job_key,
                    received_at,
                    outcome,
                    applied_at,
                }
            },
        ))
    }

    /// Records the bodies of webhook jobs filed before body hashes were kept (jobs whose key
    /// starts with `key_prefix` and whose payload holds `body`, `delivery` and `event`), so
    /// they too are recognised when re-sent. `hash` is the hex SHA-256 of a body. Returns how
    /// many were recorded; a second call records none.
    pub async fn backfill_webhook_deliveries(
        &self,
        source: &str,
        key_prefix: &str,
        hash: impl Fn(&[u8]) -> String,
    ) -> Result<usize, StoreError> {
        let select = "SELECT idempotency_key, payload, created_at, done_at FROM outbox_jobs j \
                      WHERE idempotency_key LIKE $1 AND NOT EXISTS \
                      (SELECT 1 FROM webhook_deliveries d WHERE d.job_key = j.idempotency_key)";
        let pattern = format!("{key_prefix}%");
        let recorded = for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            let jobs: Vec<(String, String, i64, Option<i64>)> = sqlx::query_as(select)
                .bind(&pattern)
                .fetch_all(&mut *tx)
                .await?;
            let mut recorded = 0;
            for (key, payload, created_at, done_at) in jobs {
                if !key.starts_with(key_prefix) {
                    continue;
                }
                let Ok(payload) = serde_json::from_str::<BTreeMap<String, String>>(&payload)
                else {
                    continue;
                };
                let (Some(body), Some(delivery)) = (payload.get("body"), payload.get("delivery"))
                else {
                    continue;
                };
                let event = payload.get("event").map_or("", String::as_str);
                recorded += sqlx::query(INSERT)
                    .bind(source)
                    .bind(hash(body.as_bytes()))
                    .bind(delivery)
                    .bind(event)
                    .bind(&key)
                    .bind(created_at)
                    .bind(done_at)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            }
            tx.commit().await?;
            recorded
        });
        Ok(usize::try_from(recorded).unwrap_or(usize::MAX))
    }
}

impl Store {
    /// Keeps GitHub deployment `id` of `commit` in `repository`, not recorded for `why` (its
    /// required checks were not green), to be looked at again when the checks complete.
    pub async fn hold_deployment(
        &self,
        id: &str,
        repository: &str,
        commit: &str,
        why: &str,
        now: Millis,
    ) -> Result<(), StoreError> {
        for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query(
                "INSERT INTO held_deployments (id, repository, commit_sha, held_at, why) \
                 VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (id) DO UPDATE SET held_at = excluded.held_at, why = excluded.why",
            )
            .bind(id)
            .bind(repository)
            .bind(commit)
            .bind(now)
            .bind(why)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The held deployments of `commit` in `repository`, the latest first.
    pub async fn held_deployments(
        &self,
        repository: &str,
        commit: &str,
    ) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT id FROM held_deployments WHERE repository = $1 AND commit_sha = $2 \
                   ORDER BY held_at DESC, id DESC";
        Ok(for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query_scalar(sql)
                .bind(repository)
                .bind(commit)
                .fetch_all(pool)
                .await?
        }))
    }

    /// Forgets the held deployments of `commit` in `repository` (one of them was recorded).
    pub async fn release_held_deployments(
        &self,
        repository: &str,
        commit: &str,
    ) -> Result<(), StoreError> {
        for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query("DELETE FROM held_deployments WHERE repository = $1 AND commit_sha = $2")
                .bind(repository)
                .bind(commit)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}
