//! The desk's side of the local forge: the fixer opens a draft pull request for a pushed
//! branch, owners read its diff, approve its exact head (with CODEOWNERS read on the base
//! branch, so a change cannot name its own code owners) and merge it — a real git merge,
//! published only after the engine accepted it — and the recorder records a verified
//! deployment, with ancestry from git.

use crate::api::actor_of;
use crate::auth::Credential;
use crate::github::{Fetched, KnownAncestry};
use crate::web::guard;
use crate::web::json_body;
use crate::web::respond;
use crate::web::AppState;
use crate::web::LimitedBody;
use crate::web::Refused;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::codeowners::CodeOwners;
use domain::workflow::{decide, Actor, Command, CommitSha, DeploymentStatus};
use domain::BugState;
use forge::{DraftRequest, Forge, ForgeError};
use forge::{GitError, LocalForge};
use serde::Deserialize;
use serde_json::json;

fn forge(state: &AppState) -> Result<&LocalForge, Refused> {
    state.local_forge.as_deref().ok_or_else(|| {
        Refused::new(
            StatusCode::CONFLICT,
            "no_local_forge",
            "this desk has no local forge (set R2R_LOCAL_FORGE to a bare git repository)",
        )
    })
}

fn git_refused(error: GitError) -> Refused {
    match error {
        GitError::Conflict { .. } => {
            Refused::new(StatusCode::CONFLICT, "merge_conflict", error.to_string())
        }
        other => Refused::forge(other),
    }
}

fn parse_sha(text: &str) -> Result<CommitSha, Refused> {
    CommitSha::parse(text).map_err(|e| {
        Refused::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_head",
            e.to_string(),
        )
    })
}

pub(crate) async fn load(state: &AppState, id: &str) -> Result<domain::workflow::Bug, Refused> {
    Ok(state
        .store
        .load_bug(id)
        .await
        .map_err(Refused::storage)?
        .ok_or_else(|| {
            Refused::new(
                StatusCode::NOT_FOUND,
                "unknown_bug",
                format!("No bug {id}."),
            )
        })?
        .bug)
}

/// Applies `command` through the engine with fetched evidence; the JSON answer or the
/// refusal.
pub(crate) async fn record(
    state: &AppState,
    id: &str,
    command: Command,
    actor: &Actor,
    fetched: &Fetched,
) -> Result<Response, Refused> {
    let now = crate::clock::now_ms();
    let policy = &state.reporter.policy;
    let applied = state
        .store
        .apply(id, now, |b| {
            let evidence = domain::workflow::Evidence {
                rerun: fetched.rerun,
                ancestry: Some(&fetched.ancestry),
                code_owners: fetched.code_owners.as_ref(),
            };
            decide(b, &command, actor, &evidence, policy, now)
        })
        .await;
    match applied {
        Ok(applied) => Ok(Json(json!({
            "recorded": applied.changed,
            "state": applied.bug.state.as_str(),
            "version": applied.bug.version,
        }))
        .into_response()),
        Err(store::ApplyError::Refused(refusal)) => Err(refusal.into()),
        Err(store::ApplyError::NotFound(id)) => Err(Refused::new(
            StatusCode::NOT_FOUND,
            "unknown_bug",
            format!("No bug {id}."),
        )),
        Err(error) => Err(Refused::storage(error)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixBody {
    branch: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

fn forge_refused(error: ForgeError) -> Refused {
    match error {
        ForgeError::Git(git) => git_refused(git),
        ForgeError::Invalid(reason) => {
            Refused::new(StatusCode::UNPROCESSABLE_ENTITY, "forge_refused", reason)
        }
        other => Refused::forge(other),
    }
}

/// The fixer's draft pull request: opened on the forge for the pushed branch (the forge
/// numbers it), then recorded with its exact head and the paths it changes, from git.
pub async fn submit_fix(state: &AppState, id: &str, body: &[u8]) -> Result<Response, Refused> {
    let forge = forge(state)?;
    let fix: FixBody = json_body(body)?;
    let branch = fix.branch.trim();
    let head = Forge::branch_head(forge, branch)
        .await
        .map_err(forge_refused)?
        .ok_or_else(|| {
            Refused::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unknown_branch",
                format!("the forge has no branch {:?}; push it first", fix.branch),
            )
        })?;
    let changed_paths = forge.changed_paths(&head).await.map_err(git_refused)?;
    let fixer = Actor::Role {
        role: domain::Role::Fixer,
    };
    // Dry run first: no pull request is opened for a fix the engine would refuse.
    let bug = load(state, id).await?;
    let probe = Command::SubmitFix {
        number: 0,
        head,
        changed_paths,
    };
    dry_run(state, &bug, &probe, &fixer, &Fetched::default())?;
    let draft = forge
        .open_draft(&DraftRequest {
            branch: branch.to_owned(),
            title: fix
                .title
                .unwrap_or_else(|| format!("Fix {id}"))
                .chars()
                .take(200)
                .collect(),
            body: fix
                .description
                .unwrap_or_default()
                .chars()
                .take(24_000)
                .collect(),
        })
        .await
        .map_err(forge_refused)?;
    // The recorded head is the one the pull request was opened at (a push in between is a
    // new head, with its own paths).
    let changed_paths = forge
        .changed_paths(&draft.head)
        .await
        .map_err(git_refused)?;
    let command = Command::SubmitFix {
        number: draft.number,
        head: draft.head,
        changed_paths,
    };
    record(state, id, command, &fixer, &Fetched::default()).await
}

#[derive(Deserialize)]
struct HeadBody {
    head: String,
}

/// An owner's approval of one exact head, with CODEOWNERS read on the base branch (the
/// default branch the merge goes into) — never the change's own copy, which its author
/// could have edited to name themselves or an accomplice.
pub async fn approve(
    state: &AppState,
    id: &str,
    body: &[u8],
    actor: &Actor,
) -> Result<Response, Refused> {
    let forge = forge(state)?;
    let approve: HeadBody = json_body(body)?;
    let head = parse_sha(&approve.head)?;
    let code_owners = forge
        .codeowners_at_base()
        .await
        .map_err(forge_refused)?
        .map(|text| CodeOwners::parse(&text));
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
    body: &[u8],
    actor: &Actor,
) -> Result<Response, Refused> {
    let forge = forge(state)?;
    let merge: HeadBody = json_body(body)?;
    let head = parse_sha(&merge.head)?;
    let bug = load(state, id).await?;
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
                StatusCode::CONFLICT,
                "branch_moved",
                format!("the default branch moved while merging; try again ({e})"),
            )
        })?;
    tracing::info!(bug = %id, merge = %merge_commit, "merged on the local forge");
    let mut response = record(state, id, command, actor, &fetched).await?;
    if let Ok(value) = axum::http::HeaderValue::from_str(merge_commit.as_str()) {
        response.headers_mut().insert("x-r2r-merge-commit", value);
    }
    Ok(response)
}

/// Whether the engine would accept `command` on `bug` now (no `Evidence` outlives this call,
/// so the handler's future stays `Send`).
pub(crate) fn dry_run(
    state: &AppState,
    bug: &domain::workflow::Bug,
    command: &Command,
    actor: &Actor,
    fetched: &Fetched,
) -> Result<(), Refused> {
    let evidence = domain::workflow::Evidence {
        rerun: fetched.rerun,
        ancestry: Some(&fetched.ancestry),
        code_owners: None,
    };
    decide(
        bug,
        command,
        actor,
        &evidence,
        &state.reporter.policy,
        crate::clock::now_ms(),
    )
    .map(|_| ())
    .map_err(Refused::from)
}

/// `GET /api/v1/bugs/{id}/diff`.
pub async fn diff(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "getDiff")?;
        let forge = forge(&state)?;
        let bug = load(&state, &id).await?;
        let pr = bug.pull_request.ok_or_else(|| {
            Refused::new(
                StatusCode::CONFLICT,
                "no_pull_request",
                "this bug has no fix yet",
            )
        })?;
        let diff = forge.diff(&pr.head).await.map_err(git_refused)?;
        Ok::<_, Refused>(Json(json!({
            "head": pr.head.as_str(), "tier": pr.tier.number(), "tier_reasons": pr.tier_reasons,
            "changed_paths": pr.changed_paths, "diff": diff,
        })))
    }
    .await;
    respond(result)
}

#[derive(Deserialize)]
struct DeploymentBody {
    deployment: String,
    commit: String,
}

/// `POST /api/v1/deployments`: the recorder (after `r2r recorder verify`) records that a
/// commit is live; every bug in review, approved or merged sees it, with ancestry from git.
pub async fn record_deployment(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, "recordDeployment")?;
        let forge = forge(&state)?;
        let deployment: DeploymentBody = json_body(&body)?;
        let id = deployment.deployment.trim().to_owned();
        if id.is_empty() || id.len() > 200 {
            return Err(Refused::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_deployment",
                "deployment: 1 to 200 characters",
            ));
        }
        let commit = parse_sha(&deployment.commit)?;
        let actor = actor_of(&credential);
        let mut states = Vec::new();
        for bug_id in state
            .store
            .bug_ids_in_states(&[BugState::InReview, BugState::Approved, BugState::Merged])
            .await
            .map_err(Refused::storage)?
        {
            let bug = load(&state, &bug_id).await?;
            let mut fetched = Fetched::default();
            if let Some(merge) = &bug.merge {
                let relation = forge
                    .relation(&merge.merge_commit, &commit)
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
            let outcome = record(&state, &bug_id, command, &actor, &fetched).await;
            states.push(json!({"bug": bug_id, "ok": outcome.is_ok()}));
        }
        Ok::<_, Refused>(Json(json!({"deployment": id, "bugs": states})))
    }
    .await;
    respond(result)
}
