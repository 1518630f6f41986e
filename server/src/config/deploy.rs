//! The deployer (`R2R_DEPLOY`, `R2R_DEPLOY_DIR`, `R2R_DEPLOY_SERVICE`): after a merge lands
//! on the local forge's default branch, the desk builds that commit in its sandbox, starts it
//! on a loopback port of its own, serves it at `/live/<service>` and has the recorder prove
//! it live.

use super::{ConfigError, Environment};
use std::path::PathBuf;

/// Where releases live and what they are called.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeployConfig {
    /// Each release's artifact and the record of the live one (`R2R_DEPLOY_DIR`, default
    /// `data/releases`).
    pub dir: PathBuf,
    /// The service's name: its binary, its `/api/health` service and its public path
    /// `/live/<service>` (`R2R_DEPLOY_SERVICE`, default `shoplite`).
    pub service: String,
    /// How it starts: its port inside its own network namespace, its arguments, its
    /// environment and its assets folder (`R2R_DEPLOY_PORT`, `R2R_DEPLOY_ARGS`,
    /// `R2R_DEPLOY_ENV`, `R2R_DEPLOY_ASSETS`; a stored project's: its `launch`). Default:
    /// `--addr 127.0.0.1:8080`, no environment, assets in `static/`.
    pub launch: domain::launch::Launch,
}

/// Where releases live (`R2R_DEPLOY_DIR`, default `data/releases`).
pub fn directory(env: &Environment) -> PathBuf {
    PathBuf::from(env.get("R2R_DEPLOY_DIR").unwrap_or("data/releases").trim())
}

impl DeployConfig {
    /// `Some` when `R2R_DEPLOY=on` (which needs a local forge and a Rust target); `None`
    /// when unset or `off`.
    pub fn from_env(
        env: &Environment,
        local_forge: bool,
        profile: sandbox::Profile,
    ) -> Result<Option<DeployConfig>, ConfigError> {
        match env.get("R2R_DEPLOY").map(str::trim) {
            None | Some("off") => return Ok(None),
            Some("on") => {}
            Some(other) => {
                return Err(ConfigError::new(
                    "R2R_DEPLOY",
                    format!("expected on or off, got {other:?}"),
                ))
            }
        }
        if !local_forge {
            return Err(ConfigError::new(
                "R2R_DEPLOY",
                "on needs R2R_LOCAL_FORGE: the deployer releases what lands on its default branch",
            ));
        }
        if profile != sandbox::Profile::Rust {
            return Err(ConfigError::new(
                "R2R_DEPLOY",
                format!(
                    "on builds Rust targets only; R2R_TARGET_PROFILE is {}",
                    profile.as_str()
                ),
            ));
        }
        let service = env
            .get("R2R_DEPLOY_SERVICE")
            .unwrap_or("shoplite")
            .trim()
            .to_owned();
        let plain = !service.is_empty()
            && service.len() <= 64
            && service
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !plain {
            return Err(ConfigError::new(
                "R2R_DEPLOY_SERVICE",
                format!("expected lower-case letters, digits and dashes, got {service:?}"),
            ));
        }
        let launch = domain::launch::Launch::parse_with_assets(
            &domain::launch::Launch::default(),
            env.get("R2R_DEPLOY_PORT"),
            env.get("R2R_DEPLOY_ARGS"),
            env.get("R2R_DEPLOY_ENV"),
            env.get("R2R_DEPLOY_ASSETS"),
        )
        .map_err(|refused| {
            let variable = match refused.field {
                "port" => "R2R_DEPLOY_PORT",
                "args" => "R2R_DEPLOY_ARGS",
                "assets" => "R2R_DEPLOY_ASSETS",
                _ => "R2R_DEPLOY_ENV",
            };
            ConfigError::new(variable, refused.message)
        })?;
        Ok(Some(DeployConfig {
            dir: directory(env),
            service,
            launch,
        }))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_deployer_is_off_unless_asked_and_then_needs_a_forge_and_a_rust_target() {
        let env = |pairs: &[(&str, &str)]| Environment::from_pairs(pairs.iter().copied());
        let rust = sandbox::Profile::Rust;
        assert_eq!(DeployConfig::from_env(&env(&[]), true, rust), Ok(None));
        assert_eq!(
            DeployConfig::from_env(&env(&[("R2R_DEPLOY", "off")]), true, rust),
            Ok(None)
        );
        let on = DeployConfig::from_env(&env(&[("R2R_DEPLOY", "on")]), true, rust)
            .unwrap()
            .unwrap();
        assert_eq!(on.service, "shoplite");
        assert_eq!(on.dir, PathBuf::from("data/releases"));
        assert!(on.launch.is_default());
        let own = DeployConfig::from_env(
            &env(&[
                ("R2R_DEPLOY", "on"),
                ("R2R_DEPLOY_PORT", "3000"),
                ("R2R_DEPLOY_ARGS", "serve"),
                ("R2R_DEPLOY_ENV", "TZ=UTC"),
            ]),
            true,
            rust,
        )
        .unwrap()
        .unwrap();
        assert_eq!(own.launch.filled_args(), ["serve"]);
        assert_eq!(own.launch.addr().port(), 3000);
        for (pairs, forge, profile, variable) in [
            (&[("R2R_DEPLOY", "yes")][..], true, rust, "R2R_DEPLOY"),
            (&[("R2R_DEPLOY", "on")][..], false, rust, "R2R_DEPLOY"),
            (
                &[("R2R_DEPLOY", "on")][..],
                true,
                sandbox::Profile::NodeTest,
                "R2R_DEPLOY",
            ),
            (
                &[("R2R_DEPLOY", "on"), ("R2R_DEPLOY_SERVICE", "../shop")][..],
                true,
                rust,
                "R2R_DEPLOY_SERVICE",
            ),
            (
                &[("R2R_DEPLOY", "on"), ("R2R_DEPLOY_PORT", "0")][..],
                true,
                rust,
                "R2R_DEPLOY_PORT",
            ),
            (
                &[
                    ("R2R_DEPLOY", "on"),
                    ("R2R_DEPLOY_ENV", "R2R_OWNER_SESSION_KEY=x"),
                ][..],
                true,
                rust,
                "R2R_DEPLOY_ENV",
            ),
        ] {
            let refused = DeployConfig::from_env(&env(pairs), forge, profile).unwrap_err();
            assert_eq!(refused.variable, variable, "{pairs:?}");
        }
    }
}
