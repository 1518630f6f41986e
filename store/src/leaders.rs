//! Servers on one database: instances and their heartbeats, and leaderships — a named job
//! (the deployer and recorder of one service) that only one instance does at a time. A
//! leadership is held until a time its holder keeps moving forward; when the holder stops
//! (killed, cut off from the database) the next instance that asks takes it once that time
//! has passed.

use crate::{Store, StoreError};
use domain::workflow::Millis;

/// Who holds a leadership, and until when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leader {
    /// The holder's instance id.
    pub holder: String,
    /// Where other servers reach the holder (its base URL).
    pub address: String,
    /// Held until (ms).
    pub until: Millis,
}

/// One server process on this database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// Its id (new at every start).
    pub id: String,
    /// Its host name.
    pub host: String,
    /// Its process id.
    pub pid: i64,
    /// Its base URL.
    pub address: String,
    /// When it started (ms).
    pub started_at: Millis,
    /// Its last heartbeat (ms).
    pub beat_at: Millis,
}

/// Who holds a leadership now.
const HOLDER: &str = "SELECT holder, address, until FROM leaders WHERE name = $1";

fn leader((holder, address, until): (String, String, Millis)) -> Leader {
    Leader {
        holder,
        address,
        until,
    }
}

impl Store {
    /// Records instance `instance`'s heartbeat at `now` (inserting it the first time), and
    /// forgets instances silent since before `forget_before`.
    pub async fn beat_instance(
        &self,
        instance: &Instance,
        now: Millis,
        forget_before: Millis,
    ) -> Result<(), StoreError> {
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            sqlx::query(
                "INSERT INTO instances (id, host, pid, address, started_at, beat_at) \
                 VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at, address = excluded.address",
            )
            .bind(&instance.id)
            .bind(&instance.host)
            .bind(instance.pid)
            .bind(&instance.address)
            .bind(instance.started_at)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM instances WHERE beat_at < $1")
                .bind(forget_before)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        });
        Ok(())
    }

    /// The instances that beat since `since`, oldest start first.
    pub async fn live_instances(&self, since: Millis) -> Result<Vec<Instance>, StoreError> {
        let sql = "SELECT id, host, pid, address, started_at, beat_at FROM instances \
                   WHERE beat_at >= $1 ORDER BY started_at, id";
        let rows: Vec<(String, String, i64, String, Millis, Millis)> = for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query_as(sql).bind(since).fetch_all(pool).await?
        });
        Ok(rows
            .into_iter()
            .map(|(id, host, pid, address, started_at, beat_at)| Instance {
                id,
                host,
                pid,
                address,
                started_at,
                beat_at,
            })
            .collect())
    }

    /// Asks for leadership `name` for `holder` (reached at `address`) until `until`: taken
    /// when nobody holds it, when its holding ran out before `now`, or renewed when `holder`
    /// holds it already. Answers who holds it afterwards (the caller leads when that is it).
    pub async fn hold_leadership(
        &self,
        name: &str,
        holder: &str,
        address: &str,
        now: Millis,
        until: Millis,
    ) -> Result<Leader, StoreError> {
        let row: (String, String, Millis) = for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            sqlx::query(
                "INSERT INTO leaders (name, holder, address, until) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, \
                 address = excluded.address, until = excluded.until \
                 WHERE leaders.holder = excluded.holder OR leaders.until < $5",
            )
            .bind(name)
            .bind(holder)
            .bind(address)
            .bind(until)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let row = sqlx::query_as(HOLDER)
                .bind(name)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            row
        });
        Ok(leader(row))
    }

    /// Who holds leadership `name` at `now`, if anyone.
    pub async fn leader_of(&self, name: &str, now: Millis) -> Result<Option<Leader>, StoreError> {
        let sql = "SELECT holder, address, until FROM leaders WHERE name = $1 AND until >= $2";
        let row: Option<(String, String, Millis)> = for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query_as(sql).bind(name).bind(now).fetch_optional(pool).await?
        });
        Ok(row.map(leader))
    }

    /// Instance `id`, if it beat within the hour.
    pub async fn instance(&self, id: &str) -> Result<Option<Instance>, StoreError> {
        let sql = "SELECT id, host, pid, address, started_at, beat_at FROM instances WHERE id = $1";
        let row: Option<(String, String, i64, String, Millis, Millis)> = for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query_as(sql).bind(id).fetch_optional(pool).await?
        });
        Ok(
            row.map(|(id, host, pid, address, started_at, beat_at)| Instance {
                id,
                host,
                pid,
                address,
                started_at,
                beat_at,
            }),
        )
    }

    /// Takes leadership `name` over from `from`, whose process the caller knows is gone
    /// (an earlier life of a restarted server on the same host): only while `from` still
    /// holds it. Answers who holds it afterwards.
    pub async fn take_over_leadership(
        &self,
        name: &str,
        from: &str,
        holder: &str,
        address: &str,
        until: Millis,
    ) -> Result<Leader, StoreError> {
        let row: (String, String, Millis) = for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            sqlx::query(
                "UPDATE leaders SET holder = $1, address = $2, until = $3 \
                 WHERE name = $4 AND holder = $5",
            )
            .bind(holder)
            .bind(address)
            .bind(until)
            .bind(name)
            .bind(from)
            .execute(&mut *tx)
            .await?;
            let row = sqlx::query_as(HOLDER)
                .bind(name)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            row
        });
        Ok(leader(row))
    }

    /// Gives leadership `name` up, if `holder` holds it (a clean stop hands it on at once).
    pub async fn give_up_leadership(&self, name: &str, holder: &str) -> Result<(), StoreError> {
        for_each_backend!(self, pool, begin => {
            let _ = begin;
            sqlx::query("DELETE FROM leaders WHERE name = $1 AND holder = $2")
                .bind(name)
                .bind(holder)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}
