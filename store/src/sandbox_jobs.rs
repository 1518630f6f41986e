//! Sandbox runs as jobs on the queue, and the worker hosts that may claim them.
//!
//! The desk writes a job (its spec is opaque here: the command, limits and snapshot as the
//! server encodes them) and waits for its outcome; a worker claims the oldest claimable job
//! under a lease, renews the lease while it runs, and finishes the job with the lease id (a
//! worker whose lease was taken over cannot finish). An expired lease makes the job claimable
//! again until it has been claimed [`MAX_SANDBOX_CLAIMS`] times; after that the waiting desk
//! gives up on it. The waiter deletes the row once it has the outcome; rows nobody waits for any
//! more go after [`SANDBOX_JOB_TTL_MS`].

use crate::{Pool, Store, StoreError};
use domain::workflow::Millis;

/// How many times one job may be claimed (a worker that dies mid-run gives it back when its
/// lease expires; a job that kills every worker is not handed out for ever).
pub const MAX_SANDBOX_CLAIMS: u32 = 3;
/// How long a job row may live at all (its waiter is gone after that).
pub const SANDBOX_JOB_TTL_MS: Millis = 2 * 60 * 60 * 1000;

/// A job held by a worker under a lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedSandboxJob {
    /// The job's id.
    pub id: String,
    /// What the desk measures with it (`reproduction`, `fix`, `release` …), for logs.
    pub purpose: String,
    /// The encoded job.
    pub spec: String,
    /// How many times it has been claimed, this claim included.
    pub claims: u32,
    /// The lease that must accompany a renewal and the outcome.
    pub lease_id: String,
    /// Until when the lease holds.
    pub leased_until: Millis,
}

/// Where a job stands, as its waiter sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SandboxJobStatus {
    /// No such job (already taken, or purged).
    Missing,
    /// Not finished yet.
    Waiting {
        /// The worker holding it, if claimed.
        worker: Option<String>,
        /// Claims so far.
        claims: u32,
        /// Until when the current claim holds.
        leased_until: Option<Millis>,
        /// The workers that held it before and let their lease lapse, oldest first.
        lapsed: Vec<String>,
    },
    /// Finished: the worker that ran it and the encoded outcome.
    Finished {
        /// The worker's name.
        worker: String,
        /// The encoded outcome.
        outcome: String,
    },
}

/// A worker host's record (its token is stored only as a hash).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxWorker {
    /// Its name.
    pub name: String,
    /// When it was added.
    pub created_at: Millis,
    /// When its token was revoked.
    pub revoked_at: Option<Millis>,
    /// Its last claim.
    pub last_seen_at: Option<Millis>,
    /// Jobs it finished.
    pub jobs_done: i64,
    /// When an owner stopped trusting it (its token ended then too).
    pub distrusted_at: Option<Millis>,
}

fn lease_id() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

type ClaimRow = (String, String, String, i64, i64);
type StatusRow = (
    Option<String>,
    i64,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
);
type WorkerRow = (String, i64, Option<i64>, Option<i64>, i64, Option<i64>);

impl Store {
    /// Queues a sandbox job (and drops rows nobody can be waiting for any more); `excluded`
    /// names a worker that may not claim it (the one whose run this job confirms).
    pub async fn enqueue_sandbox_job(
        &self,
        id: &str,
        purpose: &str,
        spec: &str,
        excluded: Option<&str>,
        now: Millis,
    ) -> Result<(), StoreError> {
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            sqlx::query("DELETE FROM sandbox_jobs WHERE created_at < $1")
                .bind(now - SANDBOX_JOB_TTL_MS)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO sandbox_jobs (id, purpose, spec, created_at, excluded_worker) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(id)
            .bind(purpose)
            .bind(spec)
            .bind(now)
            .bind(excluded)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        });
        self.wake();
        Ok(())
    }

    /// Claims the oldest claimable job for `worker` under a lease of `lease_ms`: one never
    /// claimed, or one whose lease expired and that has been claimed fewer than
    /// [`MAX_SANDBOX_CLAIMS`] times, and never one that confirms `worker`'s own run. Two
    /// workers never hold one job.
    pub async fn claim_sandbox_job(
        &self,
        worker: &str,
        lease_ms: Millis,
        now: Millis,
    ) -> Result<Option<ClaimedSandboxJob>, StoreError> {
        let lease = lease_id();
        let until = now + lease_ms;
        // `find` is the backend's substring search (SQLite's instr, PostgreSQL's strpos).
        let ready = |find: &str| {
            format!(
                "finished_at IS NULL AND claims < {MAX_SANDBOX_CLAIMS} \
                 AND (leased_until IS NULL OR leased_until <= $4) \
                 AND (excluded_worker IS NULL OR excluded_worker <> $1) \
                 AND COALESCE(worker, '') <> $1 \
                 AND {find}(COALESCE(lapsed_workers, ''), ',' || $1 || ',') = 0"
            )
        };
        // A worker still named on a claimable job let its lease lapse: it is remembered.
        let set = "SET claims = claims + 1, worker = $1, lease_id = $2, leased_until = $3, \
                   lapsed_workers = CASE WHEN worker IS NULL THEN lapsed_workers \
                   ELSE COALESCE(lapsed_workers, ',') || worker || ',' END";
        let returning = "RETURNING id, purpose, spec, claims, leased_until";
        let seen = "UPDATE sandbox_workers SET last_seen_at = $1 WHERE name = $2";
        let row: Option<ClaimRow> = match &self.pool {
            Pool::Sqlite(pool) => {
                let _writer = self.writer.lock().await;
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                let sql = format!(
                    "UPDATE sandbox_jobs {set} WHERE id IN \
                     (SELECT id FROM sandbox_jobs WHERE {} ORDER BY created_at LIMIT 1) {returning}",
                    ready("instr")
                );
                let row = sqlx::query_as(&sql)
                    .bind(worker)
                    .bind(&lease)
                    .bind(until)
                    .bind(now)
                    .fetch_optional(&mut *tx)
                    .await?;
                sqlx::query(seen)
                    .bind(now)
                    .bind(worker)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                row
            }
            Pool::Postgres(pool) => {
                let sql = format!(
                    "UPDATE sandbox_jobs {set} WHERE id IN \
                     (SELECT id FROM sandbox_jobs WHERE {} ORDER BY created_at LIMIT 1 \
                      FOR UPDATE SKIP LOCKED) {returning}",
                    ready("strpos")
                );
                let row = sqlx::query_as(&sql)
                    .bind(worker)
                    .bind(&lease)
                    .bind(until)
                    .bind(now)
                    .fetch_optional(pool)
                    .await?;
                sqlx::query(seen)
                    .bind(now)
                    .bind(worker)
                    .execute(pool)
                    .await?;
                row
            }
        };
        Ok(row.map(
            |(id, purpose, spec, claims, leased_until)| ClaimedSandboxJob {
                id,
                purpose,
                spec,
                claims: u32::try_from(claims).unwrap_or(u32::MAX),
                lease_id: lease,
                leased_until,
            },
        ))
    }

    /// Extends `worker`'s held lease to `until`; false when the lease is not that worker's
    /// (expired and taken over, another worker's, or the job finished or gone).
    pub async fn renew_sandbox_job(
        &self,
        id: &str,
        lease_id: &str,
        worker: &str,
        until: Millis,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE sandbox_jobs SET leased_until = $1 \
                   WHERE id = $2 AND lease_id = $3 AND worker = $5 AND finished_at IS NULL \
                   AND leased_until > $4";
        let done = for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query(sql)
                .bind(until)
                .bind(id)
                .bind(lease_id)
                .bind(now)
                .bind(worker)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done == 1)
    }

    /// The purpose (`test`, `build`) of unfinished job `id` when `worker` holds a live lease
    /// on it now; `None` otherwise (checked before an outcome's body is read, whose bound
    /// the purpose sets).
    pub async fn sandbox_job_held(
        &self,
        id: &str,
        worker: &str,
        now: Millis,
    ) -> Result<Option<String>, StoreError> {
        let sql = "SELECT purpose FROM sandbox_jobs WHERE id = $1 AND worker = $2 \
                   AND finished_at IS NULL AND leased_until > $3";
        Ok(for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query_scalar(sql)
                .bind(id)
                .bind(worker)
                .bind(now)
                .fetch_optional(pool)
                .await?
        }))
    }

    /// Records a job's outcome under its lease; false when the lease is no longer this
    /// worker's (the outcome is then dropped: another claim owns the job).
    pub async fn finish_sandbox_job(
        &self,
        id: &str,
        lease_id: &str,
        worker: &str,
        outcome: &str,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let finished = for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            let done = sqlx::query(
                "UPDATE sandbox_jobs SET finished_at = $1, outcome = $2, leased_until = NULL \
                 WHERE id = $3 AND lease_id = $4 AND worker = $5 AND finished_at IS NULL",
            )
            .bind(now)
            .bind(outcome)
            .bind(id)
            .bind(lease_id)
            .bind(worker)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if done == 1 {
                sqlx::query("UPDATE sandbox_workers SET jobs_done = jobs_done + 1 WHERE name = $1")
                    .bind(worker)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            done == 1
        });
        Ok(finished)
    }

    /// Where job `id` stands.
    pub async fn sandbox_job_status(&self, id: &str) -> Result<SandboxJobStatus, StoreError> {
        let sql =
            "SELECT worker, claims, leased_until, finished_at, outcome, lapsed_workers FROM sandbox_jobs WHERE id = $1";
        let row: Option<StatusRow> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).bind(id).fetch_optional(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).bind(id).fetch_optional(pool).await?,
        };
        Ok(match row {
            None => SandboxJobStatus::Missing,
            Some((worker, _, _, Some(_), outcome, _)) => SandboxJobStatus::Finished {
                worker: worker.unwrap_or_default(),
                outcome: outcome.unwrap_or_default(),
            },
            Some((worker, claims, leased_until, None, _, lapsed)) => SandboxJobStatus::Waiting {
                worker,
                claims: u32::try_from(claims).unwrap_or(u32::MAX),
                leased_until,
                lapsed: lapsed
                    .unwrap_or_default()
                    .split(',')
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned)
                    .collect(),
            },
        })
    }

    /// Removes job `id` (its waiter has the outcome, or gave up on it).
    pub async fn delete_sandbox_job(&self, id: &str) -> Result<(), StoreError> {
        for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query("DELETE FROM sandbox_jobs WHERE id = $1")
                .bind(id)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// Jobs waiting for a worker or running now, oldest first: (purpose, worker, created).
    pub async fn sandbox_queue(&self) -> Result<Vec<(String, Option<String>, Millis)>, StoreError> {
        let sql = "SELECT purpose, worker, created_at FROM sandbox_jobs \
                   WHERE finished_at IS NULL ORDER BY created_at LIMIT 100";
        Ok(match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).fetch_all(pool).await?,
        })
    }

    /// Adds a worker host with its token's hash (a revoked worker's name comes back with the
    /// new token); false when an active worker has the name.
    pub async fn add_sandbox_worker(
        &self,
        name: &str,
        token_hash: &str,
        now: Millis,
    ) -> Result<bool, StoreError> {
        // A revoked worker's name may be given again, with the new token.
        // A distrusted worker's name is never given again: what it measured stays marked.
        let sql = "INSERT INTO sandbox_workers (name, token_hash, created_at) VALUES ($1, $2, $3) \
                   ON CONFLICT (name) DO UPDATE SET token_hash = excluded.token_hash, \
                   created_at = excluded.created_at, revoked_at = NULL, last_seen_at = NULL \
                   WHERE sandbox_workers.revoked_at IS NOT NULL \
                   AND sandbox_workers.distrusted_at IS NULL";
        let added = for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query(sql)
                .bind(name)
                .bind(token_hash)
                .bind(now)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(added == 1)
    }

    /// The worker a token hash belongs to, unless revoked.
    pub async fn sandbox_worker_of(&self, token_hash: &str) -> Result<Option<String>, StoreError> {
        let sql = "SELECT name FROM sandbox_workers WHERE token_hash = $1 AND revoked_at IS NULL";
        Ok(match &self.pool {
            Pool::Sqlite(pool) => {
                sqlx::query_scalar(sql)
                    .bind(token_hash)
                    .fetch_optional(pool)
                    .await?
            }
            Pool::Postgres(pool) => {
                sqlx::query_scalar(sql)
                    .bind(token_hash)
                    .fetch_optional(pool)
                    .await?
            }
        })
    }

    /// Revokes a worker's token at once; false when there is no such (unrevoked) worker.
    pub async fn revoke_sandbox_worker(&self, name: &str, now: Millis) -> Result<bool, StoreError> {
        let sql =
            "UPDATE sandbox_workers SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL";
        let done = for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query(sql)
                .bind(now)
                .bind(name)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done == 1)
    }

    /// Every worker host, by name.
    pub async fn sandbox_workers(&self) -> Result<Vec<SandboxWorker>, StoreError> {
        let sql = "SELECT name, created_at, revoked_at, last_seen_at, jobs_done, distrusted_at \
                   FROM sandbox_workers ORDER BY name";
        let rows: Vec<WorkerRow> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).fetch_all(pool).await?,
        };
        Ok(rows
            .into_iter()
            .map(
                |(name, created_at, revoked_at, last_seen_at, jobs_done, distrusted_at)| {
                    SandboxWorker {
                        name,
                        created_at,
                        revoked_at,
                        last_seen_at,
                        jobs_done,
                        distrusted_at,
                    }
                },
            )
            .collect())
    }

    /// How many worker hosts hold a valid token now (the runners a confirmation can go to).
    pub async fn active_sandbox_workers(&self) -> Result<u32, StoreError> {
        let sql = "SELECT COUNT(*) FROM sandbox_workers WHERE revoked_at IS NULL";
        let count: i64 = for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query_scalar(sql).fetch_one(pool).await?
        });
        Ok(u32::try_from(count).unwrap_or(u32::MAX))
    }

    /// Whether worker `name` holds a valid token (neither revoked nor distrusted).
    pub async fn sandbox_worker_active(&self, name: &str) -> Result<bool, StoreError> {
        let sql = "SELECT COUNT(*) FROM sandbox_workers WHERE name = $1 AND revoked_at IS NULL";
        let count: i64 = for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query_scalar(sql).bind(name).fetch_one(pool).await?
        });
        Ok(count > 0)
    }

    /// Marks a worker distrusted and ends its token, and gives back every unfinished job it
    /// holds (its lease ends: the next claim goes to another worker, and its outcome is
    /// refused). False when no worker has the name or it was distrusted already.
    pub async fn distrust_sandbox_worker(
        &self,
        name: &str,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let done = for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            let done = sqlx::query(
                "UPDATE sandbox_workers SET distrusted_at = $1, \
                 revoked_at = COALESCE(revoked_at, $1) WHERE name = $2 AND distrusted_at IS NULL",
            )
            .bind(now)
            .bind(name)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            sqlx::query(
                "UPDATE sandbox_jobs SET leased_until = NULL, lease_id = NULL, worker = NULL \
                 WHERE worker = $1 AND finished_at IS NULL",
            )
            .bind(name)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            done
        });
        Ok(done == 1)
    }

    /// Distrusted workers, by name.
    pub async fn distrusted_sandbox_workers(&self) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT name FROM sandbox_workers WHERE distrusted_at IS NOT NULL ORDER BY name";
        Ok(for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query_scalar(sql).fetch_all(pool).await?
        }))
    }

    /// The bugs with evidence `worker` measured (alone, or as the first or the confirming
    /// runner) that were not measured again since it was distrusted, oldest first.
    pub async fn bugs_measured_by(&self, worker: &str) -> Result<Vec<String>, StoreError> {
        // A coarse match on the stored text (the name in quotes), then the exact one on the
        // evidence's `workers` lists (a fix attempt's are in its checks).
        let sql = "SELECT e.bug_id, e.body FROM evidence e WHERE e.body LIKE $1 \
                   AND NOT EXISTS (SELECT 1 FROM evidence_distrust d \
                                   WHERE d.bug_id = e.bug_id AND d.worker = $2) \
                   ORDER BY e.created_at";
        let pattern = format!("%\"{worker}\"%");
        let rows: Vec<(String, String)> = for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query_as(sql).bind(&pattern).bind(worker).fetch_all(pool).await?
        });
        let mut bugs: Vec<String> = Vec::new();
        for (bug, body) in rows {
            let body: serde_json::Value = serde_json::from_str(&body)
                .map_err(|e| StoreError::Corrupt(format!("evidence body: {e}")))?;
            if measured_by(&body).any(|name| name == worker) && !bugs.contains(&bug) {
                bugs.push(bug);
            }
        }
        Ok(bugs)
    }

    /// Records that bug `bug` was dealt with after worker `worker` was distrusted.
    pub async fn settle_distrust(
        &self,
        bug: &str,
        worker: &str,
        now: Millis,
    ) -> Result<(), StoreError> {
        let sql = "INSERT INTO evidence_distrust (bug_id, worker, settled_at) VALUES ($1, $2, $3) \
                   ON CONFLICT (bug_id, worker) DO NOTHING";
        for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query(sql).bind(bug).bind(worker).bind(now).execute(pool).await?;
        });
        Ok(())
    }
}

/// The workers a piece of evidence names as its runners (its own run's, and its checks').
pub fn measured_by(body: &serde_json::Value) -> impl Iterator<Item = &str> {
    let own = body["workers"].as_array().into_iter().flatten();
    let checks = body["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|check| check["workers"].as_array().into_iter().flatten());
    own.chain(checks).filter_map(serde_json::Value::as_str)
}
