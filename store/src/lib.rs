//! The desk's persistence. One narrow API, two backends: a SQLite file (the embedded default,
//! no server needed) and PostgreSQL (several servers and workers on many hosts). Each public
//! function is one use case and runs as one transaction or one statement.

#[macro_use]
mod macros;
pub mod auth;
mod bench;
mod changes;
pub mod crew;
pub mod evidence;
mod file_mode;
mod intake;
pub mod leaders;
pub mod ledger;
pub mod listing;
pub mod notices;
pub mod outbox;
pub mod owners;
pub mod projects;
pub mod rate;
pub mod reports;
pub mod sandbox_jobs;
pub mod spend;
pub mod strangers;
pub mod testing;
mod url;
pub mod wakeups;
pub mod webhooks;

/// The newest migration; health reports it and tests check the database reached it.
pub const SCHEMA_VERSION: i64 = 26;

pub use auth::OwnerAccount;
pub use changes::ChangeListener;
pub use crew::CrewTask;
pub use evidence::EvidenceRecord;
pub use ledger::{Applied, ApplyError, Commit, LedgerSummary, StoredBug};
pub use listing::{ListedBug, Listing, ListingQuery, ListingSort};
pub use outbox::{ClaimedJob, LEASE_MS};
pub use owners::{ConfirmOutcome, InviteOutcome, NewOwner, OwnerListing};
pub use reports::{
    choose_cluster, Filed, IntakeLimits, NewReport, OpenCluster, RateLimited, ReportContent,
    ReportMessage, StoredReport, StrangerBudget,
};
pub use url::{DatabaseUrl, DatabaseUrlError};
pub use webhooks::{NewWebhook, WebhookDelivery};

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::time::Duration;

/// Which database a [`Store`] talks to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Backend {
    /// An embedded SQLite file.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

impl Backend {
    /// The name shown in health answers and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// What can go wrong talking to the database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened or reached.
    #[error("cannot reach the {backend} database: {source}")]
    Connect {
        /// Which backend.
        backend: &'static str,
        /// The driver's reason.
        #[source]
        source: sqlx::Error,
    },
    /// The SQLite file's folder (or the file itself, private) could not be created.
    #[error("cannot create {path} for the SQLite database: {source}")]
    CreateDir {
        /// The folder.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Applying migrations failed.
    #[error("migrations failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A query failed.
    #[error("database error: {0}")]
    Query(#[from] sqlx::Error),
    /// A stored document does not parse.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// A transaction this write shared did not commit: nothing of it was kept, and the
    /// caller may try again.
    #[error("not recorded: {0}")]
    NotCommitted(String),
}

#[derive(Clone, Debug)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// A connection pool to the desk's database.
#[derive(Clone, Debug)]
pub struct Store {
    pool: Pool,
    /// SQLite admits one writer at a time. Writers of this process queue here (and are woken
    /// the moment the previous one commits) instead of polling SQLite's busy handler, which
    /// sleeps between retries and leaves the database idle under contention.
    writer: std::sync::Arc<tokio::sync::Mutex<()>>,
    /// Reports waiting to be filed, a batch at a time ([`intake`]).
    intake: std::sync::Arc<intake::IntakeQueue>,
    /// SQLite only: the open clusters intake chooses from, loaded once.
    clusters: std::sync::Arc<std::sync::Mutex<reports::ClusterCache>>,
    /// Moves when work was added (a bug changed, a crew task or a sandbox job was queued):
    /// what waits for work wakes at once instead of polling ([`wakeups`]).
    work: std::sync::Arc<tokio::sync::watch::Sender<u64>>,
}

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

impl Store {
    /// Opens a pool. A SQLite file and its folder are created when missing, private to this
    /// user (folder 0700; the database, its WAL and shared memory 0600).
    #[tracing::instrument(skip_all, fields(backend = url.backend().as_str()))]
    pub async fn connect(url: &DatabaseUrl) -> Result<Store, StoreError> {
        Self::connect_with_pragmas(url, &[]).await
    }

    /// [`Store::connect`], with SQLite pragmas set on every connection (tests use
    /// `max_page_count` to make a database "full"); ignored for PostgreSQL.
    pub async fn connect_with_pragmas(
        url: &DatabaseUrl,
        pragmas: &[(&'static str, String)],
    ) -> Result<Store, StoreError> {
        match url {
            DatabaseUrl::Sqlite { path } => {
                let file = std::path::Path::new(path);
                if let Some(parent) = file.parent() {
                    if !parent.as_os_str().is_empty() {
                        file_mode::create_private_folder(parent).map_err(|source| {
                            StoreError::CreateDir {
                                path: parent.display().to_string(),
                                source,
                            }
                        })?;
                    }
                }
                file_mode::prepare_database_file(file).map_err(|source| StoreError::CreateDir {
                    path: file.display().to_string(),
                    source,
                })?;
                let options = SqliteConnectOptions::new()
                    .filename(path)
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    // FULL: a commit is on disk before we acknowledge it.
                    .synchronous(SqliteSynchronous::Full)
                    .foreign_keys(true)
                    .busy_timeout(Duration::from_secs(10));
                let options = pragmas.iter().fold(options, |options, (name, value)| {
                    options.pragma(*name, value.clone())
                });
                let pool = SqlitePoolOptions::new()
                    .max_connections(8)
                    .acquire_timeout(Duration::from_secs(10))
                    // A connection still inside a transaction that could be neither committed
                    // nor rolled back (SQLite rolled it back itself on a full disk, so the
                    // ROLLBACK failed too) would refuse every later BEGIN: it is closed instead
                    // of reused, and the pool opens a fresh one. Without this, one disk-full
                    // episode disabled every write until a restart.
                    .before_acquire(|connection, _| {
                        Box::pin(async move {
                            use sqlx::Connection;
                            let clean = !connection.is_in_transaction();
                            if !clean {
                                tracing::warn!("a database connection left inside a failed transaction is closed");
                            }
                            Ok(clean)
                        })
                    })
                    .connect_with(options)
                    .await
                    .map_err(|source| StoreError::Connect {
                        backend: "sqlite",
                        source,
                    })?;
                file_mode::tighten_companions(file);
                Ok(Store {
                    pool: Pool::Sqlite(pool),
                    writer: Default::default(),
                    clusters: Default::default(),
                    intake: Default::default(),
                    work: std::sync::Arc::new(tokio::sync::watch::channel(0).0),
                })
            }
            DatabaseUrl::Postgres { url } => {
                let pool = PgPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(Duration::from_secs(5))
                    .connect(url)
                    .await
                    .map_err(|source| StoreError::Connect {
                        backend: "postgres",
                        source,
                    })?;
                Ok(Store {
                    pool: Pool::Postgres(pool),
                    writer: Default::default(),
                    clusters: Default::default(),
                    intake: Default::default(),
                    work: std::sync::Arc::new(tokio::sync::watch::channel(0).0),
                })
            }
        }
    }

    /// Which backend this store uses.
    pub fn backend(&self) -> Backend {
        match self.pool {
            Pool::Sqlite(_) => Backend::Sqlite,
            Pool::Postgres(_) => Backend::Postgres,
        }
    }

    /// Applies every pending migration; a no-op when the schema is current.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match &self.pool {
            Pool::Sqlite(pool) => SQLITE_MIGRATIONS.run(pool).await?,
            Pool::Postgres(pool) => POSTGRES_MIGRATIONS.run(pool).await?,
        }
        // Owners from before the owners' trail get their first event, once.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        self.record_untracked_owners(now).await?;
        Ok(())
    }

    /// The newest migration applied, for health answers.
    pub async fn schema_version(&self) -> Result<Option<i64>, StoreError> {
        let sql = "SELECT MAX(version) FROM _sqlx_migrations WHERE success";
        let version = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_scalar(sql).fetch_one(pool).await?,
            Pool::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await?,
        };
        Ok(version)
    }

    /// Proves the database answers right now.
    pub async fn ping(&self) -> Result<(), StoreError> {
        match &self.pool {
            Pool::Sqlite(pool) => {
                sqlx::query("SELECT 1").execute(pool).await?;
            }
            Pool::Postgres(pool) => {
                sqlx::query("SELECT 1").execute(pool).await?;
            }
        }
        Ok(())
    }

    /// Writes a 16 KB row (what a typical report needs) and removes the older ones, in one
    /// transaction: an error means the database refuses writes now (a full disk, a read-only
    /// file) even if it still answers reads. Health calls it, at most every few seconds.
    pub async fn probe_write(&self, now: domain::workflow::Millis) -> Result<(), StoreError> {
        let pad = "x".repeat(16_000);
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            sqlx::query("INSERT INTO health_probe (at, pad) VALUES ($1, $2)")
                .bind(now)
                .bind(&pad)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM health_probe WHERE at < $1")
                .bind(now)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        });
        Ok(())
    }

    /// Closes every connection; later calls fail. Used at shutdown (and by tests).
    pub async fn close(&self) {
        match &self.pool {
            Pool::Sqlite(pool) => pool.close().await,
            Pool::Postgres(pool) => pool.close().await,
        }
    }

    /// Returns this installation's id, recording `candidate` as it on first use.
    pub async fn ensure_instance(
        &self,
        candidate: &str,
        now_ms: i64,
    ) -> Result<String, StoreError> {
        let insert =
            "INSERT INTO desk_instance (singleton, instance_id, created_at) VALUES (1, $1, $2) \
                      ON CONFLICT (singleton) DO NOTHING";
        let select = "SELECT instance_id FROM desk_instance WHERE singleton = 1";
        let id = match &self.pool {
            Pool::Sqlite(pool) => {
                let mut tx = pool.begin().await?;
                sqlx::query(insert)
                    .bind(candidate)
                    .bind(now_ms)
                    .execute(&mut *tx)
                    .await?;
                let id: String = sqlx::query_scalar(select).fetch_one(&mut *tx).await?;
                tx.commit().await?;
                id
            }
            Pool::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                sqlx::query(insert)
                    .bind(candidate)
                    .bind(now_ms)
                    .execute(&mut *tx)
                    .await?;
                let id: String = sqlx::query_scalar(select).fetch_one(&mut *tx).await?;
                tx.commit().await?;
                id
            }
        };
        Ok(id)
    }

    /// The stored password hash of an owner, by email.
    pub async fn owner_password_hash(&self, email: &str) -> Result<Option<String>, StoreError> {
        let sql = "SELECT password_hash FROM owners WHERE email = $1";
        let hash = match &self.pool {
            Pool::Sqlite(pool) => {
                sqlx::query_scalar(sql)
                    .bind(email)
                    .fetch_optional(pool)
                    .await?
            }
            Pool::Postgres(pool) => {
                sqlx::query_scalar(sql)
                    .bind(email)
                    .fetch_optional(pool)
                    .await?
            }
        };
        Ok(hash)
    }
}
