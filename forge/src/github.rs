//! GitHub's REST API for one repository, as a [`Forge`]: branch heads, compare (ancestry),
//! files at a commit, CODEOWNERS on the default branch, an account's permission, draft pull
//! requests and deployment statuses. Requests time out after 15 s; the token is sent as a
//! bearer token and never printed.

use crate::{
    DraftPull, DraftRequest, Forge, ForgeError, RecordedDeployment, RepoPermission, RECORDER_TASK,
};
use domain::workflow::{Ancestry, CommitSha};
use serde_json::{json, Value};
use std::time::Duration;

fn sha(value: &Value) -> Option<CommitSha> {
    value.as_str().and_then(|s| CommitSha::parse(s).ok())
}

/// A token that `Debug` never prints.
#[derive(Clone)]
struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// GitHub's REST API for one repository.
#[derive(Clone, Debug)]
pub struct GitHubForge {
    client: reqwest::Client,
    api_url: String,
    repository: String,
    token: Option<Token>,
}

impl GitHubForge {
    /// A client for `repository` (`owner/name`) at the REST API under `api_url`, with an
    /// optional API token.
    pub fn new(api_url: &str, token: Option<&str>, repository: &str) -> Self {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .user_agent(concat!("reporter-to-release/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        GitHubForge {
            client,
            api_url: api_url.trim_end_matches('/').to_owned(),
            repository: repository.to_owned(),
            token: token.map(|t| Token(t.to_owned())),
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .request(
                method,
                format!("{}/repos/{}{path}", self.api_url, self.repository),
            )
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28");
        if let Some(token) = &self.token {
            request = request.bearer_auth(&token.0);
        }
        request
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::GET, path)
    }

    /// Sends a JSON body and returns the JSON answer, or a `Status` error carrying GitHub's
    /// `message` (422 validation failures become `Invalid`).
    async fn send_json(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &Value,
        what: &str,
    ) -> Result<Value, ForgeError> {
        let response = self.request(method, path).json(body).send().await?;
        let status = response.status();
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(answer);
        }
        let message = answer["message"].as_str().unwrap_or("no message");
        if status == reqwest::StatusCode::UNPROCESSABLE_ENTITY {
            return Err(ForgeError::Invalid(format!(
                "GitHub refused {what}: {message}"
            )));
        }
        Err(ForgeError::Status {
            status: status.as_u16(),
            what: format!("{what} ({message})"),
        })
    }

    async fn default_branch(&self) -> Result<String, ForgeError> {
        let response = self.get("").send().await?;
        if !response.status().is_success() {
            return Err(ForgeError::Status {
                status: response.status().as_u16(),
                what: "repository".into(),
            });
        }
        let body: Value = response.json().await?;
        body["default_branch"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ForgeError::Invalid("the repository has no default branch".into()))
    }
}

#[async_trait::async_trait]
impl Forge for GitHubForge {
    fn kind(&self) -> &'static str {
        "github"
    }

    async fn branch_head(&self, branch: &str) -> Result<Option<CommitSha>, ForgeError> {
        if !crate::valid_branch(branch) {
            return Ok(None);
        }
        let response = self.get(&format!("/branches/{branch}")).send().await?;
        if response.status() == 404 {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(ForgeError::Status {
                status: response.status().as_u16(),
                what: format!("branch {branch}"),
            });
        }
        let body: Value = response.json().await?;
        Ok(sha(&body["commit"]["sha"]))
    }

    /// The compare API; unknown commits are `Unknown`.
    async fn relation(
        &self,
        base: &CommitSha,
        candidate: &CommitSha,
    ) -> Result<Ancestry, ForgeError> {
        let response = self
            .get(&format!("/compare/{base}...{candidate}"))
            .send()
            .await?;
        if response.status() == 404 {
            return Ok(Ancestry::Unknown);
        }
        if !response.status().is_success() {
            return Err(ForgeError::Status {
                status: response.status().as_u16(),
                what: "compare".into(),
            });
        }
        let body: Value = response.json().await?;
        Ok(match body["status"].as_str() {
            Some("ahead") => Ancestry::Ahead,
            Some("identical") => Ancestry::Identical,
            Some("behind") => Ancestry::Behind,
            Some("diverged") => Ancestry::Diverged,
            _ => Ancestry::Unknown,
        })
    }

    /// GitHub's checks API for the commit, every page (100 runs a page, at most 10 pages).
    async fn check_runs(&self, commit: &CommitSha) -> Result<Vec<crate::CheckRun>, ForgeError> {
        let mut runs = Vec::new();
        for page in 1..=10u32 {
            let response = self
                .get(&format!(
                    "/commits/{commit}/check-runs?per_page=100&page={page}&filter=all"
                ))
                .send()
                .await?;
            if !response.status().is_success() {
                return Err(ForgeError::Status {
                    status: response.status().as_u16(),
                    what: format!("check runs of {commit}"),
                });
            }
            let body: Value = response.json().await?;
            let page_runs = body["check_runs"].as_array().cloned().unwrap_or_default();
            let total = body["total_count"].as_u64().unwrap_or(0);
            for run in &page_runs {
                runs.push(crate::CheckRun {
                    id: run["id"].as_u64().unwrap_or(0),
                    name: run["name"].as_str().unwrap_or_default().to_owned(),
                    status: run["status"].as_str().unwrap_or_default().to_owned(),
                    conclusion: run["conclusion"].as_str().map(str::to_owned),
                });
            }
            if page_runs.is_empty() || runs.len() as u64 >= total {
                break;
            }
        }
        Ok(runs)
    }

    /// The repository's default branch, which the desk's draft pull requests merge into.
    async fn base_head(&self) -> Result<Option<CommitSha>, ForgeError> {
        let branch = self.default_branch().await?;
        Forge::branch_head(self, &branch).await
    }

    /// `GET /repos/{owner}/{repo}/collaborators/{username}/permission`. Any answer but a
    /// success is an error: GitHub says 404 for an account it will not tell about.
    async fn collaborator_permission(&self, login: &str) -> Result<RepoPermission, ForgeError> {
        if !crate::valid_login(login) {
            return Err(ForgeError::Invalid(format!(
                "{login:?} is not a GitHub login the desk asks about"
            )));
        }
        let response = self
            .get(&format!("/collaborators/{login}/permission"))
            .send()
            .await?;
        let status = response.status();
        if !status.is_success() {
            let answer: Value = response.json().await.unwrap_or(Value::Null);
            return Err(ForgeError::Status {
                status: status.as_u16(),
                what: format!(
                    "the permission of {login} ({})",
                    answer["message"].as_str().unwrap_or("no message")
                ),
            });
        }
        let body: Value = response.json().await?;
        let field = |name: &str| body[name].as_str().unwrap_or_default().to_owned();
        Ok(RepoPermission {
            permission: field("permission"),
            role_name: field("role_name"),
        })
    }

    async fn file_at(&self, commit: &CommitSha, path: &str) -> Result<Option<String>, ForgeError> {
        let response = self
            .get(&format!("/contents/{path}?ref={commit}"))
            .header("Accept", "application/vnd.github.raw+json")
            .send()
            .await?;
        if response.status() == 404 {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(ForgeError::Status {
                status: response.status().as_u16(),
                what: format!("contents {path}"),
            });
        }
        Ok(Some(response.text().await?))
    }

    async fn open_draft(&self, draft: &DraftRequest) -> Result<DraftPull, ForgeError> {
        if !crate::valid_branch(&draft.branch) {
            return Err(ForgeError::Invalid(format!(
                "{:?} is not a branch name this forge accepts",
                draft.branch
            )));
        }
        let base = self.default_branch().await?;
        let pull = self
            .send_json(
                reqwest::Method::POST,
                "/pulls",
                &json!({
                    "title": draft.title,
                    "head": draft.branch,
                    "base": base,
                    "body": draft.body,
                    "draft": true,
                    "maintainer_can_modify": false,
                }),
                "the draft pull request",
            )
            .await?;
        let (Some(number), Some(head)) = (pull["number"].as_u64(), sha(&pull["head"]["sha"]))
        else {
            return Err(ForgeError::Invalid(
                "GitHub's pull request answer lacks number or head.sha".into(),
            ));
        };
        Ok(DraftPull {
            number,
            head,
            url: pull["html_url"].as_str().unwrap_or_default().to_owned(),
        })
    }

    /// A deployment with the recorder's task name, then its success status: the signed
    /// `deployment_status` webhook GitHub sends back is what moves the ledger.
    async fn record_deployment(
        &self,
        commit: &CommitSha,
        environment: &str,
        url: &str,
    ) -> Result<RecordedDeployment, ForgeError> {
        let deployment = self
            .send_json(
                reqwest::Method::POST,
                "/deployments",
                &json!({
                    "ref": commit.as_str(),
                    "task": RECORDER_TASK,
                    "environment": environment,
                    "auto_merge": false,
                    "required_contexts": [],
                    "production_environment": true,
                    "description": "verified live by r2r recorder",
                }),
                "the deployment",
            )
            .await?;
        let Some(id) = deployment["id"].as_u64() else {
            return Err(ForgeError::Invalid(
                "GitHub's deployment answer lacks an id (was it merged instead?)".into(),
            ));
        };
        self.send_json(
            reqwest::Method::POST,
            &format!("/deployments/{id}/statuses"),
            &json!({
                "state": "success",
                "environment_url": url,
                "auto_inactive": true,
                "description": "both URLs serve exactly this commit",
            }),
            "the deployment status",
        )
        .await?;
        Ok(RecordedDeployment {
            id: id.to_string(),
            url: url.to_owned(),
        })
    }
}
