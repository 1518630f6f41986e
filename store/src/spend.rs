//! The spend guard's book (see `domain::spend` for the rule). A reservation is checked and
//! written in one serialised transaction (SQLite's write lock; a PostgreSQL advisory lock),
//! so parallel calls can never overshoot the budget.

use crate::{Store, StoreError};
use domain::spend::{admit, booked, Budget, Micros, SpendRefusal, UnconfirmedUsage, Usage};
use domain::workflow::Millis;
use serde::Serialize;

/// Advisory lock key serialising reservations on PostgreSQL.
const SPEND_LOCK: i64 = 0x7232_725f_7370_656e; // "r2r_spen"
const HOUR_MS: i64 = 3_600_000;

/// A call about to start.
#[derive(Clone, Debug)]
pub struct NewCall<'a> {
    /// Unique id.
    pub id: &'a str,
    /// Who is calling (a crew role, a client id), as authenticated: only it may settle the
    /// call.
    pub client: &'a str,
    /// Provider name.
    pub provider: &'a str,
    /// Model name.
    pub model: &'a str,
    /// Its worst-case cost.
    pub worst_case: Micros,
    /// The bug it works on (its per-bug budget applies).
    pub bug: &'a str,
    /// Whether that bug is unconfirmed now (`domain::workflow::Bug::unconfirmed`): the call
    /// then comes out of the unconfirmed bugs' share.
    pub unconfirmed: bool,
}

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallEnd {
    /// It answered, reporting this cost (if the provider said).
    Answered(Option<Micros>),
    /// It timed out.
    TimedOut,
    /// The connection failed or dropped.
    ConnectionLost,
}

/// What a settlement did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settlement {
    /// The call is settled.
    Settled,
    /// No open call has this id (unknown, or settled already).
    NotOpen,
    /// The call is open but was reserved by another client; nothing changed.
    NotYours,
}

/// The book's totals, for the desk's crew page.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SpendSummary {
    /// Settled plus open reservations at worst case.
    pub committed: Micros,
    /// Settled only.
    pub settled: Micros,
    /// Calls not settled yet.
    pub open_calls: u64,
    /// All calls ever.
    pub calls: u64,
    /// Calls started in the last hour.
    pub calls_last_hour: u64,
    /// What the calls about unconfirmed bugs committed (settled plus open at worst case).
    pub unconfirmed_committed: Micros,
    /// Calls about unconfirmed bugs started in the last hour.
    pub unconfirmed_calls_last_hour: u64,
}

fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

impl Store {
    /// Reserves a call's worst case if the budget allows; `Ok(Err(_))` says why not.
    pub async fn reserve_model_call(
        &self,
        call: &NewCall<'_>,
        budget: &Budget,
        now: Millis,
    ) -> Result<Result<(), SpendRefusal>, StoreError> {
        let worst = i64::try_from(call.worst_case).unwrap_or(i64::MAX);
        let usage_sql = "SELECT CAST(COALESCE(SUM(COALESCE(settled_micros, reserved_micros)), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN created_at > $1 THEN 1 ELSE 0 END), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN created_at > $1 AND client = $2 THEN 1 ELSE 0 END), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN bug_id = $3 THEN COALESCE(settled_micros, reserved_micros) ELSE 0 END), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN unconfirmed = 1 THEN COALESCE(settled_micros, reserved_micros) ELSE 0 END), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN unconfirmed = 1 AND created_at > $1 THEN 1 ELSE 0 END), 0) AS BIGINT) \
             FROM model_calls";
        let insert_sql =
            "INSERT INTO model_calls (id, client, provider, model, reserved_micros, created_at, bug_id, unconfirmed) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
        let decision = for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            if self.backend() == crate::Backend::Postgres {
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(SPEND_LOCK)
                    .execute(&mut *tx)
                    .await?;
            }
            let (committed, hour, client_hour, bug, unconfirmed, unconfirmed_hour): (i64, i64, i64, i64, i64, i64) = sqlx::query_as(usage_sql)
                .bind(now - HOUR_MS)
                .bind(call.client)
                .bind(call.bug)
                .fetch_one(&mut *tx)
                .await?;
            let usage = Usage {
                committed: to_u64(committed),
                bug_committed: to_u64(bug),
                calls_last_hour: u32::try_from(hour).unwrap_or(u32::MAX),
                client_calls_last_hour: u32::try_from(client_hour).unwrap_or(u32::MAX),
                unconfirmed: call.unconfirmed.then(|| UnconfirmedUsage {
                    committed: to_u64(unconfirmed),
                    calls_last_hour: u32::try_from(unconfirmed_hour).unwrap_or(u32::MAX),
                }),
            };
            let decision = admit(budget, &usage, call.worst_case);
            if decision.is_ok() {
                sqlx::query(insert_sql)
                    .bind(call.id)
                    .bind(call.client)
                    .bind(call.provider)
                    .bind(call.model)
                    .bind(worst)
                    .bind(now)
                    .bind(call.bug)
                    .bind(i32::from(call.unconfirmed))
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            decision
        });
        Ok(decision)
    }

    /// What the calls about `bug` cost: settled plus open reservations at worst case, and
    /// how many calls.
    pub async fn spend_of_bug(&self, bug: &str) -> Result<(Micros, u64), StoreError> {
        let sql =
            "SELECT CAST(COALESCE(SUM(COALESCE(settled_micros, reserved_micros)), 0) AS BIGINT), \
             CAST(COUNT(*) AS BIGINT) FROM model_calls WHERE bug_id = $1";
        // A read: no writer lock.
        let (committed, calls): (i64, i64) = match &self.pool {
            crate::Pool::Sqlite(pool) => sqlx::query_as(sql).bind(bug).fetch_one(pool).await?,
            crate::Pool::Postgres(pool) => sqlx::query_as(sql).bind(bug).fetch_one(pool).await?,
        };
        Ok((to_u64(committed), to_u64(calls)))
    }

    /// The `limit` bugs whose calls cost most: bug, committed (settled plus open at worst
    /// case), calls — most first.
    pub async fn spend_by_bug(&self, limit: u32) -> Result<Vec<(String, Micros, u64)>, StoreError> {
        let sql = "SELECT bug_id, CAST(SUM(COALESCE(settled_micros, reserved_micros)) AS BIGINT) AS spent, \
             CAST(COUNT(*) AS BIGINT) FROM model_calls WHERE bug_id IS NOT NULL \
             GROUP BY bug_id ORDER BY spent DESC, bug_id LIMIT $1";
        let limit = i64::from(limit);
        let rows: Vec<(String, i64, i64)> = match &self.pool {
            crate::Pool::Sqlite(pool) => sqlx::query_as(sql).bind(limit).fetch_all(pool).await?,
            crate::Pool::Postgres(pool) => sqlx::query_as(sql).bind(limit).fetch_all(pool).await?,
        };
        Ok(rows
            .into_iter()
            .map(|(bug, spent, calls)| (bug, to_u64(spent), to_u64(calls)))
            .collect())
    }

    /// Spend and calls per component of the bugs they were booked to (a project is a set of
    /// components), by component.
    pub async fn spend_by_component(&self) -> Result<Vec<(String, Micros, u64)>, StoreError> {
        let sql = "SELECT b.component, CAST(SUM(COALESCE(m.settled_micros, m.reserved_micros)) AS BIGINT), \
             CAST(COUNT(*) AS BIGINT) FROM model_calls m JOIN bugs b ON b.id = m.bug_id \
             GROUP BY b.component ORDER BY b.component";
        let rows: Vec<(String, i64, i64)> = match &self.pool {
            crate::Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_all(pool).await?,
            crate::Pool::Postgres(pool) => sqlx::query_as(sql).fetch_all(pool).await?,
        };
        Ok(rows
            .into_iter()
            .map(|(component, spent, calls)| (component, to_u64(spent), to_u64(calls)))
            .collect())
    }

    /// Settles an open call on behalf of `client`, which must be the client that reserved it
    /// (one role cannot settle, and so book, another role's reservation).
    pub async fn settle_model_call(
        &self,
        id: &str,
        client: &str,
        end: CallEnd,
        now: Millis,
    ) -> Result<Settlement, StoreError> {
        let open: Option<(i64, String)> = for_each_backend!(self, pool, _begin => {
            sqlx::query_as("SELECT reserved_micros, client FROM model_calls WHERE id = $1 AND settled_micros IS NULL")
                .bind(id)
                .fetch_optional(pool)
                .await?
        });
        let Some((reserved, reserved_by)) = open else {
            return Ok(Settlement::NotOpen);
        };
        if reserved_by != client {
            return Ok(Settlement::NotYours);
        }
        let (cost, outcome) = match end {
            CallEnd::Answered(reported) => (booked(to_u64(reserved), reported, true), "answered"),
            CallEnd::TimedOut => (booked(to_u64(reserved), None, false), "timed_out"),
            CallEnd::ConnectionLost => (booked(to_u64(reserved), None, false), "connection_lost"),
        };
        let sql = "UPDATE model_calls SET settled_micros = $1, outcome = $2, settled_at = $3 \
                   WHERE id = $4 AND client = $5 AND settled_micros IS NULL";
        let rows = for_each_backend!(self, pool, _begin => {
            sqlx::query(sql)
                .bind(i64::try_from(cost).unwrap_or(i64::MAX))
                .bind(outcome)
                .bind(now)
                .bind(id)
                .bind(client)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(if rows == 1 {
            Settlement::Settled
        } else {
            Settlement::NotOpen
        })
    }

    /// The book's totals.
    pub async fn spend_summary(&self, now: Millis) -> Result<SpendSummary, StoreError> {
        let sql = "SELECT CAST(COALESCE(SUM(COALESCE(settled_micros, reserved_micros)), 0) AS BIGINT), \
             CAST(COALESCE(SUM(COALESCE(settled_micros, 0)), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN settled_micros IS NULL THEN 1 ELSE 0 END), 0) AS BIGINT), \
             COUNT(*), \
             CAST(COALESCE(SUM(CASE WHEN created_at > $1 THEN 1 ELSE 0 END), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN unconfirmed = 1 THEN COALESCE(settled_micros, reserved_micros) ELSE 0 END), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN unconfirmed = 1 AND created_at > $1 THEN 1 ELSE 0 END), 0) AS BIGINT) \
             FROM model_calls";
        let row: (i64, i64, i64, i64, i64, i64, i64) = for_each_backend!(self, pool, _begin => {
            sqlx::query_as(sql).bind(now - HOUR_MS).fetch_one(pool).await?
        });
        Ok(SpendSummary {
            committed: to_u64(row.0),
            settled: to_u64(row.1),
            open_calls: to_u64(row.2),
            calls: to_u64(row.3),
            calls_last_hour: to_u64(row.4),
            unconfirmed_committed: to_u64(row.5),
            unconfirmed_calls_last_hour: to_u64(row.6),
        })
    }
}
