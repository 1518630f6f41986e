//! The one way the desk prepares a measurement, for a proposed reproduction and for a fix
//! candidate alike: a fresh scratch folder holding the target's tree at one commit (from the
//! local forge), files written into it only as regular files that pass through no symlink,
//! then the tree shared read-only with the sandbox. The scratch folder goes when the
//! `Snapshot` is dropped.

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
            .map_err(Refused::forge)
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
