//! Owner sessions and invitations, and the crew roles' bearer tokens — all stored as SHA-256
//! hashes of the secrets.

use crate::{Pool, Store, StoreError};
use domain::workflow::Millis;

/// An owner, as a session or a login finds them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerAccount {
    /// Stable id.
    pub id: String,
    /// Login email.
    pub email: String,
    /// Argon2 PHC string.
    pub password_hash: String,
    /// Whether the account may act: `false` while it waits for a second owner's confirmation.
    pub active: bool,
}

type OwnerRow = (String, String, String, String);

impl Store {
    /// The owner with this email.
    pub async fn owner_by_email(&self, email: &str) -> Result<Option<OwnerAccount>, StoreError> {
        let sql = "SELECT id, email, password_hash, status FROM owners WHERE lower(email) = $1";
        let email = crate::owners::normalise_email(email);
        let email = email.as_str();
        let row: Option<OwnerRow> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).bind(email).fetch_optional(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).bind(email).fetch_optional(pool).await?,
        };
        Ok(row.map(|(id, email, password_hash, status)| OwnerAccount {
            id,
            email,
            password_hash,
            active: status == "active",
        }))
    }

    /// Every active owner's email, oldest account first.
    pub async fn owner_emails(&self) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT email FROM owners WHERE status = 'active' ORDER BY created_at, email";
        Ok(match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_scalar(sql).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_scalar(sql).fetch_all(pool).await?,
        })
    }

    /// Records a session for `owner_id`.
    pub async fn create_session(
        &self,
        token_hash: &str,
        owner_id: &str,
        now: Millis,
        expires_at: Millis,
    ) -> Result<(), StoreError> {
        let sql = "INSERT INTO owner_sessions (token_hash, owner_id, created_at, expires_at) \
                   VALUES ($1, $2, $3, $4)";
        match &self.pool {
            Pool::Sqlite(pool) => {
                sqlx::query(sql)
                    .bind(token_hash)
                    .bind(owner_id)
                    .bind(now)
                    .bind(expires_at)
                    .execute(pool)
                    .await?;
            }
            Pool::Postgres(pool) => {
                sqlx::query(sql)
                    .bind(token_hash)
                    .bind(owner_id)
                    .bind(now)
                    .bind(expires_at)
                    .execute(pool)
                    .await?;
            }
        }
        Ok(())
    }

    /// The owner a live session belongs to.
    pub async fn session_owner(
        &self,
        token_hash: &str,
        now: Millis,
    ) -> Result<Option<OwnerAccount>, StoreError> {
        let sql = "SELECT o.id, o.email, o.password_hash, o.status FROM owner_sessions s \
                   JOIN owners o ON o.id = s.owner_id \
                   WHERE s.token_hash = $1 AND s.expires_at > $2 AND o.status = 'active'";
        let row: Option<OwnerRow> = match &self.pool {
            Pool::Sqlite(pool) => {
                sqlx::query_as(sql)
                    .bind(token_hash)
                    .bind(now)
                    .fetch_optional(pool)
                    .await?
            }
            Pool::Postgres(pool) => {
                sqlx::query_as(sql)
                    .bind(token_hash)
                    .bind(now)
                    .fetch_optional(pool)
                    .await?
            }
        };
        Ok(row.map(|(id, email, password_hash, status)| OwnerAccount {
            id,
            email,
            password_hash,
            active: status == "active",
        }))
    }

    /// Ends a session (logout). Returns whether one was ended.
    pub async fn delete_session(&self, token_hash: &str) -> Result<bool, StoreError> {
        let sql = "DELETE FROM owner_sessions WHERE token_hash = $1";
        let deleted = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query(sql)
                .bind(token_hash)
                .execute(pool)
                .await?
                .rows_affected(),
            Pool::Postgres(pool) => sqlx::query(sql)
                .bind(token_hash)
                .execute(pool)
                .await?
                .rows_affected(),
        };
        Ok(deleted > 0)
    }

    /// Records an invitation.
    pub async fn create_invite(
        &self,
        token_hash: &str,
        invited_by: &str,
        now: Millis,
        expires_at: Millis,
    ) -> Result<(), StoreError> {
        let sql = "INSERT INTO owner_invites (token_hash, invited_by, created_at, expires_at) \
                   VALUES ($1, $2, $3, $4)";
        match &self.pool {
            Pool::Sqlite(pool) => {
                sqlx::query(sql)
                    .bind(token_hash)
                    .bind(invited_by)
                    .bind(now)
                    .bind(expires_at)
                    .execute(pool)
                    .await?;
            }
            Pool::Postgres(pool) => {
                sqlx::query(sql)
                    .bind(token_hash)
                    .bind(invited_by)
                    .bind(now)
                    .bind(expires_at)
                    .execute(pool)
                    .await?;
            }
        }
        Ok(())
    }

    /// The stored hash of a role's bearer token.
    pub async fn role_token_hash(&self, role: &str) -> Result<Option<String>, StoreError> {
        let sql = "SELECT token_hash FROM role_tokens WHERE role = $1";
        Ok(match &self.pool {
            Pool::Sqlite(pool) => {
                sqlx::query_scalar(sql)
                    .bind(role)
                    .fetch_optional(pool)
                    .await?
            }
            Pool::Postgres(pool) => {
                sqlx::query_scalar(sql)
                    .bind(role)
                    .fetch_optional(pool)
                    .await?
            }
        })
    }

    /// Sets a role's token hash. With `only_if_missing`, an existing one is kept (start-up
    /// importing `.env.local`); otherwise it is replaced (rotation). Returns whether it wrote.
    pub async fn set_role_token_hash(
        &self,
        role: &str,
        token_hash: &str,
        now: Millis,
        only_if_missing: bool,
    ) -> Result<bool, StoreError> {
        let sql = if only_if_missing {
            "INSERT INTO role_tokens (role, token_hash, rotated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (role) DO NOTHING"
        } else {
            "INSERT INTO role_tokens (role, token_hash, rotated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (role) DO UPDATE SET token_hash = excluded.token_hash, rotated_at = excluded.rotated_at"
        };
        let written = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query(sql)
                .bind(role)
                .bind(token_hash)
                .bind(now)
                .execute(pool)
                .await?
                .rows_affected(),
            Pool::Postgres(pool) => sqlx::query(sql)
                .bind(role)
                .bind(token_hash)
                .bind(now)
                .execute(pool)
                .await?
                .rows_affected(),
        };
        Ok(written > 0)
    }
}
