//! GitHub settings (`R2R_GITHUB_*`, `R2R_PRODUCTION_ENVIRONMENT`).

use super::env::{ConfigError, Environment};
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

impl GitHubConfig {
    /// Reads the section.
    pub fn from_env(env: &Environment) -> Result<GitHubConfig, ConfigError> {
        let mut repositories = Vec::new();
        if let Some(list) = env.get("R2R_GITHUB_REPOSITORIES") {
            for item in list.split(',') {
                let item = item.trim();
                let valid = item.split_once('/').is_some_and(|(owner, name)| {
                    !owner.is_empty()
                        && !name.is_empty()
                        && !name.contains('/')
                        && item
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
                });
                if !valid {
                    return Err(ConfigError::new(
                        "R2R_GITHUB_REPOSITORIES",
                        format!("expected comma-separated owner/name pairs, got {item:?}"),
                    ));
                }
                repositories.push(item.to_owned());
            }
        }
        let api_url = env
            .get("R2R_GITHUB_API_URL")
            .unwrap_or("https://api.github.com")
            .trim()
            .to_owned();
        if !(api_url.starts_with("https://") || api_url.starts_with("http://")) {
            return Err(ConfigError::new(
                "R2R_GITHUB_API_URL",
                format!("expected an http(s) URL such as https://api.github.com, got {api_url:?}"),
            ));
        }
        let fix_repository = env
            .get("R2R_GITHUB_FIX_REPOSITORY")
            .map(|r| r.trim().to_owned());
        if let Some(repository) = &fix_repository {
            if !repositories.contains(repository) {
                return Err(ConfigError::new(
                "R2R_GITHUB_FIX_REPOSITORY",
                format!("{repository:?} must be one of R2R_GITHUB_REPOSITORIES (its events move the bugs)"),
            ));
            }
            if env.get("R2R_GITHUB_TOKEN").is_none() {
                return Err(ConfigError::new(
                "R2R_GITHUB_FIX_REPOSITORY",
                "needs R2R_GITHUB_TOKEN: the desk pushes the fix's branch and opens its draft with it",
            ));
            }
            if env.get("R2R_LOCAL_FORGE").is_none() {
                return Err(ConfigError::new(
                "R2R_GITHUB_FIX_REPOSITORY",
                "needs R2R_LOCAL_FORGE: a bare clone of the repository, where the desk reads the code and commits the fix",
            ));
            }
        }
        let git_url = env
            .get("R2R_GITHUB_GIT_URL")
            .unwrap_or("https://github.com")
            .trim()
            .trim_end_matches('/')
            .to_owned();
        if !(git_url.starts_with("https://") || git_url.starts_with("http://")) {
            return Err(ConfigError::new(
                "R2R_GITHUB_GIT_URL",
                format!("expected an http(s) URL such as https://github.com, got {git_url:?}"),
            ));
        }
        Ok(GitHubConfig {
            required_checks: required_checks(env.get("R2R_GITHUB_REQUIRED_CHECKS").unwrap_or(""))
                .map_err(|why| ConfigError::new("R2R_GITHUB_REQUIRED_CHECKS", why))?,
            fix_repository,
            git_url,
            webhook_secret: env
                .get("R2R_GITHUB_WEBHOOK_SECRET")
                .map(|s| crate::secret::Secret::new(s.trim())),
            repositories,
            api_url,
            token: env
                .get("R2R_GITHUB_TOKEN")
                .map(|s| crate::secret::Secret::new(s.trim())),
            production_environment: env
                .get("R2R_PRODUCTION_ENVIRONMENT")
                .unwrap_or("production")
                .trim()
                .to_owned(),
        })
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn required_github_checks_are_a_list_of_names_and_a_bad_one_is_named() {
        let config = GitHubConfig::from_env(&Environment::default()).unwrap();
        assert!(config.required_checks.is_empty());
        let set =
            Environment::from_pairs([("R2R_GITHUB_REQUIRED_CHECKS", " test , ci / lint,,test ")]);
        assert_eq!(
            GitHubConfig::from_env(&set).unwrap().required_checks,
            vec!["test".to_owned(), "ci / lint".to_owned()]
        );
        let long = "x".repeat(101);
        for value in ["test,bad\u{7}name", long.as_str()] {
            let env = Environment::from_pairs([("R2R_GITHUB_REQUIRED_CHECKS", value)]);
            let error = GitHubConfig::from_env(&env).unwrap_err();
            assert_eq!(error.variable, "R2R_GITHUB_REQUIRED_CHECKS", "{value:?}");
        }
    }
}
