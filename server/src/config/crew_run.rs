//! Where the crew runs (`R2R_CREW`, `R2R_MODEL_*`).

use super::intake::component_list;
use super::{whole_in, ConfigError, Environment};

/// Where the crew runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrewMode {
    /// Not here (`R2R_CREW=off`, or no model provider configured): run `r2r crew run`.
    Off,
    /// Inside `r2r serve` (`R2R_CREW=in-process`; the default when `R2R_MODEL_PROVIDER` and
    /// the four crew tokens are set), talking to the desk over HTTP like any other client.
    InProcess {
        /// The `R2R_MODEL_*` variables the provider is built from.
        model_env: Vec<(String, crate::secret::Secret)>,
    },
}

/// How the reproducer works (`R2R_CREW_CONTEXT`, `R2R_CREW_FEEDBACK`: `on`, the default, or
/// `off`), with the profile's hint for a desk that gives no context.
pub fn crew_approach(
    env: &Environment,
    profile: sandbox::Profile,
) -> Result<crew::reproducer::Approach, ConfigError> {
    let switch = |name: &'static str| match env.get(name).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(true),
        Some(v) if v == "on" => Ok(true),
        Some(v) if v == "off" => Ok(false),
        Some(v) => Err(ConfigError::new(
            name,
            format!("expected on or off, got {v:?}"),
        )),
    };
    Ok(crew::reproducer::Approach {
        hint: project_hint(profile).to_owned(),
        context: switch("R2R_CREW_CONTEXT")?,
        feedback: switch("R2R_CREW_FEEDBACK")?,
    })
}

/// The crew's rules: the components it may work on (`R2R_CREW_COMPONENTS`) and the failed
/// reproductions before a person gets the bug (`R2R_REPRODUCTION_ATTEMPTS`, 1 to 10).
pub fn policy(env: &Environment) -> Result<domain::workflow::Policy, ConfigError> {
    let mut policy = domain::workflow::Policy::default();
    if let Some(text) = env.get("R2R_CREW_COMPONENTS") {
        policy.allowed_components = component_list("R2R_CREW_COMPONENTS", text)?;
    }
    policy.max_reproduction_attempts = whole_in(
        env,
        "R2R_REPRODUCTION_ATTEMPTS",
        1,
        10,
        i64::from(policy.max_reproduction_attempts),
        "how many proposed tests may fail to reproduce a bug before a person gets it",
    )?
    .try_into()
    .unwrap_or(policy.max_reproduction_attempts);
    Ok(policy)
}

/// How long an accepted crew task stays its worker's, in ms (`R2R_CREW_TASK_LEASE`,
/// seconds, 1 to 86,400).
pub fn task_lease_ms(env: &Environment) -> Result<i64, ConfigError> {
    Ok(match env.get("R2R_CREW_TASK_LEASE") {
    None => domain::crew::TASK_LEASE_MS,
    Some(text) => text
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|s| (1..=86_400).contains(s))
        .map(|s| s * 1000)
        .ok_or_else(|| {
            ConfigError::new(
                "R2R_CREW_TASK_LEASE",
                format!(
                    "expected how many seconds an accepted crew task stays its worker's, a whole number from 1 to 86400, got {text:?}"
                ),
            )
        })?,
})
}

/// How often a failed crew step is tried (`R2R_CREW_RETRIES`) and the first wait
/// (`R2R_CREW_RETRY_BACKOFF`).
pub fn retry_policy(env: &Environment) -> Result<domain::crew::RetryPolicy, ConfigError> {
    Ok(domain::crew::RetryPolicy {
        attempts: whole_in(
            env,
            "R2R_CREW_RETRIES",
            1,
            10,
            i64::from(domain::crew::RETRY_POLICY.attempts),
            "how many times a crew step is tried in all",
        )?
        .try_into()
        .unwrap_or(domain::crew::RETRY_POLICY.attempts),
        backoff_ms: whole_in(
            env,
            "R2R_CREW_RETRY_BACKOFF",
            0,
            3_600,
            domain::crew::RETRY_POLICY.backoff_ms / 1000,
            "how many seconds the crew waits before trying a failed step again",
        )? * 1000,
    })
}

/// The hint the reproducer gives the model about the target, by profile.
pub fn project_hint(profile: sandbox::Profile) -> &'static str {
    match profile {
        sandbox::Profile::Rust => "The target is a Rust crate: put the test under tests/ as an integration test using the crate's public API.",
        sandbox::Profile::NodeTest => "The target is a Node.js project tested with node --test: put the test in a new file under test/.",
        sandbox::Profile::Vitest => "The target is a JavaScript/TypeScript project tested with Vitest: put the test in a new *.test file.",
        sandbox::Profile::Python => "The target is a Python project tested with pytest, run as python3 -m pytest from the repository root (so a test imports the package by its name): put the test in a new tests/test_*.py file as a test_* function that checks with plain assert.",
        sandbox::Profile::Go => "The target is a Go module tested offline with go test (standard library and vendored modules only): put the test in a new *_test.go file in the package's folder, as a TestXxx function that reports the failure with t.Errorf or t.Fatalf.",
        sandbox::Profile::Junit => "The target's tests run through its .r2r/junit script, which writes JUnit XML: put the test beside the project's existing tests, in their framework, and give its name exactly as the report lists it.",
    }
}

/// The `R2R_MODEL_*` variables of `env`.
fn model_env(env: &Environment) -> Vec<(String, crate::secret::Secret)> {
    let mut vars: Vec<(String, crate::secret::Secret)> = env
        .values
        .iter()
        .filter(|(name, value)| name.starts_with("R2R_MODEL_") && !value.trim().is_empty())
        .map(|(name, value)| (name.clone(), crate::secret::Secret::new(value.clone())))
        .collect();
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    vars
}

/// Reads `R2R_CREW` and checks the model settings an in-process crew would use.
pub(crate) fn crew_mode(env: &Environment) -> Result<CrewMode, ConfigError> {
    let asked = env.get("R2R_CREW").map(str::trim);
    let tokens_missing: Vec<&str> = domain::crew::CREW_ROLES
        .iter()
        .map(|role| role.token_variable())
        .filter(|name| env.get(name).is_none())
        .collect();
    let provider = env.get("R2R_MODEL_PROVIDER").is_some();
    match asked {
        Some("off") => Ok(CrewMode::Off),
        None if !provider || !tokens_missing.is_empty() => Ok(CrewMode::Off),
        None | Some("in-process") => {
            if !tokens_missing.is_empty() {
                return Err(ConfigError::new(
                    "R2R_CREW",
                    format!(
                        "in-process needs the crew's tokens; missing {} (r2r setup writes them)",
                        tokens_missing.join(", ")
                    ),
                ));
            }
            let vars = model_env(env);
            crew::config::provider_from(|name| {
                vars.iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.expose().to_owned())
            })
            .map_err(|reason| ConfigError::new("R2R_CREW", format!("in-process: {reason}")))?;
            Ok(CrewMode::InProcess { model_env: vars })
        }
        Some(other) => Err(ConfigError::new(
            "R2R_CREW",
            format!("expected in-process or off, got {other:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, Environment};

    #[test]
    fn crew_retries_default_to_three_tries_thirty_seconds_apart_and_bad_values_are_named() {
        let config = Config::from_env(&Environment::default(), None).unwrap();
        assert_eq!(config.crew_retry, domain::crew::RETRY_POLICY);
        assert_eq!(config.crew_retry.attempts, 3);
        assert_eq!(config.crew_retry.backoff_ms, 30_000);
        let set =
            Environment::from_pairs([("R2R_CREW_RETRIES", " 2 "), ("R2R_CREW_RETRY_BACKOFF", "0")]);
        let config = Config::from_env(&set, None).unwrap();
        assert_eq!(
            (config.crew_retry.attempts, config.crew_retry.backoff_ms),
            (2, 0)
        );
        for (name, value) in [
            ("R2R_CREW_RETRIES", "0"),
            ("R2R_CREW_RETRIES", "11"),
            ("R2R_CREW_RETRIES", "three"),
            ("R2R_CREW_RETRY_BACKOFF", "-1"),
            ("R2R_CREW_RETRY_BACKOFF", "3601"),
            ("R2R_CREW_RETRY_BACKOFF", "1.5"),
        ] {
            let env = Environment::from_pairs([(name, value)]);
            let error = Config::from_env(&env, None).unwrap_err();
            assert_eq!(error.variable, name, "{value:?}");
            assert!(error.reason.contains(value), "{}", error.reason);
        }
    }

    #[test]
    fn the_reproducer_reads_context_takes_feedback_and_has_three_attempts_unless_told() {
        let config = Config::from_env(&Environment::default(), None).unwrap();
        assert!(config.crew_approach.context && config.crew_approach.feedback);
        assert_eq!(config.policy.max_reproduction_attempts, 3);
        let set = Environment::from_pairs([
            ("R2R_CREW_CONTEXT", "off"),
            ("R2R_CREW_FEEDBACK", " OFF "),
            ("R2R_REPRODUCTION_ATTEMPTS", "5"),
        ]);
        let config = Config::from_env(&set, None).unwrap();
        assert!(!config.crew_approach.context && !config.crew_approach.feedback);
        assert_eq!(config.policy.max_reproduction_attempts, 5);
        for (name, value) in [
            ("R2R_CREW_CONTEXT", "maybe"),
            ("R2R_CREW_FEEDBACK", "1"),
            ("R2R_REPRODUCTION_ATTEMPTS", "0"),
            ("R2R_REPRODUCTION_ATTEMPTS", "11"),
            ("R2R_REPRODUCTION_ATTEMPTS", "three"),
        ] {
            let env = Environment::from_pairs([(name, value)]);
            let error = Config::from_env(&env, None).unwrap_err();
            assert_eq!(error.variable, name, "{value:?}");
            assert!(error.reason.contains(value.trim()), "{}", error.reason);
        }
    }

    #[test]
    fn the_crew_task_lease_defaults_to_fifteen_minutes_and_a_bad_value_is_named() {
        let config = Config::from_env(&Environment::default(), None).unwrap();
        assert_eq!(config.task_lease_ms, 20_000);
        let short = Environment::from_pairs([("R2R_CREW_TASK_LEASE", "2")]);
        assert_eq!(Config::from_env(&short, None).unwrap().task_lease_ms, 2_000);
        for value in ["0", "-5", "soon", "86401", "1.5"] {
            let env = Environment::from_pairs([("R2R_CREW_TASK_LEASE", value)]);
            let error = Config::from_env(&env, None).unwrap_err();
            assert_eq!(error.variable, "R2R_CREW_TASK_LEASE", "{value:?}");
        }
    }
}
