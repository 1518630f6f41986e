//! The one way the desk prepares a measurement, for a proposed reproduction and for a fix
//! candidate alike: a fresh scratch folder holding the target's tree at one commit (from the
//! local forge), files written into it only as regular files that pass through no symlink,
//! then the tree shared read-only with the sandbox. The scratch folder goes when the
//! `Snapshot` is dropped.

use crate::error::Kind;
use crate::web::Refused;
use domain::workflow::CommitSha;
use forge::LocalForge;
use std::path::{Path, PathBuf};

/// Whether `path` (relative, `/`-separated, no `..`) is, or passes through, a symlink under
/// `root`: every component is checked, not only the last.
pub(crate) fn through_symlink(root: &Path, path: &str) -> bool {
    let mut at = root.to_path_buf();
    path.split('/').any(|part| {
        at.push(part);
        std::fs::symlink_metadata(&at)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false)
    })
}

/// The target's tree at one commit, in a scratch folder of its own.
#[derive(Debug)]
pub(crate) struct Snapshot {
    _scratch: tempfile::TempDir,
    root: PathBuf,
    /// The project's registry dependencies, once prepared ([`Snapshot::prepare`]).
    deps: std::sync::OnceLock<sandbox::Prepared>,
    /// The limits of the project's runs, once prepared.
    limits: std::sync::OnceLock<sandbox::Limits>,
    /// The version of the nearest git tag behind the exported commit, if any.
    tag_version: std::sync::OnceLock<Option<String>>,
}

impl Snapshot {
    /// A scratch folder and the path the tree will live at, before anything is exported (a
    /// job can be built, and its paths checked, first).
    pub(crate) fn new() -> Result<Self, Refused> {
        let scratch = tempfile::tempdir().map_err(Refused::workspace)?;
        let root = scratch.path().join("snapshot");
        std::fs::create_dir(&root).map_err(Refused::workspace)?;
        Ok(Snapshot {
            _scratch: scratch,
            root,
            deps: std::sync::OnceLock::new(),
            limits: std::sync::OnceLock::new(),
            tag_version: std::sync::OnceLock::new(),
        })
    }

    /// Where the tree is.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Exports `commit`'s tree into the snapshot.
    pub(crate) async fn export(
        &self,
        forge: &LocalForge,
        commit: &CommitSha,
    ) -> Result<(), Refused> {
        forge
            .export(commit, &self.root)
            .await
            .map_err(Refused::forge)?;
        let _ = self
            .tag_version
            .set(forge.nearest_tag_version(commit).await);
        Ok(())
    }

    /// Whether `path` (relative, `/`-separated, already checked to have no `..`) is, or passes
    /// through, a symlink inside the snapshot. Git archives keep symlinks as symlinks, so a
    /// target could hold `tests -> /somewhere` and turn a write into the snapshot into a write
    /// onto the host: every component is checked, not only the last.
    pub(crate) fn through_symlink(&self, path: &str) -> bool {
        through_symlink(&self.root, path)
    }

    /// Writes one regular file (and its folders). Callers check [`Snapshot::through_symlink`]
    /// first, before any folder is created.
    pub(crate) fn write(&self, path: &str, content: &str) -> Result<(), Refused> {
        let file = self.root.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(Refused::workspace)?;
        }
        std::fs::write(&file, content).map_err(Refused::workspace)
    }

    /// Prepares the exported tree's runs: its registry dependencies for a run with no
    /// network (Rust: vendored from crates.io into the desk's cache, a lockfile the desk had to
    /// generate put into the tree; Python: its declared test dependencies installed as wheels;
    /// other profiles run as they are) and the limits its runs
    /// get. Runs nothing of the project's. Call after [`Snapshot::export`] and before
    /// [`Snapshot::share_read_only`].
    pub(crate) async fn prepare(
        &self,
        cache: &sandbox::DepsCache,
        limits: &sandbox::Limits,
        profile: sandbox::Profile,
    ) -> Result<(), Refused> {
        let _ = self.limits.set(limits.clone());
        let prepared = match profile {
            sandbox::Profile::Rust => cache.prepare_rust(&self.root).await,
            sandbox::Profile::Python => {
                let tag_version = self.tag_version.get().cloned().flatten();
                cache
                    .prepare_python(&self.root, tag_version.as_deref())
                    .await
            }
            sandbox::Profile::NodeTest | sandbox::Profile::Vitest => {
                cache.prepare_node(&self.root).await
            }
            _ => return Ok(()),
        };
        let prepared = prepared.map_err(|error| match error {
            sandbox::PrepareError::Refused(why) => Refused::new(
                Kind::Invalid,
                "dependencies_refused",
                format!("the project's dependencies cannot be prepared: {why}"),
            ),
            sandbox::PrepareError::Failed(why) => Refused::new(
                Kind::Unavailable,
                "dependencies_unavailable",
                format!("the project's dependencies could not be fetched: {why}"),
            ),
            sandbox::PrepareError::Cache(why) => Refused::workspace(why),
        })?;
        prepared
            .install_lockfile(&self.root)
            .map_err(Refused::workspace)?;
        let _ = self.deps.set(prepared);
        Ok(())
    }

    /// The prepared dependencies, if any.
    pub(crate) fn prepared(&self) -> Option<&sandbox::Prepared> {
        self.deps.get()
    }

    /// Gives `job` the project's run limits and its prepared dependencies, if any
    /// (read-only).
    pub(crate) fn attach(&self, job: &mut sandbox::SandboxJob) {
        if let Some(limits) = self.limits.get() {
            // A release build keeps its own (longer) deadline; only the resources change.
            job.limits = sandbox::Limits {
                output_bytes: job.limits.output_bytes,
                ..limits.clone()
            };
        }
        if let Some(prepared) = self.deps.get() {
            prepared.attach(job);
        }
    }

    /// Opens the tree for the sandbox's unprivileged user (read-only).
    pub(crate) fn share_read_only(&self) -> Result<(), Refused> {
        sandbox::share_read_only(&self.root).map_err(Refused::workspace)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_symlinked_folder_anywhere_on_the_path_is_seen_and_files_land_inside() {
        let snapshot = Snapshot::new().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), snapshot.root().join("tests")).unwrap();
        std::fs::create_dir(snapshot.root().join("src")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", snapshot.root().join("src/link.rs")).unwrap();
        assert!(snapshot.through_symlink("tests/new.rs"));
        assert!(snapshot.through_symlink("tests/deep/new.rs"));
        assert!(snapshot.through_symlink("src/link.rs"));
        assert!(!snapshot.through_symlink("src/new/lib.rs"));
        assert!(snapshot.through_symlink("tests"));
        assert!(!snapshot.through_symlink("src/lib.rs"));
        snapshot.write("src/deep/lib.rs", "pub fn f() {}").unwrap();
        assert_eq!(
            std::fs::read_to_string(snapshot.root().join("src/deep/lib.rs")).unwrap(),
            "pub fn f() {}"
        );
        let root = snapshot.root().to_path_buf();
        drop(snapshot);
        assert!(!root.exists(), "the scratch folder goes with the snapshot");
    }

    #[test]
    fn scratch_and_forge_failures_are_told_apart_from_the_database() {
        let codes: Vec<String> = [
            Refused::workspace("disk full"),
            Refused::forge("git archive failed"),
            Refused::storage("database gone"),
        ]
        .into_iter()
        .map(|r| {
            assert_eq!(r.kind(), crate::error::Kind::Unavailable);
            r.error.error
        })
        .collect();
        assert_eq!(
            codes,
            [
                "workspace_unavailable",
                "forge_unavailable",
                "storage_unavailable"
            ]
        );
    }
}
