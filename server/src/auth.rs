//! Who is calling: owner sessions (cookie + CSRF), the crew roles' bearer tokens, and the
//! realms that decide between "not a credential here" (401) and "not your power" (403).
//!
//! Every secret arrives in a header or cookie, is hashed with SHA-256 and compared with the
//! stored hash in constant time. Sessions and tokens are never logged.

use crate::error::Kind;
use axum::http::{header, HeaderMap};
use domain::Role;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use store::OwnerAccount;
use subtle::ConstantTimeEq;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "r2r_session";
/// The header a JSON call made with a session carries its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// How long a session lasts (12 hours).
pub const SESSION_TTL_MS: i64 = 12 * 60 * 60 * 1000;
/// How long an invitation lasts (72 hours).
pub const INVITE_TTL_MS: i64 = 72 * 60 * 60 * 1000;

/// The server's owner-authentication settings and state.
#[derive(Debug)]
pub struct AuthDesk {
    /// Key of the CSRF tokens.
    pub session_key: crate::secret::Secret,
    /// Whether the session cookie is marked `Secure`.
    pub secure_cookies: bool,
    /// Sign-in attempts, keyed by client and by client and email.
    pub login_limiter: crate::ratelimit::Limiter,
    /// Sign-in attempts per email from all clients together, ten times looser than
    /// `login_limiter`, so that no single stranger can lock an owner out.
    pub address_limiter: crate::ratelimit::Limiter,
    /// A real argon2 hash of a random password: unknown emails are verified against it, so
    /// a sign-in takes as long whether or not the account exists.
    pub dummy_password_hash: String,
}

impl AuthDesk {
    /// From the configuration (a random session key when none is configured).
    pub fn new(config: &crate::config::AuthConfig, store: &store::Store) -> Self {
        let session_key = config.session_key.clone().unwrap_or_else(|| {
            tracing::warn!("R2R_SESSION_KEY is not set: using a random key; sessions' CSRF tokens change at restart (run r2r setup)");
            crate::secret::Secret::new(random_secret(64))
        });
        let dummy_password_hash = hash_password(&random_secret(16)).unwrap_or_default();
        AuthDesk {
            session_key,
            secure_cookies: config.secure_cookies,
            login_limiter: crate::ratelimit::Limiter::new("login", config.login_rate)
                .shared_in(store),
            address_limiter: crate::ratelimit::Limiter::new(
                "address",
                crate::ratelimit::RateLimit {
                    count: config.login_rate.count.saturating_mul(10),
                    per: config.login_rate.per,
                },
            )
            .shared_in(store),
            dummy_password_hash,
        }
    }
}

/// The one actor an owner is, whichever path they act through (the API, the desk's forms, a
/// server function): named by their email, as CODEOWNERS names them. Never build an owner's
/// actor anywhere else.
pub fn owner_actor(account: &OwnerAccount) -> domain::workflow::Actor {
    domain::workflow::Actor::owner(&account.email)
}

/// Hashes a password with argon2id and a fresh salt (a PHC string).
pub fn hash_password(password: &str) -> Result<String, argon2::password_hash::Error> {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
}

/// Whether a browser sent this request from another site. Sign-in, sign-out and accepting an
/// invitation carry no session yet (or end one), so a CSRF token cannot guard them; the
/// browser's own word can: `Sec-Fetch-Site` when present (only `same-origin`, or `none` for
/// a typed address, pass), else `Origin` compared with `Host`. A request with neither comes
/// from a client that is not a browser page, which cross-site forgery needs.
pub fn cross_site(headers: &HeaderMap) -> bool {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text("sec-fetch-site") {
        return !matches!(site, "same-origin" | "none");
    }
    match (text("origin"), text("host")) {
        (None, _) => false,
        (Some(origin), Some(host)) => {
            let authority = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"));
            !authority.is_some_and(|authority| authority.eq_ignore_ascii_case(host))
        }
        (Some(_), None) => true,
    }
}

/// Stores the hashes of the role tokens from the configuration for roles that have none yet
/// (a rotated token in the database wins over `.env.local`).
pub async fn import_role_tokens(
    store: &store::Store,
    config: &crate::config::AuthConfig,
) -> Result<(), store::StoreError> {
    for (role, token) in &config.role_tokens {
        let imported = store
            .set_role_token_hash(
                role.as_str(),
                &hash_secret(token.expose()),
                crate::clock::now_ms(),
                true,
            )
            .await?;
        if imported {
            tracing::info!(role = %role, "role token imported from the configuration");
        }
    }
    Ok(())
}

/// SHA-256 of a secret, hex.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Constant-time equality of two hex hashes.
pub fn same_hash(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// A fresh random secret: `bytes` random bytes as hex.
pub fn random_secret(bytes: usize) -> String {
    use rand::RngCore;
    let mut buffer = vec![0u8; bytes];
    rand::rngs::OsRng.fill_bytes(&mut buffer);
    hex::encode(buffer)
}

/// The CSRF token of a session: HMAC-SHA256 of the session secret under the desk's session
/// key. It is not stored; it is recomputed and compared in constant time.
pub fn csrf_token(session_key: &[u8], session: &str) -> String {
    // HMAC accepts keys of any length.
    let mut mac = match Hmac::<Sha256>::new_from_slice(session_key) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(b"csrf:");
    mac.update(session.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// A short signature, bound to an owner's `session`, of `data` for one `purpose` (a notice
/// the desk shows after an action, an invitation kept for one page load): only this desk, for
/// this session, could have made it, so a link from anyone else cannot make the desk say it.
pub fn session_tag(session_key: &[u8], purpose: &str, session: &str, data: &str) -> String {
    let mut mac = match Hmac::<Sha256>::new_from_slice(session_key) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    for part in [purpose, session, data] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part.as_bytes());
    }
    hex::encode(&mac.finalize().into_bytes()[..12])
}

/// Whether `presented` is [`session_tag`] of the same purpose, session and data.
pub fn session_tag_valid(
    session_key: &[u8],
    purpose: &str,
    session: &str,
    data: &str,
    presented: &str,
) -> bool {
    let expected = session_tag(session_key, purpose, session, data);
    !expected.is_empty() && same_hash(&expected, presented)
}

/// Whether `presented` is the CSRF token of `session`.
pub fn csrf_valid(session_key: &[u8], session: &str, presented: Option<&str>) -> bool {
    let expected = csrf_token(session_key, session);
    presented.is_some_and(|p| !expected.is_empty() && same_hash(&expected, p.trim()))
}

/// Who the credential on a request names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credential {
    /// Nothing presented.
    None,
    /// Something presented that is not a valid credential (unknown token, expired session).
    Invalid,
    /// A crew (or concierge) role's bearer token.
    Role(Role),
    /// A sandbox worker host's own token (`r2r_worker_…`): it may claim sandbox jobs and
    /// report their outcome, nothing else.
    Worker {
        /// The worker's name.
        name: String,
    },
    /// An owner's session.
    Owner {
        /// The owner.
        account: OwnerAccount,
        /// The session secret (to check CSRF against; never logged).
        session: String,
    },
}

impl Credential {
    /// Short name for logs and the auth matrix.
    pub fn kind(&self) -> String {
        match self {
            Credential::None => "none".to_owned(),
            Credential::Invalid => "invalid".to_owned(),
            Credential::Role(role) => format!("role:{}", role.as_str()),
            Credential::Owner { .. } => "owner".to_owned(),
            Credential::Worker { .. } => "worker".to_owned(),
        }
    }

    /// The engine's actor for this credential: the one place an actor is built from a
    /// request, so one owner is one person on every path (API, desk forms, recorder).
    pub fn actor(&self) -> domain::workflow::Actor {
        match self {
            Credential::Owner { account, .. } => owner_actor(account),
            Credential::Role(role) => domain::workflow::Actor::Role { role: *role },
            _ => domain::workflow::Actor::Anonymous,
        }
    }
}

pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
}

/// The session secret a request's cookie carries.
pub fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    cookie(headers, SESSION_COOKIE)
}

/// How a sandbox worker's token begins (`r2r_worker_<hex>`).
pub const WORKER_TOKEN_PREFIX: &str = "r2r_worker_";

/// A new sandbox worker token (shown once; only its hash is stored).
pub fn new_worker_token() -> String {
    format!("{WORKER_TOKEN_PREFIX}{}", random_secret(32))
}

/// Parses `r2r_<role>_<hex>` into its role.
fn token_role(token: &str) -> Option<Role> {
    let rest = token.strip_prefix("r2r_")?;
    let (role, secret) = rest.split_once('_')?;
    if secret.len() < 32 || !secret.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Role::ALL.into_iter().find(|r| r.as_str() == role)
}

/// Establishes the credential of a request (a bearer token wins over a cookie).
pub async fn credential_of(
    store: &store::Store,
    headers: &HeaderMap,
) -> Result<Credential, store::StoreError> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let Some(token) = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
        else {
            return Ok(Credential::Invalid);
        };
        if let Some(secret) = token.strip_prefix(WORKER_TOKEN_PREFIX) {
            if secret.len() < 32 || !secret.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Ok(Credential::Invalid);
            }
            return Ok(match store.sandbox_worker_of(&hash_secret(token)).await? {
                Some(name) => Credential::Worker { name },
                None => Credential::Invalid,
            });
        }
        let Some(role) = token_role(token) else {
            return Ok(Credential::Invalid);
        };
        let stored = store.role_token_hash(role.as_str()).await?;
        let presented = hash_secret(token);
        return Ok(match stored {
            Some(stored) if same_hash(&stored, &presented) => Credential::Role(role),
            _ => Credential::Invalid,
        });
    }
    if let Some(session) = session_cookie(headers) {
        if session.len() != 64 || !session.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(Credential::Invalid);
        }
        let owner = store
            .session_owner(&hash_secret(session), crate::clock::now_ms())
            .await?;
        return Ok(match owner {
            Some(account) => Credential::Owner {
                account,
                session: session.to_owned(),
            },
            None => Credential::Invalid,
        });
    }
    Ok(Credential::None)
}

/// Where an operation lives: a credential from another realm is not a credential there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Realm {
    /// Anyone.
    Public,
    /// Owners and the crew's engineering roles.
    Engineering,
    /// The concierge (reporter-facing notifications; no engineering access).
    Concierge,
    /// Sandbox worker hosts (claim sandbox jobs, report outcomes; nothing else).
    SandboxWorker,
}

impl Realm {
    /// Stable name (the OpenAPI document's `x-r2r-realm`).
    pub fn as_str(self) -> &'static str {
        match self {
            Realm::Public => "public",
            Realm::Engineering => "engineering",
            Realm::Concierge => "concierge",
            Realm::SandboxWorker => "sandbox-worker",
        }
    }
}

/// Who may call an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Principal {
    /// An owner with a session.
    Owner,
    /// A role's token.
    Role(Role),
    /// Any sandbox worker's token.
    Worker,
}

/// Whether a credential belongs to a realm at all.
pub fn in_realm(credential: &Credential, realm: Realm) -> bool {
    match (credential, realm) {
        (_, Realm::Public) => true,
        (Credential::Owner { .. }, Realm::Engineering) => true,
        (Credential::Role(role), Realm::Engineering) => *role != Role::Concierge,
        (Credential::Role(Role::Concierge), Realm::Concierge) => true,
        (Credential::Worker { .. }, Realm::SandboxWorker) => true,
        _ => false,
    }
}

/// The auth decision for an operation: `Ok` to proceed, or "who are you" (401) / "not you"
/// (403) with a reason.
pub fn authorize(
    credential: &Credential,
    realm: Realm,
    accepts: &[Principal],
) -> Result<(), (Kind, &'static str, &'static str)> {
    if realm == Realm::Public {
        return Ok(());
    }
    if !in_realm(credential, realm) {
        return Err((
            Kind::Unauthenticated,
            "unauthenticated",
            "this needs a credential for this part of the desk (an owner session or a crew token; for the sandbox job routes, a sandbox worker's token)",
        ));
    }
    let allowed = accepts.iter().any(|p| match (p, credential) {
        (Principal::Owner, Credential::Owner { .. }) => true,
        (Principal::Role(want), Credential::Role(have)) => want == have,
        (Principal::Worker, Credential::Worker { .. }) => true,
        _ => false,
    });
    if allowed {
        Ok(())
    } else {
        Err((
            Kind::Forbidden,
            "forbidden",
            "your credential is valid but does not carry this power",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_role_and_malformed_ones_none() {
        let token = format!("r2r_fixer_{}", "ab".repeat(32));
        assert_eq!(token_role(&token), Some(Role::Fixer));
        assert_eq!(token_role("r2r_fixer_short"), None);
        assert_eq!(token_role(&format!("r2r_boss_{}", "ab".repeat(32))), None);
        assert_eq!(token_role(&format!("x2r_fixer_{}", "ab".repeat(32))), None);
    }

    #[test]
    fn csrf_tokens_bind_to_the_session_and_the_key() {
        let key = b"0123456789abcdef0123456789abcdef";
        let token = csrf_token(key, "session-a");
        assert!(csrf_valid(key, "session-a", Some(&token)));
        assert!(!csrf_valid(key, "session-b", Some(&token)));
        assert!(!csrf_valid(b"another key", "session-a", Some(&token)));
        assert!(!csrf_valid(key, "session-a", None));
        assert!(!csrf_valid(key, "session-a", Some("")));
    }

    #[test]
    fn realms_give_401_outside_and_403_inside() {
        let owner = Credential::Owner {
            account: OwnerAccount {
                id: "o".into(),
                email: "o@example.org".into(),
                password_hash: String::new(),
                active: true,
            },
            session: String::new(),
        };
        let owner_only = [Principal::Owner];
        assert!(authorize(&owner, Realm::Engineering, &owner_only).is_ok());
        let fixer = Credential::Role(Role::Fixer);
        assert_eq!(
            authorize(&fixer, Realm::Engineering, &owner_only)
                .unwrap_err()
                .0,
            Kind::Forbidden
        );
        let concierge = Credential::Role(Role::Concierge);
        assert_eq!(
            authorize(&concierge, Realm::Engineering, &owner_only)
                .unwrap_err()
                .0,
            Kind::Unauthenticated
        );
        assert_eq!(
            authorize(&Credential::None, Realm::Engineering, &owner_only)
                .unwrap_err()
                .0,
            Kind::Unauthenticated
        );
        assert_eq!(
            authorize(&Credential::Invalid, Realm::Engineering, &owner_only)
                .unwrap_err()
                .0,
            Kind::Unauthenticated
        );
        assert!(authorize(&Credential::None, Realm::Public, &[]).is_ok());
        assert_eq!(
            authorize(
                &fixer,
                Realm::Concierge,
                &[Principal::Role(Role::Concierge)]
            )
            .unwrap_err()
            .0,
            Kind::Unauthenticated
        );
    }
}
