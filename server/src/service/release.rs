//! Releasing one commit: measured first, then built, both in the desk's own sandbox (never a
//! worker host's: a released program is started by the desk). The commit is exported from
//! the local forge (`git archive`, which also writes the commit into the tree for the binary
//! to embed); the project's own suite must pass on exactly that tree (the release gate: a red
//! head is held back with the failing tests named); then the release binary is built under
//! the same limits as every measurement and copied out as the artifact, hashed (SHA-256) into
//! a folder only the desk may enter. Starting and switching instances is the deployer's part
//! ([`crate::workers::deployer`]); it starts only an artifact whose hash still matches.

use super::snapshot::Snapshot;
use crate::config::DeployConfig;
use crate::web::{AppState, ReleaseStep, Releases};
use domain::workflow::CommitSha;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long one release build may take.
pub const BUILD_DEADLINE: Duration = Duration::from_secs(300);
/// How much of a failed build's output the owners are shown.
const LOG_TAIL: usize = 2_000;

/// Where `commit`'s artifact lives.
pub fn artifact_path(deploy: &DeployConfig, commit: &CommitSha) -> PathBuf {
    deploy.dir.join(commit.as_str()).join(&deploy.service)
}

/// Where the SHA-256 of `commit`'s artifact, taken when it was built, is kept.
fn digest_path(deploy: &DeployConfig, commit: &CommitSha) -> PathBuf {
    deploy
        .dir
        .join(commit.as_str())
        .join(format!("{}.sha256", deploy.service))
}

/// Where the asset manifest of `commit`'s build is kept: each file of the launch's assets
/// folder in that commit (`static/app.css`), by the path it is served at, with its SHA-256.
fn manifest_path(deploy: &DeployConfig, commit: &CommitSha) -> PathBuf {
    deploy
        .dir
        .join(commit.as_str())
        .join(format!("{}.assets.json", deploy.service))
}

/// Most files an assets folder may hold.
const MOST_ASSETS: usize = 2_000;
/// Most bytes of one asset.
pub const MOST_ASSET_BYTES: u64 = 32 * 1024 * 1024;

/// The manifest of `folder` (relative to `tree`, the exported commit): every regular file
/// under it, by its path from the tree's root (`/`-separated), with its SHA-256. A folder the
/// commit lacks has none; a link is not an asset (it could name any file of the host); too
/// many files or one too large is refused with the reason.
pub fn asset_manifest_of(
    tree: &Path,
    folder: &str,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mut manifest = std::collections::BTreeMap::new();
    if folder.is_empty() {
        return Ok(manifest);
    }
    let root = tree.join(folder);
    if !std::fs::symlink_metadata(&root).is_ok_and(|m| m.is_dir()) {
        return Ok(manifest);
    }
    let mut folders = vec![(root, folder.to_owned(), 0usize)];
    while let Some((dir, prefix, depth)) = folders.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| format!("cannot read the assets folder {prefix}: {e}"))?;
        for entry in entries {
            let entry =
                entry.map_err(|e| format!("cannot read the assets folder {prefix}: {e}"))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{prefix}/{name}");
            let kind = entry
                .file_type()
                .map_err(|e| format!("cannot read {path}: {e}"))?;
            if kind.is_dir() && depth < 16 {
                folders.push((entry.path(), path, depth + 1));
            } else if kind.is_file() {
                let size = entry.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
                if size > MOST_ASSET_BYTES {
                    return Err(format!(
                        "the asset {path} is over {} MiB",
                        MOST_ASSET_BYTES / 1024 / 1024
                    ));
                }
                let sha =
                    sha256_file(&entry.path()).map_err(|e| format!("cannot hash {path}: {e}"))?;
                manifest.insert(path, sha);
                if manifest.len() > MOST_ASSETS {
                    return Err(format!(
                        "the assets folder {folder} holds over {MOST_ASSETS} files"
                    ));
                }
            }
        }
    }
    Ok(manifest)
}

/// The asset manifest kept for `commit`'s build (none kept: none, as for a build made before
/// manifests were).
pub fn asset_manifest(
    deploy: &DeployConfig,
    commit: &CommitSha,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    match std::fs::read(manifest_path(deploy, commit)) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "the asset manifest of {} does not read: {e}",
                commit.as_str()
            )
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Default::default()),
        Err(error) => Err(format!("cannot read the asset manifest: {error}")),
    }
}

/// Makes the release folder the desk's alone (0700): no other local account can enter it, so
/// none can swap an artifact between its build and its start.
pub fn private_root(deploy: &DeployConfig) -> std::io::Result<()> {
    std::fs::create_dir_all(&deploy.dir)?;
    std::fs::set_permissions(&deploy.dir, std::fs::Permissions::from_mode(0o700))
}

/// The SHA-256 of a file, in hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Where the reason a release was refused after its start is kept (its folder stays, for the
/// owners to look at; the release is never started again).
pub fn refusal_path(dir: &Path, service: &str, commit: &str) -> PathBuf {
    dir.join(commit).join(format!("{service}.refused"))
}

/// Marks `commit`'s release refused (the recorder found it serving something else than it
/// was built as), with the reason: it is neither offered nor started again.
pub fn refuse_release(deploy: &DeployConfig, commit: &CommitSha, why: &str) {
    let path = refusal_path(&deploy.dir, &deploy.service, commit.as_str());
    if let Err(error) = std::fs::write(&path, why) {
        tracing::warn!(%error, path = %path.display(), "cannot mark the refused release; it may be offered again");
    }
}

/// `commit`'s artifact checked against the hash taken when it was built: its SHA-256, or why
/// it must not be started (not there, not a regular file, no recorded hash, another hash, or
/// refused by the recorder once).
pub fn verified_artifact(deploy: &DeployConfig, commit: &CommitSha) -> Result<String, String> {
    if let Ok(why) =
        std::fs::read_to_string(refusal_path(&deploy.dir, &deploy.service, commit.as_str()))
    {
        return Err(format!(
            "the recorder refused it when it was live: {}",
            why.chars().take(500).collect::<String>()
        ));
    }
    let artifact = artifact_path(deploy, commit);
    let regular = std::fs::symlink_metadata(&artifact).is_ok_and(|m| m.file_type().is_file());
    if !regular {
        return Err(format!(
            "{} is not a regular file the desk built",
            artifact.display()
        ));
    }
    let recorded = std::fs::read_to_string(digest_path(deploy, commit)).map_err(|e| {
        format!(
            "no hash was recorded when {} was built ({e})",
            artifact.display()
        )
    })?;
    let recorded = recorded.split_whitespace().next().unwrap_or_default();
    let found =
        sha256_file(&artifact).map_err(|e| format!("cannot hash {}: {e}", artifact.display()))?;
    if found != recorded {
        return Err(format!(
            "the artifact {} is not the one the desk built: its SHA-256 is {found}, {recorded} was recorded when it was built; it is not started",
            artifact.display()
        ));
    }
    Ok(found)
}

/// How long a release build waits for a sandbox slot the crew's measurements hold.
pub const SLOT_WAIT: Duration = Duration::from_secs(600);

/// An artifact the desk built and hashed.
#[derive(Debug)]
pub struct Built {
    /// Where it is.
    pub artifact: PathBuf,
    /// Its SHA-256 (hex), taken when it was built.
    pub sha256: String,
}

/// Why a release was not built.
#[derive(Debug)]
pub enum BuildError {
    /// The sandbox could not take it now (busy past [`SLOT_WAIT`], unreachable): the same
    /// commit is tried again later.
    Later(String),
    /// The build itself failed (its words and last lines): the previous release stays.
    Failed(String),
    /// The project's own suite failed on the commit (the release gate): the previous
    /// release stays, and the reason names the failing tests in the runner's words.
    Held(String),
}

/// Measures and builds `commit` of `project` (already built and intact: the one on disk),
/// saying each step on `board`. A failure is said in words with the run's last lines.
pub async fn build(
    state: &AppState,
    project: &str,
    deploy: &DeployConfig,
    commit: &CommitSha,
    board: &Releases,
) -> Result<Built, BuildError> {
    private_root(deploy)
        .map_err(|e| BuildError::Failed(format!("cannot prepare {}: {e}", deploy.dir.display())))?;
    if let Ok(sha256) = verified_artifact(deploy, commit) {
        return Ok(Built {
            artifact: artifact_path(deploy, commit),
            sha256,
        });
    }
    // Anything else in its place (a build cut short, a file that no longer matches its hash)
    // goes: the release is measured and built again from nothing.
    let folder = deploy.dir.join(commit.as_str());
    if std::fs::symlink_metadata(&folder).is_ok() {
        std::fs::remove_dir_all(&folder)
            .map_err(|e| BuildError::Failed(format!("cannot clear {}: {e}", folder.display())))?;
    }
    let failed = |reason: String| BuildError::Failed(reason);
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
        .prepare(&state.deps, &state.run_limits, target.profile)
        .await
        .map_err(|r| failed(r.error.message))?;
    snapshot
        .share_read_only()
        .map_err(|r| failed(r.error.message))?;
    let toolchains = sandbox::Toolchains::detect();
    // A release waits its turn behind the crew's measurements (never refused after 2 s as a
    // measurement is): a merge that lands while the crew measures is still released.
    let _slot = state.sandbox.slot(SLOT_WAIT).await.map_err(|busy| {
        BuildError::Later(format!(
            "the sandbox stayed busy with {} measurement(s) for {} s",
            busy.concurrency,
            SLOT_WAIT.as_secs()
        ))
    })?;
    let sandbox = state.sandbox.local().await.map_err(|reason| {
        BuildError::Later(format!("the desk's own sandbox is not reachable: {reason}"))
    })?;

    // The gate: the project's own suite on exactly this tree, every merged test with it.
    let sha = commit.as_str();
    board.report(
        sha,
        ReleaseStep::Testing,
        "the project's own suite runs in the sandbox",
    );
    let mut suite = target
        .profile
        .job(
            snapshot.root(),
            None,
            &toolchains,
            super::reproduction::RERUN_DEADLINE,
        )
        .map_err(|e| failed(e.to_string()))?;
    snapshot.attach(&mut suite);
    let outcome = sandbox
        .run(&suite)
        .await
        .map_err(|e| BuildError::Later(format!("the sandbox did not run the suite: {e}")))?;
    if outcome.exit_code != Some(0) || outcome.timed_out || outcome.oom_killed {
        let failing = target.profile.failing_tests(&outcome);
        let why = if failing.is_empty() {
            format!(
                "its suite did not pass (exit {}{}{}): {}",
                outcome
                    .exit_code
                    .map_or("none".to_owned(), |c| c.to_string()),
                if outcome.timed_out { ", timed out" } else { "" },
                if outcome.oom_killed {
                    ", out of memory"
                } else {
                    ""
                },
                tail(&format!("{}{}", outcome.stdout, outcome.stderr))
            )
        } else {
            format!("failed {}", failing.join(", "))
        };
        return Err(BuildError::Held(format!(
            "release held: {} {why}",
            &sha[..12]
        )));
    }

    board.report(sha, ReleaseStep::Building, "building in the sandbox");
    let built = build_artifact(sandbox.as_ref(), &snapshot, deploy, commit, &toolchains).await?;
    Ok(built)
}

/// The last [`LOG_TAIL`] characters of a run's output.
fn tail(log: &str) -> String {
    let start = log
        .char_indices()
        .rev()
        .nth(LOG_TAIL)
        .map_or(0, |(at, _)| at);
    log[start..].trim().to_owned()
}

async fn build_artifact(
    sandbox: &dyn sandbox::Sandbox,
    snapshot: &Snapshot,
    deploy: &DeployConfig,
    commit: &CommitSha,
    toolchains: &sandbox::Toolchains,
) -> Result<Built, BuildError> {
    let failed = |reason: String| BuildError::Failed(reason);
    let artifact = artifact_path(deploy, commit);
    let folder = artifact
        .parent()
        .ok_or_else(|| failed("the release folder has no parent".to_owned()))?
        .to_path_buf();
    // The commit's folder sits in the desk's private release folder; inside it, the one
    // folder the sandbox's user may write while it builds.
    let scratch = folder.join("out");
    let prepare = || -> std::io::Result<()> {
        std::fs::create_dir_all(&scratch)?;
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700))?;
        std::fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o777))
    };
    prepare().map_err(|e| failed(format!("cannot prepare {}: {e}", folder.display())))?;
    // Only Rust projects deploy (the configuration and the project's definition say so).
    let mut job = sandbox::Profile::Rust
        .release_job(
            snapshot.root(),
            &deploy.service,
            &scratch,
            toolchains,
            BUILD_DEADLINE,
        )
        .map_err(|e| failed(e.to_string()))?;
    snapshot.attach(&mut job);
    let outcome = sandbox
        .run(&job)
        .await
        .map_err(|e| BuildError::Later(format!("the sandbox did not run the build: {e}")))?;
    let built = scratch.join(&deploy.service);
    // The artifact itself, never what a link points at (the build could leave a link to any
    // file the desk may read).
    let regular = std::fs::symlink_metadata(&built).is_ok_and(|m| m.file_type().is_file());
    if outcome.exit_code != Some(0) || outcome.timed_out || !regular {
        return Err(failed(format!(
            "the build of {} failed (exit {}{}): {}",
            commit.as_str(),
            outcome
                .exit_code
                .map_or("none".to_owned(), |c| c.to_string()),
            if outcome.timed_out { ", timed out" } else { "" },
            tail(&format!("{}{}", outcome.stdout, outcome.stderr))
        )));
    }
    // The assets the commit serves as they are, hashed from its own tree (never from what
    // the build wrote): the recorder checks the live address serves exactly these.
    let manifest = asset_manifest_of(snapshot.root(), &deploy.launch.assets).map_err(failed)?;
    let manifest = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| failed(format!("cannot write the asset manifest: {e}")))?;
    // The artifact becomes the desk's own file, hashed as it lands: nothing the sandbox can
    // still write. Copied under another name and renamed whole, the hash first: a desk killed
    // mid-copy leaves no artifact that a later start would take for the built one.
    let finish = || -> std::io::Result<String> {
        let partial = folder.join(format!(".{}.partial", deploy.service));
        std::fs::copy(&built, &partial)?;
        std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o755))?;
        let sha256 = sha256_file(&partial)?;
        let digest = digest_path(deploy, commit);
        let pending = folder.join(format!(".{}.sha256.partial", deploy.service));
        std::fs::write(&pending, format!("{sha256}  {}\n", deploy.service))?;
        std::fs::set_permissions(&pending, std::fs::Permissions::from_mode(0o644))?;
        std::fs::rename(&pending, &digest)?;
        let listed = folder.join(format!(".{}.assets.json.partial", deploy.service));
        std::fs::write(&listed, &manifest)?;
        std::fs::set_permissions(&listed, std::fs::Permissions::from_mode(0o644))?;
        std::fs::rename(&listed, manifest_path(deploy, commit))?;
        std::fs::rename(&partial, &artifact)?;
        std::fs::remove_dir_all(&scratch)?;
        // Readable (never writable) by the sandbox's user, who runs it from a read-only
        // mount; the release folder above stays the desk's alone.
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755))?;
        Ok(sha256)
    };
    let sha256 = finish().map_err(|e| {
        failed(format!(
            "cannot keep the artifact {}: {e}",
            artifact.display()
        ))
    })?;
    Ok(Built { artifact, sha256 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_asset_manifest_lists_the_commits_files_by_path_never_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path();
        std::fs::create_dir_all(tree.join("static/img")).unwrap();
        std::fs::write(tree.join("static/app.css"), b"body{}").unwrap();
        std::fs::write(tree.join("static/img/logo.svg"), b"<svg/>").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", tree.join("static/passwd")).unwrap();
        let manifest = asset_manifest_of(tree, "static").unwrap();
        assert_eq!(
            manifest.keys().collect::<Vec<_>>(),
            ["static/app.css", "static/img/logo.svg"]
        );
        assert_eq!(
            manifest["static/app.css"],
            hex::encode(Sha256::digest(b"body{}"))
        );
        assert!(asset_manifest_of(tree, "public").unwrap().is_empty());
        assert!(asset_manifest_of(tree, "").unwrap().is_empty());
        // A folder that is a link is not followed either.
        std::os::unix::fs::symlink("/etc", tree.join("linked")).unwrap();
        assert!(asset_manifest_of(tree, "linked").unwrap().is_empty());
    }

    #[test]
    fn only_the_artifact_the_desk_built_and_hashed_is_started() {
        let dir = tempfile::tempdir().unwrap();
        let deploy = DeployConfig {
            dir: dir.path().join("releases"),
            service: "shop".into(),
            launch: domain::launch::Launch::default(),
        };
        let commit = CommitSha::parse("0123456789abcdef0123456789abcdef01234567").unwrap();
        private_root(&deploy).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&deploy.dir), 0o700, "no other local account enters it");
        let refused = verified_artifact(&deploy, &commit).unwrap_err();
        assert!(refused.contains("not a regular file"), "{refused}");

        let artifact = artifact_path(&deploy, &commit);
        std::fs::create_dir_all(artifact.parent().unwrap()).unwrap();
        std::fs::write(&artifact, b"the built program").unwrap();
        let refused = verified_artifact(&deploy, &commit).unwrap_err();
        assert!(refused.contains("no hash was recorded"), "{refused}");

        let digest = sha256_file(&artifact).unwrap();
        assert_eq!(
            digest,
            hex::encode(Sha256::digest(b"the built program")),
            "the file's own SHA-256"
        );
        std::fs::write(digest_path(&deploy, &commit), format!("{digest}  shop\n")).unwrap();
        assert_eq!(verified_artifact(&deploy, &commit).unwrap(), digest);

        // Swapped after the build: refused, with both hashes named.
        std::fs::write(&artifact, b"#!/bin/sh\necho swapped\n").unwrap();
        let refused = verified_artifact(&deploy, &commit).unwrap_err();
        assert!(
            refused.contains("is not the one the desk built"),
            "{refused}"
        );
        assert!(refused.contains(&digest), "{refused}");

        // A link to the built program is not the program.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, b"the built program").unwrap();
        std::fs::remove_file(&artifact).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &artifact).unwrap();
        let refused = verified_artifact(&deploy, &commit).unwrap_err();
        assert!(refused.contains("not a regular file"), "{refused}");
    }
}
