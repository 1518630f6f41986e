//! `/desk/bugs/{id}/act`: an owner's approve, merge, reopen or message to one of the bug's
//! reporters; `/desk/reports/{id}/act`: a message to a quarantined report's reporter. Each is
//! confirmed first on a page that says what will happen.

use super::*;
// ---------------------------------------------------------------------------------------------
// Actions

/// The two steps of every owner's form: show what will happen, then do it. Anything else is
/// refused before the form is read further (422), so no misspelt step can act.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Step {
    /// Show the confirmation.
    Confirm,
    /// Act.
    Do,
}

#[derive(Debug, Deserialize)]
pub struct ActForm {
    pub(super) csrf: String,
    pub(super) action: String,
    pub(super) step: Step,
    #[serde(default)]
    head: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    report: Option<String>,
    #[serde(default)]
    text: Option<String>,
    /// The pending owner, for `confirm_owner`.
    #[serde(default)]
    pub(super) person: Option<String>,
}

/// The signed-in owner, provided the form carries their session's CSRF token; otherwise the
/// answer to send instead (the sign-in page, or a refusal that changed nothing).
pub(super) async fn form_owner<'c>(
    state: &AppState,
    credential: &'c Credential,
    csrf: &str,
    back: &str,
) -> Result<&'c OwnerAccount, Response> {
    let Some((account, session)) = owner(credential) else {
        return Err(to_sign_in(back));
    };
    if !csrf_valid(
        state.auth.session_key.expose().as_bytes(),
        session,
        Some(csrf),
    ) {
        return Err(problem(
            state,
            Some(account.email.clone()),
            StatusCode::FORBIDDEN,
            "This form is stale or did not come from your desk (CSRF check failed). Nothing was changed; reload the page and try again.".into(),
            back,
        )
        .await);
    }
    Ok(account)
}

/// `POST /desk/bugs/{id}/act`: `step=confirm` shows what will happen; `step=do` does it.
pub async fn act(
    State(state): State<AppState>,
    credential: Credential,
    Path(id): Path<String>,
    Form(form): Form<ActForm>,
) -> Response {
    let back = format!("/desk/bugs/{id}");
    let account = match form_owner(&state, &credential, &form.csrf, &back).await {
        Ok(account) => account,
        Err(answer) => return answer,
    };
    let email = Some(account.email.clone());
    let Some(stored) = state.store.load_bug(&id).await.ok().flatten() else {
        return problem(
            &state,
            email,
            StatusCode::NOT_FOUND,
            format!("No bug {id}."),
            "/desk",
        )
        .await;
    };
    let bug = stored.bug;
    let head = bug
        .pull_request
        .as_ref()
        .map(|pr| pr.head.as_str().to_owned());
    let action = form.action.as_str();
    if action == "contact" {
        let report = form.report.clone().unwrap_or_default();
        let belongs = bug.reports.contains(&report);
        if !belongs {
            return problem(
                &state,
                email,
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("Report {report:?} is not one of bug {id}'s reports."),
                &back,
            )
            .await;
        }
        return contact(
            &state,
            account,
            &form,
            &report,
            &back,
            &format!("{back}/act"),
        )
        .await;
    }
    if !matches!(
        action,
        "approve" | "merge" | "reopen" | "retry" | "take_over"
    ) {
        return problem(
            &state,
            email,
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Unknown action {action:?}."),
            &back,
        )
        .await;
    }
    if form.step == Step::Confirm {
        let consequences = match action {
            "approve" => vec![
                format!("You approve commit {} of draft pull request #{} — this exact commit, nothing else.", head.clone().unwrap_or_default(), bug.pull_request.as_ref().map(|p| p.number).unwrap_or_default()),
                "A new push to the pull request clears every approval.".to_owned(),
                "Nothing is merged yet: merging is a separate step.".to_owned(),
            ],
            "merge" => vec![
                format!("The desk merges commit {} into the default branch with a real git merge.", head.clone().unwrap_or_default()),
                "The merge happens only if the approvals still hold for this head and it merges cleanly.".to_owned(),
                "The reporters are asked whether it is fixed only after the recorder proves the merge is live.".to_owned(),
            ],
            "retry" => vec![
                "The crew picks the bug up again: the fixer, with two fresh attempts, when a reporter confirmed its test; the reproducer otherwise.".to_owned(),
                "Why it stopped stays in the ledger.".to_owned(),
            ],
            "take_over" => vec![
                "The crew stops: from now on it can neither start, propose nor fix anything on this bug, nor hand it over (its advisory notes are still kept as notes).".to_owned(),
                "The bug waits for a person until an owner gives it back (Try again) or reopens it.".to_owned(),
                "Reporters see that a person is working on it.".to_owned(),
            ],
            _ => vec![
                "The bug goes back to the start of the loop: the crew must prove it again.".to_owned(),
                "Approvals and the current fix stop counting.".to_owned(),
                "Reporters see on their tracking page that the bug was reopened.".to_owned(),
            ],
        };
        let page = DeskPage::Confirm(Box::new(Confirm {
            owner: account.email.clone(),
            csrf: form.csrf.clone(),
            bug: id.clone(),
            action: action.to_owned(),
            head: head
                .clone()
                .filter(|_| matches!(action, "approve" | "merge")),
            consequences,
            target: format!("{back}/act"),
            report: None,
            person: None,
        }));
        return render(&state, &format!("{back}/act"), StatusCode::OK, page).await;
    }
    let actor = crate::auth::owner_actor(account);
    let result = match action {
        "approve" | "merge" => {
            let Some(head) = form.head.clone() else {
                return problem(
                    &state,
                    email,
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "The exact head is missing.".into(),
                    &back,
                )
                .await;
            };
            match crate::service::forge::parse_sha(&head) {
                Err(refused) => Err(refused),
                Ok(head) if action == "approve" => {
                    crate::service::forge::approve(&state, &id, head, &actor).await
                }
                Ok(head) => crate::service::forge::merge(&state, &id, head, &actor)
                    .await
                    .map(|merged| merged.recorded),
            }
        }
        "retry" | "take_over" => {
            let command = if action == "retry" {
                Command::OwnerRetry
            } else {
                Command::OwnerTakeOver
            };
            crate::service::commands::run_command(&state, &id, command, &actor).await
        }
        _ => {
            let reason = form.reason.clone().unwrap_or_default();
            if reason.trim().is_empty() {
                return problem(
                    &state,
                    email,
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "A reopen needs a reason.".into(),
                    &back,
                )
                .await;
            }
            crate::service::commands::run_command(
                &state,
                &id,
                Command::OwnerReopen {
                    reason: reason.chars().take(2_000).collect(),
                },
                &actor,
            )
            .await
        }
    };
    match result {
        Ok(_) => Redirect::to(&format!("{back}?done={action}")).into_response(),
        Err(refused) => problem(&state, email, refused.status, refused.error.message, &back).await,
    }
}

/// `POST /desk/reports/{id}/act`: write to the reporter of a report that has no bug (the
/// quarantine queue's only way back to them).
pub async fn act_on_report(
    State(state): State<AppState>,
    credential: Credential,
    Path(id): Path<String>,
    Form(form): Form<ActForm>,
) -> Response {
    let back = "/desk".to_owned();
    let account = match form_owner(&state, &credential, &form.csrf, &back).await {
        Ok(account) => account,
        Err(answer) => return answer,
    };
    if form.action != "contact" {
        return problem(
            &state,
            Some(account.email.clone()),
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Unknown action {:?}.", form.action),
            &back,
        )
        .await;
    }
    contact(
        &state,
        account,
        &form,
        &id,
        &back,
        &format!("/desk/reports/{id}/act"),
    )
    .await
}

/// Confirms, then sends, an owner's message to `report`'s reporter.
async fn contact(
    state: &AppState,
    account: &OwnerAccount,
    form: &ActForm,
    report: &str,
    back: &str,
    target: &str,
) -> Response {
    let email = Some(account.email.clone());
    let stored = match state.store.report(report).await {
        Ok(Some(stored)) => stored,
        Ok(None) => {
            return problem(
                state,
                email,
                StatusCode::NOT_FOUND,
                format!("No report {report}."),
                back,
            )
            .await
        }
        Err(error) => {
            let refused = Refused::storage(error);
            return problem(state, email, refused.status, refused.error.message, back).await;
        }
    };
    if form.step == Step::Confirm {
        let mut consequences = vec![
            format!("Your message shows on the private tracking page of report {report} at once, signed as the desk's owners."),
            "The reporter cannot answer it here; if you ask something, they can file a new report or answer the desk's questions.".to_owned(),
        ];
        consequences.push(if stored.contact.is_some() {
            "They left an email address: the concierge also emails the message to them.".to_owned()
        } else {
            "They left no email address: it waits on their tracking page until they open their link.".to_owned()
        });
        let page = DeskPage::Confirm(Box::new(Confirm {
            owner: account.email.clone(),
            csrf: form.csrf.clone(),
            bug: stored.bug_id.clone().unwrap_or_default(),
            action: "contact".to_owned(),
            head: None,
            consequences,
            target: target.to_owned(),
            report: Some(report.to_owned()),
            person: None,
        }));
        return render(state, target, StatusCode::OK, page).await;
    }
    let text = form.text.clone().unwrap_or_default();
    match crate::service::notify::send_message(state, report, &account.email, &text).await {
        Ok(_) => Redirect::to(&format!("{back}?done=contact")).into_response(),
        Err(refused) => problem(state, email, refused.status, refused.error.message, back).await,
    }
}
