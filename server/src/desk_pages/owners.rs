//! `/desk/owners`: invite another owner (a one-time link, shown once); `/desk/invite`: the
//! invited person chooses their email and password. Tier-2 merges need two distinct people,
//! so a desk is not really usable with one owner.

use super::actions::form_owner;
use super::*;
use app::dto::{InvitePage, OwnersDesk};

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
    let owners = match state.store.owner_emails().await {
        Ok(owners) => owners,
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
    if form.step == "confirm" {
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
        }));
        return render(&state, "/desk/owners/act", StatusCode::OK, page).await;
    }
    match crate::api::create_invite(&state, account).await {
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
    let client = crate::reporter::client_key_of(&state, addr, &headers);
    match crate::api::accept_invitation(&state, &client, &token, &form.email, form.password).await {
        Ok((_, email)) => {
            let page = InvitePage {
                email,
                created: true,
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
