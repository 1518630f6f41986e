//! The sandbox the desk measures in (`R2R_SANDBOX_BACKEND`, `R2R_SANDBOX_CONCURRENCY`,
//! `R2R_SANDBOX_RUNNER`, `R2R_SANDBOX_CLAIM_TIMEOUT`, `R2R_SANDBOX_CONFIRM`).

use super::{ConfigError, Environment};

/// The sandbox section (each field is the [`super::Config`] field of the same name with
/// `sandbox_` before it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SandboxSection {
    /// Docker, bubblewrap, or none.
    pub backend: Option<sandbox::Backend>,
    /// Measurements at once.
    pub concurrency: usize,
    /// Worker hosts and how long a job waits for one, or this process's own sandbox.
    pub workers: Option<std::time::Duration>,
    /// When a second worker confirms a test run.
    pub confirm: Confirm,
}

impl SandboxSection {
    /// Reads the section.
    pub fn from_env(env: &Environment) -> Result<SandboxSection, ConfigError> {
        Ok(SandboxSection {
            backend: {
            match env.get("R2R_SANDBOX_BACKEND").unwrap_or("docker").trim() {
                "none" => None,
                backend => Some(backend.parse::<sandbox::Backend>().map_err(|_| {
                    ConfigError::new(
                        "R2R_SANDBOX_BACKEND",
                        format!("expected docker, bwrap or none, got {backend:?}"),
                    )
                })?),
            }
        },
            concurrency: match env.get("R2R_SANDBOX_CONCURRENCY") {
            None => DEFAULT_SANDBOX_CONCURRENCY,
            Some(text) => text
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_SANDBOX_CONCURRENCY).contains(n))
                .ok_or_else(|| {
                    ConfigError::new(
                        "R2R_SANDBOX_CONCURRENCY",
                        format!(
                            "expected how many sandbox runs may go at once, a whole number from 1 to {MAX_SANDBOX_CONCURRENCY}, got {text:?}"
                        ),
                    )
                })?,
        },
            workers: {
            let timeout = match env.get("R2R_SANDBOX_CLAIM_TIMEOUT") {
                None => DEFAULT_SANDBOX_CLAIM_TIMEOUT,
                Some(text) => text
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|s| (1..=3600).contains(s))
                    .map(std::time::Duration::from_secs)
                    .ok_or_else(|| {
                        ConfigError::new(
                            "R2R_SANDBOX_CLAIM_TIMEOUT",
                            format!("expected how many seconds a sandbox job may wait for a worker, a whole number from 1 to 3600, got {text:?}"),
                        )
                    })?,
            };
            match env.get("R2R_SANDBOX_RUNNER").map(str::trim) {
                None | Some("local") => None,
                Some("workers") => Some(timeout),
                Some(other) => {
                    return Err(ConfigError::new(
                        "R2R_SANDBOX_RUNNER",
                        format!("expected local (this process's sandbox) or workers (r2r sandbox worker hosts), got {other:?}"),
                    ))
                }
            }
        },
            confirm: match env.get("R2R_SANDBOX_CONFIRM").map(str::trim) {
            None => Confirm::default(),
            Some(text) => Confirm::parse(text).ok_or_else(|| {
                ConfigError::new(
                    "R2R_SANDBOX_CONFIRM",
                    format!("expected auto (a second worker confirms each test run when two workers hold tokens), always or never, got {text:?}"),
                )
            })?,
        },
        })
    }
}

/// When a worker's test run is run again by a second worker before the desk believes it
/// (`R2R_SANDBOX_CONFIRM`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Confirm {
    /// Whenever two or more workers hold a valid token (the default).
    #[default]
    Auto,
    /// Always: with a single worker, test runs wait for a second one (and say so).
    Always,
    /// Never: one worker's word is taken (its name is still on the evidence).
    Never,
}

impl Confirm {
    /// From `auto`, `always` or `never`.
    pub fn parse(text: &str) -> Option<Confirm> {
        match text {
            "auto" => Some(Confirm::Auto),
            "always" => Some(Confirm::Always),
            "never" => Some(Confirm::Never),
            _ => None,
        }
    }
}

/// How long a queued sandbox job waits for a worker by default (`R2R_SANDBOX_CLAIM_TIMEOUT`).
pub const DEFAULT_SANDBOX_CLAIM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Default number of sandbox measurements at once (`R2R_SANDBOX_CONCURRENCY`).
pub const DEFAULT_SANDBOX_CONCURRENCY: usize = 2;
/// The most `R2R_SANDBOX_CONCURRENCY` may say: each run may take a core and hundreds of MiB.
pub const MAX_SANDBOX_CONCURRENCY: usize = 32;

#[cfg(test)]
mod tests {
    use crate::config::{Config, Confirm, Environment};

    #[test]
    fn the_sandbox_backend_is_parsed_once_into_its_type() {
        let backend = |text: &str| {
            Config::from_env(
                &Environment::from_pairs([("R2R_SANDBOX_BACKEND", text)]),
                None,
            )
            .map(|c| c.sandbox_backend)
        };
        assert_eq!(backend("docker").unwrap(), Some(sandbox::Backend::Docker));
        assert_eq!(backend(" bwrap ").unwrap(), Some(sandbox::Backend::Bwrap));
        assert_eq!(backend("none").unwrap(), None);
        let error = backend("podman").unwrap_err().to_string();
        assert!(
            error.contains("R2R_SANDBOX_BACKEND") && error.contains("docker, bwrap or none"),
            "{error}"
        );
        assert_eq!(
            Config::from_env(&Environment::default(), None)
                .unwrap()
                .sandbox_backend,
            Some(sandbox::Backend::Docker)
        );
    }

    #[test]
    fn the_sandbox_concurrency_defaults_to_two_and_a_bad_value_is_named() {
        let config = Config::from_env(&Environment::default(), None).unwrap();
        assert_eq!(config.sandbox_concurrency, 2);
        let one = Environment::from_pairs([("R2R_SANDBOX_CONCURRENCY", " 1 ")]);
        assert_eq!(Config::from_env(&one, None).unwrap().sandbox_concurrency, 1);
        for value in ["0", "-1", "two", "33", "1.5"] {
            let env = Environment::from_pairs([("R2R_SANDBOX_CONCURRENCY", value)]);
            let error = Config::from_env(&env, None).unwrap_err();
            assert_eq!(error.variable, "R2R_SANDBOX_CONCURRENCY", "{value:?}");
            assert!(error.reason.contains("1 to 32"), "{}", error.reason);
        }
    }

    #[test]
    fn worker_confirmation_defaults_to_auto_and_a_bad_value_is_named() {
        let config = Config::from_env(&Environment::default(), None).unwrap();
        assert_eq!(config.sandbox_confirm, Confirm::Auto);
        for (text, confirm) in [
            (" always ", Confirm::Always),
            ("never", Confirm::Never),
            ("auto", Confirm::Auto),
        ] {
            let env = Environment::from_pairs([("R2R_SANDBOX_CONFIRM", text)]);
            assert_eq!(
                Config::from_env(&env, None).unwrap().sandbox_confirm,
                confirm
            );
        }
        for value in ["yes", "ALWAYS", "1", "auto never"] {
            let env = Environment::from_pairs([("R2R_SANDBOX_CONFIRM", value)]);
            let error = Config::from_env(&env, None).unwrap_err();
            assert_eq!(error.variable, "R2R_SANDBOX_CONFIRM", "{value:?}");
            assert!(error.reason.contains("auto"), "{}", error.reason);
        }
    }
}
