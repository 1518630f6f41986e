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
    /// The repository the environment's project's fixes go to (`R2R_GITHUB_FIX_REPOSITORY`,
    /// one of `repositories`): the desk pushes each measured fix's branch there over HTTPS
    /// and opens its draft pull request; merges happen on GitHub.
    pub fix_repository: Option<String>,
    /// Where git reaches GitHub over HTTPS (`R2R_GITHUB_GIT_URL`, default
    /// `https://github.com`).
    pub git_url: String,
    /// The check runs that must be green on a commit before a deployment of it counts
    /// (`R2R_GITHUB_REQUIRED_CHECKS`, comma-separated names; none: no check is required).
    pub required_checks: Vec<String>,
}

/// Reads `R2R_GITHUB_REQUIRED_CHECKS`: names separated by commas, each 1 to 100 printable
/// characters.
pub fn required_checks(text: &str) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if name.chars().count() > 100 || name.chars().any(char::is_control) {
            return Err(format!(
                "expected check names separated by commas (each 1 to 100 printable characters), got {name:?}"
            ));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

impl GitHubConfig {
    /// The fix repository's HTTPS remote with the token, when fixes go to GitHub.
    pub fn fix_remote(&self) -> Option<(String, forge::RemoteAuth)> {
        self.remote_for(self.fix_repository.as_ref()?)
    }

    /// `repository`'s HTTPS remote with the token (none without a token).
    pub fn remote_for(&self, repository: &str) -> Option<(String, forge::RemoteAuth)> {
        let token = self.token.as_ref()?;
        let url = format!("{}/{repository}.git", self.git_url);
        Some((
            repository.to_owned(),
            forge::RemoteAuth::github(&url, token.expose()),
        ))
    }

    /// The REST client for `repository` (`owner/name`) with these settings.
    pub fn forge(&self, repository: &str) -> GitHubForge {
        GitHubForge::new(
            &self.api_url,
            self.token.as_ref().map(crate::secret::Secret::expose),
            repository,
        )
    }
}
