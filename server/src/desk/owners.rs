//! `/desk/owners`: invite another owner (a one-time link, shown once); `/desk/invite`: the
//! invited person chooses their email and password. Tier-2 merges need two distinct people,
//! so a desk is not really usable with one owner.

use super::actions::form_owner;
use super::*;
use app::dto::{InvitePage, OwnerLine, OwnersDesk};

/// `GET /desk/owners`.
pub async fn owners(State(state): State<AppState>, credential: Credential) -> Response {
    let Some((account, session)) = owner(&credential) else {
        return to_sign_in("/desk/owners");
    };
    owners_page(&state, account, session, None).await
}

async fn owners_page(
    state: &AppState,
    account: &OwnerAccount,
    session: &str,
    invite: Option<(String, i64)>,
) -> Response {
    let owners = match state.store.owner_listing().await {
        Ok(owners) => owners
            .into_iter()
            .map(|o| {
                let pending = o.status == "pending";
                // The store decides for real; this only spares a button that would be refused.
                let invited_by_me = o.invited_by.as_deref() == Some(account.email.as_str());
                OwnerLine {
                    can_confirm: pending && !invited_by_me && o.id != account.id,
                    id: o.id,
                    email: o.email,
                    pending,
                    invited_by: o.invited_by,
                    confirmed_by: o.confirmed_by,
                }
            })
            .collect(),
        Err(error) => {
            let refused = Refused::storage(error);
            return problem(
                state,
                Some(account.email.clone()),
                refused.status,
                refused.error.message,
                "/desk",
            )
            .await;
        }
    };
    let (invite_link, expires_at) = invite.unzip();
    let page = DeskPage::Owners(Box::new(OwnersDesk {
        owner: account.email.clone(),
        csrf: csrf(state, session),
        owners,
        invite_link,
        expires_at,
    }));
    render(state, "/desk/owners", StatusCode::OK, page).await
}

/// `POST /desk/owners/act`: `action=invite`, confirmed first.
pub async fn owners_act(
    State(state): State<AppState>,
    credential: Credential,
    Form(form): Form<ActForm>,
) -> Response {
    let back = "/desk/owners";
    let account = match form_owner(&state, &credential, &form.csrf, back).await {
        Ok(account) => account,
        Err(answer) => return answer,
    };
    let Some((_, session)) = owner(&credential) else {
        return to_sign_in(back);
    };
    if form.action == "confirm_owner" {
        return confirm_pending_owner(&state, account, session, &form).await;
    }
    if form.action != "invite" {
        return problem(
            &state,
            Some(account.email.clone()),
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Unknown action {:?}.", form.action),
            back,
        )
        .await;
    }
    if form.step == super::actions::Step::Confirm {
        let page = DeskPage::Confirm(Box::new(Confirm {
            owner: account.email.clone(),
            csrf: form.csrf.clone(),
            bug: String::new(),
            action: "invite".to_owned(),
            head: None,
            consequences: vec![
                "The desk makes a one-time link, valid for 72 hours, and shows it to you once.".to_owned(),
                "Whoever opens it first chooses an email and a password and becomes an owner with every power you have: approve, merge, reopen, invite.".to_owned(),
                "Send it privately. The desk keeps only a fingerprint of it, so it cannot show it again.".to_owned(),
            ],
            target: "/desk/owners/act".to_owned(),
            report: None,
            person: None,
            choices: Vec::new(),
        }));
        return render(&state, "/desk/owners/act", StatusCode::OK, page).await;
    }
    match crate::service::owners::create_invite(&state, account).await {
        Ok(invite) => owners_page(&state, account, session, Some(invite)).await,
        Err(refused) => {
            problem(
                &state,
                Some(account.email.clone()),
                refused.status,
                refused.error.message,
                back,
            )
            .await
        }
    }
}

/// `action=confirm_owner`: asks first, then confirms the pending owner `person`.
async fn confirm_pending_owner(
    state: &AppState,
    account: &OwnerAccount,
    session: &str,
    form: &ActForm,
) -> Response {
    let back = "/desk/owners";
    let person = form.person.clone().unwrap_or_default();
    if form.step == super::actions::Step::Confirm {
        let email = match state.store.owner_listing().await {
            Ok(owners) => owners
                .into_iter()
                .find(|o| o.id == person)
                .map(|o| o.email)
                .unwrap_or_else(|| person.clone()),
            Err(_) => person.clone(),
        };
        let page = DeskPage::Confirm(Box::new(Confirm {
            owner: account.email.clone(),
            csrf: form.csrf.clone(),
            bug: String::new(),
            action: "confirm_owner".to_owned(),
            head: None,
            consequences: vec![
                format!("{email} becomes an owner with every power you have: approve, merge, reopen, invite."),
                "Their approval then counts as a second person's. Confirm only someone you know is a different person from the one who invited them.".to_owned(),
                "The confirmation is recorded under your name in the owners' tamper-evident trail.".to_owned(),
            ],
            target: "/desk/owners/act".to_owned(),
            report: None,
            person: Some(person),
            choices: Vec::new(),
        }));
        return render(state, "/desk/owners/act", StatusCode::OK, page).await;
    }
    match crate::service::owners::confirm_owner(state, account, &person).await {
        Ok(()) => owners_page(state, account, session, None).await,
        Err(refused) => {
            problem(
                state,
                Some(account.email.clone()),
                refused.status,
                refused.error.message,
                back,
            )
            .await
        }
    }
}

/// `GET /desk/invite`: the form (the secret comes from the link's fragment by `/invite.js`,
/// or is pasted).
pub async fn invite_page(State(state): State<AppState>) -> Response {
    render(
        &state,
        "/desk/invite",
        StatusCode::OK,
        DeskPage::Invite(Box::default()),
    )
    .await
}

#[derive(Deserialize)]
pub struct InviteForm {
    token: String,
    email: String,
    password: String,
}

impl std::fmt::Debug for InviteForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InviteForm")
            .field("email", &self.email)
            .finish_non_exhaustive()
    }
}

/// `POST /desk/invite`: creates the account; a refusal keeps what was typed except the
/// password.
pub async fn invite_accept(
    State(state): State<AppState>,
    addr: ClientAddr,
    headers: HeaderMap,
    Form(form): Form<InviteForm>,
) -> Response {
    let token = extract_secret(&form.token);
    let client = crate::web::client_key_of(&state, addr, &headers);
    let accepted = match crate::web::session::refuse_cross_site(&headers) {
        Ok(()) => {
            crate::service::owners::accept_invitation(
                &state,
                &client,
                &token,
                &form.email,
                form.password,
            )
            .await
        }
        Err(refused) => Err(refused),
    };
    match accepted {
        Ok((_, email, active)) => {
            let page = InvitePage {
                email,
                created: true,
                pending: !active,
                ..InvitePage::default()
            };
            render(
                &state,
                "/desk/invite",
                StatusCode::CREATED,
                DeskPage::Invite(Box::new(page)),
            )
            .await
        }
        Err(refused) => {
            let mut message = refused.error.message.clone();
            for (field, reason) in &refused.error.fields {
                message.push_str(&format!(" {field}: {reason}."));
            }
            let page = InvitePage {
                error: Some(message),
                email: form.email.trim().to_owned(),
                token,
                created: false,
                pending: false,
            };
            render(
                &state,
                "/desk/invite",
                refused.status,
                DeskPage::Invite(Box::new(page)),
            )
            .await
        }
    }
}

/// The secret from a pasted link (`…/desk/invite#SECRET`) or the secret itself.
fn extract_secret(text: &str) -> String {
    text.trim()
        .rsplit('#')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::extract_secret;

    #[test]
    fn a_pasted_link_or_its_secret_both_work() {
        assert_eq!(
            extract_secret(" http://desk.test/desk/invite#abc123 "),
            "abc123"
        );
        assert_eq!(extract_secret("abc123"), "abc123");
        assert_eq!(extract_secret(""), "");
    }
}
