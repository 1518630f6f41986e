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
    /// The assets the public address must serve, each at its path, with these SHA-256s (the
    /// build's manifest; empty: none checked).
    pub assets: std::collections::BTreeMap<String, String>,
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
            return Err(format!(
                "commit {:?} ≠ {:?}",
                public.commit, immutable.commit
            ));
        }
        Ok(())
    }
}

/// How often a running recorder says it is alive (the crew page counts 90 s as fresh).
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(15);

/// How long one health answer may take.
const ASK_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest health answer read (a health answer is a few hundred bytes).
const HEALTH_BYTES: usize = 64 * 1024;

/// The recorder's HTTP client: a deadline on every request and **no redirects** — a redirect
/// would let one address answer for the other and the two-address check would ask one server
/// twice.
pub fn client() -> Result<reqwest::Client, VerifyError> {
    reqwest::Client::builder()
        .timeout(ASK_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| VerifyError::Record(e.to_string()))
}

/// A base URL the recorder may ask: http or https, a host, no credentials, no query and no
/// fragment (either would change what `/api/health` is appended to). Returns it without a
/// trailing slash.
pub fn base_url(flag: &str, value: &str) -> Result<String, String> {
    let invalid = |why: &str| format!("{flag} is invalid: {why}, got {value:?}");
    let url = reqwest::Url::parse(value).map_err(|e| invalid(&format!("not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("expected an http(s) URL"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid("a query or fragment is not allowed"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("credentials in the URL are not allowed"));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// The recorder's heartbeat with the desk (`POST /api/v1/crew/heartbeat`, recorder token).
pub async fn heartbeat(
    client: &reqwest::Client,
    desk: &str,
    token: &str,
    detail: &str,
) -> Result<(), String> {
    // What a deployment answered can be in it: control characters become spaces (the desk
    // refuses them, and the beat would be lost with the news it carries).
    let detail: String = detail
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    let response = client
        .post(format!(
            "{}/api/v1/crew/heartbeat",
            desk.trim_end_matches('/')
        ))
        .bearer_auth(token)
        .json(&serde_json::json!({ "detail": detail }))
        .send()
        .await
        .map_err(|e| format!("the heartbeat did not reach the desk: {e}"))?;
    if !response.status().is_success() {
        return Err(format!(
            "the desk refused the heartbeat: HTTP {}",
            response.status()
        ));
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
    let mut response = client.get(&endpoint).send().await.map_err(|e| {
        unreachable(if e.is_timeout() {
            format!("no answer within {} s", ASK_TIMEOUT.as_secs())
        } else {
            e.to_string()
        })
    })?;
    if response.status().is_redirection() {
        return Err(unreachable(format!(
            "HTTP {}: the recorder follows no redirects (give the address that answers itself)",
            response.status()
        )));
    }
    if !response.status().is_success() {
        return Err(unreachable(format!("HTTP {}", response.status())));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| unreachable(e.to_string()))?
    {
        body.extend_from_slice(&chunk);
        if body.len() > HEALTH_BYTES {
            return Err(unreachable(format!(
                "the health answer is over {} KiB",
                HEALTH_BYTES / 1024
            )));
        }
    }
    serde_json::from_slice::<Health>(&body)
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
            "serves commit {:?}, expected exactly {}",
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
    for (path, sha256) in &expected.assets {
        served_asset(client, public, path, sha256).await?;
    }
    Ok(at_immutable)
}

/// Checks that `url` serves the asset at `path` (from the service's root) with exactly
/// `sha256`: read whole (up to the build's bound), hashed, compared.
/// `path` as a URL path: each part percent-encoded but for the characters a URL path may
/// carry as they are, so a file named `h#.css` or `p%41.css` is asked for by its own name.
fn url_path(path: &str) -> String {
    path.trim_start_matches('/')
        .split('/')
        .map(|part| {
            part.bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                        char::from(b).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/")
}

async fn served_asset(
    client: &reqwest::Client,
    url: &str,
    path: &str,
    sha256: &str,
) -> Result<(), VerifyError> {
    use sha2::Digest;
    let endpoint = format!("{}/{}", url.trim_end_matches('/'), url_path(path));
    let mismatch = |reason: String| VerifyError::Mismatch {
        url: url.to_owned(),
        reason: format!("asset {path}: {reason}"),
    };
    let mut response = client
        .get(&endpoint)
        .send()
        .await
        .map_err(|e| mismatch(format!("not served: {e}")))?;
    if !response.status().is_success() {
        return Err(mismatch(format!("not served: HTTP {}", response.status())));
    }
    let mut hasher = sha2::Sha256::new();
    let mut read: u64 = 0;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| mismatch(format!("not served whole: {e}")))?
    {
        read += chunk.len() as u64;
        if read > crate::service::release::MOST_ASSET_BYTES {
            return Err(mismatch("served larger than the build's bound".to_owned()));
        }
        hasher.update(&chunk);
    }
    let served = hex::encode(hasher.finalize());
    if served != sha256 {
        return Err(mismatch(format!(
            "serves SHA-256 {served}, the build's manifest says {sha256}"
        )));
    }
    Ok(())
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
        /// The desk's project it is a release of (`None`: the environment's, `default`).
        project: Option<&'a str>,
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
    let client = client()?;
    let host = HealthHost;
    verify_once(&client, &host, immutable, public, expected).await?;
    // Just before publishing, every check again.
    verify_once(&client, &host, immutable, public, expected).await?;
    match publish {
        Publish::Desk {
            url,
            token,
            deployment,
            project,
        } => {
            let mut body =
                serde_json::json!({"deployment": deployment, "commit": expected.sha.as_str()});
            if let Some(project) = project {
                body["project"] = serde_json::json!(project);
            }
            let response = client
                .post(format!("{}/api/v1/deployments", url.trim_end_matches('/')))
                .bearer_auth(token)
                .json(&body)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::{base_url, url_path};

    #[test]
    fn an_asset_is_asked_for_by_its_own_name() {
        assert_eq!(url_path("static/app.css"), "static/app.css");
        assert_eq!(url_path("static/h#.css"), "static/h%23.css");
        assert_eq!(url_path("static/p%41.css"), "static/p%2541.css");
        assert_eq!(url_path("static/q?.css"), "static/q%3F.css");
        assert_eq!(url_path("static/a b.css"), "static/a%20b.css");
        assert_eq!(url_path("static/ü.css"), "static/%C3%BC.css");
    }

    #[test]
    fn only_plain_http_bases_are_asked() {
        assert_eq!(
            base_url("--url", "HTTP://127.0.0.1:9/").unwrap(),
            "http://127.0.0.1:9"
        );
        assert_eq!(
            base_url("--url", "https://shop.example/app/").unwrap(),
            "https://shop.example/app"
        );
        for bad in [
            "http://",
            "127.0.0.1:9",
            "ftp://127.0.0.1",
            "http://127.0.0.1:9/a#",
            "http://127.0.0.1:9/a?x=1",
            "http://user:secret@127.0.0.1:9",
            "file:///etc/passwd",
            "",
        ] {
            let refused = base_url("--url", bad).unwrap_err();
            assert!(
                refused.starts_with("--url is invalid"),
                "{bad:?}: {refused}"
            );
        }
    }
}
