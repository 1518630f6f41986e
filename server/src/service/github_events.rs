//! GitHub's events applied through the engine, and the signature every delivery carries.
//!
//! `POST /webhooks/github` ([`crate::routes::webhooks`]) checks `X-Hub-Signature-256` (HMAC-SHA256 over the raw body, in
//! constant time) before parsing a byte, refuses repositories outside the allowlist, and
//! files the event as an outbox job keyed by `X-GitHub-Delivery`, recorded with the SHA-256
//! of the signed body in the same transaction — so a replayed delivery, or a captured body
//! re-sent under a fresh delivery id, is a no-op — then answers 202. A worker applies queued
//! events through the engine, with the evidence fetched from the forge first: ancestry,
//! CODEOWNERS on the base branch, and for a review the reviewer's access to the repository
//! (only write, maintain or admin approves; failing to learn it counts nothing).

use crate::clock::now_ms;
use crate::config::GitHubConfig;
use crate::projects::Scope;
use crate::service::commands::{Fetched, KnownAncestry};
use domain::codeowners::CodeOwners;
use domain::workflow::{
    decide, Actor, Bug, Command, CommitSha, DeploymentStatus, Evidence, Policy,
};
use domain::{BugState, Role};
use forge::{Forge, ForgeError, RepoPermission};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};
use store::Store;

/// `sha256=<hex>` of `body` under `secret`.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return String::new();
    };
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Whether `presented` is the signature of `body`, compared in constant time.
pub fn signature_valid(secret: &[u8], body: &[u8], presented: Option<&str>) -> bool {
    let Some(presented) = presented else {
        return false;
    };
    let Some(hex_part) = presented.trim().strip_prefix("sha256=") else {
        return false;
    };
    let Ok(bytes) = hex::decode(hex_part) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&bytes).is_ok()
}

/// Hex SHA-256 of a webhook body, exactly as signed.
pub fn body_sha256(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

/// The `source` of GitHub's rows in the store's webhook record.
pub const SOURCE: &str = "github";

// ---------------------------------------------------------------------------------------------
// Applying queued events

fn sha(value: &Value) -> Option<CommitSha> {
    value.as_str().and_then(|s| CommitSha::parse(s).ok())
}

fn github_user(user: &Value) -> Actor {
    Actor::GitHubUser {
        login: user["login"].as_str().unwrap_or_default().to_owned(),
        bot: user["type"].as_str() != Some("User"),
    }
}

/// Whether an event from `repository` may move `bug`: only its project's repository's may
/// (pull request numbers and commits are not unique across repositories, and a fork can
/// hold the very commits of the original).
fn follows(scope: &Scope, bug: &Bug, repository: &str) -> bool {
    // GitHub's names are case-blind, as the allowlist compares them.
    scope
        .target_of(&bug.component)
        .follows
        .as_deref()
        .is_some_and(|r| r.eq_ignore_ascii_case(repository))
}

async fn bugs_with_pull_request(
    store: &Store,
    scope: &Scope,
    repository: &str,
    number: u64,
) -> Result<Vec<Bug>, store::StoreError> {
    let mut found = Vec::new();
    for id in store
        .bug_ids_in_states(&[BugState::InReview, BugState::Approved, BugState::Fixing])
        .await?
    {
        if let Some(stored) = store.load_bug(&id).await? {
            if stored
                .bug
                .pull_request
                .as_ref()
                .is_some_and(|pr| pr.number == number)
                && follows(scope, &stored.bug, repository)
            {
                found.push(stored.bug);
            }
        }
    }
    Ok(found)
}

/// What applying one event did, for logs and tests.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct EventOutcome {
    /// Bugs whose ledger changed.
    pub changed: Vec<String>,
    /// Bugs whose engine refused the event (with the reason code).
    pub refused: Vec<(String, String)>,
    /// Why an event did not count, in words (a review from an account without write
    /// access, say); recorded with the delivery.
    pub notes: Vec<String>,
}

/// A refusal code for a review that did not count because of the reviewer's access.
pub const REVIEWER_WITHOUT_WRITE_ACCESS: &str = "reviewer_without_write_access";

/// Whether `login`'s approving review may count. `Ok(Ok(_))`: GitHub says the account has
/// write, maintain or admin access. `Ok(Err(reason))`: GitHub's answer is final and it is not
/// enough — read, triage or none, or GitHub will not tell (404, 401, 403) — so the review does
/// not count. `Err`: GitHub could not be asked (network, 5xx, 429); the review does not count
/// yet, and the job is retried.
async fn reviewer_access(
    forge: &dyn Forge,
    login: &str,
) -> Result<Result<RepoPermission, String>, ForgeError> {
    match forge.collaborator_permission(login).await {
        Ok(access) if access.may_approve() => Ok(Ok(access)),
        Ok(access) => Ok(Err(format!(
            "GitHub gives {login} {access} on the repository; an approval needs write, maintain or admin"
        ))),
        Err(ForgeError::Status { status, what })
            if (400..500).contains(&status) && status != 429 =>
        {
            Ok(Err(format!(
                "GitHub answered {status} for {what}, so the desk cannot tell that {login} may approve"
            )))
        }
        Err(ForgeError::Invalid(reason)) => Ok(Err(reason)),
        Err(error) => Err(ForgeError::Context {
            context: format!(
                "the approval by {login} does not count until GitHub tells its permission"
            ),
            source: Box::new(error),
        }),
    }
}

pub async fn apply(
    store: &Store,
    bug: &str,
    command: &Command,
    actor: &Actor,
    fetched: &Fetched,
    policy: &Policy,
    outcome: &mut EventOutcome,
) -> Result<(), store::StoreError> {
    let now = now_ms();
    match store
        .apply(bug, now, |b| {
            let evidence = Evidence {
                rerun: fetched.rerun,
                ancestry: Some(&fetched.ancestry),
                code_owners: fetched.code_owners.as_ref(),
            };
            decide(b, command, actor, &evidence, policy, now)
        })
        .await
    {
        Ok(applied) if applied.changed => outcome.changed.push(bug.to_owned()),
        Ok(_) => {}
        Err(store::ApplyError::Refused(refusal)) => {
            tracing::info!(bug, code = %refusal.code, "github event refused by the engine");
            outcome.refused.push((bug.to_owned(), refusal.code));
        }
        Err(store::ApplyError::Store(error)) => return Err(error),
        Err(error) => outcome.refused.push((bug.to_owned(), error.to_string())),
    }
    Ok(())
}

/// Whether the project's required checks passed on `commit` (always, when none are set).
async fn checks_green(
    forge: &dyn Forge,
    config: &GitHubConfig,
    commit: &CommitSha,
) -> Result<Result<(), String>, ForgeError> {
    if config.required_checks.is_empty() {
        return Ok(Ok(()));
    }
    let runs = forge.check_runs(commit).await?;
    Ok(forge::required_checks_green(&config.required_checks, &runs))
}

/// Records deployment `id` of `commit` with every bug of the project that follows
/// `repository` that may be waiting for it (the engine decides whether it contains the fix).
async fn record_deployment(
    store: &Store,
    forge: &dyn Forge,
    scope: &Scope,
    repository: &str,
    id: &str,
    commit: &CommitSha,
    outcome: &mut EventOutcome,
) -> Result<(), ForgeError> {
    let store_error = |e: store::StoreError| ForgeError::Status {
        status: 503,
        what: e.to_string(),
    };
    let recorder = Actor::Role {
        role: Role::Recorder,
    };
    for bug_id in store
        .bug_ids_in_states(&[BugState::InReview, BugState::Approved, BugState::Merged])
        .await
        .map_err(store_error)?
    {
        let Some(stored) = store.load_bug(&bug_id).await.map_err(store_error)? else {
            continue;
        };
        if !follows(scope, &stored.bug, repository) {
            continue;
        }
        let mut fetched = Fetched::default();
        if let Some(merge) = &stored.bug.merge {
            let relation = forge.relation(&merge.merge_commit, commit).await?;
            fetched
                .ancestry
                .0
                .insert((merge.merge_commit.clone(), commit.clone()), relation);
        }
        let command = Command::RecordDeployment {
            deployment: id.to_owned(),
            commit: commit.clone(),
        };
        apply(
            store,
            &bug_id,
            &command,
            &recorder,
            &fetched,
            &scope.policy,
            outcome,
        )
        .await
        .map_err(store_error)?;
    }
    Ok(())
}

/// Applies one queued GitHub event to the bugs of the project that follows its repository
/// (`scope`: the desk's projects now).
pub async fn apply_event(
    store: &Store,
    forge: &dyn Forge,
    config: &GitHubConfig,
    scope: &Scope,
    event: &str,
    payload: &Value,
) -> Result<EventOutcome, ForgeError> {
    let mut outcome = EventOutcome::default();
    let policy = &scope.policy;
    let repository = payload["repository"]["full_name"]
        .as_str()
        .unwrap_or_default();
    let store_error = |e: store::StoreError| ForgeError::Status {
        status: 503,
        what: e.to_string(),
    };
    match (event, payload["action"].as_str().unwrap_or_default()) {
        ("pull_request", "synchronize") => {
            let number = payload["pull_request"]["number"]
                .as_u64()
                .unwrap_or_default();
            let Some(head) = sha(&payload["pull_request"]["head"]["sha"]) else {
                return Ok(outcome);
            };
            for bug in bugs_with_pull_request(store, scope, repository, number)
                .await
                .map_err(store_error)?
            {
                apply(
                    store,
                    &bug.id,
                    &Command::NewHead { head: head.clone() },
                    &Actor::Forge,
                    &Fetched::default(),
                    policy,
                    &mut outcome,
                )
                .await
                .map_err(store_error)?;
            }
        }
        ("pull_request", "closed") if payload["pull_request"]["merged"].as_bool() == Some(true) => {
            let pr = &payload["pull_request"];
            let number = pr["number"].as_u64().unwrap_or_default();
            let (Some(head), Some(merge_commit)) =
                (sha(&pr["head"]["sha"]), sha(&pr["merge_commit_sha"]))
            else {
                return Ok(outcome);
            };
            let actor = github_user(&pr["merged_by"]);
            for bug in bugs_with_pull_request(store, scope, repository, number)
                .await
                .map_err(store_error)?
            {
                let mut fetched = Fetched::default();
                for deployment in bug
                    .deployments
                    .iter()
                    .filter(|d| d.status == DeploymentStatus::Pending)
                {
                    let relation = forge.relation(&merge_commit, &deployment.commit).await?;
                    fetched
                        .ancestry
                        .0
                        .insert((merge_commit.clone(), deployment.commit.clone()), relation);
                }
                let command = Command::Merge {
                    head: head.clone(),
                    merge_commit: merge_commit.clone(),
                };
                apply(
                    store,
                    &bug.id,
                    &command,
                    &actor,
                    &fetched,
                    policy,
                    &mut outcome,
                )
                .await
                .map_err(store_error)?;
            }
        }
        ("pull_request_review", "submitted")
            if payload["review"]["state"]
                .as_str()
                .is_some_and(|s| s.eq_ignore_ascii_case("approved")) =>
        {
            let number = payload["pull_request"]["number"]
                .as_u64()
                .unwrap_or_default();
            let Some(head) = sha(&payload["review"]["commit_id"]) else {
                return Ok(outcome);
            };
            let actor = github_user(&payload["review"]["user"]);
            let bugs = bugs_with_pull_request(store, scope, repository, number)
                .await
                .map_err(store_error)?;
            if bugs.is_empty() {
                return Ok(outcome);
            }
            // A bot is refused by the engine (it is no person); anyone else's approval counts
            // only with write access, as GitHub itself would require for a review that gates
            // a merge. GitHub is asked at the time the review is applied.
            if let Actor::GitHubUser { login, bot: false } = &actor {
                match reviewer_access(forge, login).await? {
                    Ok(access) => {
                        tracing::info!(login, %access, pull_request = number, "github reviewer may approve");
                    }
                    Err(reason) => {
                        tracing::warn!(login, pull_request = number, %reason, "github approval not counted");
                        outcome
                            .notes
                            .push(format!("approval by {login} not counted: {reason}"));
                        for bug in bugs {
                            outcome
                                .refused
                                .push((bug.id, REVIEWER_WITHOUT_WRITE_ACCESS.to_owned()));
                        }
                        return Ok(outcome);
                    }
                }
            }
            // CODEOWNERS on the base branch, never the pull request's own copy: a change
            // that edits CODEOWNERS must not choose its own code owners.
            let fetched = Fetched {
                rerun: None,
                ancestry: KnownAncestry::default(),
                code_owners: forge
                    .codeowners_at_base()
                    .await?
                    .map(|text| CodeOwners::parse(&text)),
            };
            for bug in bugs {
                apply(
                    store,
                    &bug.id,
                    &Command::Approve { head: head.clone() },
                    &actor,
                    &fetched,
                    policy,
                    &mut outcome,
                )
                .await
                .map_err(store_error)?;
            }
        }
        ("deployment_status", _) => {
            let status = &payload["deployment_status"];
            let deployment = &payload["deployment"];
            let counts = status["state"].as_str() == Some("success")
                && deployment["task"].as_str() == Some(forge::RECORDER_TASK)
                && deployment["environment"].as_str()
                    == Some(config.production_environment.as_str());
            let Some(commit) = sha(&deployment["sha"]).filter(|_| counts) else {
                return Ok(outcome);
            };
            let id = deployment["id"].to_string();
            // A deployment counts only once the project's required checks passed on that
            // commit: a red (or unfinished) CI run is never a release a reporter is asked
            // about. It is kept, and looked at again when the checks complete.
            if let Err(why) = checks_green(forge, config, &commit).await? {
                tracing::warn!(deployment = %id, commit = %commit.as_str(), %why, "deployment not recorded: required checks are not green");
                store
                    .hold_deployment(&id, repository, commit.as_str(), &why, now_ms())
                    .await
                    .map_err(store_error)?;
                outcome.notes.push(format!(
                    "deployment {id} of {} not recorded: required checks are not green ({why}); it is looked at again when they complete",
                    commit.as_str()
                ));
                return Ok(outcome);
            }
            record_deployment(store, forge, scope, repository, &id, &commit, &mut outcome).await?;
            store
                .release_held_deployments(repository, commit.as_str())
                .await
                .map_err(store_error)?;
        }
        ("check_suite" | "check_run", "completed") => {
            let event_key = if event == "check_suite" {
                "check_suite"
            } else {
                "check_run"
            };
            let Some(commit) = sha(&payload[event_key]["head_sha"]) else {
                return Ok(outcome);
            };
            let held = store
                .held_deployments(repository, commit.as_str())
                .await
                .map_err(store_error)?;
            let Some(latest) = held.first() else {
                return Ok(outcome);
            };
            match checks_green(forge, config, &commit).await? {
                Err(why) => outcome.notes.push(format!(
                    "deployment {latest} of {} still held: required checks are not green ({why})",
                    commit.as_str()
                )),
                Ok(()) => {
                    tracing::info!(deployment = %latest, commit = %commit.as_str(), "required checks turned green: the held deployment is recorded");
                    outcome.notes.push(format!(
                        "deployment {latest} of {} recorded: its required checks turned green",
                        commit.as_str()
                    ));
                    record_deployment(
                        store,
                        forge,
                        scope,
                        repository,
                        latest,
                        &commit,
                        &mut outcome,
                    )
                    .await?;
                    store
                        .release_held_deployments(repository, commit.as_str())
                        .await
                        .map_err(store_error)?;
                }
            }
        }
        _ => {}
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn githubs_documented_test_vector_verifies() {
        // From GitHub's documentation on validating webhook deliveries.
        let secret = b"It's a Secret to Everybody";
        let body = b"Hello, World!";
        let expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(signature(secret, body), expected);
        assert!(signature_valid(secret, body, Some(expected)));
        assert!(!signature_valid(secret, b"Hello, World?", Some(expected)));
        assert!(!signature_valid(b"another secret", body, Some(expected)));
        assert!(!signature_valid(
            secret,
            body,
            Some(&expected.replace("sha256=", "sha1="))
        ));
        assert!(!signature_valid(secret, body, Some("sha256=zz")));
        assert!(!signature_valid(secret, body, None));
    }
}
