//! Owners and their sessions: signing in (rate-limited per client, per client and address,
//! and more loosely per address, with timing independent of whether the address exists),
//! invitations, and the second owner's confirmation that makes a third owner real.

use crate::auth::{hash_secret, random_secret, INVITE_TTL_MS, SESSION_TTL_MS};
use crate::clock::now_ms;
use crate::error::Kind;
use crate::web::AppState;
use crate::web::Refused;
use serde::Deserialize;
use store::{ConfirmOutcome, InviteOutcome, NewOwner, OwnerAccount};

async fn verify_password(hash: String, password: String) -> bool {
    tokio::task::spawn_blocking(move || {
        use argon2::password_hash::{PasswordHash, PasswordVerifier};
        PasswordHash::new(&hash)
            .map(|parsed| {
                argon2::Argon2::default()
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok()
            })
            .unwrap_or(false)
    })
    .await
    .unwrap_or(false)
}

/// Checks an owner's email and password (rate-limited per client and per email, timing
/// independent of whether the email exists) and opens a session: its secret and the owner.
pub async fn sign_in(
    state: &AppState,
    client: &str,
    email: &str,
    password: String,
) -> Result<(String, OwnerAccount), Refused> {
    let now = crate::clock::now_ms();
    // One spelling of the address for the limits and the lookup alike.
    let email = store::owners::normalise_email(email);
    // Per client, per client and address, and — ten times looser — per address from every
    // client together: a stranger on one address runs into their own limits long before
    // they could lock an owner out, and guessing one owner's password from many addresses
    // still slows down.
    let limiter = &state.auth.login_limiter;
    for (limiter, key) in [
        (limiter, format!("ip:{client}")),
        (limiter, format!("pair:{client}|{email}")),
        (&state.auth.address_limiter, format!("email:{email}")),
    ] {
        limiter
            .take(&key, now)
            .await?
            .map_err(Refused::rate_limited)?;
    }
    let account = state.store.owner_by_email(&email).await?;
    // Verify against a real hash even for an unknown email, so timing says nothing.
    let hash = account.as_ref().map_or_else(
        || state.auth.dummy_password_hash.clone(),
        |a| a.password_hash.clone(),
    );
    let ok = verify_password(hash, password).await && account.is_some();
    let Some(account) = account.filter(|_| ok) else {
        tracing::info!("login refused");
        return Err(Refused::new(
            Kind::Unauthenticated,
            "bad_credentials",
            "That email and password do not match an owner account.",
        ));
    };
    if !account.active {
        // Only someone who knows the password learns this.
        return Err(Refused::new(
            Kind::Forbidden,
            "awaiting_confirmation",
            "This account waits for a second owner's confirmation: an owner other than the one who invited you must confirm it on the desk's Owners page.",
        ));
    }
    let session = random_secret(32);
    let now = now_ms();
    state
        .store
        .create_session(
            &hash_secret(&session),
            &account.id,
            now,
            now + SESSION_TTL_MS,
        )
        .await?;
    tracing::info!(owner = %account.id, "owner signed in");
    Ok((session, account))
}

/// A one-time invitation from `by`: its link (`/desk/invite#<secret>`; the desk keeps only
/// the secret's hash) and when it expires.
pub async fn create_invite(
    state: &AppState,
    by: &store::OwnerAccount,
) -> Result<(String, i64), Refused> {
    let token = random_secret(32);
    let now = now_ms();
    state
        .store
        .create_invite(&hash_secret(&token), &by.id, now, now + INVITE_TTL_MS)
        .await?;
    tracing::info!(owner = %by.id, "owner invitation created");
    Ok((format!("/desk/invite#{token}"), now + INVITE_TTL_MS))
}

/// Shortest owner password accepted.
pub const MIN_PASSWORD_CHARS: usize = 12;

/// `account` confirms the pending owner `pending_id`: the one rule for the API and the desk.
pub async fn confirm_owner(
    state: &AppState,
    account: &OwnerAccount,
    pending_id: &str,
) -> Result<(), Refused> {
    let outcome = state
        .store
        .confirm_owner(pending_id, &account.id, now_ms())
        .await?;
    match outcome {
        ConfirmOutcome::Confirmed => {
            tracing::info!(owner = %pending_id, by = %account.id, "pending owner confirmed");
            Ok(())
        }
        ConfirmOutcome::NotPending => Err(Refused::new(
            Kind::NotFound,
            "not_pending",
            "No owner with this id waits for confirmation.",
        )),
        ConfirmOutcome::NeedsAnotherOwner => Err(Refused::new(
            Kind::Forbidden,
            "needs_another_owner",
            "You invited this owner (or are them): an owner other than their inviter must confirm them, so one person can never make a second approving identity alone.",
        )),
        ConfirmOutcome::NotAnOwner => Err(Refused::new(
            Kind::Forbidden,
            "forbidden",
            "Only an active owner can confirm another.",
        )),
    }
}

/// Creates the owner account an invitation allows: its id, email, and whether it is active
/// now (or waits for a second owner's confirmation). Attempts count against the client's
/// sign-in limit (each one hashes a password).
pub async fn accept_invitation(
    state: &AppState,
    client: &str,
    token: &str,
    email: &str,
    password: String,
) -> Result<(String, String, bool), Refused> {
    state
        .auth
        .login_limiter
        .take(&format!("invite:{client}"), crate::clock::now_ms())
        .await?
        .map_err(Refused::rate_limited)?;
    let accept = Accept {
        token: token.to_owned(),
        email: email.to_owned(),
        password,
    };
    {
        let mut fields = std::collections::BTreeMap::new();
        if !crate::config::looks_like_owner_email(accept.email.trim()) {
            fields.insert("email".to_owned(), "expected an email address".to_owned());
        }
        if accept.password.chars().count() < MIN_PASSWORD_CHARS {
            fields.insert(
                "password".to_owned(),
                format!("at least {MIN_PASSWORD_CHARS} characters"),
            );
        }
        if !fields.is_empty() {
            let mut refused = Refused::new(
                Kind::Invalid,
                "invalid_account",
                "The account was not created.",
            );
            refused.fields_mut().extend(fields);
            return Err(refused);
        }
        let password = accept.password.clone();
        let hash = tokio::task::spawn_blocking(move || crate::auth::hash_password(&password))
            .await
            .map_err(Refused::internal)?
            .map_err(Refused::internal)?;
        let owner = NewOwner {
            id: format!("owner-{}", random_secret(12)),
            email: store::owners::normalise_email(&accept.email),
            password_hash: hash,
        };
        let outcome = state
            .store
            .accept_invite(&hash_secret(accept.token.trim()), &owner, now_ms())
            .await?;
        match outcome {
            InviteOutcome::Created => {
                tracing::info!(owner = %owner.id, "owner account created from an invitation");
                Ok((owner.id, owner.email, true))
            }
            InviteOutcome::AwaitingConfirmation => {
                tracing::info!(owner = %owner.id, "owner account created from an invitation; waits for a second owner's confirmation");
                Ok((owner.id, owner.email, false))
            }
            InviteOutcome::Unknown => Err(Refused::new(
                Kind::NotFound,
                "unknown_invite",
                "This invitation does not exist or has expired.",
            )),
            InviteOutcome::Used => Err(Refused::new(
                Kind::Conflict,
                "invite_used",
                "This invitation was already used.",
            )),
            InviteOutcome::EmailTaken => Err(Refused::new(
                Kind::Conflict,
                "email_taken",
                "An owner with this email exists.",
            )),
        }
    }
}

/// An invitation's acceptance: the invitation secret and the new owner's sign-in.
#[derive(Deserialize)]
pub struct Accept {
    /// The invitation secret.
    pub token: String,
    /// The new owner's email.
    pub email: String,
    /// Their password.
    pub password: String,
}

impl std::fmt::Debug for Accept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accept")
            .field("email", &self.email)
            .finish_non_exhaustive()
    }
}
