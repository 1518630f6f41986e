//! One interface over the places a target's code lives: GitHub's REST API
//! ([`crate::github::GitHubForge`]) and a bare repository on disk
//! ([`crate::local_forge::LocalForge`]). The desk asks a forge for facts (branch heads,
//! ancestry, files and CODEOWNERS at an exact commit) and asks it to do exactly two things on
//! the crew's and the recorder's behalf: open a *draft* pull request, and record a verified
//! deployment. Merging is not in the trait: on GitHub people merge on GitHub; on the local
//! forge the desk merges only after the engine's dry run (see [`crate::forge_api`]).

use crate::local_forge::GitError;
use async_trait::async_trait;
use domain::workflow::{Ancestry, CommitSha};

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
    use super::valid_branch;

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
