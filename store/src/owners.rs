//! Who the owners are, how each became one, and the tamper-evident trail of it.
//!
//! One person with one account must not be able to produce a second approving identity
//! alone. So an invitation makes an owner at once only while the inviter is the desk's only
//! active owner (the second owner exists on the first's word; there is nobody else to ask).
//! From then on an accepted invitation makes a `pending` owner, who can neither sign in nor
//! approve until an active owner *other than the inviter* confirms them. Every creation and
//! confirmation is an event in the `owner_events` hash chain (the same chain rules as a
//! bug's audit trail), which `r2r ledger verify` recomputes.

use crate::{Backend, Pool, Store, StoreError};
use domain::ledger::{chain, verify, ChainBreak, ChainedEvent, GENESIS_HASH};
use domain::workflow::{EventDraft, Millis};
use std::collections::BTreeMap;

/// The subject name of the owners' chain in its hashes (bugs use their own ids).
pub const OWNER_CHAIN: &str = "owners";

/// An owner to create.
#[derive(Clone, Debug)]
pub struct NewOwner {
    /// Stable id.
    pub id: String,
    /// Login name (stored trimmed and lower-cased).
    pub email: String,
    /// Argon2 PHC string.
    pub password_hash: String,
}

/// What happened to an invitation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InviteOutcome {
    /// The account was created and is active.
    Created,
    /// The account was created and waits for a second owner's confirmation.
    AwaitingConfirmation,
    /// No such invitation, or it expired.
    Unknown,
    /// It was already used.
    Used,
    /// An owner with that email exists.
    EmailTaken,
}

/// What happened to a confirmation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfirmOutcome {
    /// The owner is active now.
    Confirmed,
    /// No pending owner with that id.
    NotPending,
    /// The confirming owner invited them (or is them): someone else must confirm.
    NeedsAnotherOwner,
    /// The confirming account is not an active owner.
    NotAnOwner,
}

/// One owner as the owners' page lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerListing {
    /// Stable id.
    pub id: String,
    /// Email.
    pub email: String,
    /// `active` or `pending`.
    pub status: String,
    /// The inviter's email (none for the first owner).
    pub invited_by: Option<String>,
    /// The confirming owner's email, for owners who needed one.
    pub confirmed_by: Option<String>,
    /// When the account was made.
    pub created_at: Millis,
}

/// How an owner's email is stored and looked up.
pub fn normalise_email(email: &str) -> String {
    email.trim().to_lowercase()
}

type ListingRow = (String, String, String, Option<String>, Option<String>, i64);
type EventRow = (i64, String, String, String);

fn event(
    kind: &str,
    actor_kind: &str,
    actor_id: &str,
    at: Millis,
    detail: &[(&str, &str)],
) -> EventDraft {
    EventDraft {
        kind: kind.to_owned(),
        actor_kind: actor_kind.to_owned(),
        actor_id: actor_id.to_owned(),
        at,
        evidence: Vec::new(),
        detail: detail
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
    }
}

/// Appends `draft` to the owners' chain inside the open transaction `$tx`.
macro_rules! append_owner_event {
    ($tx:ident, $draft:expr) => {{
        let last: Option<(i64, String)> =
            sqlx::query_as("SELECT seq, hash FROM owner_events ORDER BY seq DESC LIMIT 1")
                .fetch_optional(&mut *$tx)
                .await?;
        let (last_seq, last_hash) =
            last.map_or((0, GENESIS_HASH.to_owned()), |(seq, hash)| {
                (u64::try_from(seq).unwrap_or(0), hash)
            });
        let draft: EventDraft = $draft;
        let body = serde_json::to_string(&draft)
            .map_err(|e| StoreError::Corrupt(format!("owner event: {e}")))?;
        for chained in chain(OWNER_CHAIN, last_seq, &last_hash, &[draft]) {
            sqlx::query(
                "INSERT INTO owner_events (seq, kind, actor_kind, actor_id, at, body, prev_hash, hash) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(i64::try_from(chained.seq).unwrap_or(i64::MAX))
            .bind(&chained.event.kind)
            .bind(&chained.event.actor_kind)
            .bind(&chained.event.actor_id)
            .bind(chained.event.at)
            .bind(&body)
            .bind(&chained.prev_hash)
            .bind(&chained.hash)
            .execute(&mut *$tx)
            .await?;
        }
    }};
}

impl Store {
    /// On PostgreSQL, serialises every change to who the owners are (two invitations
    /// accepted at the same moment must not both see "one active owner"). SQLite's
    /// `BEGIN IMMEDIATE` already serialises writers.
    fn owners_lock_sql(&self) -> Option<&'static str> {
        (self.backend() == Backend::Postgres).then_some("SELECT pg_advisory_xact_lock(727274201)")
    }

    /// Creates the first owner (from the configuration) unless one with that email exists.
    /// Returns whether it was created.
    pub async fn ensure_owner(&self, owner: &NewOwner, now: Millis) -> Result<bool, StoreError> {
        let email = normalise_email(&owner.email);
        let lock = self.owners_lock_sql();
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            if let Some(lock) = lock {
                sqlx::query(lock).execute(&mut *tx).await?;
            }
            let taken: Option<String> =
                sqlx::query_scalar("SELECT id FROM owners WHERE lower(email) = $1")
                    .bind(&email)
                    .fetch_optional(&mut *tx)
                    .await?;
            if taken.is_some() {
                return Ok(false);
            }
            sqlx::query(
                "INSERT INTO owners (id, email, password_hash, created_at, status) \
                 VALUES ($1, $2, $3, $4, 'active')",
            )
            .bind(&owner.id)
            .bind(&email)
            .bind(&owner.password_hash)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            append_owner_event!(tx, event(
                "owner_created",
                "setup",
                "",
                now,
                &[("owner", &owner.id), ("email", &email), ("status", "active"), ("how", "configuration")],
            ));
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Uses an invitation to create an owner, in one transaction: an invitation works once,
    /// even when two people accept it at the same moment.
    pub async fn accept_invite(
        &self,
        token_hash: &str,
        owner: &NewOwner,
        now: Millis,
    ) -> Result<InviteOutcome, StoreError> {
        let email = normalise_email(&owner.email);
        let lock = self.owners_lock_sql();
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            if let Some(lock) = lock {
                sqlx::query(lock).execute(&mut *tx).await?;
            }
            // Claim the invitation first: only one transaction can move `used_at` off NULL.
            let claimed = sqlx::query(
                "UPDATE owner_invites SET used_at = $1, used_by = $2 \
                 WHERE token_hash = $3 AND used_at IS NULL AND expires_at > $1",
            )
            .bind(now)
            .bind(&owner.id)
            .bind(token_hash)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if claimed != 1 {
                let invite: Option<(i64, Option<i64>)> = sqlx::query_as(
                    "SELECT expires_at, used_at FROM owner_invites WHERE token_hash = $1",
                )
                .bind(token_hash)
                .fetch_optional(&mut *tx)
                .await?;
                return Ok(match invite {
                    Some((_, Some(_))) => InviteOutcome::Used,
                    _ => InviteOutcome::Unknown,
                });
            }
            let taken: Option<String> =
                sqlx::query_scalar("SELECT id FROM owners WHERE lower(email) = $1")
                    .bind(&email)
                    .fetch_optional(&mut *tx)
                    .await?;
            if taken.is_some() {
                // Dropping the transaction rolls the claim back: the invitation still works.
                return Ok(InviteOutcome::EmailTaken);
            }
            let inviter: String =
                sqlx::query_scalar("SELECT invited_by FROM owner_invites WHERE token_hash = $1")
                    .bind(token_hash)
                    .fetch_one(&mut *tx)
                    .await?;
            let active: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM owners WHERE status = 'active'")
                    .fetch_one(&mut *tx)
                    .await?;
            let inviter_active: Option<String> = sqlx::query_scalar(
                "SELECT email FROM owners WHERE id = $1 AND status = 'active'",
            )
            .bind(&inviter)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(inviter_email) = inviter_active else {
                // The inviter is no longer an active owner: the invitation died with them.
                return Ok(InviteOutcome::Unknown);
            };
            let status = if active <= 1 { "active" } else { "pending" };
            sqlx::query(
                "INSERT INTO owners (id, email, password_hash, created_at, status, invited_by) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&owner.id)
            .bind(&email)
            .bind(&owner.password_hash)
            .bind(now)
            .bind(status)
            .bind(&inviter)
            .execute(&mut *tx)
            .await?;
            append_owner_event!(tx, event(
                "owner_created",
                "owner",
                &inviter_email,
                now,
                &[("owner", &owner.id), ("email", &email), ("status", status), ("how", "invitation"), ("invited_by", &inviter)],
            ));
            tx.commit().await?;
            Ok(if status == "active" {
                InviteOutcome::Created
            } else {
                InviteOutcome::AwaitingConfirmation
            })
        })
    }

    /// An active owner other than the inviter confirms a pending owner.
    pub async fn confirm_owner(
        &self,
        pending_id: &str,
        confirmer_id: &str,
        now: Millis,
    ) -> Result<ConfirmOutcome, StoreError> {
        let lock = self.owners_lock_sql();
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            if let Some(lock) = lock {
                sqlx::query(lock).execute(&mut *tx).await?;
            }
            let confirmer: Option<String> = sqlx::query_scalar(
                "SELECT email FROM owners WHERE id = $1 AND status = 'active'",
            )
            .bind(confirmer_id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(confirmer_email) = confirmer else {
                return Ok(ConfirmOutcome::NotAnOwner);
            };
            let pending: Option<(String, Option<String>)> = sqlx::query_as(
                "SELECT email, invited_by FROM owners WHERE id = $1 AND status = 'pending'",
            )
            .bind(pending_id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some((email, invited_by)) = pending else {
                return Ok(ConfirmOutcome::NotPending);
            };
            if pending_id == confirmer_id || invited_by.as_deref() == Some(confirmer_id) {
                return Ok(ConfirmOutcome::NeedsAnotherOwner);
            }
            sqlx::query(
                "UPDATE owners SET status = 'active', confirmed_by = $1 \
                 WHERE id = $2 AND status = 'pending'",
            )
            .bind(confirmer_id)
            .bind(pending_id)
            .execute(&mut *tx)
            .await?;
            append_owner_event!(tx, event(
                "owner_confirmed",
                "owner",
                &confirmer_email,
                now,
                &[("owner", pending_id), ("email", &email), ("confirmed_by", confirmer_id)],
            ));
            tx.commit().await?;
            Ok(ConfirmOutcome::Confirmed)
        })
    }

    /// Every owner, oldest account first, with who invited and who confirmed them.
    pub async fn owner_listing(&self) -> Result<Vec<OwnerListing>, StoreError> {
        let sql = "SELECT o.id, o.email, o.status, i.email, c.email, o.created_at FROM owners o \
                   LEFT JOIN owners i ON i.id = o.invited_by \
                   LEFT JOIN owners c ON c.id = o.confirmed_by \
                   ORDER BY o.created_at, o.email";
        let rows: Vec<ListingRow> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).fetch_all(pool).await?,
        };
        Ok(rows
            .into_iter()
            .map(
                |(id, email, status, invited_by, confirmed_by, created_at)| OwnerListing {
                    id,
                    email,
                    status,
                    invited_by,
                    confirmed_by,
                    created_at,
                },
            )
            .collect())
    }

    /// Gives every owner made before the owners' trail existed its `owner_recorded` event,
    /// so that from then on an owner without an event in the chain is a sign of tampering.
    pub async fn record_untracked_owners(&self, now: Millis) -> Result<u64, StoreError> {
        let lock = self.owners_lock_sql();
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            if let Some(lock) = lock {
                sqlx::query(lock).execute(&mut *tx).await?;
            }
            let owners: Vec<(String, String, String)> =
                sqlx::query_as("SELECT id, email, status FROM owners ORDER BY created_at, id")
                    .fetch_all(&mut *tx)
                    .await?;
            let events: Vec<EventRow> =
                sqlx::query_as("SELECT seq, kind, body, hash FROM owner_events")
                    .fetch_all(&mut *tx)
                    .await?;
            let tracked = tracked_owners(&events);
            let mut recorded = 0;
            for (id, email, status) in owners {
                if tracked.contains(&id) {
                    continue;
                }
                append_owner_event!(tx, event(
                    "owner_recorded",
                    "desk",
                    "",
                    now,
                    &[("owner", &id), ("email", &email), ("status", &status), ("how", "existed before the owners' trail")],
                ));
                recorded += 1;
            }
            if recorded > 0 {
                tx.commit().await?;
            }
            Ok(recorded)
        })
    }

    /// Recomputes the owners' chain and checks that every owner has its creation event and
    /// every confirmed owner its confirmation: the number of events, or the first break.
    pub async fn verify_owner_trail(&self) -> Result<Result<u64, ChainBreak>, StoreError> {
        let sql = "SELECT seq, body, prev_hash, hash FROM owner_events ORDER BY seq";
        let rows: Vec<(i64, String, String, String)> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).fetch_all(pool).await?,
        };
        let broken = |seq: u64, reason: String| ChainBreak {
            bug_id: OWNER_CHAIN.to_owned(),
            seq,
            reason,
        };
        let mut events = Vec::with_capacity(rows.len());
        for (seq, body, prev_hash, hash) in rows {
            let seq = u64::try_from(seq).unwrap_or(0);
            let Ok(event) = serde_json::from_str::<EventDraft>(&body) else {
                return Ok(Err(broken(seq, "its body does not parse".to_owned())));
            };
            events.push(ChainedEvent {
                bug_id: OWNER_CHAIN.to_owned(),
                seq,
                event,
                prev_hash,
                hash,
            });
        }
        let head = events
            .last()
            .map_or(GENESIS_HASH.to_owned(), |e| e.hash.clone());
        if let Err(broken) = verify(OWNER_CHAIN, &events, &head, events.len() as u64) {
            return Ok(Err(broken));
        }
        let owners_sql = "SELECT id, confirmed_by FROM owners";
        let owners: Vec<(String, Option<String>)> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(owners_sql).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(owners_sql).fetch_all(pool).await?,
        };
        let created: std::collections::HashSet<&str> = events
            .iter()
            .filter(|e| e.event.kind != "owner_confirmed")
            .filter_map(|e| e.event.detail.get("owner").map(String::as_str))
            .collect();
        let confirmed: std::collections::HashSet<&str> = events
            .iter()
            .filter(|e| e.event.kind == "owner_confirmed")
            .filter_map(|e| e.event.detail.get("owner").map(String::as_str))
            .collect();
        let next = events.len() as u64 + 1;
        for (id, confirmed_by) in &owners {
            if !created.contains(id.as_str()) {
                return Ok(Err(broken(
                    next,
                    format!("owner {id} exists but the trail never recorded them (an event was removed, or the row was added by hand)"),
                )));
            }
            if confirmed_by.is_some() && !confirmed.contains(id.as_str()) {
                return Ok(Err(broken(
                    next,
                    format!("owner {id} is marked confirmed but the trail has no confirmation"),
                )));
            }
        }
        Ok(Ok(events.len() as u64))
    }
}

fn tracked_owners(events: &[EventRow]) -> std::collections::HashSet<String> {
    events
        .iter()
        .filter(|(_, kind, _, _)| kind != "owner_confirmed")
        .filter_map(|(_, _, body, _)| serde_json::from_str::<EventDraft>(body).ok())
        .filter_map(|e| e.detail.get("owner").cloned())
        .collect()
}
