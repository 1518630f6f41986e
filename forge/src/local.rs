//! The local forge: a bare git repository on disk, driven with the `git` command line, for
//! desks without GitHub (the demo target's default). Ancestry is `git merge-base
//! --is-ancestor`; a merge is a real merge commit written with `git merge-tree --write-tree`
//! and `git commit-tree`, published with a compare-and-swap `git update-ref` on the default
//! branch (so a concurrent push is never overwritten).

use crate::{DraftPull, DraftRequest, Forge, ForgeError, RecordedDeployment};
use domain::workflow::{Ancestry, CommitSha};
use std::path::{Path, PathBuf};
use std::process::Output;

/// Why a git operation failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// `git` could not be started.
    #[error("cannot run git: {0}")]
    Spawn(#[from] std::io::Error),
    /// git said no.
    #[error("git {command} failed: {stderr}")]
    Failed {
        /// The subcommand.
        command: String,
        /// What git printed.
        stderr: String,
    },
    /// The branches do not merge cleanly.
    #[error("the change does not merge cleanly into {branch}; rebase it first")]
    Conflict {
        /// The default branch.
        branch: String,
    },
    /// git printed something that is not a commit id.
    #[error("git printed {0:?} where a commit id was expected")]
    NotACommit(String),
}

/// A bare repository and its default branch.
#[derive(Clone, Debug)]
pub struct LocalForge {
    repository: PathBuf,
    default_branch: String,
}

impl LocalForge {
    /// The forge over `repository` (a bare repository) merging into `default_branch`.
    pub fn new(repository: impl Into<PathBuf>, default_branch: &str) -> Self {
        LocalForge {
            repository: repository.into(),
            default_branch: default_branch.to_owned(),
        }
    }

    /// Creates an empty bare repository whose HEAD names `default_branch`.
    pub async fn init(repository: &Path, default_branch: &str) -> Result<LocalForge, GitError> {
        let output = tokio::process::Command::new("git")
            .args([
                "init",
                "--bare",
                "--quiet",
                "--initial-branch",
                default_branch,
            ])
            .arg(repository)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .await?;
        check("init", &output)?;
        Ok(LocalForge::new(repository, default_branch))
    }

    /// The repository's folder.
    pub fn repository(&self) -> &Path {
        &self.repository
    }

    /// The branch merges go into.
    pub fn default_branch(&self) -> &str {
        &self.default_branch
    }

    /// Writes the tree of `commit` into `dir` (no `.git`): a snapshot for the sandbox.
    pub async fn export(&self, commit: &CommitSha, dir: &Path) -> Result<(), GitError> {
        let archive = self
            .git(&["archive", "--format=tar", commit.as_str()])
            .await?;
        check("archive", &archive)?;
        let mut tar = tokio::process::Command::new("tar")
            .arg("-x")
            .arg("-C")
            .arg(dir)
            .arg("--no-same-owner")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        if let Some(mut stdin) = tar.stdin.take() {
            use tokio::io::AsyncWriteExt;
            stdin.write_all(&archive.stdout).await?;
        }
        let output = tar.wait_with_output().await?;
        check("archive | tar -x", &output).map(|_| ())
    }

    /// The version the nearest tag reachable from `commit` names (`v1.2.3` and `1.2.3` both
    /// give `1.2.3`), for a project whose version its build computes from git tags (a
    /// snapshot has no `.git` to compute it from). `None` without such a tag, or when the tag
    /// does not read as a version (digits and dots first, then at most a short suffix of
    /// letters, digits, `.`, `+` or `-`).
    pub async fn nearest_tag_version(&self, commit: &CommitSha) -> Option<String> {
        let output = self
            .git(&["describe", "--tags", "--abbrev=0", commit.as_str()])
            .await
            .ok()?;
        if !output.status.success() {
            return None;
        }
        let tag = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        tag_version(&tag)
    }

    async fn git(&self, args: &[&str]) -> Result<Output, GitError> {
        Ok(tokio::process::Command::new("git")
            .arg("--git-dir")
            .arg(&self.repository)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", "Reporter-to-Release")
            .env("GIT_AUTHOR_EMAIL", "desk@reporter-to-release.invalid")
            .env("GIT_COMMITTER_NAME", "Reporter-to-Release")
            .env("GIT_COMMITTER_EMAIL", "desk@reporter-to-release.invalid")
            .output()
            .await?)
    }

    async fn commit_of(&self, revision: &str) -> Result<Option<CommitSha>, GitError> {
        let output = self
            .git(&[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{revision}^{{commit}}"),
            ])
            .await?;
        if !output.status.success() {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        CommitSha::parse(&text)
            .map(Some)
            .map_err(|_| GitError::NotACommit(text))
    }

    /// The commit a branch points at.
    pub async fn branch_head(&self, branch: &str) -> Result<Option<CommitSha>, GitError> {
        if branch.starts_with('-') || branch.contains("..") {
            return Ok(None);
        }
        self.commit_of(&format!("refs/heads/{branch}")).await
    }

    /// How `candidate` relates to `base`; a commit the repository lacks is `Unknown`.
    pub async fn relation(
        &self,
        base: &CommitSha,
        candidate: &CommitSha,
    ) -> Result<Ancestry, GitError> {
        if self.commit_of(base.as_str()).await?.is_none()
            || self.commit_of(candidate.as_str()).await?.is_none()
        {
            return Ok(Ancestry::Unknown);
        }
        if base == candidate {
            return Ok(Ancestry::Identical);
        }
        let is_ancestor = |a: &CommitSha, b: &CommitSha| {
            let (a, b) = (a.as_str().to_owned(), b.as_str().to_owned());
            async move {
                let output = self.git(&["merge-base", "--is-ancestor", &a, &b]).await?;
                match output.status.code() {
                    Some(0) => Ok(true),
                    Some(1) => Ok(false),
                    _ => Err(GitError::Failed {
                        command: "merge-base".into(),
                        stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
                    }),
                }
            }
        };
        Ok(if is_ancestor(base, candidate).await? {
            Ancestry::Ahead
        } else if is_ancestor(candidate, base).await? {
            Ancestry::Behind
        } else {
            Ancestry::Diverged
        })
    }

    /// The newest commit among the last `depth` of `head`'s history whose tree is exactly
    /// `commit`'s (a rewritten history that kept the same content: a rebase or amend that
    /// changed only messages or parents); `None` when there is none, or when `commit` is no
    /// longer in the repository (its tree cannot be known).
    pub async fn same_tree_in_history(
        &self,
        commit: &CommitSha,
        head: &CommitSha,
        depth: usize,
    ) -> Result<Option<CommitSha>, GitError> {
        let output = self
            .git(&[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{}^{{tree}}", commit.as_str()),
            ])
            .await?;
        if !output.status.success() {
            return Ok(None);
        }
        let tree = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let output = self
            .git(&[
                "log",
                "--format=%H %T",
                &format!("--max-count={depth}"),
                head.as_str(),
            ])
            .await?;
        check("log", &output)?;
        Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| line.split_once(' '))
            .find(|(_, t)| *t == tree)
            .and_then(|(sha, _)| CommitSha::parse(sha).ok()))
    }

    /// A file's text at a commit, if it exists there.
    pub async fn file_at(
        &self,
        commit: &CommitSha,
        path: &str,
    ) -> Result<Option<String>, GitError> {
        let output = self
            .git(&["show", &format!("{}:{path}", commit.as_str())])
            .await?;
        Ok(output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).into_owned()))
    }

    /// Paths a change touches relative to where it left the default branch.
    pub async fn changed_paths(&self, head: &CommitSha) -> Result<Vec<String>, GitError> {
        let range = format!("refs/heads/{}...{}", self.default_branch, head.as_str());
        let output = self.git(&["diff", "--name-only", &range]).await?;
        check("diff", &output)?;
        Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// The change as a unified diff against where it left the default branch.
    pub async fn diff(&self, head: &CommitSha) -> Result<String, GitError> {
        self.change_diff(head, None).await
    }

    /// The diff `head` brings: against the default branch while open, or — once merged by
    /// `merge` — against the branch as it was before the merge (its first parent), so the
    /// approved change stays readable after it landed.
    pub async fn change_diff(
        &self,
        head: &CommitSha,
        merge: Option<&CommitSha>,
    ) -> Result<String, GitError> {
        let base = match merge {
            Some(merge) => format!("{}^1", merge.as_str()),
            None => format!("refs/heads/{}", self.default_branch),
        };
        self.diff_range(&format!("{base}...{}", head.as_str()))
            .await
    }

    /// What the merge commit `merge` changed on the default branch (against its first
    /// parent).
    pub async fn merge_diff(&self, merge: &CommitSha) -> Result<String, GitError> {
        self.diff_range(&format!("{0}^1..{0}", merge.as_str()))
            .await
    }

    async fn diff_range(&self, range: &str) -> Result<String, GitError> {
        let output = self.git(&["diff", "--no-color", range]).await?;
        check("diff", &output)?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Computes the merge commit of `head` into the default branch without publishing it:
    /// returns it with the branch commit it was made on.
    pub async fn prepare_merge(
        &self,
        head: &CommitSha,
        message: &str,
    ) -> Result<(CommitSha, CommitSha), GitError> {
        let branch = format!("refs/heads/{}", self.default_branch);
        let base = self
            .commit_of(&branch)
            .await?
            .ok_or_else(|| GitError::Failed {
                command: "rev-parse".into(),
                stderr: format!("{branch} does not exist"),
            })?;
        let tree = self
            .git(&["merge-tree", "--write-tree", base.as_str(), head.as_str()])
            .await?;
        match tree.status.code() {
            Some(0) => {}
            Some(1) => {
                return Err(GitError::Conflict {
                    branch: self.default_branch.clone(),
                })
            }
            _ => check("merge-tree", &tree).map(|_| ())?,
        }
        let tree_id = String::from_utf8_lossy(&tree.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        let commit = self
            .git(&[
                "commit-tree",
                &tree_id,
                "-p",
                base.as_str(),
                "-p",
                head.as_str(),
                "-m",
                message,
            ])
            .await?;
        check("commit-tree", &commit)?;
        let text = String::from_utf8_lossy(&commit.stdout).trim().to_owned();
        let merge = CommitSha::parse(&text).map_err(|_| GitError::NotACommit(text))?;
        Ok((merge, base))
    }

    /// Points the default branch at `merge` only if it still points at `base`.
    pub async fn publish_merge(&self, merge: &CommitSha, base: &CommitSha) -> Result<(), GitError> {
        let branch = format!("refs/heads/{}", self.default_branch);
        let output = self
            .git(&["update-ref", &branch, merge.as_str(), base.as_str()])
            .await?;
        check("update-ref", &output).map(|_| ())
    }
}

impl LocalForge {
    /// Regular files (not symlinks or submodules) under `prefixes` at `commit`.
    pub async fn regular_files(
        &self,
        commit: &CommitSha,
        prefixes: &[String],
    ) -> Result<Vec<String>, GitError> {
        let mut args = vec!["ls-tree", "-r", "-z", "--full-tree", commit.as_str(), "--"];
        args.extend(prefixes.iter().map(String::as_str));
        let output = self.git(&args).await?;
        check("ls-tree", &output)?;
        Ok(output
            .stdout
            .split(|b| *b == 0)
            .filter_map(|entry| {
                let entry = std::str::from_utf8(entry).ok()?;
                let (meta, path) = entry.split_once('\t')?;
                let mode = meta.split(' ').next()?;
                matches!(mode, "100644" | "100755").then(|| path.to_owned())
            })
            .collect())
    }

    /// Writes `files` (path, whole content) on top of `base` as one commit by the desk and
    /// creates `refs/heads/<branch>` at it — created, never moved (compare-and-swap against
    /// "absent"). Nothing is written to any working tree.
    pub async fn commit_files(
        &self,
        base: &CommitSha,
        files: &[(String, String)],
        message: &str,
        branch: &str,
    ) -> Result<CommitSha, GitError> {
        const ABSENT: &str = "0000000000000000000000000000000000000000";
        let scratch = tempfile::tempdir()?;
        let index = scratch.path().join("index");
        let with_index = |args: &[&str]| {
            let mut command = tokio::process::Command::new("git");
            command
                .arg("--git-dir")
                .arg(&self.repository)
                .args(args)
                .env("GIT_INDEX_FILE", &index)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_TERMINAL_PROMPT", "0");
            command
        };
        let output = with_index(&["read-tree", base.as_str()]).output().await?;
        check("read-tree", &output)?;
        for (path, content) in files {
            let blob = self
                .git_with_input(&["hash-object", "-w", "--stdin"], content.as_bytes())
                .await?;
            check("hash-object", &blob)?;
            let blob = String::from_utf8_lossy(&blob.stdout).trim().to_owned();
            let output = with_index(&[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("100644,{blob},{path}"),
            ])
            .output()
            .await?;
            check("update-index", &output)?;
        }
        let tree = with_index(&["write-tree"]).output().await?;
        check("write-tree", &tree)?;
        let tree = String::from_utf8_lossy(&tree.stdout).trim().to_owned();
        let commit = self
            .git_with_input(
                &["commit-tree", &tree, "-p", base.as_str(), "-F", "-"],
                message.as_bytes(),
            )
            .await?;
        check("commit-tree", &commit)?;
        let text = String::from_utf8_lossy(&commit.stdout).trim().to_owned();
        let commit = CommitSha::parse(&text).map_err(|_| GitError::NotACommit(text))?;
        let name = format!("refs/heads/{branch}");
        let output = self
            .git(&["update-ref", &name, commit.as_str(), ABSENT])
            .await?;
        check("update-ref", &output)?;
        Ok(commit)
    }

    async fn git_with_input(&self, args: &[&str], input: &[u8]) -> Result<Output, GitError> {
        use tokio::io::AsyncWriteExt;
        let mut child = tokio::process::Command::new("git")
            .arg("--git-dir")
            .arg(&self.repository)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", "Reporter-to-Release")
            .env("GIT_AUTHOR_EMAIL", "desk@reporter-to-release.invalid")
            .env("GIT_COMMITTER_NAME", "Reporter-to-Release")
            .env("GIT_COMMITTER_EMAIL", "desk@reporter-to-release.invalid")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input).await?;
        }
        Ok(child.wait_with_output().await?)
    }

    /// The highest number under `prefix` (refs named `prefix<N>/…` or `prefix<N>`).
    async fn highest_number(&self, prefix: &str) -> Result<u64, GitError> {
        let output = self
            .git(&["for-each-ref", "--format=%(refname)", prefix])
            .await?;
        check("for-each-ref", &output)?;
        Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|name| name.strip_prefix(prefix))
            .filter_map(|rest| rest.split('/').next()?.parse::<u64>().ok())
            .max()
            .unwrap_or(0))
    }

    /// Creates `refs/<prefix><N><suffix>` at `target` for the next free N. Creation is a
    /// compare-and-swap against "absent", so two callers never get the same number.
    async fn create_numbered_ref(
        &self,
        prefix: &str,
        suffix: &str,
        target: &str,
    ) -> Result<u64, GitError> {
        const ABSENT: &str = "0000000000000000000000000000000000000000";
        let mut last = None;
        for _ in 0..16 {
            let number = self.highest_number(prefix).await? + 1;
            let name = format!("{prefix}{number}{suffix}");
            let output = self.git(&["update-ref", &name, target, ABSENT]).await?;
            if output.status.success() {
                return Ok(number);
            }
            last = Some(output);
        }
        match last {
            Some(output) => check("update-ref", &output).map(|_| 0),
            None => Ok(0),
        }
    }
}

#[async_trait::async_trait]
impl Forge for LocalForge {
    fn kind(&self) -> &'static str {
        "local"
    }

    async fn branch_head(&self, branch: &str) -> Result<Option<CommitSha>, ForgeError> {
        if !crate::valid_branch(branch) {
            return Ok(None);
        }
        Ok(LocalForge::branch_head(self, branch).await?)
    }

    async fn relation(
        &self,
        base: &CommitSha,
        candidate: &CommitSha,
    ) -> Result<Ancestry, ForgeError> {
        Ok(LocalForge::relation(self, base, candidate).await?)
    }

    async fn file_at(&self, commit: &CommitSha, path: &str) -> Result<Option<String>, ForgeError> {
        Ok(LocalForge::file_at(self, commit, path).await?)
    }

    /// The default branch, which the desk merges every pull request into.
    async fn base_head(&self) -> Result<Option<CommitSha>, ForgeError> {
        Ok(LocalForge::branch_head(self, &self.default_branch).await?)
    }

    /// A draft pull request is `refs/pull/N/head` (as GitHub names it) at the branch's head,
    /// with its title and description as a blob at `refs/pull/N/description`.
    async fn open_draft(&self, draft: &DraftRequest) -> Result<DraftPull, ForgeError> {
        if !crate::valid_branch(&draft.branch) {
            return Err(ForgeError::Invalid(format!(
                "{:?} is not a branch name this forge accepts",
                draft.branch
            )));
        }
        let head = LocalForge::branch_head(self, &draft.branch)
            .await?
            .ok_or_else(|| {
                ForgeError::Invalid(format!(
                    "the forge has no branch {:?}; push it first",
                    draft.branch
                ))
            })?;
        let number = self
            .create_numbered_ref("refs/pull/", "/head", head.as_str())
            .await?;
        let text = format!("{}\n\n{}\n", draft.title.trim(), draft.body.trim());
        let blob = self
            .git_with_input(&["hash-object", "-w", "--stdin"], text.as_bytes())
            .await?;
        check("hash-object", &blob)?;
        let blob = String::from_utf8_lossy(&blob.stdout).trim().to_owned();
        let description = format!("refs/pull/{number}/description");
        let output = self.git(&["update-ref", &description, &blob]).await?;
        check("update-ref", &output)?;
        Ok(DraftPull {
            number,
            head,
            url: format!("refs/pull/{number}/head"),
        })
    }

    /// A deployment is `refs/deployments/<environment>/<N>` at the commit.
    async fn record_deployment(
        &self,
        commit: &CommitSha,
        environment: &str,
        url: &str,
    ) -> Result<RecordedDeployment, ForgeError> {
        if !crate::valid_branch(environment) || environment.contains('/') {
            return Err(ForgeError::Invalid(format!(
                "{environment:?} is not an environment name this forge accepts"
            )));
        }
        if self.commit_of(commit.as_str()).await?.is_none() {
            return Err(ForgeError::Invalid(format!(
                "the forge has no commit {commit}"
            )));
        }
        let prefix = format!("refs/deployments/{environment}/");
        let number = self
            .create_numbered_ref(&prefix, "", commit.as_str())
            .await?;
        Ok(RecordedDeployment {
            id: format!("{environment}-{number}"),
            url: url.to_owned(),
        })
    }
}

/// Credentials for one HTTPS remote: sent as an `Authorization` header that git reads from
/// its environment (`GIT_CONFIG_COUNT`), so the token is never in an argument list, a URL, a
/// config file or a remote's settings, and git's credential helpers are switched off.
#[derive(Clone)]
pub struct RemoteAuth {
    /// The remote's URL, without credentials (`https://github.com/owner/name.git`).
    pub url: String,
    header: String,
}

impl std::fmt::Debug for RemoteAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteAuth")
            .field("url", &self.url)
            .field("header", &"[redacted]")
            .finish()
    }
}

impl RemoteAuth {
    /// GitHub's HTTPS remote at `url` with an installation or personal token (basic auth as
    /// `x-access-token`).
    pub fn github(url: &str, token: &str) -> Self {
        use base64::Engine;
        let pair =
            base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
        RemoteAuth {
            url: url.to_owned(),
            header: format!("Authorization: Basic {pair}"),
        }
    }

    /// Hides the token (and its encoding) if git ever echoes it.
    fn scrub(&self, text: &str) -> String {
        let secret = self.header.trim_start_matches("Authorization: Basic ");
        text.replace(secret, "[redacted]")
    }
}

impl LocalForge {
    /// Runs a network git command against `remote` with its credentials in the environment
    /// only, under `deadline`; the error carries git's words with the credentials scrubbed.
    async fn remote_git(
        &self,
        remote: &RemoteAuth,
        args: &[&str],
        deadline: std::time::Duration,
    ) -> Result<Output, GitError> {
        let run = tokio::process::Command::new("git")
            .arg("--git-dir")
            .arg(&self.repository)
            .args(["-c", "credential.helper=", "-c", "core.askPass="])
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", "http.extraHeader")
            .env("GIT_CONFIG_VALUE_0", &remote.header)
            .kill_on_drop(true)
            .output();
        let output =
            tokio::time::timeout(deadline, run)
                .await
                .map_err(|_| GitError::Failed {
                    command: args.first().copied().unwrap_or("git").to_owned(),
                    stderr: format!(
                        "no answer from {} within {} s",
                        remote.url,
                        deadline.as_secs()
                    ),
                })??;
        if output.status.success() {
            return Ok(output);
        }
        let said = remote.scrub(String::from_utf8_lossy(&output.stderr).trim());
        // After a 401 git asks for a user name, which it may not: say what happened.
        let said = if said.contains("could not read Username")
            || said.contains("Authentication failed")
        {
            format!(
                "{} refused the credentials (HTTP 401): the token is wrong, expired or has no access to this repository",
                remote.url
            )
        } else {
            said
        };
        Err(GitError::Failed {
            command: args.first().copied().unwrap_or("git").to_owned(),
            stderr: said,
        })
    }

    /// Pushes `branch` (which must exist here) to `remote` as a new branch there; refuses to
    /// overwrite a branch of that name on the remote.
    pub async fn push_branch(&self, remote: &RemoteAuth, branch: &str) -> Result<(), GitError> {
        if !crate::valid_branch(branch) {
            return Err(GitError::Failed {
                command: "push".into(),
                stderr: format!("{branch:?} is not a branch name this forge accepts"),
            });
        }
        let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
        self.remote_git(
            remote,
            &["push", "--quiet", "--porcelain", &remote.url, &refspec],
            std::time::Duration::from_secs(120),
        )
        .await?;
        Ok(())
    }

    /// Moves this repository's default branch to the remote's (fetched over HTTPS with the
    /// credentials), so fixes are built on what the remote has now.
    pub async fn sync_default_branch(&self, remote: &RemoteAuth) -> Result<(), GitError> {
        let branch = self.default_branch.clone();
        let refspec = format!("+refs/heads/{branch}:refs/heads/{branch}");
        self.remote_git(
            remote,
            &["fetch", "--quiet", "--no-tags", &remote.url, &refspec],
            std::time::Duration::from_secs(120),
        )
        .await?;
        Ok(())
    }
}

fn check<'a>(command: &str, output: &'a Output) -> Result<&'a Output, GitError> {
    if output.status.success() {
        Ok(output)
    } else {
        Err(GitError::Failed {
            command: command.to_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

/// The version tag `tag` names, if it reads as one (see [`LocalForge::nearest_tag_version`]).
pub fn tag_version(tag: &str) -> Option<String> {
    let version = tag.strip_prefix(['v', 'V']).unwrap_or(tag);
    let numeric = version
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(version.len());
    // `3.1.dev4`: the release is `3.1`, the suffix `.dev4`.
    let numeric = if version[..numeric].ends_with('.') && numeric < version.len() {
        numeric - 1
    } else {
        numeric
    };
    let (release, suffix) = version.split_at(numeric);
    let release_ok = !release.is_empty()
        && release
            .split('.')
            .all(|part| !part.is_empty() && part.len() <= 9);
    let suffix_ok = suffix.len() <= 32
        && suffix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-'));
    (release_ok && suffix_ok && release.starts_with(|c: char| c.is_ascii_digit()))
        .then(|| version.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A working clone of the forge's repository for writing commits in tests.
    struct Clone {
        dir: tempfile::TempDir,
    }

    impl Clone {
        fn git(&self, args: &[&str]) -> String {
            let output = std::process::Command::new("git")
                .current_dir(self.dir.path())
                .args(["-c", "user.name=Test", "-c", "user.email=test@example.org"])
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8_lossy(&output.stdout).trim().to_owned()
        }

        fn commit(&self, path: &str, text: &str, message: &str) -> CommitSha {
            let file = self.dir.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
            self.git(&["add", "."]);
            self.git(&["commit", "--quiet", "-m", message]);
            CommitSha::parse(&self.git(&["rev-parse", "HEAD"])).unwrap()
        }
    }

    async fn forge_with_main() -> (tempfile::TempDir, LocalForge, Clone, CommitSha) {
        let bare = tempfile::tempdir().unwrap();
        let forge = LocalForge::init(&bare.path().join("shop.git"), "main")
            .await
            .unwrap();
        let clone = Clone {
            dir: tempfile::tempdir().unwrap(),
        };
        clone.git(&["init", "--quiet", "--initial-branch", "main"]);
        clone.git(&[
            "remote",
            "add",
            "origin",
            forge.repository().to_str().unwrap(),
        ]);
        let first = clone.commit(".github/CODEOWNERS", "* @alice\n", "owners");
        clone.commit("src/lib.rs", "pub fn total() -> i64 { -100 }\n", "shop");
        clone.git(&["push", "--quiet", "origin", "main"]);
        (bare, forge, clone, first)
    }

    #[tokio::test]
    async fn a_commit_after_a_version_tag_reads_that_version_and_an_odd_tag_none() {
        let (_bare, forge, clone, first) = forge_with_main().await;
        let main = forge.branch_head("main").await.unwrap().unwrap();
        assert_eq!(forge.nearest_tag_version(&main).await, None, "no tag yet");
        clone.git(&["tag", "v25.3.0", first.as_str()]);
        clone.git(&["push", "--quiet", "origin", "--tags"]);
        assert_eq!(
            forge.nearest_tag_version(&main).await.as_deref(),
            Some("25.3.0"),
            "the nearest tag behind the head"
        );
        clone.git(&["tag", "release;touch-x", main.as_str()]);
        clone.git(&["push", "--quiet", "origin", "--tags"]);
        assert_eq!(forge.nearest_tag_version(&main).await, None);
        for (tag, version) in [
            ("1.2.3", Some("1.2.3")),
            ("V2.0rc1", Some("2.0rc1")),
            ("3.1.dev4+gabc", Some("3.1.dev4+gabc")),
            ("latest", None),
            ("v", None),
            ("1..2", None),
            ("1.2 3", None),
            ("1.2$(id)", None),
        ] {
            assert_eq!(super::tag_version(tag).as_deref(), version, "{tag:?}");
        }
    }

    #[tokio::test]
    async fn the_desk_commits_whole_files_on_a_new_branch_without_a_worktree() {
        let (_bare, forge, clone, _first) = forge_with_main().await;
        let main = forge.branch_head("main").await.unwrap().unwrap();
        // A symlink in the tree is not a regular file the fixer may read.
        std::os::unix::fs::symlink("/etc/passwd", clone.dir.path().join("src/link")).unwrap();
        clone.git(&["add", "."]);
        clone.git(&["commit", "--quiet", "-m", "link"]);
        clone.git(&["push", "--quiet", "origin", "main"]);
        let main_now = forge.branch_head("main").await.unwrap().unwrap();
        assert_eq!(
            forge
                .regular_files(&main_now, &["src/".into()])
                .await
                .unwrap(),
            ["src/lib.rs"]
        );
        let files = [
            (
                "src/lib.rs".to_owned(),
                "pub fn total() -> i64 { 0 }\n".to_owned(),
            ),
            (
                "tests/total.rs".to_owned(),
                "#[test] fn t() {}\n".to_owned(),
            ),
        ];
        let head = forge
            .commit_files(&main, &files, "Fix the total\n", "r2r/fix-1")
            .await
            .unwrap();
        assert_eq!(
            forge.branch_head("r2r/fix-1").await.unwrap(),
            Some(head.clone())
        );
        assert_eq!(
            forge
                .file_at(&head, "tests/total.rs")
                .await
                .unwrap()
                .as_deref(),
            Some("#[test] fn t() {}\n")
        );
        assert_eq!(
            forge
                .file_at(&head, ".github/CODEOWNERS")
                .await
                .unwrap()
                .as_deref(),
            Some("* @alice\n"),
            "the rest of the base is kept"
        );
        assert_eq!(forge.relation(&main, &head).await.unwrap(), Ancestry::Ahead);
        // A branch is created, never moved.
        assert!(forge
            .commit_files(&main, &files, "again", "r2r/fix-1")
            .await
            .is_err());
        assert_eq!(forge.branch_head("r2r/fix-1").await.unwrap(), Some(head));
        assert_eq!(forge.branch_head("main").await.unwrap(), Some(main_now));
    }

    #[tokio::test]
    async fn ancestry_codeowners_diff_and_a_real_merge() {
        let (_bare, forge, clone, first) = forge_with_main().await;
        let main = forge.branch_head("main").await.unwrap().unwrap();
        assert_eq!(
            forge.relation(&first, &main).await.unwrap(),
            Ancestry::Ahead
        );
        assert_eq!(
            forge.relation(&main, &first).await.unwrap(),
            Ancestry::Behind
        );
        assert_eq!(
            forge.relation(&main, &main).await.unwrap(),
            Ancestry::Identical
        );
        let unknown = CommitSha::parse(&"9".repeat(40)).unwrap();
        assert_eq!(
            forge.relation(&main, &unknown).await.unwrap(),
            Ancestry::Unknown
        );
        assert_eq!(
            forge.codeowners_at(&main).await.unwrap().unwrap(),
            "* @alice\n"
        );

        clone.git(&["checkout", "--quiet", "-b", "fix/coupon"]);
        let head = clone.commit("src/lib.rs", "pub fn total() -> i64 { 0 }\n", "fix");
        clone.git(&["push", "--quiet", "origin", "fix/coupon"]);
        assert_eq!(
            forge.branch_head("fix/coupon").await.unwrap(),
            Some(head.clone())
        );
        assert_eq!(forge.changed_paths(&head).await.unwrap(), ["src/lib.rs"]);
        assert!(forge
            .diff(&head)
            .await
            .unwrap()
            .contains("+pub fn total() -> i64 { 0 }"));

        let (merge, base) = forge
            .prepare_merge(&head, "Merge fix/coupon")
            .await
            .unwrap();
        assert_eq!(base, main);
        assert_eq!(
            forge.branch_head("main").await.unwrap(),
            Some(main.clone()),
            "not yet published"
        );
        forge.publish_merge(&merge, &base).await.unwrap();
        assert_eq!(
            forge.branch_head("main").await.unwrap(),
            Some(merge.clone())
        );
        assert_eq!(
            forge.relation(&head, &merge).await.unwrap(),
            Ancestry::Ahead,
            "the merge contains the fix"
        );
        assert_eq!(
            forge.relation(&main, &merge).await.unwrap(),
            Ancestry::Ahead
        );
        // Publishing again from a stale base is refused: nothing is overwritten.
        assert!(forge.publish_merge(&merge, &base).await.is_err());
        // After the merge the change is still readable: against the branch before it (the
        // open diff against main is empty now), and as what the merge changed on main.
        assert_eq!(forge.diff(&head).await.unwrap(), "");
        let approved = forge.change_diff(&head, Some(&merge)).await.unwrap();
        assert!(
            approved.contains("+pub fn total() -> i64 { 0 }"),
            "{approved}"
        );
        let merged = forge.merge_diff(&merge).await.unwrap();
        assert!(merged.contains("+pub fn total() -> i64 { 0 }"), "{merged}");
        assert!(
            merged.contains("-pub fn total() -> i64 { -100 }"),
            "{merged}"
        );
    }

    #[tokio::test]
    async fn codeowners_come_from_the_base_branch_not_from_the_change() {
        let (_bare, forge, clone, _) = forge_with_main().await;
        clone.git(&["checkout", "--quiet", "-b", "fix/owners"]);
        let head = clone.commit(".github/CODEOWNERS", "* @mallory\n", "take ownership");
        clone.git(&["push", "--quiet", "origin", "fix/owners"]);
        assert_eq!(
            forge.codeowners_at(&head).await.unwrap().as_deref(),
            Some("* @mallory\n")
        );
        assert_eq!(
            forge.codeowners_at_base().await.unwrap().as_deref(),
            Some("* @alice\n"),
            "the change's own CODEOWNERS does not count"
        );
    }

    #[tokio::test]
    async fn drafts_get_distinct_numbers_even_when_opened_at_once() {
        let (_bare, forge, clone, _) = forge_with_main().await;
        clone.git(&["checkout", "--quiet", "-b", "fix/coupon"]);
        let head = clone.commit("src/lib.rs", "pub fn total() -> i64 { 0 }\n", "fix");
        clone.git(&["push", "--quiet", "origin", "fix/coupon"]);
        let draft = |n: usize| DraftRequest {
            branch: "fix/coupon".into(),
            title: format!("Fix {n}"),
            body: "evidence: coupon test fails before, passes after".into(),
        };
        let opened = futures_join(&forge, (0..4).map(draft).collect()).await;
        let mut numbers: Vec<u64> = opened.iter().map(|p| p.number).collect();
        numbers.sort_unstable();
        assert_eq!(numbers, [1, 2, 3, 4]);
        assert!(opened.iter().all(|p| p.head == head));
        let description = clone.git(&[
            "--git-dir",
            forge.repository().to_str().unwrap(),
            "cat-file",
            "-p",
            "refs/pull/1/description",
        ]);
        assert!(
            description.contains("evidence: coupon test fails"),
            "{description}"
        );

        for (branch, what) in [("absent", "push it first"), ("-x", "not a branch name")] {
            let refused = forge
                .open_draft(&DraftRequest {
                    branch: branch.into(),
                    title: "t".into(),
                    body: String::new(),
                })
                .await
                .unwrap_err();
            assert!(refused.to_string().contains(what), "{refused}");
        }

        let main = LocalForge::branch_head(&forge, "main")
            .await
            .unwrap()
            .unwrap();
        let first = forge
            .record_deployment(&main, "production", "https://shop.example")
            .await
            .unwrap();
        let second = forge
            .record_deployment(&main, "production", "https://shop.example")
            .await
            .unwrap();
        assert_eq!(
            (first.id.as_str(), second.id.as_str()),
            ("production-1", "production-2")
        );
        let unknown = CommitSha::parse(&"9".repeat(40)).unwrap();
        assert!(forge
            .record_deployment(&unknown, "production", "x")
            .await
            .is_err());
        assert!(forge.record_deployment(&main, "../x", "x").await.is_err());
    }

    async fn futures_join(forge: &LocalForge, drafts: Vec<DraftRequest>) -> Vec<DraftPull> {
        let mut tasks = tokio::task::JoinSet::new();
        for draft in drafts {
            let forge = forge.clone();
            tasks.spawn(async move { forge.open_draft(&draft).await.unwrap() });
        }
        let mut opened = Vec::new();
        while let Some(pull) = tasks.join_next().await {
            opened.push(pull.unwrap());
        }
        opened
    }

    #[tokio::test]
    async fn a_conflicting_change_is_refused_and_a_diverged_one_named() {
        let (_bare, forge, clone, _) = forge_with_main().await;
        clone.git(&["checkout", "--quiet", "-b", "fix/a"]);
        let a = clone.commit("src/lib.rs", "pub fn total() -> i64 { 1 }\n", "a");
        clone.git(&["push", "--quiet", "origin", "fix/a"]);
        clone.git(&["checkout", "--quiet", "main"]);
        let main = clone.commit("src/lib.rs", "pub fn total() -> i64 { 2 }\n", "main moves");
        clone.git(&["push", "--quiet", "origin", "main"]);
        assert_eq!(forge.relation(&main, &a).await.unwrap(), Ancestry::Diverged);
        assert!(matches!(
            forge.prepare_merge(&a, "Merge fix/a").await,
            Err(GitError::Conflict { .. })
        ));
        assert_eq!(forge.branch_head("main").await.unwrap(), Some(main));
    }
}
