//! An owner's actions on a bug (approve the exact head, merge, reopen, give back to the crew,
//! take over, write to one of its reporters) and on a quarantined report (write to its
//! reporter). Each is asked first — [`question`] says what will happen, in plain words — and
//! then done by [`perform`], both reached through the desk's server functions (`desk_question`,
//! `desk_act`) and nothing else. `/desk/bugs/{id}/confirm` and `/desk/reports/{id}/confirm`
//! are the question as a page (a link, or a desk without JavaScript); with JavaScript the bug
//! view and the dashboard ask it in a dialog. The owners' own actions (invite, confirm an
//! owner) take the same way, through [`super::owners`].

use super::*;
use crate::error::Kind;
use app::dto::ActInput;
use domain::DeskAction;

/// `GET /desk/bugs/{id}/confirm?action=…`: the question before an action on bug `id`, as a
/// hydrated page on `desk_question`; its form posts to `desk_act`.
pub async fn confirm_bug(
    State(state): State<AppState>,
    credential: Credential,
    Path(id): Path<String>,
    request: axum::extract::Request,
) -> Response {
    if owner(&credential).is_none() {
        return to_sign_in(&format!("/desk/bugs/{id}"));
    }
    super::page_with_forms(&state, request).await
}

/// `GET /desk/reports/{id}/confirm?action=contact`: the question before writing to a
/// quarantined report's reporter.
pub async fn confirm_report(
    State(state): State<AppState>,
    credential: Credential,
    request: axum::extract::Request,
) -> Response {
    if owner(&credential).is_none() {
        return to_sign_in("/desk");
    }
    super::page_with_forms(&state, request).await
}

fn unknown_action() -> Refused {
    Refused::new(
        Kind::Invalid,
        "unknown_action",
        "That is not an action of the desk (approve, merge, reopen, retry, take_over, promote, contact, duplicate; invite and confirm_owner on the Owners page; rollback on the Crew page).",
    )
}

/// Bug `id`, or a 404.
async fn stored_bug(state: &AppState, id: &str) -> Result<Bug, Refused> {
    match state.store.load_bug(id).await {
        Ok(Some(stored)) => Ok(stored.bug),
        Ok(None) => Err(Refused::new(
            Kind::NotFound,
            "not_found",
            "There is no bug with that id.",
        )),
        Err(error) => Err(Refused::storage(error)),
    }
}

/// The report an owner writes to: `report`, one of `bug`'s reports when there is a bug.
async fn addressee(
    state: &AppState,
    bug: Option<&Bug>,
    report: Option<&str>,
) -> Result<store::StoredReport, Refused> {
    let report = report.unwrap_or_default();
    if let Some(bug) = bug {
        if !bug.reports.iter().any(|r| r == report) {
            return Err(Refused::new(
                Kind::Invalid,
                "unknown_report",
                format!("That report is not one of bug {}'s reports.", bug.id),
            ));
        }
    }
    match state.store.report(report).await {
        Ok(Some(stored)) => Ok(stored),
        Ok(None) => Err(Refused::new(
            Kind::NotFound,
            "not_found",
            "There is no report with that id.",
        )),
        Err(error) => Err(Refused::storage(error)),
    }
}

/// What `action` on bug `bug` (or, for `contact` with no bug, on quarantined report `report`)
/// will do, asked of the signed-in owner before anything happens. Reads only.
pub(super) async fn question(
    state: &AppState,
    account: &OwnerAccount,
    session: &str,
    bug: &str,
    report: Option<&str>,
    action: &str,
    person: Option<&str>,
) -> Result<Confirm, Refused> {
    let action = DeskAction::parse(action).ok_or_else(unknown_action)?;
    if action.on_the_owners() && bug.is_empty() && report.is_none() {
        return super::owners::question(state, account, session, action, person).await;
    }
    if !action.on_a_bug() || (bug.is_empty() && action != DeskAction::Contact) {
        return Err(unknown_action());
    }
    let loaded = if bug.is_empty() {
        None
    } else {
        Some(stored_bug(state, bug).await?)
    };
    // A closed duplicate is asked nothing but a message to one of its reporters.
    if let Some(closed) = loaded.as_ref().filter(|b| b.state == BugState::Duplicate) {
        if action != DeskAction::Contact {
            return Err(Refused::new(
                Kind::Conflict,
                "duplicate",
                format!(
                    "This bug was merged into {}: act on that bug.",
                    closed.duplicate_of.as_deref().unwrap_or("another bug")
                ),
            ));
        }
    }
    let pull_request = loaded.as_ref().and_then(|b| b.pull_request.as_ref());
    let head = pull_request.map(|pr| pr.head.as_str().to_owned());
    if matches!(action, DeskAction::Approve | DeskAction::Merge) && head.is_none() {
        return Err(Refused::new(
            Kind::Conflict,
            "no_fix",
            "This bug has no fix to approve or merge yet.",
        ));
    }
    // Only what the bug view would offer now (a question page reached again with Back, after
    // the bug moved on, says so in words rather than the engine's).
    if let Some(current) = loaded.as_ref().filter(|_| action != DeskAction::Contact) {
        let me = crate::auth::owner_actor(account).human();
        if !super::bug::owner_actions(state, current, me.as_ref()).contains(&action) {
            return Err(Refused::new(
                Kind::Conflict,
                "not_now",
                format!(
                    "That cannot be done on this bug now: it is {}. Open the bug to see what you can do.",
                    current.state.as_str().replace('_', " ")
                ),
            ));
        }
    }
    let (head_text, number) = (
        head.clone().unwrap_or_default(),
        pull_request.map(|p| p.number).unwrap_or_default(),
    );
    let mut addressed = None;
    let mut choices = Vec::new();
    let consequences = match action {
        DeskAction::Approve => vec![
            format!("You approve commit {head_text} of draft pull request #{number} — this exact commit, nothing else."),
            "A new push to the pull request clears every approval.".to_owned(),
            "Nothing is merged yet: merging is a separate step.".to_owned(),
        ],
        DeskAction::Merge => vec![
            format!("The desk merges commit {head_text} into the default branch with a real git merge."),
            "The merge happens only if the approvals still hold for this head and it merges cleanly.".to_owned(),
            "The reporters are asked whether it is fixed only after the recorder proves the merge is live.".to_owned(),
        ],
        DeskAction::Retry => vec![
            "The crew picks the bug up again: the fixer, with two fresh attempts, when a reporter confirmed its test; the reproducer otherwise.".to_owned(),
            "Why it stopped stays in the ledger.".to_owned(),
        ],
        DeskAction::TakeOver => vec![
            "The crew stops: from now on it can neither start, propose nor fix anything on this bug, nor hand it over (its advisory notes are still kept as notes).".to_owned(),
            "The bug waits for a person until an owner gives it back (Try again) or reopens it.".to_owned(),
            "Reporters see that a person is working on it.".to_owned(),
        ],
        DeskAction::Promote => vec![
            "No reporter has confirmed this bug yet. You vouch for it: the crew's work on it is paid for from the share of the budget kept for confirmed bugs, which strangers' reports cannot use up.".to_owned(),
            "If the stranger's budget put its start off, the crew starts on it now.".to_owned(),
            "The promotion is in the ledger under your name; the reporter is still asked to confirm the failing test.".to_owned(),
        ],
        DeskAction::Contact => {
            let stored = addressee(state, loaded.as_ref(), report).await?;
            let id = stored.id.clone();
            addressed = Some(id.clone());
            vec![
                format!("Your message shows on the private tracking page of report {id} at once, signed as the desk's owners."),
                "The reporter cannot answer it here; if you ask something, they can file a new report or answer the desk's questions.".to_owned(),
                if stored.contact.is_some() {
                    "They left an email address: the concierge also emails the message to them.".to_owned()
                } else {
                    "They left no email address: it waits on their tracking page until they open their link.".to_owned()
                },
            ]
        }
        DeskAction::Duplicate => {
            let this = loaded.as_ref().map(|b| b.component.clone()).unwrap_or_default();
            choices = duplicate_choices(state, bug, &this).await?;
            let reports = loaded.as_ref().map_or(0, |b| b.reports.len());
            vec![
                format!("Its {reports} report(s) join the bug you choose, through the engine: each reporter keeps their own tracking link, which follows that bug from now on."),
                "A question open there (is this your bug? does the fix work?) is asked of them too.".to_owned(),
                "This bug is closed as a duplicate: the crew does nothing more with it, and both ledgers record the merge under your name.".to_owned(),
            ]
        }
        DeskAction::Reopen | DeskAction::Invite | DeskAction::ConfirmOwner | DeskAction::Rollback => vec![
            "The bug goes back to the start of the loop: the crew must prove it again.".to_owned(),
            "Approvals and the current fix stop counting.".to_owned(),
            "Reporters see on their tracking page that the bug was reopened.".to_owned(),
        ],
    };
    Ok(Confirm {
        owner: account.email.clone(),
        csrf: csrf(state, session),
        bug: bug.to_owned(),
        action,
        report: addressed,
        person: None,
        head: head.filter(|_| matches!(action, DeskAction::Approve | DeskAction::Merge)),
        consequences,
        choices,
    })
}

/// The bugs a duplicate may join: open ones other than `bug`, those of its component first
/// (their id, and their title and state in words), at most 200.
async fn duplicate_choices(
    state: &AppState,
    bug: &str,
    component: &str,
) -> Result<Vec<(String, String)>, Refused> {
    let listing = state
        .store
        .bug_listing(&store::ListingQuery {
            limit: 200,
            sort: store::ListingSort::Newest,
            ..store::ListingQuery::default()
        })
        .await?;
    let mut choices: Vec<(bool, String, String)> = Vec::new();
    for listed in listing.bugs {
        let other = listed.bug;
        if other.id == bug || matches!(other.state, BugState::Duplicate | BugState::Verified) {
            continue;
        }
        let title = match other.reports.first() {
            Some(first) => match state.store.report(first).await {
                Ok(Some(report)) => report.dossier.map(|d| d.title).unwrap_or_default(),
                _ => String::new(),
            },
            None => String::new(),
        };
        let words = format!(
            "{} — {} ({})",
            other.id,
            title,
            other.state.as_str().replace('_', " ")
        );
        choices.push((other.component != component, other.id.clone(), words));
    }
    choices.sort_by_key(|(elsewhere, _, _)| *elsewhere);
    Ok(choices
        .into_iter()
        .map(|(_, id, words)| (id, words))
        .collect())
}

/// Does what the owner confirmed (the CSRF token already checked) through the same service
/// code and engine guards as the API; answers where the desk goes next (the page, saying
/// what was done).
pub(super) async fn perform(
    state: &AppState,
    account: &OwnerAccount,
    session: &str,
    input: &ActInput,
) -> Result<(String, Option<axum::http::HeaderValue>), Refused> {
    let action = DeskAction::parse(&input.action).ok_or_else(unknown_action)?;
    let bug = input.bug.as_str();
    if action.on_the_owners() && bug.is_empty() && input.report.is_none() {
        return super::owners::perform(state, account, session, action, input.person.as_deref())
            .await;
    }
    if action == DeskAction::Rollback && bug.is_empty() {
        // The crew page's release list: serve an earlier release of a service again.
        let service = input.of.as_deref().unwrap_or_default();
        let commit = input.head.as_deref().unwrap_or_default();
        // The service keeps the reason as plain text, whichever path it came by.
        let reason = input.reason.as_deref().unwrap_or_default();
        crate::service::rollback::roll_back(
            state,
            service,
            commit,
            reason,
            crate::auth::owner_actor(account),
        )
        .await?;
        return Ok((
            done_address(state, session, "/desk/crew", "", "rollback"),
            None,
        ));
    }
    if !action.on_a_bug() || (bug.is_empty() && action != DeskAction::Contact) {
        return Err(unknown_action());
    }
    if bug.is_empty() {
        let stored = addressee(state, None, input.report.as_deref()).await?;
        let text = crate::service::plain_text(input.text.as_deref().unwrap_or_default());
        crate::service::notify::send_message(state, &stored.id, &account.email, &text).await?;
        return Ok((done_address(state, session, "/desk", "", "contact"), None));
    }
    let loaded = stored_bug(state, bug).await?;
    let actor = crate::auth::owner_actor(account);
    match action {
        DeskAction::Contact => {
            let stored = addressee(state, Some(&loaded), input.report.as_deref()).await?;
            let text = crate::service::plain_text(input.text.as_deref().unwrap_or_default());
            crate::service::notify::send_message(state, &stored.id, &account.email, &text).await?;
        }
        DeskAction::Approve | DeskAction::Merge => {
            let head = input.head.as_deref().unwrap_or_default();
            if head.is_empty() {
                return Err(Refused::new(
                    Kind::Invalid,
                    "missing_head",
                    "The exact head is missing: open the question again from the bug view.",
                ));
            }
            let head = crate::service::forge::parse_sha(head)?;
            if action == DeskAction::Approve {
                crate::service::forge::approve(state, bug, head, &actor).await?;
            } else {
                crate::service::forge::merge(state, bug, head, &actor).await?;
            }
        }
        DeskAction::Promote => {
            crate::service::commands::promote(state, bug, &actor).await?;
        }
        DeskAction::Retry | DeskAction::TakeOver => {
            let command = if action == DeskAction::Retry {
                Command::OwnerRetry
            } else {
                Command::OwnerTakeOver
            };
            crate::service::commands::run_command(state, bug, command, &actor).await?;
        }
        DeskAction::Duplicate => {
            let of = input.of.as_deref().unwrap_or_default();
            if of.is_empty() {
                return Err(Refused::new(
                    Kind::Invalid,
                    "missing_of",
                    "Choose the bug this one duplicates.",
                ));
            }
            crate::service::commands::mark_duplicate(state, bug, of, &actor).await?;
            let page = format!("/desk/bugs/{of}");
            return Ok((done_address(state, session, &page, of, "merged"), None));
        }
        DeskAction::Reopen
        | DeskAction::Invite
        | DeskAction::ConfirmOwner
        | DeskAction::Rollback => {
            let reason = crate::service::plain_text(input.reason.as_deref().unwrap_or_default());
            if reason.trim().is_empty() {
                return Err(Refused::new(
                    Kind::Invalid,
                    "missing_reason",
                    "A reopen needs a reason: the reporters see that it was reopened.",
                ));
            }
            crate::service::commands::run_command(
                state,
                bug,
                Command::OwnerReopen {
                    reason: reason.chars().take(2_000).collect(),
                },
                &actor,
            )
            .await?;
        }
    }
    let page = format!("/desk/bugs/{bug}");
    Ok((
        done_address(state, session, &page, bug, action.as_str()),
        None,
    ))
}
