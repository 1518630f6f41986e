//! Projects owners defined on the desk (the one the environment configures is not stored).
//! Each is its definition as JSON, written whole; a stamp lets every server on the database
//! notice a change without reading the definitions again.

use crate::{Pool, Store, StoreError};
use domain::workflow::Millis;

/// One stored project definition.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct StoredProject {
    /// Its id.
    pub id: String,
    /// Its definition (`domain::project::ProjectSpec` as JSON).
    pub spec: String,
    /// When it was added.
    pub created_at: Millis,
    /// When it last changed.
    pub updated_at: Millis,
    /// Who last changed it (an owner's email, or `cli`).
    pub updated_by: String,
}

impl Store {
    /// Every stored project, by id.
    pub async fn projects(&self) -> Result<Vec<StoredProject>, StoreError> {
        let sql = "SELECT id, spec, created_at, updated_at, updated_by FROM projects ORDER BY id";
        let rows: Vec<StoredProject> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).fetch_all(pool).await?,
        };
        Ok(rows)
    }

    /// How many projects there are and the latest change: moves whenever one is added or
    /// changed.
    pub async fn projects_stamp(&self) -> Result<(i64, Millis), StoreError> {
        let sql = "SELECT COUNT(*), COALESCE(MAX(updated_at), 0) FROM projects";
        let stamp: (i64, i64) = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_one(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).fetch_one(pool).await?,
        };
        Ok(stamp)
    }

    /// How many bugs name `component` (a project may not give up a component its bugs name).
    pub async fn bugs_naming(&self, component: &str) -> Result<i64, StoreError> {
        let sql = "SELECT COUNT(*) FROM bugs WHERE component = $1";
        let (count,): (i64,) = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).bind(component).fetch_one(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).bind(component).fetch_one(pool).await?,
        };
        Ok(count)
    }

    /// Adds a project; `false` (nothing written) when the id is taken.
    pub async fn add_project(
        &self,
        id: &str,
        spec: &str,
        now: Millis,
        by: &str,
    ) -> Result<bool, StoreError> {
        let added = for_each_backend!(self, pool, _begin => {
            sqlx::query(
                "INSERT INTO projects (id, spec, created_at, updated_at, updated_by) \
                 VALUES ($1, $2, $3, $3, $4) ON CONFLICT (id) DO NOTHING",
            )
            .bind(id)
            .bind(spec)
            .bind(now)
            .bind(by)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(added == 1)
    }

    /// Replaces a project's definition if it is still at `expected_updated_at` (so two
    /// owners editing at once do not silently overwrite each other); `false` when it is gone
    /// or changed meanwhile. The stamp always moves forward.
    pub async fn update_project(
        &self,
        id: &str,
        spec: &str,
        expected_updated_at: Millis,
        now: Millis,
        by: &str,
    ) -> Result<bool, StoreError> {
        let updated = for_each_backend!(self, pool, _begin => {
            sqlx::query(
                "UPDATE projects SET spec = $1, updated_at = $2, updated_by = $3 \
                 WHERE id = $4 AND updated_at = $5",
            )
            .bind(spec)
            .bind(now.max(expected_updated_at + 1))
            .bind(by)
            .bind(id)
            .bind(expected_updated_at)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(updated == 1)
    }
}
