//! `r2r recorder verify`: proves that an exact commit is live before anything says so.
//!
//! Both the immutable deployment URL and the public URL must answer `/api/health` with the
//! expected service, a known storage, status `ok` and exactly the commit; the public URL must
//! resolve to the same deployment (the [`Host`] check; by default: the same installation id
//! and commit in both answers). Every check runs again just before publishing; only then is
//! the deployment recorded: with the desk (a recorder-token call) on the local forge, or on
//! GitHub as a `verify:production` deployment with a success status. Any failure records
//! nothing.

use app::dto::Health;
use domain::workflow::CommitSha;
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
pub trait Host: Sync {
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

/// How often a running recorder says it is alive (the crew page counts 90 s as fresh).
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(15);

/// The recorder's heartbeat with the desk (`POST /api/v1/crew/heartbeat`, recorder token).
pub async fn heartbeat(
    client: &reqwest::Client,
    desk: &str,
    token: &str,
    detail: &str,
) -> Result<(), VerifyError> {
    let detail: String = detail.chars().take(200).collect();
    let response = client
        .post(format!(
            "{}/api/v1/crew/heartbeat",
            desk.trim_end_matches('/')
        ))
        .bearer_auth(token)
        .json(&serde_json::json!({ "detail": detail }))
        .send()
        .await
        .map_err(|e| VerifyError::Record(format!("heartbeat: {e}")))?;
    if !response.status().is_success() {
        return Err(VerifyError::Record(format!(
            "heartbeat: HTTP {}",
            response.status()
        )));
    }
    Ok(())
}

/// What `url` says it serves (`/api/health`).
pub async fn health(client: &reqwest::Client, url: &str) -> Result<Health, VerifyError> {
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
