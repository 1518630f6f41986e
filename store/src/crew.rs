//! The crew's hand-offs and heartbeats (rules in `domain::crew`).

use crate::{Store, StoreError};
use domain::workflow::Millis;
use serde::Serialize;

/// A recorded hand-off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrewTask {
    /// Its id.
    pub id: String,
    /// What makes two sends the same hand-off.
    pub dedupe_key: String,
    /// The bug it is about, if any.
    pub bug_id: Option<String>,
    /// What to do (`reproduce`, `fix`, `review`, …).
    pub kind: String,
    /// Sending role.
    pub sender: String,
    /// Addressed role.
    pub addressed_to: String,
    /// The exact body text.
    pub body: String,
    /// Its SHA-256.
    pub body_sha256: String,
    /// When it was sent.
    pub created_at: Millis,
    /// When it was accepted, or its lease last renewed.
    pub accepted_at: Option<Millis>,
    /// When it was completed.
    pub completed_at: Option<Millis>,
    /// How it ended.
    pub outcome: Option<String>,
}

type Row = (
    String,
    String,
    Option<String>,
    String,
    String,
    String,
    String,
    String,
    i64,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

const COLUMNS: &str = "id, dedupe_key, bug_id, kind, sender, addressed_to, body, body_sha256, created_at, accepted_at, completed_at, outcome";

fn task(row: Row) -> CrewTask {
    CrewTask {
        id: row.0,
        dedupe_key: row.1,
        bug_id: row.2,
        kind: row.3,
        sender: row.4,
        addressed_to: row.5,
        body: row.6,
        body_sha256: row.7,
        created_at: row.8,
        accepted_at: row.9,
        completed_at: row.10,
        outcome: row.11,
    }
}

impl Store {
    /// Records a hand-off; when one with the same dedupe key exists, returns that one
    /// instead (`false`: nothing new was written).
    pub async fn send_task(&self, new: &CrewTask) -> Result<(CrewTask, bool), StoreError> {
        let insert = format!(
            "INSERT INTO crew_tasks ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL, NULL) ON CONFLICT (dedupe_key) DO NOTHING"
        );
        let written = for_each_backend!(self, pool, _begin => {
            sqlx::query(&insert)
                .bind(&new.id)
                .bind(&new.dedupe_key)
                .bind(&new.bug_id)
                .bind(&new.kind)
                .bind(&new.sender)
                .bind(&new.addressed_to)
                .bind(&new.body)
                .bind(&new.body_sha256)
                .bind(new.created_at)
                .execute(pool)
                .await?
                .rows_affected()
        });
        let select = format!("SELECT {COLUMNS} FROM crew_tasks WHERE dedupe_key = $1");
        let row: Row = for_each_backend!(self, pool, _begin => {
            sqlx::query_as(&select).bind(&new.dedupe_key).fetch_one(pool).await?
        });
        if written == 1 {
            self.wake();
        }
        Ok((task(row), written == 1))
    }

    /// One task.
    pub async fn crew_task(&self, id: &str) -> Result<Option<CrewTask>, StoreError> {
        let select = format!("SELECT {COLUMNS} FROM crew_tasks WHERE id = $1");
        let row: Option<Row> = for_each_backend!(self, pool, _begin => {
            sqlx::query_as(&select).bind(id).fetch_optional(pool).await?
        });
        Ok(row.map(task))
    }

    /// Tasks addressed to `role` that are free to take, oldest first: never accepted, or
    /// accepted before `lease_from` and still not completed (the worker's lease ran out).
    pub async fn open_tasks_for(
        &self,
        role: &str,
        lease_from: Millis,
    ) -> Result<Vec<CrewTask>, StoreError> {
        let select = format!(
            "SELECT {COLUMNS} FROM crew_tasks WHERE addressed_to = $1 AND completed_at IS NULL \
             AND (accepted_at IS NULL OR accepted_at < $2) ORDER BY created_at, id LIMIT 50"
        );
        let rows: Vec<Row> = for_each_backend!(self, pool, _begin => {
            sqlx::query_as(&select).bind(role).bind(lease_from).fetch_all(pool).await?
        });
        Ok(rows.into_iter().map(task).collect())
    }

    /// The newest `limit` tasks about `bug`, newest first.
    pub async fn tasks_for_bug(&self, bug: &str, limit: i64) -> Result<Vec<CrewTask>, StoreError> {
        let select = format!(
            "SELECT {COLUMNS} FROM crew_tasks WHERE bug_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
        );
        let rows: Vec<Row> = for_each_backend!(self, pool, _begin => {
            sqlx::query_as(&select).bind(bug).bind(limit).fetch_all(pool).await?
        });
        Ok(rows.into_iter().map(task).collect())
    }

    /// Renews the lease of an accepted, open task from `lease` (the acceptance time its worker
    /// holds) to `now`, atomically: false when the task is completed or was accepted again
    /// since (another worker holds it now).
    pub async fn renew_task(
        &self,
        id: &str,
        lease: Millis,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE crew_tasks SET accepted_at = $1 WHERE id = $2 AND accepted_at = $3 \
                   AND completed_at IS NULL";
        let rows = for_each_backend!(self, pool, _begin => {
            sqlx::query(sql).bind(now).bind(id).bind(lease).execute(pool).await?.rows_affected()
        });
        Ok(rows == 1)
    }

    /// The newest `limit` tasks.
    pub async fn recent_tasks(&self, limit: i64) -> Result<Vec<CrewTask>, StoreError> {
        let select =
            format!("SELECT {COLUMNS} FROM crew_tasks ORDER BY created_at DESC, id DESC LIMIT $1");
        let rows: Vec<Row> = for_each_backend!(self, pool, _begin => {
            sqlx::query_as(&select).bind(limit).fetch_all(pool).await?
        });
        Ok(rows.into_iter().map(task).collect())
    }

    /// Marks a task accepted under a new lease, atomically: false when it is completed or
    /// another acceptance at or after `lease_from` still holds it.
    pub async fn accept_task(
        &self,
        id: &str,
        now: Millis,
        lease_from: Millis,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE crew_tasks SET accepted_at = $1 WHERE id = $2 AND completed_at IS NULL \
                   AND (accepted_at IS NULL OR accepted_at < $3)";
        let rows = for_each_backend!(self, pool, _begin => {
            sqlx::query(sql).bind(now).bind(id).bind(lease_from).execute(pool).await?.rows_affected()
        });
        Ok(rows == 1)
    }

    /// Marks an accepted task completed, once: false otherwise. With `lease`, only while the
    /// task is still held under that acceptance (a worker whose lease ran out and was taken
    /// over cannot complete the task the next worker now holds).
    pub async fn complete_task(
        &self,
        id: &str,
        outcome: &str,
        now: Millis,
        lease: Option<Millis>,
    ) -> Result<bool, StoreError> {
        let sql = match lease {
            None => {
                "UPDATE crew_tasks SET completed_at = $1, outcome = $2 \
                 WHERE id = $3 AND accepted_at IS NOT NULL AND completed_at IS NULL"
            }
            Some(_) => {
                "UPDATE crew_tasks SET completed_at = $1, outcome = $2 \
                 WHERE id = $3 AND accepted_at = $4 AND completed_at IS NULL"
            }
        };
        let rows = for_each_backend!(self, pool, _begin => {
            let query = sqlx::query(sql).bind(now).bind(outcome).bind(id);
            let query = match lease {
                Some(lease) => query.bind(lease),
                None => query,
            };
            query.execute(pool).await?.rows_affected()
        });
        Ok(rows == 1)
    }

    /// Records `role`'s heartbeat.
    pub async fn heartbeat(&self, role: &str, detail: &str, now: Millis) -> Result<(), StoreError> {
        let sql = "INSERT INTO crew_heartbeats (role, last_seen_at, detail) VALUES ($1, $2, $3) \
                   ON CONFLICT (role) DO UPDATE SET last_seen_at = excluded.last_seen_at, detail = excluded.detail";
        for_each_backend!(self, pool, _begin => {
            sqlx::query(sql).bind(role).bind(now).bind(detail).execute(pool).await?;
        });
        Ok(())
    }

    /// Every role's last heartbeat: (role, at, detail).
    pub async fn heartbeats(&self) -> Result<Vec<(String, Millis, String)>, StoreError> {
        let sql = "SELECT role, last_seen_at, detail FROM crew_heartbeats ORDER BY role";
        Ok(for_each_backend!(self, pool, _begin => {
            sqlx::query_as(sql).fetch_all(pool).await?
        }))
    }
}
