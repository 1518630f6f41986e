//! What a repository is, read from the tree of one of its commits (exported as the desk
//! measures it; nothing of it runs): [`sandbox::detect`] on that tree, and a project's
//! missing fields filled from it (`r2r project add --from-git`, the desk's project form).

use super::snapshot::Snapshot;
use crate::projects::ProjectChange;
use domain::workflow::CommitSha;
use std::path::{Path, PathBuf};

/// The repository's git folder: `path` itself when bare, else its `.git`.
pub fn git_dir(path: &Path) -> PathBuf {
    if path.join(".git").is_dir() {
        path.join(".git")
    } else {
        path.to_path_buf()
    }
}

/// The commit `reference` names in `git_dir`.
pub async fn resolve(git_dir: &Path, reference: &str) -> Result<CommitSha, String> {
    if reference.starts_with('-')
        || reference
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "--ref: expected a branch, tag or commit, got {reference:?}"
        ));
    }
    let output = tokio::process::Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["rev-parse", "--verify", "--end-of-options"])
        .arg(format!("{reference}^{{commit}}"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "--ref: {reference:?} names no commit in {}: {}",
            git_dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    CommitSha::parse(String::from_utf8_lossy(&output.stdout).trim())
        .map_err(|e| format!("git answered an odd commit id: {e}"))
}

/// The tree of `reference` in the repository at `repository`, exported as the desk measures
/// it, and its commit.
pub(crate) async fn exported(
    repository: &Path,
    reference: &str,
) -> Result<(Snapshot, CommitSha), String> {
    let git_dir = git_dir(repository);
    let commit = resolve(&git_dir, reference).await?;
    let forge = forge::LocalForge::new(&git_dir, reference);
    let snapshot = Snapshot::new().map_err(|r| r.error.message)?;
    snapshot
        .export(&forge, &commit)
        .await
        .map_err(|r| r.error.message)?;
    Ok((snapshot, commit))
}

/// What [`sandbox::detect::detect`] makes of `reference`'s tree.
pub async fn detected(
    repository: &Path,
    reference: &str,
) -> Result<sandbox::detect::Detection, String> {
    let (snapshot, _) = exported(repository, reference).await?;
    Ok(sandbox::detect::detect(snapshot.root()))
}

/// Fills what `change` does not give of project `id` from the bare repository at
/// `repository` (`reference` in it, else its HEAD): the profile, the fix folders, the branch
/// (the reference when it names a branch, else the HEAD branch), the component (the id) and
/// the forge. Gives back what it filled, in words, and what the desk cannot do for the
/// repository yet; refuses (naming the field to give) when no profile fits or no fix folder
/// is found.
pub async fn fill_from_tree(
    change: &mut ProjectChange,
    id: &str,
    repository: &Path,
    reference: Option<&str>,
) -> Result<(Vec<String>, Vec<String>), (&'static str, String)> {
    let git = |args: &[&str]| {
        let mut command = tokio::process::Command::new("git");
        command
            .arg("--git-dir")
            .arg(repository)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1");
        command
    };
    let bare = git(&["rev-parse", "--is-bare-repository"])
        .output()
        .await
        .map_err(|e| ("forge", format!("cannot run git: {e}")))?;
    if String::from_utf8_lossy(&bare.stdout).trim() != "true" {
        return Err((
            "forge",
            format!(
                "{} is not a bare git repository; the desk reads and pushes to the repository the team pushes to (make one with git clone --bare, or name the server's)",
                repository.display()
            ),
        ));
    }
    let reference = reference.unwrap_or("HEAD");
    let found = detected(repository, reference)
        .await
        .map_err(|reason| ("forge", reason))?;
    let mut said = Vec::new();
    if change.profile.is_none() {
        let profile = found.profile.ok_or_else(|| {
            (
                "profile",
                format!(
                    "no profile fits {} ({}); name one",
                    repository.display(),
                    found.limits.join("; ")
                ),
            )
        })?;
        said.push(format!(
            "profile {} (from {})",
            profile.as_str(),
            found.manifest.as_deref().unwrap_or("its tree")
        ));
        change.profile = Some(profile.as_str().to_owned());
    }
    if change.fix_paths.is_none() {
        if found.fix_paths.is_empty() {
            return Err((
                "fix_paths",
                format!(
                    "no folder a fix may change was found in {}; name them",
                    repository.display()
                ),
            ));
        }
        if found.fix_paths.len() > domain::project::MAX_FIX_PATHS {
            return Err((
                "fix_paths",
                format!(
                    "{} folders of {} look like code a fix may change (at most {} can be named); name the ones it may",
                    found.fix_paths.len(),
                    repository.display(),
                    domain::project::MAX_FIX_PATHS
                ),
            ));
        }
        said.push(format!("fix paths {}", found.fix_paths.join(",")));
        change.fix_paths = Some(found.fix_paths.join(","));
    }
    if change.branch.is_none() {
        let named_branch = git(&["show-ref", "--verify", "--quiet", "--end-of-options"])
            .arg(format!("refs/heads/{reference}"))
            .status()
            .await
            .is_ok_and(|status| status.success());
        let branch = if named_branch {
            reference.to_owned()
        } else {
            let head = git(&["symbolic-ref", "--short", "HEAD"])
                .output()
                .await
                .map_err(|e| ("branch", format!("cannot run git: {e}")))?;
            String::from_utf8_lossy(&head.stdout).trim().to_owned()
        };
        if !branch.is_empty() {
            said.push(format!("branch {branch}"));
            change.branch = Some(branch);
        }
    }
    if change.components.is_none() {
        said.push(format!("component {}", id.trim()));
        change.components = Some(id.trim().to_owned());
    }
    if change.forge.is_none() {
        change.forge = Some(repository.display().to_string());
    }
    Ok((said, found.limits))
}
