//! Who may sign in and with what: the first owner (`R2R_OWNER_EMAIL`,
//! `R2R_OWNER_PASSWORD_HASH`), the session key, secure cookies, the sign-in limit and the
//! crew's role tokens (`R2R_<ROLE>_TOKEN`).

use super::env::{boolean, rate, ConfigError, Environment};
use crate::ratelimit::RateLimit;

/// The first owner, created at start-up when no owner with this email exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootstrapOwner {
    /// Login email.
    pub email: String,
    /// Argon2 PHC string written by `r2r setup`.
    pub password_hash: String,
}

impl BootstrapOwner {
    /// Reads the section: both halves or neither.
    pub fn from_env(env: &Environment) -> Result<Option<BootstrapOwner>, ConfigError> {
        Ok(
            match (
                env.get("R2R_OWNER_EMAIL"),
                env.get("R2R_OWNER_PASSWORD_HASH"),
            ) {
                (None, None) => None,
                (Some(_), None) => {
                    return Err(ConfigError::new(
                        "R2R_OWNER_PASSWORD_HASH",
                        "missing while R2R_OWNER_EMAIL is set; run `r2r setup` to generate it",
                    ))
                }
                (None, Some(_)) => {
                    return Err(ConfigError::new(
                        "R2R_OWNER_EMAIL",
                        "missing while R2R_OWNER_PASSWORD_HASH is set; expected an email address",
                    ))
                }
                (Some(email), Some(hash)) => {
                    if !looks_like_owner_email(email) {
                        return Err(ConfigError::new(
                            "R2R_OWNER_EMAIL",
                            format!(
                        "expected an email address such as owner@example.org, got {email:?}"
                    ),
                        ));
                    }
                    argon2::PasswordHash::new(hash).map_err(|error| {
                        ConfigError::new(
                            "R2R_OWNER_PASSWORD_HASH",
                            format!("expected an argon2 PHC string ($argon2id$…): {error}"),
                        )
                    })?;
                    Some(BootstrapOwner {
                        email: email.to_owned(),
                        password_hash: hash.to_owned(),
                    })
                }
            },
        )
    }
}

/// Default per-client and per-email limit on sign-in attempts.
pub const DEFAULT_LOGIN_RATE: &str = "10/15m";

/// Credentials the server checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthConfig {
    /// Key of the CSRF tokens (`R2R_SESSION_KEY`); `None` means a random one per start.
    pub session_key: Option<crate::secret::Secret>,
    /// Mark the session cookie `Secure` (`R2R_SECURE_COOKIES`; on whenever the desk is served
    /// over TLS).
    pub secure_cookies: bool,
    /// Sign-in attempts per client and per email (`R2R_RATE_LOGIN`).
    pub login_rate: RateLimit,
    /// Role tokens from `.env.local` (`R2R_<ROLE>_TOKEN`), imported at start-up when the
    /// database has none for that role.
    pub role_tokens: Vec<(domain::Role, crate::secret::Secret)>,
}

impl AuthConfig {
    /// Reads the section.
    pub fn from_env(env: &Environment) -> Result<AuthConfig, ConfigError> {
        let session_key = match env.get("R2R_SESSION_KEY") {
            None => None,
            Some(key) if key.trim().len() >= 32 => Some(crate::secret::Secret::new(key.trim())),
            Some(_) => {
                return Err(ConfigError::new(
                    "R2R_SESSION_KEY",
                    "too short: at least 32 characters (r2r setup writes 128 hex characters)",
                ))
            }
        };
        let mut role_tokens = Vec::new();
        for role in domain::Role::ALL {
            if let Some(token) = env.get(role.token_variable()) {
                let token = token.trim();
                let prefix = format!("r2r_{}_", role.as_str());
                let valid = token.strip_prefix(&prefix).is_some_and(|secret| {
                    secret.len() >= 32 && secret.bytes().all(|b| b.is_ascii_hexdigit())
                });
                if !valid {
                    return Err(ConfigError::new(
                        role.token_variable(),
                        format!(
                            "expected {prefix}<at least 32 hex characters> (r2r setup writes one)"
                        ),
                    ));
                }
                role_tokens.push((role, crate::secret::Secret::new(token)));
            }
        }
        Ok(AuthConfig {
            session_key,
            secure_cookies: boolean(env, "R2R_SECURE_COOKIES")?,
            login_rate: rate(env, "R2R_RATE_LOGIN", DEFAULT_LOGIN_RATE)?,
            role_tokens,
        })
    }
}

/// A deliberately loose check: one `@`, something on each side, no spaces (a reporter's
/// contact address; the concierge only ever sends to it).
pub fn looks_like_email(text: &str) -> bool {
    match text.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !domain.contains('@')
                && !text.chars().any(char::is_whitespace)
        }
        None => false,
    }
}

/// An owner's email, which other owners read on approvals, the ledger and the Owners page:
/// [`looks_like_email`], and no control or invisible characters (a zero-width space made a
/// second `owner@example.org` that read exactly like the first) nor any of `<>"` (an
/// apostrophe stays: o'brien@… is an address).
pub fn looks_like_owner_email(text: &str) -> bool {
    looks_like_email(text)
        && !text.chars().any(|c| {
            c.is_control()
                || domain::airlock::unicode::is_default_ignorable(c)
                || matches!(c, '<' | '>' | '"')
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const HASH: &str =
        "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG";

    #[test]
    fn an_owners_email_that_reads_like_another_or_carries_markup_is_refused() {
        assert!(looks_like_owner_email("owner@example.org"));
        assert!(looks_like_owner_email("o.wner+desk@xn--bcher-kva.example"));
        assert!(looks_like_owner_email("o'brien@example.org"));
        for bad in [
            "owner@localhost\u{200B}",
            "\u{FEFF}owner@example.org",
            "ow\u{00AD}ner@example.org",
            "owner@exam\u{202E}gro.elp",
            "a<b>c@evil.example",
            "\"owner\"@example.org",
            "owner@exa mple.org",
            "owner@example.org\n",
            "owner@@example.org",
            "@example.org",
            "owner@",
        ] {
            assert!(!looks_like_owner_email(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_bootstrap_owner_needs_both_halves_and_a_real_hash() {
        let only_email = Environment::from_pairs([("R2R_OWNER_EMAIL", "a@b.test")]);
        assert_eq!(
            BootstrapOwner::from_env(&only_email).unwrap_err().variable,
            "R2R_OWNER_PASSWORD_HASH"
        );
        let bad_hash = Environment::from_pairs([
            ("R2R_OWNER_EMAIL", "a@b.test"),
            ("R2R_OWNER_PASSWORD_HASH", "plaintext"),
        ]);
        assert_eq!(
            BootstrapOwner::from_env(&bad_hash).unwrap_err().variable,
            "R2R_OWNER_PASSWORD_HASH"
        );
        let bad_email = Environment::from_pairs([
            ("R2R_OWNER_EMAIL", "not an email"),
            ("R2R_OWNER_PASSWORD_HASH", HASH),
        ]);
        assert_eq!(
            BootstrapOwner::from_env(&bad_email).unwrap_err().variable,
            "R2R_OWNER_EMAIL"
        );
        let good = Environment::from_pairs([
            ("R2R_OWNER_EMAIL", "a@b.test"),
            ("R2R_OWNER_PASSWORD_HASH", HASH),
        ]);
        assert_eq!(
            BootstrapOwner::from_env(&good).unwrap(),
            Some(BootstrapOwner {
                email: "a@b.test".into(),
                password_hash: HASH.into()
            })
        );
    }

    #[test]
    fn a_short_session_key_or_a_malformed_role_token_is_named() {
        let none = AuthConfig::from_env(&Environment::default()).unwrap();
        assert_eq!(none.session_key, None);
        assert!(none.role_tokens.is_empty());
        let good = format!("r2r_fixer_{}", "a".repeat(32));
        let set = Environment::from_pairs([
            ("R2R_SESSION_KEY", "k".repeat(32).as_str()),
            ("R2R_FIXER_TOKEN", good.as_str()),
        ]);
        let config = AuthConfig::from_env(&set).unwrap();
        assert!(config.session_key.is_some());
        assert_eq!(config.role_tokens.len(), 1);
        assert_eq!(config.role_tokens[0].0, domain::Role::Fixer);
        let other_role = format!("r2r_manager_{}", "a".repeat(32));
        for (variable, value) in [
            ("R2R_SESSION_KEY", "short"),
            ("R2R_FIXER_TOKEN", "r2r_fixer_short"),
            ("R2R_FIXER_TOKEN", other_role.as_str()),
            (
                "R2R_FIXER_TOKEN",
                "r2r_fixer_zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
            ),
            ("R2R_RATE_LOGIN", "many"),
            ("R2R_SECURE_COOKIES", "perhaps"),
        ] {
            let error =
                AuthConfig::from_env(&Environment::from_pairs([(variable, value)])).unwrap_err();
            assert_eq!(error.variable, variable, "{value}");
        }
    }
}
