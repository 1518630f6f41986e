//! Commands through the engine: load a bug, decide with the evidence fetched beforehand
//! (inside the store's compare-and-swap, so a concurrent change is never overwritten), or
//! only ask whether the engine would accept a command now (the dry run before anything
//! irreversible, such as opening a pull request or moving a branch).

use crate::error::Kind;
use crate::web::{AppState, Refused};
use domain::codeowners::CodeOwners;
use domain::workflow::{decide, Actor, Ancestry, AncestryOracle, Command, CommitSha};
use domain::BugState;
use std::collections::HashMap;

pub use api_types::Recorded;

/// Relations fetched before deciding (the engine's oracle is synchronous and pure).
#[derive(Debug, Default)]
pub struct KnownAncestry(pub HashMap<(CommitSha, CommitSha), Ancestry>);

impl AncestryOracle for KnownAncestry {
    fn relation(&self, base: &CommitSha, candidate: &CommitSha) -> Ancestry {
        self.0
            .get(&(base.clone(), candidate.clone()))
            .copied()
            .unwrap_or(Ancestry::Unknown)
    }
}

/// Evidence fetched before deciding (kept `Send`: the engine's `Evidence` is built inside
/// the synchronous decision).
#[derive(Debug, Default)]
pub struct Fetched {
    pub ancestry: KnownAncestry,
    pub code_owners: Option<CodeOwners>,
    /// The desk's own sandbox re-run of a proposed reproduction.
    pub rerun: Option<domain::workflow::Rerun>,
}

pub async fn load(state: &AppState, id: &str) -> Result<domain::workflow::Bug, Refused> {
    Ok(state
        .store
        .load_bug(id)
        .await?
        .ok_or_else(|| Refused::unknown_bug(id))?
        .bug)
}

/// Applies `command` through the engine with fetched evidence: what the ledger now says, or
/// the engine's refusal.
pub async fn record(
    state: &AppState,
    id: &str,
    command: Command,
    actor: &Actor,
    fetched: &Fetched,
) -> Result<Recorded, Refused> {
    let now = crate::clock::now_ms();
    let scope = state.reporter.fresh(&state.store).await;
    let policy = &scope.policy;
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
        Ok(applied) => Ok(Recorded {
            recorded: applied.changed,
            state: applied.bug.state,
            version: applied.bug.version,
        }),
        Err(store::ApplyError::Refused(refusal)) => Err(refusal.into()),
        Err(store::ApplyError::NotFound(id)) => Err(Refused::unknown_bug(&id)),
        Err(error) => Err(Refused::storage(error)),
    }
}

/// Whether the engine would accept `command` on `bug` now (no `Evidence` outlives this call,
/// so the handler's future stays `Send`).
pub fn dry_run(
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
        &state.reporter.scope().policy,
        crate::clock::now_ms(),
    )
    .map(|_| ())
    .map_err(Refused::from)
}

/// A bug command with no evidence to fetch (notes, triage, starting work, reopening).
pub async fn run_command(
    state: &AppState,
    bug: &str,
    command: Command,
    actor: &Actor,
) -> Result<Recorded, Refused> {
    record(state, bug, command, actor, &Fetched::default()).await
}

/// An owner promotes bug `bug` that no reporter confirmed yet: the engine records it, and a
/// crew start the stranger's budget put off is brought forward to now (the triage job wakes
/// up). Its model calls then come from the confirmed bugs' share.
pub async fn promote(state: &AppState, bug: &str, actor: &Actor) -> Result<Recorded, Refused> {
    let recorded = run_command(state, bug, Command::OwnerPromote, actor).await?;
    state
        .store
        .start_crew_now(bug, crate::clock::now_ms())
        .await?;
    Ok(recorded)
}

/// Merges bug `duplicate` into bug `of`, asked by `actor` (an owner): its reports join `of` in
/// one decision under the owner's name (a question open there is asked of their reporters
/// too), each reporter's tracking link then follows `of`, and last `duplicate` is closed in
/// its own ledger. Merges run one at a time (two crossed merges would otherwise close both
/// bugs into each other), each re-reading both bugs first; each step is idempotent, so a
/// crash between two is mended by asking again.
pub async fn mark_duplicate(
    state: &AppState,
    duplicate: &str,
    of: &str,
    actor: &Actor,
) -> Result<Recorded, Refused> {
    match actor {
        Actor::Owner { .. } => {}
        Actor::Anonymous => {
            return Err(Refused::new(
                Kind::Unauthenticated,
                "unauthenticated",
                "sign in as an owner to merge bugs",
            ))
        }
        _ => {
            return Err(Refused::new(
                Kind::Forbidden,
                "forbidden_actor",
                "only an owner may mark a bug as a duplicate",
            ))
        }
    }
    let plain = |id: &str| {
        !id.is_empty()
            && id.len() <= 100
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if !plain(of) || of == duplicate {
        return Err(Refused::new(
            Kind::Invalid,
            "invalid_duplicate",
            "of: the id of another bug, the one that stays",
        ));
    }
    let _one_at_a_time = state.merges.lock().await;
    // And one at a time among every server on the database.
    let _everywhere = super::leadership::wait_for(
        state,
        "merges",
        std::time::Duration::from_secs(30),
        std::time::Duration::from_secs(30),
    )
    .await?;
    let bug = load(state, duplicate).await?;
    let target = load(state, of).await?;
    // Checked before anything moves: a refused merge changes nothing.
    if matches!(bug.state, BugState::Duplicate | BugState::Verified) {
        return Err(Refused::new(
            Kind::Conflict,
            "wrong_state",
            format!(
                "bug {duplicate} is {}: it cannot be merged into another",
                bug.state
            ),
        ));
    }
    match target.state {
        BugState::Duplicate => {
            return Err(Refused::new(
                Kind::Conflict,
                "duplicate_chain",
                format!(
                    "bug {of} is itself a duplicate of {}: merge into that bug",
                    target.duplicate_of.as_deref().unwrap_or("another bug")
                ),
            ))
        }
        BugState::Verified => {
            return Err(Refused::new(
                Kind::Conflict,
                "wrong_state",
                format!("bug {of} is verified and closed: its reporters have had the last word"),
            ))
        }
        _ => {}
    }
    run_command(
        state,
        of,
        Command::AbsorbDuplicate {
            duplicate: duplicate.to_owned(),
            reports: bug.reports.clone(),
        },
        actor,
    )
    .await?;
    let moved = state.store.reassign_reports(duplicate, of).await?;
    tracing::info!(duplicate, of, moved, "bug merged into another");
    run_command(
        state,
        duplicate,
        Command::MarkDuplicate { of: of.to_owned() },
        actor,
    )
    .await
}

/// Longest advisory note (characters).
pub const MAX_NOTE_CHARS: usize = 4_000;

/// An advisory note as stored: model output passes the airlock's text filter like any
/// untrusted text — hostile text is refused, secrets and personal data are redacted.
pub fn screened_note(text: &str) -> Result<String, Refused> {
    let text = text.trim();
    let chars = text.chars().count();
    if chars == 0 || chars > MAX_NOTE_CHARS {
        return Err(Refused::new(
            Kind::Invalid,
            "invalid_note",
            format!("note: 1 to {MAX_NOTE_CHARS} characters (got {chars})"),
        ));
    }
    match domain::airlock::screen(text) {
        Ok((redacted, _)) => Ok(redacted),
        Err(families) => Err(Refused::new(
            Kind::Invalid,
            "note_quarantined",
            format!(
                "the airlock refused this note: it reads like {} — notes are model output and pass the same filter as reports",
                families
                    .iter()
                    .map(|f| format!("{f:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}
