//! Where settings come from: the process environment over `.env.local`, and the one error
//! a refused value becomes (the variable's name and the expected form).

use crate::ratelimit::RateLimit;
use std::collections::HashMap;

/// A refused configuration value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable} is invalid: {reason}")]
pub struct ConfigError {
    /// The variable (or flag) that was refused.
    pub variable: String,
    /// Why, including the expected form.
    pub reason: String,
}

impl ConfigError {
    pub(crate) fn new(variable: &str, reason: impl Into<String>) -> Self {
        ConfigError {
            variable: variable.to_owned(),
            reason: reason.into(),
        }
    }
}

/// A source of variables: the process environment over `.env.local`.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    pub(crate) values: HashMap<String, String>,
}

impl Environment {
    /// The process environment, with `.env.local` (if present) filling in what it lacks.
    pub fn load(env_file: &std::path::Path) -> Result<Self, ConfigError> {
        let mut values = match std::fs::read_to_string(env_file) {
            Ok(text) => parse_env_file(&text).map_err(|(line, reason)| {
                ConfigError::new(&format!("{} line {line}", env_file.display()), reason)
            })?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
            Err(error) => {
                return Err(ConfigError::new(
                    &env_file.display().to_string(),
                    format!("cannot read it: {error}"),
                ))
            }
        };
        values.extend(std::env::vars());
        Ok(Environment { values })
    }

    /// An environment from explicit pairs (tests).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Environment {
            values: pairs
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }

    /// Docker's local image (`R2R_SANDBOX_IMAGE`, default the one `scripts/sandbox-host.sh`
    /// builds).
    pub fn sandbox_image(&self) -> String {
        self.get("R2R_SANDBOX_IMAGE")
            .unwrap_or(sandbox::docker::DEFAULT_IMAGE)
            .trim()
            .to_owned()
    }

    /// The target's test profile (`R2R_TARGET_PROFILE`: rust, node, vitest, python, go or
    /// junit; default rust).
    pub fn target_profile(&self) -> Result<sandbox::Profile, ConfigError> {
        let profile = self.get("R2R_TARGET_PROFILE").unwrap_or("rust").trim();
        sandbox::Profile::parse(profile).ok_or_else(|| {
            ConfigError::new(
                "R2R_TARGET_PROFILE",
                format!("expected rust, node, vitest, python, go or junit, got {profile:?}"),
            )
        })
    }

    /// The site options file `r2r serve` reads outside cargo-leptos (`R2R_LEPTOS_TOML`).
    pub fn leptos_toml(&self) -> String {
        self.get("R2R_LEPTOS_TOML")
            .unwrap_or("Leptos.toml")
            .to_owned()
    }

    /// A variable's value; an empty value counts as unset.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .get(name)
            .map(String::as_str)
            .filter(|value| !value.trim().is_empty())
    }
}

/// Parses `KEY=VALUE` lines; `#` comments and blank lines are skipped. Values may be quoted.
pub fn parse_env_file(text: &str) -> Result<HashMap<String, String>, (usize, String)> {
    let mut values = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err((index + 1, "expected KEY=VALUE".to_owned()));
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err((index + 1, format!("{key:?} is not a variable name")));
        }
        let value = value.trim();
        let value = value
            .strip_prefix('\'')
            .and_then(|v| v.strip_suffix('\''))
            .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
            .unwrap_or(value);
        values.insert(key.to_owned(), value.to_owned());
    }
    Ok(values)
}

/// A rate limit such as `6/60s` from `variable`, or `default`.
pub(crate) fn rate(
    env: &Environment,
    variable: &str,
    default: &str,
) -> Result<RateLimit, ConfigError> {
    RateLimit::parse(env.get(variable).unwrap_or(default))
        .map_err(|reason| ConfigError::new(variable, reason))
}

pub(crate) fn boolean(env: &Environment, variable: &str) -> Result<bool, ConfigError> {
    match env.get(variable).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(false),
        Some(v) if matches!(v.as_str(), "1" | "true" | "yes") => Ok(true),
        Some(v) if matches!(v.as_str(), "0" | "false" | "no") => Ok(false),
        Some(v) => Err(ConfigError::new(
            variable,
            format!("expected true or false, got {v:?}"),
        )),
    }
}
