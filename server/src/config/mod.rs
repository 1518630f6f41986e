//! The server's configuration: one typed struct built from the environment (and `.env.local`)
//! at start-up. A malformed variable stops start-up with its name and the expected form.

mod auth;
mod crew_run;
mod deploy;
mod deps;
mod env;
mod forge;
mod github;
mod http;
mod intake;
mod limits;
mod notify;
mod proxies;
mod sandbox_runs;
mod spend;

pub use auth::{
    looks_like_email, looks_like_owner_email, AuthConfig, BootstrapOwner, DEFAULT_LOGIN_RATE,
};
pub use crew_run::{crew_approach, project_hint, CrewMode};
pub use deploy::DeployConfig;
pub use deps::DepsConfig;
pub use env::{parse_env_file, ConfigError, Environment};
pub use github::GitHubConfig;
pub use http::HttpLimits;
pub use intake::{
    IntakeConfig, DEFAULT_ANSWER_RATE, DEFAULT_COMPONENTS, DEFAULT_INTAKE_RATE,
    DEFAULT_STRANGER_BUGS_PER_HOUR,
};
pub use notify::NotifyConfig;
pub use proxies::TrustedProxies;
pub use sandbox_runs::{
    Confirm, SandboxSection, DEFAULT_SANDBOX_CLAIM_TIMEOUT, DEFAULT_SANDBOX_CONCURRENCY,
    MAX_SANDBOX_CONCURRENCY,
};

use crew_run::crew_mode;
use std::net::SocketAddr;
use store::DatabaseUrl;

/// The default listening address.
pub const DEFAULT_ADDR: &str = "127.0.0.1:3000";

/// Everything `r2r serve` needs to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Where the ledger lives.
    pub database_url: DatabaseUrl,
    /// Where to listen.
    pub addr: SocketAddr,
    /// Where the other servers on the same database reach this one (`R2R_SERVER_ADDRESS`,
    /// an http(s) base URL); unset: the loopback address it listens on (servers on one host).
    pub server_address: Option<String>,
    /// How long a client may take and how many may be connected (`R2R_HEADER_TIMEOUT`,
    /// `R2R_BODY_TIMEOUT`, `R2R_MAX_CONNECTIONS`).
    pub http: HttpLimits,
    /// The first owner from `r2r setup`, if configured.
    pub bootstrap_owner: Option<BootstrapOwner>,
    /// The Leptos runtime options file.
    pub leptos_toml: String,
    /// What the public may report and how often.
    pub intake: IntakeConfig,
    /// The crew's rules.
    pub policy: domain::workflow::Policy,
    /// Owner sessions and role tokens.
    pub auth: AuthConfig,
    /// GitHub webhooks and REST API.
    pub github: GitHubConfig,
    /// A bare git repository serving as the local forge (`R2R_LOCAL_FORGE`).
    pub local_forge: Option<std::path::PathBuf>,
    /// The deployer, when on (`R2R_DEPLOY`).
    pub deploy: Option<DeployConfig>,
    /// Where releases live (`R2R_DEPLOY_DIR`, default `data/releases`): the environment's
    /// project's directly, a stored project's under `projects/<id>/`.
    pub deploy_dir: std::path::PathBuf,
    /// The dependency cache (`R2R_DEPS_DIR`, `R2R_DEPS_CACHE_MB`).
    pub deps: deps::DepsConfig,
    /// The limits of a project's sandbox runs (`R2R_SANDBOX_MEMORY_MB`, `R2R_SANDBOX_CPU`,
    /// `R2R_SANDBOX_PIDS`, `R2R_SANDBOX_WORK_MB`).
    pub run_limits: sandbox::Limits,
    /// Its default branch (`R2R_LOCAL_FORGE_BRANCH`, default `main`).
    pub local_forge_branch: String,
    /// The sandbox the desk re-runs proposed tests in (`R2R_SANDBOX_BACKEND`: docker, bwrap
    /// or none — `None` here; default docker).
    pub sandbox_backend: Option<sandbox::Backend>,
    /// Docker's local image (`R2R_SANDBOX_IMAGE`).
    pub sandbox_image: String,
    /// Where the desk's sandbox runs go (`R2R_SANDBOX_RUNNER`): `None` (`local`, the
    /// default) runs them in this process's own sandbox; `Some(timeout)` (`workers`) queues
    /// each as a job for `r2r sandbox worker` hosts, giving a job up when no worker claims it
    /// within the timeout (`R2R_SANDBOX_CLAIM_TIMEOUT`, seconds, 1 to 3,600, default 120).
    pub sandbox_workers: Option<std::time::Duration>,
    /// Whether a worker's test run is run again by a second worker before the desk believes
    /// it (`R2R_SANDBOX_CONFIRM`: `auto`, the default, whenever two workers hold tokens;
    /// `always`; `never`).
    pub sandbox_confirm: Confirm,
    /// How many sandbox measurements (proposed reproductions, fix candidates) run at once
    /// (`R2R_SANDBOX_CONCURRENCY`, 1 to [`MAX_SANDBOX_CONCURRENCY`], default 2); a proposal
    /// over the bound is refused with 503 and `Retry-After`.
    pub sandbox_concurrency: usize,
    /// The target project's test profile (`R2R_TARGET_PROFILE`: rust, node, vitest, python,
    /// go or junit).
    pub target_profile: sandbox::Profile,
    /// Path prefixes a fix may change (`R2R_FIX_ALLOWED_PATHS`, comma-separated, default
    /// `src/`); tests, build files and CI are never among them unless an owner says so here.
    pub fix_allowed_paths: Vec<String>,
    /// Where a proposed reproduction may live in the environment's project
    /// (`R2R_TEST_PATHS`, comma-separated globs); empty: its profile's defaults.
    pub test_paths: Vec<String>,
    /// Whether `r2r serve` runs the crew inside the same process (`R2R_CREW`).
    pub crew: CrewMode,
    /// Notifications: SMTP, the owners' webhook, and whether the concierge runs here.
    pub notify: NotifyConfig,
    /// How long an accepted crew task stays its worker's before it is offered again
    /// (`R2R_CREW_TASK_LEASE`, seconds, 1 to 86,400; default 900).
    pub task_lease_ms: i64,
    /// How often a crew step that ended without moving its bug on is tried, and the wait
    /// after the first failure (doubling after each): `R2R_CREW_RETRIES` (tries in all, 1 to
    /// 10, default 3) and `R2R_CREW_RETRY_BACKOFF` (seconds, 0 to 3,600, default 30). Then
    /// the bug goes to a person with the reason `crew_step_failed`.
    pub crew_retry: domain::crew::RetryPolicy,
    /// How the in-process crew's reproducer works (`R2R_CREW_CONTEXT`, `R2R_CREW_FEEDBACK`).
    pub crew_approach: crew::reproducer::Approach,
    /// The model budget (`R2R_SPEND_PER_CALL`, `R2R_SPEND_TOTAL` in dollars;
    /// `R2R_SPEND_CALLS_PER_HOUR`, `R2R_SPEND_CLIENT_CALLS_PER_HOUR`).
    pub spend: domain::spend::Budget,
}

impl Config {
    /// Builds the configuration; `addr_flag` (from `--addr`) wins over `R2R_ADDR`.
    pub fn from_env(env: &Environment, addr_flag: Option<&str>) -> Result<Config, ConfigError> {
        let database_url = match env.get("DATABASE_URL") {
            None => DatabaseUrl::default_sqlite(),
            Some(text) => DatabaseUrl::parse(text)
                .map_err(|error| ConfigError::new("DATABASE_URL", error.to_string()))?,
        };
        let (addr_source, addr_text) = match addr_flag {
            Some(flag) => ("--addr", flag),
            None => ("R2R_ADDR", env.get("R2R_ADDR").unwrap_or(DEFAULT_ADDR)),
        };
        let addr = parse_addr(addr_text).map_err(|reason| ConfigError::new(addr_source, reason))?;
        let bootstrap_owner = BootstrapOwner::from_env(env)?;
        let leptos_toml = env.leptos_toml();
        let intake = IntakeConfig::from_env(env)?;
        let policy = crew_run::policy(env)?;
        let sandbox = sandbox_runs::SandboxSection::from_env(env)?;
        let auth = AuthConfig::from_env(env)?;
        let github = GitHubConfig::from_env(env)?;
        let http = HttpLimits::from_env(env)?;
        Ok(Config {
            database_url,
            addr,
            server_address: http::server_address(env)?,
            http,
            bootstrap_owner,
            leptos_toml,
            intake,
            policy,
            auth,
            github,
            local_forge: forge::local_forge(env),
            deploy: DeployConfig::from_env(
                env,
                env.get("R2R_LOCAL_FORGE").is_some(),
                env.target_profile()?,
            )?,
            deploy_dir: deploy::directory(env),
            deps: deps::DepsConfig::from_env(env)?,
            run_limits: limits::run_limits(env)?,
            local_forge_branch: forge::local_forge_branch(env)?,
            sandbox_image: env.sandbox_image(),
            sandbox_backend: sandbox.backend,
            sandbox_concurrency: sandbox.concurrency,
            sandbox_workers: sandbox.workers,
            sandbox_confirm: sandbox.confirm,
            task_lease_ms: crew_run::task_lease_ms(env)?,
            crew_approach: crew_run::crew_approach(env, env.target_profile()?)?,
            crew_retry: crew_run::retry_policy(env)?,
            spend: spend::budget(env)?,
            target_profile: env.target_profile()?,
            crew: crew_mode(env)?,
            notify: NotifyConfig::from_env(env)?,
            fix_allowed_paths: fix_allowed_paths(env.get("R2R_FIX_ALLOWED_PATHS"))
                .map_err(|reason| ConfigError::new("R2R_FIX_ALLOWED_PATHS", reason))?,
            test_paths: test_paths(env.get("R2R_TEST_PATHS"))
                .map_err(|reason| ConfigError::new("R2R_TEST_PATHS", reason))?,
        })
    }
}

/// `tests/**/*.rs, spec/**` → the patterns (none: the profile's defaults).
fn test_paths(text: Option<&str>) -> Result<Vec<String>, String> {
    let patterns: Vec<String> = text
        .unwrap_or("")
        .split(',')
        .map(|p| p.trim().trim_start_matches("./").to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    if patterns.len() > domain::test_paths::MAX_PATTERNS {
        return Err(format!(
            "at most {} patterns",
            domain::test_paths::MAX_PATTERNS
        ));
    }
    if let Some(bad) = patterns
        .iter()
        .find(|p| !domain::test_paths::valid_pattern(p))
    {
        return Err(format!(
            "{bad:?} is not a relative pattern such as tests/**/*.rs (letters, digits, _ - . / * ?; no hidden or .. parts)"
        ));
    }
    Ok(patterns)
}

/// `src/,lib/` → `["src/", "lib/"]`: relative folder prefixes, each ending in `/`.
fn fix_allowed_paths(text: Option<&str>) -> Result<Vec<String>, String> {
    let text = text.unwrap_or("src/");
    let mut prefixes = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let prefix = if part.ends_with('/') {
            part.to_owned()
        } else {
            format!("{part}/")
        };
        if !crew::schema::safe_path(prefix.trim_end_matches('/')) {
            return Err(format!(
                "expected relative folders such as src/ or lib/, comma-separated; {part:?} is not one"
            ));
        }
        prefixes.push(prefix);
    }
    if prefixes.is_empty() {
        return Err("name at least one folder a fix may change, such as src/".into());
    }
    Ok(prefixes)
}

fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    text.trim().parse().map_err(|_| {
        format!("expected HOST:PORT with a numeric IP address, such as {DEFAULT_ADDR} or 0.0.0.0:8080, got {text:?}")
    })
}

/// A whole number from `min` to `max` in `name`, or `default` when it is unset.
pub(super) fn whole_in(
    env: &Environment,
    name: &'static str,
    min: i64,
    max: i64,
    default: i64,
    what: &str,
) -> Result<i64, ConfigError> {
    match env.get(name) {
        None => Ok(default),
        Some(text) => text
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                ConfigError::new(
                    name,
                    format!("expected {what}, a whole number from {min} to {max}, got {text:?}"),
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ratelimit::RateLimit;

    #[test]
    fn defaults_are_a_sqlite_file_under_data_and_loopback_port_3000() {
        let config = Config::from_env(&Environment::default(), None).unwrap();
        assert_eq!(config.database_url, DatabaseUrl::default_sqlite());
        assert_eq!(config.addr.to_string(), "127.0.0.1:3000");
        assert_eq!(config.bootstrap_owner, None);
        assert_eq!(config.leptos_toml, "Leptos.toml");
    }

    #[test]
    fn a_malformed_database_url_names_the_variable_and_the_expected_form() {
        let env = Environment::from_pairs([("DATABASE_URL", "mysql://db")]);
        let error = Config::from_env(&env, None).unwrap_err();
        assert_eq!(error.variable, "DATABASE_URL");
        let message = error.to_string();
        assert!(message.starts_with("DATABASE_URL is invalid"), "{message}");
        assert!(message.contains("postgres://"), "{message}");
    }

    #[test]
    fn the_addr_flag_wins_and_a_bad_one_is_named() {
        let env = Environment::from_pairs([("R2R_ADDR", "127.0.0.1:4000")]);
        assert_eq!(Config::from_env(&env, None).unwrap().addr.port(), 4000);
        assert_eq!(
            Config::from_env(&env, Some("127.0.0.1:5000"))
                .unwrap()
                .addr
                .port(),
            5000
        );
        let error = Config::from_env(&env, Some("localhost")).unwrap_err();
        assert_eq!(error.variable, "--addr");
        let error =
            Config::from_env(&Environment::from_pairs([("R2R_ADDR", "nope")]), None).unwrap_err();
        assert_eq!(error.variable, "R2R_ADDR");
        assert!(error.reason.contains("HOST:PORT"));
    }

    #[test]
    fn intake_settings_have_defaults_and_bad_values_are_named() {
        let config = Config::from_env(&Environment::default(), None).unwrap();
        assert_eq!(config.intake.components, ["shoplite", "desk"]);
        assert_eq!(
            config.intake.intake_rate,
            RateLimit::parse("6/60s").unwrap()
        );
        assert!(config.intake.trusted_proxies.is_empty());
        assert_eq!(config.policy.allowed_components, ["shoplite"]);
        let custom = Environment::from_pairs([
            ("R2R_COMPONENTS", "web, api ,cli"),
            ("R2R_RATE_INTAKE", "100/1m"),
            ("R2R_TRUSTED_PROXIES", "127.0.0.1, 10.0.0.0/8"),
            ("R2R_CREW_COMPONENTS", "web"),
        ]);
        let config = Config::from_env(&custom, None).unwrap();
        assert_eq!(config.intake.components, ["web", "api", "cli"]);
        assert_eq!(config.intake.intake_rate.count, 100);
        assert!(config
            .intake
            .trusted_proxies
            .contains("10.9.8.7".parse().unwrap()));
        assert_eq!(config.policy.allowed_components, ["web"]);
        assert_eq!(config.fix_allowed_paths, ["src/"]);
        let paths = Environment::from_pairs([("R2R_FIX_ALLOWED_PATHS", "src, lib/util/")]);
        assert_eq!(
            Config::from_env(&paths, None).unwrap().fix_allowed_paths,
            ["src/", "lib/util/"]
        );
        assert!(config.test_paths.is_empty());
        let tests = Environment::from_pairs([("R2R_TEST_PATHS", " ./tests/**/*.rs , spec/* ")]);
        assert_eq!(
            Config::from_env(&tests, None).unwrap().test_paths,
            ["tests/**/*.rs", "spec/*"]
        );
        for (variable, value) in [
            ("R2R_TEST_PATHS", "../outside/**"),
            ("R2R_TEST_PATHS", "/etc/*"),
            ("R2R_SERVER_ADDRESS", "ftp://10.0.0.5"),
            ("R2R_SERVER_ADDRESS", "http://10.0.0.5:3000/desk"),
            ("R2R_SERVER_ADDRESS", "10.0.0.5:3000"),
            ("R2R_COMPONENTS", "Shop Lite"),
            ("R2R_COMPONENTS", "a,,b"),
            ("R2R_COMPONENTS", "a,a"),
            ("R2R_RATE_INTAKE", "lots"),
            ("R2R_RATE_ANSWERS", "5/0s"),
            ("R2R_TRUST_FORWARDED_FOR", "true"),
            ("R2R_TRUSTED_PROXIES", "proxy.internal"),
            ("R2R_CREW_COMPONENTS", "-x"),
            ("R2R_FIX_ALLOWED_PATHS", "../secrets"),
            ("R2R_FIX_ALLOWED_PATHS", "/etc"),
            ("R2R_FIX_ALLOWED_PATHS", " , "),
        ] {
            let error =
                Config::from_env(&Environment::from_pairs([(variable, value)]), None).unwrap_err();
            assert_eq!(error.variable, variable, "{value}");
        }
    }

    #[test]
    fn fixes_go_to_github_only_with_the_repository_listed_a_token_and_a_local_clone() {
        let full = [
            ("R2R_GITHUB_REPOSITORIES", "octo-org/shop"),
            ("R2R_GITHUB_TOKEN", "ghs_x"),
            ("R2R_LOCAL_FORGE", "/srv/shop.git"),
            ("R2R_GITHUB_FIX_REPOSITORY", "octo-org/shop"),
        ];
        let config = Config::from_env(&Environment::from_pairs(full), None).unwrap();
        let (repository, remote) = config.github.fix_remote().unwrap();
        assert_eq!(repository, "octo-org/shop");
        assert_eq!(remote.url, "https://github.com/octo-org/shop.git");
        assert!(!format!("{remote:?}").contains("ghs_x"), "{remote:?}");
        assert!(
            Config::from_env(&Environment::from_pairs(full[..3].iter().copied()), None)
                .unwrap()
                .github
                .fix_remote()
                .is_none()
        );
        for (skip, variable) in [
            (0, "R2R_GITHUB_FIX_REPOSITORY"),
            (1, "R2R_GITHUB_FIX_REPOSITORY"),
            (2, "R2R_GITHUB_FIX_REPOSITORY"),
        ] {
            let pairs: Vec<(&str, &str)> = full
                .iter()
                .enumerate()
                .filter(|(at, _)| *at != skip)
                .map(|(_, pair)| *pair)
                .collect();
            let error = Config::from_env(&Environment::from_pairs(pairs), None).unwrap_err();
            assert_eq!(error.variable, variable, "without {:?}", full[skip]);
        }
        let mut bad_url = full.to_vec();
        bad_url.push(("R2R_GITHUB_GIT_URL", "git@github.com:"));
        assert_eq!(
            Config::from_env(&Environment::from_pairs(bad_url), None)
                .unwrap_err()
                .variable,
            "R2R_GITHUB_GIT_URL"
        );
    }

    #[test]
    fn env_files_accept_comments_quotes_and_export_and_refuse_garbage() {
        let values = parse_env_file("# c\n\nexport A=1\nB='two words'\nC=\"x=y\"\n").unwrap();
        assert_eq!(values["A"], "1");
        assert_eq!(values["B"], "two words");
        assert_eq!(values["C"], "x=y");
        assert_eq!(parse_env_file("A=1\nnot a pair\n").unwrap_err().0, 2);
        assert!(parse_env_file("BAD KEY=1").is_err());
    }
}
