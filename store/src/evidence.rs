//! Evidence the desk measured: rows written once, read by bug.

use crate::{Pool, Store, StoreError};
use domain::workflow::Millis;
use serde::{Deserialize, Serialize};

/// One piece of measured evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceRecord {
    /// Unique id (the ledger's events name it).
    pub id: String,
    /// The bug it belongs to.
    pub bug_id: String,
    /// What it is (`reproduction_rerun`, …).
    pub kind: String,
    /// How it was obtained: `isolated test`, `simulated demo`, `live run`,
    /// `controlled acceptance`.
    pub label: String,
    /// When it was recorded.
    pub created_at: Millis,
    /// The details, as JSON.
    pub body: serde_json::Value,
}

type Row = (String, String, String, String, i64, String);

fn record(row: Row) -> Result<EvidenceRecord, StoreError> {
    let (id, bug_id, kind, label, created_at, body) = row;
    Ok(EvidenceRecord {
        id,
        bug_id,
        kind,
        label,
        created_at,
        body: serde_json::from_str(&body)
            .map_err(|e| StoreError::Corrupt(format!("evidence body: {e}")))?,
    })
}

impl Store {
    /// Stores one piece of evidence; the same id twice is an error (evidence is never
    /// rewritten).
    pub async fn add_evidence(&self, evidence: &EvidenceRecord) -> Result<(), StoreError> {
        let sql = "INSERT INTO evidence (id, bug_id, kind, label, created_at, body) \
                   VALUES ($1, $2, $3, $4, $5, $6)";
        let body = evidence.body.to_string();
        match &self.pool {
            Pool::Sqlite(pool) => {
                let _writer = self.writer.lock().await;
                sqlx::query(sql)
                    .bind(&evidence.id)
                    .bind(&evidence.bug_id)
                    .bind(&evidence.kind)
                    .bind(&evidence.label)
                    .bind(evidence.created_at)
                    .bind(&body)
                    .execute(pool)
                    .await?;
            }
            Pool::Postgres(pool) => {
                sqlx::query(sql)
                    .bind(&evidence.id)
                    .bind(&evidence.bug_id)
                    .bind(&evidence.kind)
                    .bind(&evidence.label)
                    .bind(evidence.created_at)
                    .bind(&body)
                    .execute(pool)
                    .await?;
            }
        }
        Ok(())
    }

    /// A bug's evidence, oldest first.
    pub async fn evidence_for(&self, bug_id: &str) -> Result<Vec<EvidenceRecord>, StoreError> {
        let sql = "SELECT id, bug_id, kind, label, created_at, body FROM evidence \
                   WHERE bug_id = $1 ORDER BY created_at, id";
        let rows: Vec<Row> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).bind(bug_id).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).bind(bug_id).fetch_all(pool).await?,
        };
        rows.into_iter().map(record).collect()
    }
}
