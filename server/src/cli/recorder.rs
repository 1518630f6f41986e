//! `r2r recorder verify` and `r2r recorder run`: the recorder ([`crate::service::recorder`])
//! as a command — one check, or a role that watches a deployment and records every new commit
//! it serves, with a heartbeat the crew page shows.

use crate::config::Environment;
use crate::service::recorder::{verify_and_record, Expected, Publish};
use clap::Subcommand;
use std::path::Path;
use std::process::ExitCode;

/// Where a deployment answers and which desk records it (both subcommands).
#[derive(clap::Args, Debug)]
pub struct Addresses {
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
    /// The desk's project it is a release of (default: `default`, the one the desk's
    /// environment configures); only that project's bugs move.
    #[arg(long, value_name = "ID")]
    desk_project: Option<String>,
}

impl Addresses {
    /// Each URL checked ([`crate::service::recorder::base_url`]) and normalised; the project
    /// name must be printable.
    fn checked(self) -> anyhow::Result<Addresses> {
        let check = |flag: &str, value: &str| {
            crate::service::recorder::base_url(flag, value).map_err(anyhow::Error::msg)
        };
        if self.project.trim().is_empty() || self.project.chars().any(char::is_control) {
            anyhow::bail!(
                "--project is invalid: a service name, got {:?}",
                self.project
            );
        }
        if let Some(id) = self.desk_project.as_deref() {
            if !domain::project::valid_id(id) {
                anyhow::bail!(
                    "--desk-project is invalid: a project id (lower-case letters, digits and dashes), got {id:?}"
                );
            }
        }
        Ok(Addresses {
            url: check("--url", &self.url)?,
            public_url: check("--public-url", &self.public_url)?,
            desk: check("--desk", &self.desk)?,
            project: self.project,
            desk_project: self.desk_project,
        })
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
        #[command(flatten)]
        at: Addresses,
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
    /// Run as the recorder role (R2R_RECORDER_TOKEN) beside a deployment the desk does not
    /// start itself: watch what the immutable URL serves, and for every commit not recorded
    /// yet check both URLs twice and record it with the desk as `<project>-<first 12>`.
    /// Beats every 15 s (the crew page shows it). The desk's own deployer needs none of this:
    /// its recorder runs in-process.
    Run {
        #[command(flatten)]
        at: Addresses,
        /// How often to look, in milliseconds (at least 200).
        #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(200..))]
        poll_ms: u64,
        /// One round: exit 0 when what is served is recorded (now or before), 1 otherwise.
        #[arg(long)]
        once: bool,
    },
}

/// One round of `r2r recorder run`: `Ok(Some(commit))` when what `url` serves is now
/// recorded, `Ok(None)` when it was already, `Err` with why it was not.
async fn watch_once(
    client: &reqwest::Client,
    at: &Addresses,
    token: &str,
    recorded: Option<&str>,
) -> Result<Option<String>, crate::service::recorder::VerifyError> {
    let (url, public_url, project) = (&at.url, &at.public_url, &at.project);
    let serving = crate::service::recorder::health(client, url).await?;
    if recorded == Some(serving.commit.as_str()) {
        return Ok(None);
    }
    let sha = domain::workflow::CommitSha::parse(&serving.commit).map_err(|e| {
        crate::service::recorder::VerifyError::Mismatch {
            url: url.to_owned(),
            reason: format!("serves no commit id: {e}"),
        }
    })?;
    let expected = Expected {
        sha,
        service: project.to_owned(),
        assets: Default::default(),
    };
    let deployment = format!("{project}-{}", &expected.sha.as_str()[..12]);
    let publish = Publish::Desk {
        url: &at.desk,
        token,
        deployment: &deployment,
        project: at.desk_project.as_deref(),
    };
    verify_and_record(url, public_url, &expected, publish).await?;
    Ok(Some(serving.commit))
}

/// Runs `r2r recorder …`.
pub async fn command(env_file: &Path, command: RecorderCommand) -> anyhow::Result<ExitCode> {
    match command {
        RecorderCommand::Run { at, poll_ms, once } => {
            let at = at.checked()?;
            let (url, public_url, project, desk) = (&at.url, &at.public_url, &at.project, &at.desk);
            let env = Environment::load(env_file)?;
            let Some(token) = env.get("R2R_RECORDER_TOKEN").map(str::to_owned) else {
                anyhow::bail!("R2R_RECORDER_TOKEN is not set (r2r setup writes it to .env.local)");
            };
            let client = crate::service::recorder::client()?;
            // The token must be the recorder's: another role's would beat in that role's
            // name on the crew page.
            let me: serde_json::Value = client
                .get(format!("{desk}/api/v1/me"))
                .bearer_auth(&token)
                .send()
                .await
                .map_err(|e| anyhow::anyhow!("cannot reach the desk at {desk}: {e}"))?
                .json()
                .await
                .map_err(|e| {
                    anyhow::anyhow!("the desk at {desk} did not say who this token is: {e}")
                })?;
            if me["role"] != "recorder" {
                anyhow::bail!(
                    "R2R_RECORDER_TOKEN is not the recorder's token at {desk} (the desk says {me}): nothing was recorded"
                );
            }
            let mut recorded: Option<String> = None;
            let mut last_beat: Option<std::time::Instant> = None;
            loop {
                let round = watch_once(&client, &at, &token, recorded.as_deref()).await;
                let doing = match &round {
                    Ok(Some(commit)) => {
                        println!(
                            "recorded: {project} at {commit} is live at {url} and {public_url}"
                        );
                        recorded = Some(commit.clone());
                        format!("{project}: recorded {}", &commit[..12.min(commit.len())])
                    }
                    Ok(None) => format!(
                        "{project}: {} live and recorded",
                        recorded.as_deref().map_or("", |c| &c[..12.min(c.len())])
                    ),
                    Err(error) => {
                        eprintln!("not recorded: {error}");
                        format!("{project}: not recorded: {error}")
                    }
                };
                if last_beat
                    .is_none_or(|at| at.elapsed() >= crate::service::recorder::HEARTBEAT_EVERY)
                {
                    if let Err(error) =
                        crate::service::recorder::heartbeat(&client, desk, &token, &doing).await
                    {
                        eprintln!("heartbeat: {error}");
                    }
                    last_beat = Some(std::time::Instant::now());
                }
                if once {
                    return Ok(if round.is_ok() {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    });
                }
                tokio::time::sleep(std::time::Duration::from_millis(poll_ms)).await;
            }
        }
        RecorderCommand::Verify {
            sha,
            at,
            deployment,
            record_with,
            repository,
            environment,
        } => {
            let sha = domain::workflow::CommitSha::parse(&sha)
                .map_err(|e| anyhow::anyhow!("--sha is invalid: {e}"))?;
            let Addresses {
                url,
                public_url,
                project,
                desk,
                desk_project,
            } = at.checked()?;
            let env = Environment::load(env_file)?;
            let expected = Expected {
                sha,
                service: project,
                assets: Default::default(),
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
                    fix_repository: None,
                    git_url: "https://github.com".into(),
                    required_checks: Vec::new(),
                };
                github = config.forge(&repository);
                Publish::Forge {
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
                Publish::Desk {
                    url: &desk,
                    token: &token,
                    deployment: &deployment,
                    project: desk_project.as_deref(),
                }
            };
            match verify_and_record(&url, &public_url, &expected, publish).await {
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
