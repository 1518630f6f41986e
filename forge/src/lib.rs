//! One interface over the places a target's code lives: GitHub's REST API
//! ([`github::GitHubForge`]) and a bare repository on disk ([`local::LocalForge`]). The desk asks a forge for facts (branch heads,
//! ancestry, files at an exact commit, CODEOWNERS on the base branch, an account's access)
//! and asks it to do exactly two things on
//! the crew's and the recorder's behalf: open a *draft* pull request, and record a verified
//! deployment. Merging is not in the trait: on GitHub people merge on GitHub; on the local
//! forge the desk merges only after the engine's dry run (the server's forge service).
//!
//! This crate knows git and GitHub's REST API, and nothing of HTTP servers, the store or
//! the desk's authorisation.

pub mod github;
pub mod local;

use async_trait::async_trait;
use domain::workflow::{Ancestry, CommitSha};
pub use github::GitHubForge;
pub use local::{GitError, LocalForge, RemoteAuth};

/// The task name the recorder gives the deployments it verified (GitHub counts only those).
pub const RECORDER_TASK: &str = "verify:production";

/// Why a forge call failed.
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    /// The HTTP request failed.
    #[error("forge request failed: {0}")]
    Http(#[from] reqwest::Error),
    /// The forge answered something unexpected.
    #[error("forge answered {status} for {what}")]
    Status {
        /// HTTP status.
        status: u16,
        /// What was asked.
        what: String,
    },
    /// A git command failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// The request itself is unacceptable (unknown branch, bad number, …).
    #[error("{0}")]
    Invalid(String),
    /// Another failure, with what the desk was doing and what it means meanwhile.
    #[error("{context}: {source}")]
    Context {
        /// What was being done.
        context: String,
        /// Why it failed.
        source: Box<ForgeError>,
    },
}

/// A draft pull request to open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DraftRequest {
    /// The pushed branch carrying the change.
    pub branch: String,
    /// One-line title.
    pub title: String,
    /// Description (the crew puts the evidence here).
    pub body: String,
}

/// An opened draft pull request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DraftPull {
    /// Its number, unique within the repository.
    pub number: u64,
    /// The exact head commit it was opened at.
    pub head: CommitSha,
    /// Where people read it (web URL, or the ref in the local repository).
    pub url: String,
}

/// A deployment recorded on the forge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedDeployment {
    /// The forge's id for it.
    pub id: String,
    /// Where it lives, as the recorder verified it.
    pub url: String,
}

/// An account's access to a repository, as GitHub's collaborator-permission API answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoPermission {
    /// The legacy base permission: `admin`, `write`, `read` or `none` (maintain reads as
    /// write, triage as read; a custom role as the base role it extends).
    pub permission: String,
    /// The role: `admin`, `maintain`, `write`, `triage`, `read` or a custom role's name.
    pub role_name: String,
}

impl RepoPermission {
    /// Whether the account may approve: write, maintain or admin access. Anything else —
    /// read, triage, none, an empty or unknown answer, or a role that contradicts it — does
    /// not (fail closed).
    pub fn may_approve(&self) -> bool {
        matches!(self.permission.as_str(), "admin" | "write")
            && !matches!(self.role_name.as_str(), "read" | "triage" | "none")
    }
}

impl std::fmt::Display for RepoPermission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |s: &str| {
            if s.is_empty() {
                "(none given)".to_owned()
            } else {
                s.to_owned()
            }
        };
        write!(
            f,
            "permission {}, role {}",
            shown(&self.permission),
            shown(&self.role_name)
        )
    }
}

/// A GitHub login that may go into an API path: letters, digits, `-` and `_` (enterprise
/// managed users), at most 100 characters, not starting with `-`.
pub fn valid_login(login: &str) -> bool {
    !login.is_empty()
        && login.len() <= 100
        && !login.starts_with('-')
        && login
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

/// What the desk needs from a forge.
#[async_trait]
pub trait Forge: Send + Sync + std::fmt::Debug {
    /// `github` or `local`.
    fn kind(&self) -> &'static str;

    /// The commit a branch points at; `None` when the branch does not exist.
    async fn branch_head(&self, branch: &str) -> Result<Option<CommitSha>, ForgeError>;

    /// How `candidate` relates to `base`; commits the forge does not know are `Unknown`.
    async fn relation(
        &self,
        base: &CommitSha,
        candidate: &CommitSha,
    ) -> Result<Ancestry, ForgeError>;

    /// A file's text at an exact commit.
    async fn file_at(&self, commit: &CommitSha, path: &str) -> Result<Option<String>, ForgeError>;

    /// CODEOWNERS at an exact commit, from the first of GitHub's three locations holding one.
    async fn codeowners_at(&self, commit: &CommitSha) -> Result<Option<String>, ForgeError> {
        for path in CODEOWNERS_LOCATIONS {
            if let Some(text) = self.file_at(commit, path).await? {
                return Ok(Some(text));
            }
        }
        Ok(None)
    }

    /// The commit the base branch (the default branch, which every pull request the desk
    /// opens merges into) points at now; `None` when there is none.
    async fn base_head(&self) -> Result<Option<CommitSha>, ForgeError>;

    /// CODEOWNERS as the base branch has it now — the rules that decide who owns a change.
    /// Never the pull request's own copy: a change that edits CODEOWNERS must not choose its
    /// own code owners (GitHub, too, reads CODEOWNERS from the base branch).
    async fn codeowners_at_base(&self) -> Result<Option<String>, ForgeError> {
        match self.base_head().await? {
            Some(base) => self.codeowners_at(&base).await,
            None => Ok(None),
        }
    }

    /// A forge account's access to the repository. Only GitHub has accounts to ask about;
    /// every other forge answers an error, so nothing counts on its say-so.
    async fn collaborator_permission(&self, login: &str) -> Result<RepoPermission, ForgeError> {
        Err(ForgeError::Invalid(format!(
            "the {} forge cannot tell the permission of {login:?}",
            self.kind()
        )))
    }

    /// The check runs reported on `commit` (GitHub's checks API). Only GitHub has them; every
    /// other forge answers an error, so no required check counts as green on its say-so.
    async fn check_runs(&self, commit: &CommitSha) -> Result<Vec<CheckRun>, ForgeError> {
        Err(ForgeError::Invalid(format!(
            "the {} forge has no check runs to read for {commit}",
            self.kind()
        )))
    }

    /// Opens a draft pull request for a pushed branch into the default branch.
    async fn open_draft(&self, draft: &DraftRequest) -> Result<DraftPull, ForgeError>;

    /// Records a deployment of `commit` to `environment`, created under the recorder's task
    /// name, with a success status pointing at `url`. Call only after verification.
    async fn record_deployment(
        &self,
        commit: &CommitSha,
        environment: &str,
        url: &str,
    ) -> Result<RecordedDeployment, ForgeError>;
}

/// One check run on a commit, as GitHub's checks API reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckRun {
    /// GitHub's id (a re-run has a higher one).
    pub id: u64,
    /// The check's name (`test`, `ci / lint` …).
    pub name: String,
    /// `queued`, `in_progress` or `completed` (and GitHub's other waiting states).
    pub status: String,
    /// When completed: `success`, `failure`, `neutral`, `cancelled`, `skipped`,
    /// `timed_out`, `action_required` or `stale`.
    pub conclusion: Option<String>,
}

/// Whether every check named in `required` has passed on the commit `runs` were read for:
/// the latest run of each name (a re-run counts, not the first try) must be completed with
/// `success`. A required check with no run at all is not green. `Err` names each check that
/// is not, with where it stands.
pub fn required_checks_green(required: &[String], runs: &[CheckRun]) -> Result<(), String> {
    let mut not_green = Vec::new();
    for name in required {
        let latest = runs
            .iter()
            .filter(|run| &run.name == name)
            .max_by_key(|run| run.id);
        match latest {
            None => not_green.push(format!("{name} has not run")),
            Some(run) if run.status != "completed" => {
                not_green.push(format!("{name} is {}", run.status))
            }
            Some(run) if run.conclusion.as_deref() != Some("success") => not_green.push(format!(
                "{name} ended {}",
                run.conclusion.as_deref().unwrap_or("without a conclusion")
            )),
            Some(_) => {}
        }
    }
    if not_green.is_empty() {
        Ok(())
    } else {
        Err(not_green.join("; "))
    }
}

/// Where GitHub looks for CODEOWNERS, in its order.
pub const CODEOWNERS_LOCATIONS: [&str; 3] = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

/// A branch name a forge call may carry: no option-looking or path-escaping names.
pub fn valid_branch(branch: &str) -> bool {
    !branch.is_empty()
        && branch.len() <= 200
        && !branch.starts_with('-')
        && !branch.starts_with('/')
        && !branch.ends_with('/')
        && !branch.contains("..")
        && !branch.contains("//")
        && !branch.ends_with(".lock")
        && branch
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

#[cfg(test)]
mod tests {
    use super::{required_checks_green, valid_branch, valid_login, CheckRun, RepoPermission};

    #[test]
    fn only_write_maintain_and_admin_may_approve() {
        let answer = |permission: &str, role_name: &str| RepoPermission {
            permission: permission.into(),
            role_name: role_name.into(),
        };
        for (permission, role) in [
            ("admin", "admin"),
            ("write", "maintain"),
            ("write", "write"),
            ("write", "release-manager"),
        ] {
            assert!(
                answer(permission, role).may_approve(),
                "{permission}/{role}"
            );
        }
        for (permission, role) in [
            ("read", "triage"),
            ("read", "read"),
            ("none", "none"),
            ("none", ""),
            ("", ""),
            ("write", "triage"),
            ("Write", "write"),
        ] {
            assert!(
                !answer(permission, role).may_approve(),
                "{permission}/{role}"
            );
        }
    }

    #[test]
    fn only_the_latest_run_of_each_required_check_counts_and_it_must_succeed() {
        let run = |id, name: &str, status: &str, conclusion: Option<&str>| CheckRun {
            id,
            name: name.into(),
            status: status.into(),
            conclusion: conclusion.map(str::to_owned),
        };
        let required = vec!["test".to_owned(), "lint".to_owned()];
        let green = [
            run(1, "test", "completed", Some("failure")),
            run(2, "test", "completed", Some("success")),
            run(3, "lint", "completed", Some("success")),
            run(4, "docs", "completed", Some("failure")),
        ];
        assert_eq!(required_checks_green(&required, &green), Ok(()));
        assert_eq!(required_checks_green(&[], &[]), Ok(()));
        let red = [
            run(2, "test", "completed", Some("success")),
            run(5, "test", "completed", Some("failure")),
            run(3, "lint", "in_progress", None),
        ];
        let said = required_checks_green(&required, &red).unwrap_err();
        assert!(
            said.contains("test ended failure") && said.contains("lint is in_progress"),
            "{said}"
        );
        for conclusion in ["neutral", "skipped", "cancelled", "timed_out", "stale"] {
            let runs = [
                run(1, "test", "completed", Some(conclusion)),
                run(2, "lint", "completed", Some("success")),
            ];
            assert!(
                required_checks_green(&required, &runs).is_err(),
                "{conclusion}"
            );
        }
        let missing = required_checks_green(&required, &green[..2]).unwrap_err();
        assert!(missing.contains("lint has not run"), "{missing}");
    }

    #[test]
    fn logins_that_could_escape_the_path_are_refused() {
        for good in ["octocat", "Octo-Cat", "alice_acme", "a1"] {
            assert!(valid_login(good), "{good}");
        }
        for bad in [
            "", "-x", "../x", "a/b", "a?b", "a b", "bot[bot]", "%2e%2e", "é",
        ] {
            assert!(!valid_login(bad), "{bad:?}");
        }
    }

    #[test]
    fn branch_names_that_could_escape_are_refused() {
        for good in ["fix/bug-12", "r2r/fix-bug-3", "main", "release_1.2"] {
            assert!(valid_branch(good), "{good}");
        }
        for bad in [
            "",
            "-delete",
            "../main",
            "a..b",
            "/abs",
            "x/",
            "a//b",
            "x.lock",
            "sp ace",
            "semi;colon",
            "new\nline",
            "ünï",
        ] {
            assert!(!valid_branch(bad), "{bad:?}");
        }
    }
}
