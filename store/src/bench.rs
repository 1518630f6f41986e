//! Storage for `r2r bench ledger`'s baseline: the seed design kept a whole workspace as one
//! JSON document written by compare-and-swap. The table is created by the benchmark itself
//! (never by migrations) in the scratch database it runs on.

use crate::{Pool, Store, StoreError};

impl Store {
    /// Creates (or empties) the baseline table and stores the initial document at version 0.
    pub async fn bench_document_reset(&self, document: &str) -> Result<(), StoreError> {
        let create = "CREATE TABLE IF NOT EXISTS bench_workspace \
                      (id BIGINT PRIMARY KEY, version BIGINT NOT NULL, document TEXT NOT NULL)";
        let delete = "DELETE FROM bench_workspace";
        let insert = "INSERT INTO bench_workspace (id, version, document) VALUES (1, 0, $1)";
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            sqlx::query(create).execute(&mut *tx).await?;
            sqlx::query(delete).execute(&mut *tx).await?;
            sqlx::query(insert).bind(document).execute(&mut *tx).await?;
            tx.commit().await?;
        });
        Ok(())
    }

    /// Reads the document and its version.
    pub async fn bench_document_read(&self) -> Result<(i64, String), StoreError> {
        let sql = "SELECT version, document FROM bench_workspace WHERE id = 1";
        Ok(match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_one(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).fetch_one(pool).await?,
        })
    }

    /// Writes the document if it is still at `version`.
    pub async fn bench_document_swap(
        &self,
        version: i64,
        document: &str,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE bench_workspace SET version = version + 1, document = $1 WHERE id = 1 AND version = $2";
        let result = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query(sql)
                .bind(document)
                .bind(version)
                .execute(pool)
                .await
                .map(|r| r.rows_affected()),
            Pool::Postgres(pool) => sqlx::query(sql)
                .bind(document)
                .bind(version)
                .execute(pool)
                .await
                .map(|r| r.rows_affected()),
        };
        match result {
            Ok(rows) => Ok(rows == 1),
            // A writer that waited past SQLite's busy timeout lost the race too.
            Err(error) if crate::ledger::is_busy(&error) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }
}

impl Store {
    /// Benchmark baseline: inserts one report row in its own transaction, nothing else (no
    /// airlock, no clustering, no ledger).
    pub async fn bench_raw_report_insert(
        &self,
        report: &crate::NewReport,
        now: i64,
    ) -> Result<(), StoreError> {
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            sqlx::query(
                "INSERT INTO reports (id, bug_id, capability_hash, component, status, families, \
                 raw_sha256, dossier, opens_bug, repeat_of, contact, created_at) \
                 VALUES ($1, NULL, $2, $3, 'quarantined', '[]', $4, NULL, 0, NULL, NULL, $5)",
            )
            .bind(&report.id)
            .bind(&report.capability_hash)
            .bind(&report.component)
            .bind(&report.raw_sha256)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        });
        Ok(())
    }
}
