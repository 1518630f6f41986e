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

/// What [`Store::write_project`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectWrite {
    /// Written.
    Written,
    /// Nothing written: the id is taken (adding), or gone or changed since it was read
    /// (editing).
    Stale,
    /// Nothing written: another stored project names `component`.
    ComponentTaken {
        /// The component.
        component: String,
        /// The project naming it.
        project: String,
    },
}

/// What a stored definition (`domain::project::ProjectSpec` as JSON) claims for itself alone:
/// its components, `github:<owner/name>` (lower-cased), `deploy:<service>` and
/// `forge:<its repository's path>`.
pub fn claims(spec: &str) -> Vec<String> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(spec) else {
        return Vec::new();
    };
    let mut claims: Vec<String> =
        serde_json::from_value(value["components"].clone()).unwrap_or_default();
    if let Some(github) = value["github"].as_str() {
        claims.push(format!("github:{}", github.to_ascii_lowercase()));
    }
    if let Some(service) = value["deploy"].as_str() {
        claims.push(format!("deploy:{service}"));
    }
    if let Some(forge) = value["forge_path"].as_str() {
        claims.push(format!("forge:{forge}"));
    }
    claims
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

    /// How many projects there are and the sum of their change times: moves whenever one is
    /// added or changed (an edit always moves its own row's time forward, so the sum moves
    /// even when another row's time is later, as on a host whose clock runs ahead).
    pub async fn projects_stamp(&self) -> Result<(i64, Millis), StoreError> {
        let sql = "SELECT COUNT(*), CAST(COALESCE(SUM(updated_at), 0) AS BIGINT) FROM projects";
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

    /// Adds (`expected` none) or replaces (at the `updated_at` the editor read) the project
    /// `id` with `components` (its [`claims`]), in one transaction that also checks no other
    /// stored project claims one of them — two servers or two `r2r project add` at once cannot
    /// both claim a component, a GitHub repository or a service. The stamp always moves
    /// forward.
    pub async fn write_project(
        &self,
        id: &str,
        spec: &str,
        components: &[String],
        expected: Option<Millis>,
        now: Millis,
        by: &str,
    ) -> Result<ProjectWrite, StoreError> {
        let lock = (self.backend() == crate::Backend::Postgres)
            .then_some("SELECT pg_advisory_xact_lock(727274202)");
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            if let Some(lock) = lock {
                sqlx::query(lock).execute(&mut *tx).await?;
            }
            let others: Vec<(String, String)> =
                sqlx::query_as("SELECT id, spec FROM projects WHERE id <> $1")
                    .bind(id)
                    .fetch_all(&mut *tx)
                    .await?;
            for (other, text) in others {
                let theirs = claims(&text);
                if let Some(clash) = components.iter().find(|c| theirs.contains(c)) {
                    return Ok(ProjectWrite::ComponentTaken {
                        component: clash.clone(),
                        project: other,
                    });
                }
            }
            let written = match expected {
                None => sqlx::query(
                    "INSERT INTO projects (id, spec, created_at, updated_at, updated_by) \
                     VALUES ($1, $2, $3, $3, $4) ON CONFLICT (id) DO NOTHING",
                )
                .bind(id)
                .bind(spec)
                .bind(now)
                .bind(by)
                .execute(&mut *tx)
                .await?
                .rows_affected(),
                Some(at) => sqlx::query(
                    "UPDATE projects SET spec = $1, updated_at = $2, updated_by = $3 \
                     WHERE id = $4 AND updated_at = $5",
                )
                .bind(spec)
                .bind(now.max(at + 1))
                .bind(by)
                .bind(id)
                .bind(at)
                .execute(&mut *tx)
                .await?
                .rows_affected(),
            };
            if written != 1 {
                return Ok(ProjectWrite::Stale);
            }
            tx.commit().await?;
            Ok(ProjectWrite::Written)
        })
    }
}
