//! The public intake: the components a report may name, the per-client limits on filing and
//! on answers, the proxies believed about a client's address, and a stranger's budget.

use super::env::{rate, ConfigError, Environment};
use super::{whole_in, TrustedProxies};
use crate::ratelimit::RateLimit;

/// Default components a report may name.
pub const DEFAULT_COMPONENTS: &str = "shoplite,desk";
/// Default per-client limit on filing reports.
pub const DEFAULT_INTAKE_RATE: &str = "6/60s";
/// Default per-client limit on tracking-page reads and answers.
pub const DEFAULT_ANSWER_RATE: &str = "60/60s";

/// The public intake's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntakeConfig {
    /// Components a report may name (`R2R_COMPONENTS`).
    pub components: Vec<String>,
    /// Per-client limit on filing (`R2R_RATE_INTAKE`).
    pub intake_rate: RateLimit,
    /// Per-client limit on tracking reads and answers (`R2R_RATE_ANSWERS`).
    pub answer_rate: RateLimit,
    /// The proxies whose `X-Forwarded-For` names the client (`R2R_TRUSTED_PROXIES`; none:
    /// the socket peer is the client).
    pub trusted_proxies: TrustedProxies,
    /// A stranger's budget (`R2R_STRANGER_BUGS_PER_HOUR`, 1 to 10,000, default 3): how many
    /// new bugs filed from one address for one component the crew starts on in any hour; the
    /// others are kept and wait their turn ("waiting for crew budget"). With the per-bug
    /// budget this bounds what one address can make the crew spend in an hour.
    pub stranger_bugs_per_hour: u32,
}

/// The default stranger's budget (`R2R_STRANGER_BUGS_PER_HOUR`).
pub const DEFAULT_STRANGER_BUGS_PER_HOUR: u32 = 3;

pub(super) fn component_list(variable: &str, text: &str) -> Result<Vec<String>, ConfigError> {
    let mut components: Vec<String> = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        let valid = !item.is_empty()
            && item.len() <= 40
            && item
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !item.starts_with('-');
        if !valid {
            return Err(ConfigError::new(
                variable,
                format!(
                    "expected comma-separated component ids of lower-case letters, digits and \
                     dashes (up to 40 characters), such as shoplite,desk; got {item:?}"
                ),
            ));
        }
        if components.iter().any(|c| c == item) {
            return Err(ConfigError::new(
                variable,
                format!("{item:?} is listed twice"),
            ));
        }
        components.push(item.to_owned());
    }
    Ok(components)
}

impl IntakeConfig {
    /// Reads the section.
    pub fn from_env(env: &Environment) -> Result<IntakeConfig, ConfigError> {
        Ok(IntakeConfig {
            components: component_list(
                "R2R_COMPONENTS",
                env.get("R2R_COMPONENTS").unwrap_or(DEFAULT_COMPONENTS),
            )?,
            intake_rate: rate(env, "R2R_RATE_INTAKE", DEFAULT_INTAKE_RATE)?,
            answer_rate: rate(env, "R2R_RATE_ANSWERS", DEFAULT_ANSWER_RATE)?,
            trusted_proxies: {
                if env.get("R2R_TRUST_FORWARDED_FOR").is_some() {
                    return Err(ConfigError::new(
                    "R2R_TRUST_FORWARDED_FOR",
                    "is no longer read (it let any client choose its address): list the proxies whose X-Forwarded-For the desk may believe in R2R_TRUSTED_PROXIES (addresses or CIDR ranges) and remove this variable".to_owned(),
                ));
                }
                TrustedProxies::parse(env.get("R2R_TRUSTED_PROXIES").unwrap_or(""))
                    .map_err(|why| ConfigError::new("R2R_TRUSTED_PROXIES", why))?
            },
            stranger_bugs_per_hour: whole_in(
                env,
                "R2R_STRANGER_BUGS_PER_HOUR",
                1,
                10_000,
                i64::from(DEFAULT_STRANGER_BUGS_PER_HOUR),
                "how many new bugs from one address and component the crew starts on in an hour",
            )?
            .try_into()
            .unwrap_or(DEFAULT_STRANGER_BUGS_PER_HOUR),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_strangers_budget_defaults_to_three_and_a_bad_value_is_named() {
        let config = IntakeConfig::from_env(&Environment::default()).unwrap();
        assert_eq!(config.stranger_bugs_per_hour, 3);
        let set = Environment::from_pairs([("R2R_STRANGER_BUGS_PER_HOUR", " 20 ")]);
        assert_eq!(
            IntakeConfig::from_env(&set).unwrap().stranger_bugs_per_hour,
            20
        );
        for value in ["0", "-1", "three", "10001", "2.5"] {
            let env = Environment::from_pairs([("R2R_STRANGER_BUGS_PER_HOUR", value)]);
            let error = IntakeConfig::from_env(&env).unwrap_err();
            assert_eq!(error.variable, "R2R_STRANGER_BUGS_PER_HOUR", "{value:?}");
            assert!(error.reason.contains("1 to 10000"), "{}", error.reason);
        }
    }

    #[test]
    fn components_are_listed_once_each_in_lower_case() {
        let env = Environment::from_pairs([("R2R_COMPONENTS", " web, api ,cli ")]);
        assert_eq!(
            IntakeConfig::from_env(&env).unwrap().components,
            ["web", "api", "cli"]
        );
        for bad in ["Shop Lite", "a,,b", "a,a", "-x", &"x".repeat(41)] {
            let env = Environment::from_pairs([("R2R_COMPONENTS", bad)]);
            assert_eq!(
                IntakeConfig::from_env(&env).unwrap_err().variable,
                "R2R_COMPONENTS",
                "{bad:?}"
            );
        }
    }
}
