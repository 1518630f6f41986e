//! Where the crew runs (`R2R_CREW`, `R2R_MODEL_*`).

use super::{ConfigError, Environment};

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
