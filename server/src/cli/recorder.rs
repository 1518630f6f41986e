//! `r2r recorder verify`: proves that an exact commit is live before anything says so.
//!
//! Both the immutable deployment URL and the public URL must answer `/api/health` with the
//! expected service, a known storage, status `ok` and exactly the commit; the public URL must
//! resolve to the same deployment (the [`Host`] check; by default: the same installation id
//! and commit in both answers). Every check runs again just before publishing; only then is
//! the deployment recorded: with the desk (a recorder-token call) on the local forge, or on
//! GitHub as a `verify:production` deployment with a success status. Any failure records
//! nothing.

use crate::config::Environment;
use app::dto::Health;
use clap::Subcommand;
use domain::workflow::CommitSha;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// Why verification failed (the exit message).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// A URL could not be asked.
    #[error("{url}: cannot reach /api/health: {reason}")]
    Unreachable {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// A health answer says something else.
    #[error("{url}: {reason}")]
    Mismatch {
        /// The URL.
        url: String,
        /// What differs.
        reason: String,
    },
    /// The public URL is another deployment.
    #[error("{public} does not resolve to the deployment at {immutable}: {reason}")]
    NotAliased {
        /// Public URL.
        public: String,
        /// Immutable URL.
        immutable: String,
        /// Why.
        reason: String,
    },
    /// The desk refused to record it.
    #[error("the desk did not record the deployment: {0}")]
    Record(String),
}

/// What a verification expects.
#[derive(Clone, Debug)]
pub struct Expected {
    /// The commit that must be live.
    pub sha: CommitSha,
    /// The service name health must carry.
    pub service: String,
}

/// Tells whether a public URL serves the same deployment as an immutable one.
pub trait Host {
    /// `Ok` when `public` is an alias of `immutable`.
    fn same_deployment(&self, immutable: &Health, public: &Health) -> Result<(), String>;
}

/// The default [`Host`]: both answers name the same installation and the same commit.
#[derive(Debug, Default)]
pub struct HealthHost;

impl Host for HealthHost {
    fn same_deployment(&self, immutable: &Health, public: &Health) -> Result<(), String> {
        if immutable.instance.is_none() || immutable.instance != public.instance {
            return Err(format!(
                "installation {:?} ≠ {:?}",
                public.instance, immutable.instance
            ));
        }
        if immutable.commit != public.commit {
            return Err(format!("commit {} ≠ {}", public.commit, immutable.commit));
        }
        Ok(())
    }
}

async fn health(client: &reqwest::Client, url: &str) -> Result<Health, VerifyError> {
    let endpoint = format!("{}/api/health", url.trim_end_matches('/'));
    let unreachable = |reason: String| VerifyError::Unreachable {
        url: url.to_owned(),
        reason,
    };
    let response = client
        .get(&endpoint)
        .send()
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    if !response.status().is_success() {
        return Err(unreachable(format!("HTTP {}", response.status())));
    }
    response
        .json::<Health>()
        .await
        .map_err(|e| unreachable(format!("not a health answer: {e}")))
}

fn check(url: &str, health: &Health, expected: &Expected) -> Result<(), VerifyError> {
    let mismatch = |reason: String| VerifyError::Mismatch {
        url: url.to_owned(),
        reason,
    };
    if health.service != expected.service {
        return Err(mismatch(format!(
            "service {:?}, expected {:?}",
            health.service, expected.service
        )));
    }
    if !health.is_ok() {
        return Err(mismatch(format!("status {:?}", health.status)));
    }
    // `none`: a deployed service without a database of its own (the demo's ShopLite).
    if !matches!(health.storage.as_str(), "sqlite" | "postgres" | "none") {
        return Err(mismatch(format!("unknown storage {:?}", health.storage)));
    }
    if health.commit != expected.sha.as_str() {
        return Err(mismatch(format!(
            "serves commit {}, expected exactly {}",
            health.commit, expected.sha
        )));
    }
    Ok(())
}

/// Runs every check once.
pub async fn verify_once(
    client: &reqwest::Client,
    host: &dyn Host,
    immutable: &str,
    public: &str,
    expected: &Expected,
) -> Result<Health, VerifyError> {
    let at_immutable = health(client, immutable).await?;
    check(immutable, &at_immutable, expected)?;
    let at_public = health(client, public).await?;
    check(public, &at_public, expected)?;
    host.same_deployment(&at_immutable, &at_public)
        .map_err(|reason| VerifyError::NotAliased {
            public: public.to_owned(),
            immutable: immutable.to_owned(),
            reason,
        })?;
    Ok(at_immutable)
}

/// Where a verified deployment is recorded.
#[derive(Debug)]
pub enum Publish<'a> {
    /// With the desk itself (local forge): `POST /api/v1/deployments` with the recorder's
    /// token, under the deployment id given.
    Desk {
        /// The desk's base URL.
        url: &'a str,
        /// The recorder's bearer token.
        token: &'a str,
        /// The deployment id to record.
        deployment: &'a str,
    },
    /// On a forge (GitHub): a deployment with the recorder's task and a success status,
    /// whose signed `deployment_status` webhook then moves the ledger.
    Forge {
        /// The forge.
        forge: &'a dyn forge::Forge,
        /// The production environment's name.
        environment: &'a str,
    },
}

/// Verifies, verifies again, then records the deployment where `publish` says. Returns the
/// deployment id recorded.
pub async fn verify_and_record(
    immutable: &str,
    public: &str,
    expected: &Expected,
    publish: Publish<'_>,
) -> Result<String, VerifyError> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| VerifyError::Record(e.to_string()))?;
    let host = HealthHost;
    verify_once(&client, &host, immutable, public, expected).await?;
    // Just before publishing, every check again.
    verify_once(&client, &host, immutable, public, expected).await?;
    match publish {
        Publish::Desk {
            url,
            token,
            deployment,
        } => {
            let response = client
                .post(format!("{}/api/v1/deployments", url.trim_end_matches('/')))
                .bearer_auth(token)
                .json(
                    &serde_json::json!({"deployment": deployment, "commit": expected.sha.as_str()}),
                )
                .send()
                .await
                .map_err(|e| VerifyError::Record(e.to_string()))?;
            if !response.status().is_success() {
                let status = response.status();
                let body = response.text().await.unwrap_or_default();
                return Err(VerifyError::Record(format!("HTTP {status}: {body}")));
            }
            Ok(deployment.to_owned())
        }
        Publish::Forge { forge, environment } => forge
            .record_deployment(&expected.sha, environment, public)
            .await
            .map(|recorded| recorded.id)
            .map_err(|e| VerifyError::Record(e.to_string())),
    }
}

#[derive(Subcommand, Debug)]
pub enum RecorderCommand {
    /// Check that both URLs serve exactly SHA (and are the same deployment), check again,
    /// then record the deployment with the desk (R2R_RECORDER_TOKEN). Exits 1 with the reason
    /// on any failure, recording nothing.
    Verify {
        /// The commit that must be live (40 or 64 hex characters).
        #[arg(long)]
        sha: String,
        /// The deployment's immutable URL.
        #[arg(long, value_name = "URL")]
        url: String,
        /// The public URL that must resolve to the same deployment.
        #[arg(long, value_name = "URL")]
        public_url: String,
        /// The service name the health answers must carry.
        #[arg(long, default_value = app::dto::SERVICE_NAME)]
        project: String,
        /// The desk that records it.
        #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:3000")]
        desk: String,
        /// The deployment id to record with the desk (default: verify-<first 12 of the sha>).
        #[arg(long)]
        deployment: Option<String>,
        /// Where to record it: `desk` (local forge: the desk's API with R2R_RECORDER_TOKEN) or
        /// `github` (a `verify:production` deployment and success status through
        /// R2R_GITHUB_API_URL with R2R_GITHUB_TOKEN; the signed webhook moves the ledger).
        #[arg(long, default_value = "desk", value_parser = ["desk", "github"])]
        record_with: String,
        /// The GitHub repository (`owner/name`), with `--record-with github`.
        #[arg(long)]
        repository: Option<String>,
        /// The GitHub environment (default: R2R_PRODUCTION_ENVIRONMENT or `production`).
        #[arg(long)]
        environment: Option<String>,
    },
}

/// Runs `r2r recorder …`.
pub async fn command(env_file: &Path, command: RecorderCommand) -> anyhow::Result<ExitCode> {
    match command {
        RecorderCommand::Verify {
            sha,
            url,
            public_url,
            project,
            desk,
            deployment,
            record_with,
            repository,
            environment,
        } => {
            let sha = domain::workflow::CommitSha::parse(&sha)
                .map_err(|e| anyhow::anyhow!("--sha is invalid: {e}"))?;
            for (flag, value) in [
                ("--url", &url),
                ("--public-url", &public_url),
                ("--desk", &desk),
            ] {
                if !(value.starts_with("http://") || value.starts_with("https://")) {
                    anyhow::bail!("{flag} is invalid: expected an http(s) URL, got {value:?}");
                }
            }
            let env = Environment::load(env_file)?;
            let expected = crate::cli::recorder::Expected {
                sha,
                service: project,
            };
            let deployment =
                deployment.unwrap_or_else(|| format!("verify-{}", &expected.sha.as_str()[..12]));
            let github;
            let environment = environment
                .or_else(|| env.get("R2R_PRODUCTION_ENVIRONMENT").map(str::to_owned))
                .unwrap_or_else(|| "production".to_owned());
            let token;
            let publish = if record_with == "github" {
                let Some(repository) = repository.filter(|r| {
                    let mut parts = r.split('/');
                    matches!((parts.next(), parts.next(), parts.next()), (Some(o), Some(n), None) if !o.is_empty() && !n.is_empty())
                }) else {
                    anyhow::bail!("--repository is required with --record-with github, as owner/name");
                };
                let Some(github_token) = env.get("R2R_GITHUB_TOKEN") else {
                    anyhow::bail!("R2R_GITHUB_TOKEN is not set: the recorder needs a token allowed to create deployments");
                };
                let api_url = env
                    .get("R2R_GITHUB_API_URL")
                    .unwrap_or("https://api.github.com")
                    .trim()
                    .to_owned();
                if !(api_url.starts_with("https://") || api_url.starts_with("http://")) {
                    anyhow::bail!(
                        "R2R_GITHUB_API_URL is invalid: expected an http(s) URL, got {api_url:?}"
                    );
                }
                let config = crate::config::GitHubConfig {
                    webhook_secret: None,
                    repositories: vec![repository.clone()],
                    api_url,
                    token: Some(crate::secret::Secret::new(github_token.trim())),
                    production_environment: environment.clone(),
                };
                github = config.forge(&repository);
                crate::cli::recorder::Publish::Forge {
                    forge: &github,
                    environment: &environment,
                }
            } else {
                let Some(recorder_token) = env.get("R2R_RECORDER_TOKEN").map(str::to_owned) else {
                    anyhow::bail!(
                        "R2R_RECORDER_TOKEN is not set (r2r setup writes it to .env.local)"
                    );
                };
                token = recorder_token;
                crate::cli::recorder::Publish::Desk {
                    url: &desk,
                    token: &token,
                    deployment: &deployment,
                }
            };
            match crate::cli::recorder::verify_and_record(&url, &public_url, &expected, publish)
                .await
            {
                Ok(id) => {
                    println!("verified: {} serves {} at {url} and {public_url}; recorded as deployment {id}", expected.service, expected.sha);
                    Ok(ExitCode::SUCCESS)
                }
                Err(error) => {
                    eprintln!("NOT VERIFIED: {error}. Nothing was recorded.");
                    Ok(ExitCode::from(1))
                }
            }
        }
    }
}
