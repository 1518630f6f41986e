//! `DATABASE_URL`: which backend, and where.

use std::fmt;

/// A validated database location.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// A SQLite file at this path (relative paths are relative to the working directory).
    Sqlite {
        /// File path.
        path: String,
    },
    /// A PostgreSQL connection URL.
    Postgres {
        /// The full URL, credentials included.
        url: String,
    },
}

/// Why a database URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatabaseUrlError {
    /// Neither `sqlite:` nor `postgres://`.
    #[error("expected sqlite://PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE, got a value starting {0:?}")]
    UnknownScheme(String),
    /// `sqlite:` with no file.
    #[error("expected a file path after sqlite://, e.g. sqlite://data/r2r.db")]
    MissingPath,
    /// In-memory SQLite loses everything on restart.
    #[error("an in-memory SQLite database would lose every report on restart; give a file path")]
    InMemory,
    /// `postgres://` that the driver cannot read.
    #[error(
        "not a valid PostgreSQL URL ({0}); expected postgres://USER:PASSWORD@HOST:PORT/DATABASE"
    )]
    InvalidPostgres(String),
}

impl DatabaseUrl {
    /// The embedded default.
    pub fn default_sqlite() -> Self {
        DatabaseUrl::Sqlite {
            path: "data/r2r.db".to_owned(),
        }
    }

    /// Parses `sqlite://PATH`, `sqlite:PATH` or `postgres[ql]://…`.
    pub fn parse(text: &str) -> Result<Self, DatabaseUrlError> {
        let text = text.trim();
        if let Some(rest) = text
            .strip_prefix("sqlite://")
            .or_else(|| text.strip_prefix("sqlite:"))
        {
            let path = rest.split('?').next().unwrap_or_default();
            if path.is_empty() {
                return Err(DatabaseUrlError::MissingPath);
            }
            if path == ":memory:" {
                return Err(DatabaseUrlError::InMemory);
            }
            return Ok(DatabaseUrl::Sqlite {
                path: path.to_owned(),
            });
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            use std::str::FromStr;
            sqlx::postgres::PgConnectOptions::from_str(text)
                .map_err(|error| DatabaseUrlError::InvalidPostgres(error.to_string()))?;
            return Ok(DatabaseUrl::Postgres {
                url: text.to_owned(),
            });
        }
        let start: String = text.chars().take(12).collect();
        Err(DatabaseUrlError::UnknownScheme(start))
    }

    /// Which backend the URL selects.
    pub fn backend(&self) -> crate::Backend {
        match self {
            DatabaseUrl::Sqlite { .. } => crate::Backend::Sqlite,
            DatabaseUrl::Postgres { .. } => crate::Backend::Postgres,
        }
    }
}

/// Never prints a PostgreSQL password.
impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatabaseUrl::Sqlite { path } => write!(f, "sqlite://{path}"),
            DatabaseUrl::Postgres { .. } => f.write_str("postgres://<redacted>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls_in_both_spellings_name_a_file() {
        for text in [
            "sqlite://data/r2r.db",
            "sqlite:data/r2r.db",
            "sqlite://data/r2r.db?mode=rwc",
        ] {
            assert_eq!(
                DatabaseUrl::parse(text),
                Ok(DatabaseUrl::Sqlite {
                    path: "data/r2r.db".into()
                }),
                "{text}"
            );
        }
        assert_eq!(
            DatabaseUrl::parse("sqlite:///var/lib/r2r.db"),
            Ok(DatabaseUrl::Sqlite {
                path: "/var/lib/r2r.db".into()
            })
        );
    }

    #[test]
    fn postgres_urls_are_checked_by_the_driver() {
        assert!(matches!(
            DatabaseUrl::parse("postgres://r2r:secret@127.0.0.1:5432/r2r"),
            Ok(DatabaseUrl::Postgres { .. })
        ));
        assert!(matches!(
            DatabaseUrl::parse("postgresql://localhost/r2r"),
            Ok(DatabaseUrl::Postgres { .. })
        ));
        assert!(matches!(
            DatabaseUrl::parse("postgres://host:notaport/db"),
            Err(DatabaseUrlError::InvalidPostgres(_))
        ));
    }

    #[test]
    fn other_values_are_refused_with_the_expected_form() {
        let error = DatabaseUrl::parse("mysql://localhost/db").unwrap_err();
        assert!(error
            .to_string()
            .contains("expected sqlite://PATH or postgres://"));
        assert_eq!(
            DatabaseUrl::parse("sqlite://"),
            Err(DatabaseUrlError::MissingPath)
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite::memory:"),
            Err(DatabaseUrlError::InMemory)
        );
    }

    #[test]
    fn debug_output_hides_postgres_credentials() {
        let url = DatabaseUrl::parse("postgres://r2r:hunter2@localhost/r2r").unwrap();
        assert!(!format!("{url:?}").contains("hunter2"));
    }
}
