//! Building a release: one commit of the target, exported from the local forge (`git
//! archive`, which also writes the commit into the tree for the binary to embed), built in
//! the desk's sandbox under the same limits as every measurement, its binary copied out as
//! the artifact. Starting and switching instances is the deployer's part
//! ([`crate::workers::deployer`]).

use super::snapshot::Snapshot;
use crate::config::DeployConfig;
use crate::web::AppState;
use domain::workflow::CommitSha;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

/// How long one release build may take.
pub const BUILD_DEADLINE: Duration = Duration::from_secs(300);
/// How much of a failed build's output the owners are shown.
const LOG_TAIL: usize = 2_000;

/// Where `commit`'s artifact lives.
pub fn artifact_path(deploy: &DeployConfig, commit: &CommitSha) -> PathBuf {
    deploy.dir.join(commit.as_str()).join(&deploy.service)
}

/// How long a release build waits for a sandbox slot the crew's measurements hold.
pub const SLOT_WAIT: Duration = Duration::from_secs(600);

/// Why a release was not built.
#[derive(Debug)]
pub enum BuildError {
    /// The sandbox could not take it now (busy past [`SLOT_WAIT`], unreachable): the same
    /// commit is tried again later.
    Later(String),
    /// The build itself failed (its words and last lines): the previous release stays.
    Failed(String),
}

/// Builds `commit` of `project` and returns its artifact (already built: the one on disk). A
/// failure is said in words with the build's last lines.
pub async fn build(
    state: &AppState,
    project: &str,
    deploy: &DeployConfig,
    commit: &CommitSha,
) -> Result<PathBuf, BuildError> {
    build_once(state, project, deploy, commit)
        .await
        .map_err(|(later, reason)| {
            if later {
                BuildError::Later(reason)
            } else {
                BuildError::Failed(reason)
            }
        })
}

async fn build_once(
    state: &AppState,
    project: &str,
    deploy: &DeployConfig,
    commit: &CommitSha,
) -> Result<PathBuf, (bool, String)> {
    let failed = |reason: String| (false, reason);
    let artifact = artifact_path(deploy, commit);
    if artifact.is_file() {
        return Ok(artifact);
    }
    let target = state.projects.scope().project(project).ok_or_else(|| {
        failed(format!(
            "this desk no longer serves the project {project:?}"
        ))
    })?;
    let forge = super::forge::forge_of(&target).map_err(|r| failed(r.error.message))?;
    let snapshot = Snapshot::new().map_err(|r| failed(r.error.message))?;
    snapshot
        .export(forge, commit)
        .await
        .map_err(|r| failed(r.error.message))?;
    snapshot
        .share_read_only()
        .map_err(|r| failed(r.error.message))?;
    // The artifact's folder: only the desk may enter it; inside it, the one folder the
    // sandbox's user may write.
    let folder = artifact
        .parent()
        .ok_or_else(|| failed("the release folder has no parent".to_owned()))?
        .to_path_buf();
    let scratch = folder.join("out");
    let prepare = || -> std::io::Result<()> {
        // A failed build's leftovers go first: the new build starts from an empty folder.
        if scratch.exists() {
            std::fs::remove_dir_all(&scratch)?;
        }
        std::fs::create_dir_all(&scratch)?;
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o711))?;
        std::fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o777))
    };
    prepare().map_err(|e| failed(format!("cannot prepare {}: {e}", folder.display())))?;
    let toolchains = sandbox::Toolchains::detect();
    // Only Rust projects deploy (the configuration and the project's definition say so).
    let job = sandbox::Profile::Rust
        .release_job(
            snapshot.root(),
            &deploy.service,
            &scratch,
            &toolchains,
            BUILD_DEADLINE,
        )
        .map_err(|e| failed(e.to_string()))?;
    // A release waits its turn behind the crew's measurements (never refused after 2 s as a
    // measurement is): a merge that lands while the crew measures is still released.
    let _slot = state.sandbox.slot(SLOT_WAIT).await.map_err(|busy| {
        (
            true,
            format!(
                "the sandbox stayed busy with {} measurement(s) for {} s",
                busy.concurrency,
                SLOT_WAIT.as_secs()
            ),
        )
    })?;
    let sandbox = state
        .sandbox
        .get()
        .await
        .map_err(|reason| (true, format!("the sandbox is not reachable: {reason}")))?;
    let outcome = sandbox
        .run(&job)
        .await
        .map_err(|e| (true, format!("the sandbox did not run the build: {e}")))?;
    let built = scratch.join(&deploy.service);
    // The artifact itself, never what a link points at (the build could leave a link to any
    // file the desk may read).
    let regular = std::fs::symlink_metadata(&built).is_ok_and(|m| m.file_type().is_file());
    if outcome.exit_code != Some(0) || outcome.timed_out || !regular {
        let log = format!("{}{}", outcome.stdout, outcome.stderr);
        let start = log
            .char_indices()
            .rev()
            .nth(LOG_TAIL)
            .map_or(0, |(at, _)| at);
        return Err(failed(format!(
            "the build of {} failed (exit {}{}): {}",
            commit.as_str(),
            outcome
                .exit_code
                .map_or("none".to_owned(), |c| c.to_string()),
            if outcome.timed_out { ", timed out" } else { "" },
            log[start..].trim()
        )));
    }
    // The artifact becomes the desk's own file: nothing the sandbox can still write.
    // Copied under another name and renamed whole: a desk killed mid-copy leaves no partial
    // artifact that a later start would take for the built one.
    let finish = || -> std::io::Result<()> {
        let partial = folder.join(format!(".{}.partial", deploy.service));
        std::fs::copy(&built, &partial)?;
        std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o755))?;
        std::fs::rename(&partial, &artifact)?;
        std::fs::remove_dir_all(&scratch)
    };
    finish().map_err(|e| {
        failed(format!(
            "cannot keep the artifact {}: {e}",
            artifact.display()
        ))
    })?;
    Ok(artifact)
}
