//! What the concierge delivered: the reporters' inboxes and a record of every channel each
//! outbox job went through. Both are keyed by the job's idempotency key, so at-least-once
//! delivery shows once.

use crate::{Pool, Store, StoreError};
use domain::notice::Channel;
use domain::workflow::Millis;
use std::collections::BTreeMap;

/// A notice in a reporter's inbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboxNotice {
    /// The outbox job's idempotency key.
    pub key: String,
    /// The report whose reporter it is for.
    pub report_id: String,
    /// The bug it is about.
    pub bug_id: Option<String>,
    /// The job's kind.
    pub kind: String,
    /// Subject.
    pub subject: String,
    /// Body.
    pub body: String,
    /// When it was delivered.
    pub delivered_at: Millis,
}

/// An outbox job as stored, for checking a delivery against its lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredJob {
    /// What to do.
    pub kind: String,
    /// Who consumes it.
    pub consumer: String,
    /// Parameters.
    pub payload: BTreeMap<String, String>,
    /// The current lease, if any.
    pub lease_id: Option<String>,
    /// Until when it holds.
    pub leased_until: Option<Millis>,
    /// Whether it was acknowledged.
    pub done: bool,
}

impl StoredJob {
    /// Whether `lease_id` is this job's live lease at `now`.
    pub fn leased_by(&self, lease_id: &str, now: Millis) -> bool {
        !self.done
            && self.lease_id.as_deref() == Some(lease_id)
            && self.leased_until.is_some_and(|until| until > now)
    }
}

impl Store {
    /// One outbox job.
    pub async fn outbox_job(&self, key: &str) -> Result<Option<StoredJob>, StoreError> {
        let sql =
            "SELECT kind, consumer, payload, lease_id, leased_until, done_at FROM outbox_jobs \
                   WHERE idempotency_key = $1";
        type Row = (
            String,
            String,
            String,
            Option<String>,
            Option<i64>,
            Option<i64>,
        );
        let row: Option<Row> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).bind(key).fetch_optional(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).bind(key).fetch_optional(pool).await?,
        };
        row.map(|(kind, consumer, payload, lease_id, leased_until, done)| {
            let payload = serde_json::from_str(&payload)
                .map_err(|e| StoreError::Corrupt(format!("job {key} payload: {e}")))?;
            Ok(StoredJob {
                kind,
                consumer,
                payload,
                lease_id,
                leased_until,
                done: done.is_some(),
            })
        })
        .transpose()
    }

    /// Records that job `key` went through `channel`; for the inbox, the notice itself is
    /// stored in the same transaction. A channel recorded before is left as it was. Returns
    /// whether anything new was written.
    pub async fn record_delivery(
        &self,
        key: &str,
        channel: Channel,
        inbox: Option<&InboxNotice>,
        detail: &str,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let detail: String = detail.chars().take(500).collect();
        let written = for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            let written = sqlx::query(
                "INSERT INTO notice_deliveries (idempotency_key, channel, delivered_at, detail) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (idempotency_key, channel) DO NOTHING",
            )
            .bind(key)
            .bind(channel.as_str())
            .bind(now)
            .bind(&detail)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if let Some(notice) = inbox {
                sqlx::query(
                    "INSERT INTO notices (idempotency_key, report_id, bug_id, kind, subject, body, delivered_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (idempotency_key) DO NOTHING",
                )
                .bind(key)
                .bind(&notice.report_id)
                .bind(&notice.bug_id)
                .bind(&notice.kind)
                .bind(&notice.subject)
                .bind(&notice.body)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            written
        });
        Ok(written == 1)
    }

    /// The channels job `key` already went through.
    pub async fn deliveries_of(&self, key: &str) -> Result<Vec<Channel>, StoreError> {
        let sql = "SELECT channel FROM notice_deliveries WHERE idempotency_key = $1";
        let rows: Vec<String> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_scalar(sql).bind(key).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_scalar(sql).bind(key).fetch_all(pool).await?,
        };
        let mut channels: Vec<Channel> = rows.iter().filter_map(|c| Channel::parse(c)).collect();
        channels.sort();
        Ok(channels)
    }

    /// A reporter's inbox, oldest first.
    pub async fn inbox_of(&self, report_id: &str) -> Result<Vec<InboxNotice>, StoreError> {
        let sql = "SELECT idempotency_key, report_id, bug_id, kind, subject, body, delivered_at \
                   FROM notices WHERE report_id = $1 ORDER BY delivered_at, idempotency_key";
        type Row = (String, String, Option<String>, String, String, String, i64);
        let rows: Vec<Row> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).bind(report_id).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).bind(report_id).fetch_all(pool).await?,
        };
        Ok(rows
            .into_iter()
            .map(
                |(key, report_id, bug_id, kind, subject, body, delivered_at)| InboxNotice {
                    key,
                    report_id,
                    bug_id,
                    kind,
                    subject,
                    body,
                    delivered_at,
                },
            )
            .collect())
    }
}
