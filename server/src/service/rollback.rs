//! An owner serves an earlier release again: the one way a rollback is asked for, from the
//! API (`POST /api/v1/releases/{service}/rollback`) and from the crew page's release list
//! alike. The deployer of the service does the work ([`crate::workers::deployer`]): it checks
//! the earlier artifact's hash, starts it, moves the bugs whose fix it lacks back to `merged`
//! with the owner's reason, and has the recorder record it.

use super::forge::parse_sha;
use crate::error::Kind;
use crate::web::{AppState, Refused};
use domain::workflow::{Actor, CommitSha};
use std::path::Path;

/// How long an owner's rollback may take to go live (start the earlier release, check its
/// health) before the answer says it is still under way.
pub const ROLLBACK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The longest reason kept.
const MOST_REASON_CHARS: usize = 2_000;

/// What became of a rollback (of the commit, as the desk names it).
#[derive(Debug, PartialEq, Eq)]
pub enum RolledBack {
    /// The earlier release is live; these bugs went back to `merged`.
    Live(CommitSha, Vec<String>),
    /// Still under way after [`ROLLBACK_WAIT`] (the deployer finishes the release it is on
    /// first); the crew page says when it is live.
    UnderWay(CommitSha),
}

/// Asks `service`'s deployer to serve `commit` (an earlier release this desk built) again,
/// for `owner`, because of `reason`, and waits up to [`ROLLBACK_WAIT`] for it to be live.
/// Refused: an empty reason (422 `reason_required`), a commit that is not one (422), no
/// deployer for the service (404 `unknown_service`), another server leading it (409
/// `deployer_elsewhere`), another rollback waiting (409 `rollback_in_progress`), a release
/// that cannot be served (409 `rollback_refused`, with the deployer's reason).
pub async fn roll_back(
    state: &AppState,
    service: &str,
    commit: &str,
    reason: &str,
    owner: Actor,
) -> Result<RolledBack, Refused> {
    let commit = parse_sha(commit)?;
    // What a ledger line may hold: no control characters, nothing that renders as nothing
    // (a reason of zero-width spaces is none; a bidirectional override could make the line
    // read backwards).
    let reason = super::plain_text(reason);
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(Refused::new(
            Kind::Invalid,
            "reason_required",
            "Say why the release is rolled back (reason): it goes in the ledger of every bug whose fix stops being live.",
        ));
    }
    if reason.chars().count() > MOST_REASON_CHARS {
        return Err(Refused::new(
            Kind::Invalid,
            "reason_too_long",
            format!("Say why in at most {MOST_REASON_CHARS} characters: the reason goes in the ledger of every bug whose fix stops being live."),
        ));
    }
    let reason = reason.to_owned();
    let board = state.releases_serving(service).ok_or_else(|| {
        Refused::new(
            Kind::NotFound,
            "unknown_service",
            format!("No deployer on this desk serves {service:?}."),
        )
    })?;
    if let Some(leader) = board.leader_elsewhere() {
        return Err(Refused::new(
            Kind::Conflict,
            "deployer_elsewhere",
            format!("The desk server at {leader} leads {service:?}'s deployer and holds its releases: ask it to roll back."),
        ));
    }
    let (reply, answer) = tokio::sync::oneshot::channel();
    board
        .request_rollback(crate::web::Rollback {
            commit: commit.clone(),
            reason,
            owner,
            reply,
        })
        .map_err(|_| {
            Refused::new(
                Kind::Conflict,
                "rollback_in_progress",
                "Another rollback of this service is under way; try again when it is live.",
            )
        })?;
    match tokio::time::timeout(ROLLBACK_WAIT, answer).await {
        Ok(Ok(Ok(bugs))) => Ok(RolledBack::Live(commit, bugs)),
        Ok(Ok(Err(why))) => Err(Refused::new(
            Kind::Conflict,
            "rollback_refused",
            format!(
                "The release {} was not served again: {why}",
                commit.as_str()
            ),
        )),
        Ok(Err(_)) => Err(Refused::new(
            Kind::Unavailable,
            "deployer_stopped",
            "The service's deployer stopped before it took the rollback; nothing changed.",
        )),
        Err(_) => Ok(RolledBack::UnderWay(commit)),
    }
}

/// Most releases listed for one service.
const MOST_LISTED: usize = 20;

/// The releases of `service` built in `dir` (its deployer's folder), newest first: each
/// commit and when it was built (the time its hash was written, in ms), at most
/// [`MOST_LISTED`]. Only folders named by a full commit that hold the artifact and its hash,
/// and that the recorder never refused, are listed; whether the artifact is still intact is
/// checked when it is started.
pub fn built_releases(dir: &Path, service: &str) -> Vec<(String, i64)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut built: Vec<(String, i64)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            parse_sha(&name).ok()?;
            let folder = entry.path();
            let artifact = std::fs::symlink_metadata(folder.join(service)).ok()?;
            let refused = super::release::refusal_path(dir, service, &name).exists();
            if !artifact.file_type().is_file() || refused {
                return None;
            }
            let hashed = std::fs::metadata(folder.join(format!("{service}.sha256")))
                .ok()?
                .modified()
                .ok()?;
            let at = hashed
                .duration_since(std::time::UNIX_EPOCH)
                .ok()
                .and_then(|d| i64::try_from(d.as_millis()).ok())
                .unwrap_or_default();
            Some((name, at))
        })
        .collect();
    built.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    built.truncate(MOST_LISTED);
    built
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_folders_of_a_commit_with_an_artifact_and_its_hash_are_releases() {
        let dir = tempfile::tempdir().unwrap();
        let (old, new, broken, refused) = (
            "a".repeat(40),
            "b".repeat(40),
            "c".repeat(40),
            "e".repeat(40),
        );
        for (commit, files) in [
            (old.as_str(), &["shop", "shop.sha256"][..]),
            (
                new.as_str(),
                &["shop", "shop.sha256", "shop.assets.json"][..],
            ),
            (broken.as_str(), &["shop"][..]),
            (
                refused.as_str(),
                &["shop", "shop.sha256", "shop.refused"][..],
            ),
            ("not-a-commit", &["shop", "shop.sha256"][..]),
        ] {
            let folder = dir.path().join(commit);
            std::fs::create_dir_all(&folder).unwrap();
            for file in files {
                std::fs::write(folder.join(file), "x").unwrap();
            }
            // Each folder a little later than the one before.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // A link in place of the artifact is not a release the desk built.
        let linked = dir.path().join("d".repeat(40));
        std::fs::create_dir_all(&linked).unwrap();
        std::os::unix::fs::symlink("/bin/sh", linked.join("shop")).unwrap();
        std::fs::write(linked.join("shop.sha256"), "x").unwrap();
        std::fs::write(dir.path().join("live"), &new).unwrap();

        let listed: Vec<String> = built_releases(dir.path(), "shop")
            .into_iter()
            .map(|(commit, _)| commit)
            .collect();
        assert_eq!(listed, [new, old]);
        assert!(built_releases(&dir.path().join("missing"), "shop").is_empty());
        assert!(built_releases(dir.path(), "other").is_empty());
    }
}
