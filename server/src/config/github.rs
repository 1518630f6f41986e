//! GitHub settings (`R2R_GITHUB_*`, `R2R_PRODUCTION_ENVIRONMENT`).

use forge::GitHubForge;

/// GitHub settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitHubConfig {
    /// Webhook secret (`R2R_GITHUB_WEBHOOK_SECRET`); without it every delivery is refused.
    pub webhook_secret: Option<crate::secret::Secret>,
    /// Repositories (`owner/name`) whose events count (`R2R_GITHUB_REPOSITORIES`).
    pub repositories: Vec<String>,
    /// REST API base (`R2R_GITHUB_API_URL`).
    pub api_url: String,
    /// API token (`R2R_GITHUB_TOKEN`).
    pub token: Option<crate::secret::Secret>,
    /// The environment whose successful recorder deployments count (`R2R_PRODUCTION_ENVIRONMENT`).
    pub production_environment: String,
}

impl GitHubConfig {
    /// The REST client for `repository` (`owner/name`) with these settings.
    pub fn forge(&self, repository: &str) -> GitHubForge {
        GitHubForge::new(
            &self.api_url,
            self.token.as_ref().map(crate::secret::Secret::expose),
            repository,
        )
    }
}
