//! The desk's side of the local forge: owners read the diff of a draft pull request (opened
//! only by the desk, for a fix it measured and committed itself: [`crate::service::fix`]),
//! approve its exact head (with CODEOWNERS read on the base branch, so a change cannot name
//! its own code owners) and merge it — a real git merge, published only after the engine
//! accepted it — and the recorder records a verified deployment, with ancestry from git.

use super::commands::{dry_run, load, record, Fetched, KnownAncestry, Recorded};
use crate::error::Kind;
use crate::web::{AppState, Refused};
use domain::codeowners::CodeOwners;
use domain::workflow::{Actor, Command, CommitSha, DeploymentStatus};
use domain::BugState;
use forge::{Forge, ForgeError, GitError, LocalForge};
use serde::Deserialize;

/// A project's local forge, or 409 `no_local_forge` (reproductions, fixes, approvals with
/// CODEOWNERS, merges and deployments all read the target from it).
pub fn forge_of(target: &crate::projects::Target) -> Result<&LocalForge, Refused> {
    target.forge.as_deref().ok_or_else(|| {
        Refused::new(
            Kind::Conflict,
            "no_local_forge",
            format!(
                "the project {:?} has no local forge (set R2R_LOCAL_FORGE to a bare git repository, or define the project with one)",
                target.project
            ),
        )
    })
}

/// The GitHub repository and its HTTPS remote when `target`'s fixes go to GitHub (the
/// environment's project: `R2R_GITHUB_FIX_REPOSITORY`; a stored project: its `github`).
pub fn github_remote(
    state: &AppState,
    target: &crate::projects::Target,
) -> Option<(String, forge::RemoteAuth)> {
    state.github.remote_for(target.github.as_deref()?)
}

/// The head of `target`'s default branch now: for a project whose fixes go to GitHub, the
/// local clone's branch is first moved to GitHub's (fetched with the token, which never
/// leaves the desk's git process).
pub async fn current_head(
    state: &AppState,
    target: &crate::projects::Target,
) -> Result<CommitSha, Refused> {
    let forge = forge_of(target)?;
    if let Some((repository, remote)) = github_remote(state, target) {
        forge.sync_default_branch(&remote).await.map_err(|e| {
            Refused::new(
                Kind::Upstream,
                "github_unreachable",
                format!(
                    "cannot fetch {repository}'s {} from GitHub: {e}",
                    forge.default_branch()
                ),
            )
        })?;
    }
    default_head(forge).await
}

/// The head of the target's default branch, or 409 `empty_target` when it has none yet.
pub async fn default_head(forge: &LocalForge) -> Result<CommitSha, Refused> {
    forge
        .branch_head(forge.default_branch())
        .await
        .map_err(Refused::forge)?
        .ok_or_else(|| {
            Refused::new(
                Kind::Conflict,
                "empty_target",
                format!(
                    "the target repository has no {} branch yet",
                    forge.default_branch()
                ),
            )
        })
}

fn git_refused(error: GitError) -> Refused {
    match error {
        GitError::Conflict { .. } => {
            Refused::new(Kind::Conflict, "merge_conflict", error.to_string())
        }
        other => Refused::forge(other),
    }
}

/// A commit id from a request, or 422 `invalid_head`.
pub fn parse_sha(text: &str) -> Result<CommitSha, Refused> {
    CommitSha::parse(text).map_err(|e| Refused::new(Kind::Invalid, "invalid_head", e.to_string()))
}

fn forge_refused(error: ForgeError) -> Refused {
    match error {
        ForgeError::Git(git) => git_refused(git),
        ForgeError::Invalid(reason) => Refused::new(Kind::Invalid, "forge_refused", reason),
        other => Refused::forge(other),
    }
}

/// A body naming one exact head (`{"head": "<sha>"}`).
#[derive(Debug, Deserialize)]
pub struct HeadBody {
    /// The commit.
    pub head: String,
}

/// An owner's approval of one exact head, with CODEOWNERS read on the base branch (the
/// default branch the merge goes into) — never the change's own copy, which its author
/// could have edited to name themselves or an accomplice.
pub async fn approve(
    state: &AppState,
    id: &str,
    head: CommitSha,
    actor: &Actor,
) -> Result<Recorded, Refused> {
    // A desk without a local forge (GitHub) has no base branch to read here: its code owners
    // are GitHub's own business, and the engine's rules apply without them.
    let target = state.target_of(&load(state, id).await?.component).await;
    let code_owners = match target.forge.as_deref() {
        Some(forge) => forge
            .codeowners_at_base()
            .await
            .map_err(forge_refused)?
            .map(|text| CodeOwners::parse(&text)),
        None => None,
    };
    let fetched = Fetched {
        rerun: None,
        ancestry: KnownAncestry::default(),
        code_owners,
    };
    record(state, id, Command::Approve { head }, actor, &fetched).await
}

/// An owner's merge: the engine's merge guard is checked on the prepared merge commit first;
/// only then is the default branch moved (compare-and-swap) and the merge recorded.
pub async fn merge(
    state: &AppState,
    id: &str,
    head: CommitSha,
    actor: &Actor,
) -> Result<Merged, Refused> {
    let bug = load(state, id).await?;
    let target = state.target_of(&bug.component).await;
    if let Some((repository, _)) = github_remote(state, &target) {
        return Err(Refused::new(
            Kind::Conflict,
            "merged_on_github",
            format!("this project's pull requests live on GitHub ({repository}): merge there; the signed webhook records it"),
        ));
    }
    let forge = forge_of(&target)?;
    // Asked of the engine first, before any git work: a merge it refuses (wrong state, another
    // head, approvals missing) writes no merge commit into the forge.
    let probe = Command::Merge {
        head: head.clone(),
        merge_commit: head.clone(),
    };
    dry_run(state, &bug, &probe, actor, &Fetched::default())?;
    let number = bug.pull_request.as_ref().map_or(0, |pr| pr.number);
    let (merge_commit, base) = forge
        .prepare_merge(&head, &format!("Merge pull request #{number} ({id})"))
        .await
        .map_err(git_refused)?;
    let mut fetched = Fetched::default();
    for deployment in bug
        .deployments
        .iter()
        .filter(|d| d.status == DeploymentStatus::Pending)
    {
        let relation = forge
            .relation(&merge_commit, &deployment.commit)
            .await
            .map_err(git_refused)?;
        fetched
            .ancestry
            .0
            .insert((merge_commit.clone(), deployment.commit.clone()), relation);
    }
    let command = Command::Merge {
        head,
        merge_commit: merge_commit.clone(),
    };
    // Dry run: nothing is published unless the engine accepts the merge now.
    dry_run(state, &bug, &command, actor, &fetched)?;
    forge
        .publish_merge(&merge_commit, &base)
        .await
        .map_err(|e| {
            Refused::new(
                Kind::Conflict,
                "branch_moved",
                format!("the default branch moved while merging; try again ({e})"),
            )
        })?;
    tracing::info!(bug = %id, merge = %merge_commit, "merged on the local forge");
    let recorded = record(state, id, command, actor, &fetched).await?;
    Ok(Merged {
        recorded,
        merge_commit,
    })
}

/// A recorded merge and the merge commit the default branch now points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merged {
    /// What the ledger says.
    pub recorded: Recorded,
    /// The merge commit.
    pub merge_commit: CommitSha,
}

pub use api_types::FixDiff;

/// The diff of bug `id`'s pull request.
pub async fn diff(state: &AppState, id: &str) -> Result<FixDiff, Refused> {
    let bug = load(state, id).await?;
    let target = state.target_of(&bug.component).await;
    let forge = forge_of(&target)?;
    let pr = bug.pull_request.ok_or_else(|| {
        Refused::new(Kind::Conflict, "no_pull_request", "this bug has no fix yet")
    })?;
    let merged = bug.merge.as_ref().map(|m| &m.merge_commit);
    let diff = forge
        .change_diff(&pr.head, merged)
        .await
        .map_err(git_refused)?;
    let merge_diff = match merged {
        Some(merge) => Some(forge.merge_diff(merge).await.map_err(git_refused)?),
        None => None,
    };
    Ok(FixDiff {
        head: pr.head.as_str().to_owned(),
        tier: pr.tier.number(),
        tier_reasons: pr.tier_reasons,
        changed_paths: pr.changed_paths,
        diff,
        merge_diff,
    })
}

/// Records that `commit` is live as `deployment` on every bug in review, approved or merged
/// (with ancestry from git); which bugs accepted it.
pub async fn record_deployment(
    state: &AppState,
    deployment: &str,
    commit: &CommitSha,
    actor: &Actor,
    project: &str,
) -> Result<Vec<(String, bool)>, Refused> {
    // A deployment is one project's: only its bugs may move, with ancestry from its forge.
    let target = state
        .projects
        .fresh(&state.store)
        .await
        .project(project.trim())
        .ok_or_else(|| {
            Refused::new(
                Kind::NotFound,
                "unknown_project",
                format!("this desk serves no project {:?}", project.trim()),
            )
        })?;
    let forge = forge_of(&target)?;
    let id = deployment.trim().to_owned();
    if id.is_empty() || id.len() > 200 || id.chars().any(domain::airlock::unicode::is_unprintable) {
        return Err(Refused::new(
            Kind::Invalid,
            "invalid_deployment",
            "deployment: 1 to 200 printable characters (no control, line-separator or invisible formatting characters)",
        ));
    }
    // A merged bug whose merge the branch no longer holds (a force-push) is re-bound or
    // given to a person first, so the deployment is judged against the branch as it is.
    if let Ok(head) = default_head(forge).await {
        if let Err(refused) = reconcile_history(state, &target.project, &head).await {
            tracing::warn!(error = %refused.error.message, "cannot check the branch's history against its merged bugs");
        }
    }
    let mut states = Vec::new();
    for bug_id in state
        .store
        .bug_ids_in_states(&[BugState::InReview, BugState::Approved, BugState::Merged])
        .await?
    {
        let bug = load(state, &bug_id).await?;
        if state.target_of(&bug.component).await.project != target.project {
            continue;
        }
        let mut fetched = Fetched::default();
        if let Some(merge) = &bug.merge {
            let relation = forge
                .relation(&merge.merge_commit, commit)
                .await
                .map_err(git_refused)?;
            fetched
                .ancestry
                .0
                .insert((merge.merge_commit.clone(), commit.clone()), relation);
        }
        let command = Command::RecordDeployment {
            deployment: id.clone(),
            commit: commit.clone(),
        };
        let outcome = record(state, &bug_id, command, actor, &fetched).await;
        states.push((bug_id, outcome.is_ok()));
    }
    Ok(states)
}

/// Records in the ledger of every merged bug of `project` whose merge `commit` contains that
/// the desk held `commit` back (its suite failed: `reason`); the bugs it was recorded on. The
/// bugs stay `merged`: nobody is asked about a fix that is not live.
pub async fn hold_release(
    state: &AppState,
    project: &str,
    commit: &CommitSha,
    reason: &str,
) -> Result<Vec<String>, Refused> {
    let target = state
        .projects
        .fresh(&state.store)
        .await
        .project(project)
        .ok_or_else(|| {
            Refused::new(
                Kind::NotFound,
                "unknown_project",
                format!("this desk serves no project {project:?}"),
            )
        })?;
    let forge = forge_of(&target)?;
    let mut held = Vec::new();
    for (bug_id, merge) in merged_bugs(state, &target).await? {
        let relation = forge
            .relation(&merge.merge_commit, commit)
            .await
            .map_err(git_refused)?;
        if !relation.contains_base() {
            continue;
        }
        let command = Command::HoldRelease {
            commit: commit.clone(),
            reason: reason.to_owned(),
        };
        record(state, &bug_id, command, &Actor::Desk, &Fetched::default()).await?;
        held.push(bug_id);
    }
    Ok(held)
}

/// An owner served `commit`, an earlier release of `project`, again: every bug of the
/// project whose fix was live (`deployed`, `verified`) and whose merge `commit` does not
/// contain goes back to `merged` with the owner's reason (the engine's `OwnerRollBack`).
/// Returns those bugs.
pub async fn roll_back_bugs(
    state: &AppState,
    project: &str,
    commit: &CommitSha,
    reason: &str,
    owner: &Actor,
) -> Result<Vec<String>, Refused> {
    let target = state
        .reporter
        .fresh(&state.store)
        .await
        .project(project)
        .ok_or_else(|| {
            Refused::new(
                Kind::NotFound,
                "unknown_project",
                format!("this desk serves no project {project:?}"),
            )
        })?;
    let forge = forge_of(&target)?;
    let mut back = Vec::new();
    for bug_id in state
        .store
        .bug_ids_in_states(&[BugState::Deployed, BugState::Verified])
        .await?
    {
        let bug = load(state, &bug_id).await?;
        if state.target_of(&bug.component).await.project != target.project {
            continue;
        }
        let Some(merge) = bug.merge else { continue };
        let relation = forge
            .relation(&merge.merge_commit, commit)
            .await
            .map_err(git_refused)?;
        if relation.contains_base() {
            continue;
        }
        let command = Command::OwnerRollBack {
            commit: commit.clone(),
            reason: reason.to_owned(),
        };
        record(state, &bug_id, command, owner, &Fetched::default()).await?;
        back.push(bug_id);
    }
    Ok(back)
}

/// The bugs of `target` in `merged`, with their merges.
async fn merged_bugs(
    state: &AppState,
    target: &crate::projects::Target,
) -> Result<Vec<(String, domain::workflow::MergeRecord)>, Refused> {
    let mut merged = Vec::new();
    for bug_id in state.store.bug_ids_in_states(&[BugState::Merged]).await? {
        let bug = load(state, &bug_id).await?;
        if state.target_of(&bug.component).await.project != target.project {
            continue;
        }
        if let Some(merge) = bug.merge {
            merged.push((bug_id, merge));
        }
    }
    Ok(merged)
}

/// How long after its merge was recorded a bug's merge commit may still be missing from the
/// branch (the desk records a merge before it publishes it).
pub const REWRITE_GRACE_MS: i64 = 10_000;
/// How far back a rewritten branch is searched for a commit with the merged tree.
const REWRITE_SEARCH_DEPTH: usize = 1_000;

/// Checks every merged bug of `project` against the branch's `head`: a merge commit that is
/// no longer in its history (a force-push) is recorded as `history_rewritten` — re-bound to
/// the branch's commit with the identical tree when there is one, with a person otherwise.
/// Returns what it observed: (bug, the replacement commit if re-bound).
pub async fn reconcile_history(
    state: &AppState,
    project: &str,
    head: &CommitSha,
) -> Result<Vec<(String, Option<CommitSha>)>, Refused> {
    let Some(target) = state.projects.scope().project(project) else {
        return Ok(Vec::new());
    };
    let forge = forge_of(&target)?;
    let now = crate::clock::now_ms();
    let mut seen = Vec::new();
    for (bug_id, merge) in merged_bugs(state, &target).await? {
        if now - merge.at < REWRITE_GRACE_MS {
            continue;
        }
        let relation = forge
            .relation(&merge.merge_commit, head)
            .await
            .map_err(git_refused)?;
        if relation.contains_base() {
            continue;
        }
        let replacement = forge
            .same_tree_in_history(&merge.merge_commit, head, REWRITE_SEARCH_DEPTH)
            .await
            .map_err(git_refused)?;
        tracing::warn!(
            bug = %bug_id,
            merge = %merge.merge_commit,
            head = %head,
            replacement = ?replacement.as_ref().map(CommitSha::as_str),
            "the merged commit is no longer in the branch's history"
        );
        let command = Command::ObserveRewrittenHistory {
            merge: merge.merge_commit.clone(),
            replacement: replacement.clone(),
        };
        record(state, &bug_id, command, &Actor::Desk, &Fetched::default()).await?;
        seen.push((bug_id, replacement));
    }
    Ok(seen)
}
