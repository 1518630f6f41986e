//! `/desk/owners`: every owner; invite another (a one-time link, shown once) and confirm a
//! pending one, asked first and done through the desk's server functions like every action.
//! `/desk/invite`: the invited person chooses their email and password (a plain form post:
//! it takes a password and loads no scripts). Tier-2 merges need two distinct people, so a
//! desk is not really usable with one owner.

use super::*;
use crate::error::Kind;
use app::dto::{InvitePage, OwnerLine, OwnersDesk};
use axum::http::HeaderValue;

/// The invitation just made, kept by the owner's own browser for the one page load that shows
/// it: the desk keeps only a fingerprint, so without JavaScript (the form post comes back to
/// `/desk/owners` by a redirect) the link has nowhere else to wait.
const INVITE_COOKIE: &str = "r2r_invite";

/// `GET /desk/owners` and `GET /desk/owners/confirm?action=…`: hydrated pages on the
/// `desk_owners` and `desk_question` server functions (the question posts to `desk_act`).
pub async fn owners(
    State(state): State<AppState>,
    credential: Credential,
    request: axum::extract::Request,
) -> Response {
    if owner(&credential).is_none() {
        return to_sign_in("/desk/owners");
    }
    super::page_with_forms(&state, request).await
}

/// The owners page for `account` (signed in with `session`): every owner, and the invitation
/// `headers` bring back from the action that made it — shown this once (the second value
/// clears it from the browser).
pub(super) async fn owners_data(
    state: &AppState,
    account: &OwnerAccount,
    session: &str,
    headers: &HeaderMap,
) -> Result<(OwnersDesk, Option<HeaderValue>), Refused> {
    let owners = state
        .store
        .owner_listing()
        .await?
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
        .collect();
    let kept = crate::auth::cookie(headers, INVITE_COOKIE);
    let invite = kept.and_then(|value| kept_invitation(state, session, value));
    let clear = kept.map(|_| invite_cookie(state, "", 0));
    let (invite_link, expires_at) = invite.unzip();
    Ok((
        OwnersDesk {
            owner: account.email.clone(),
            csrf: csrf(state, session),
            owners,
            invite_link,
            expires_at,
        },
        clear,
    ))
}

/// The `Set-Cookie` value that keeps `value` for the desk's pages only, for `max_age_s`.
fn invite_cookie(state: &AppState, value: &str, max_age_s: i64) -> HeaderValue {
    crate::web::session::owner_cookie_header(state, INVITE_COOKIE, "/desk", value, max_age_s)
}

/// The invitation a cookie carries (`secret.expires.tag`), if this desk made it for this
/// session: one planted by anyone else is ignored.
fn kept_invitation(state: &AppState, session: &str, value: &str) -> Option<(String, i64)> {
    let mut parts = value.split('.');
    let (secret, expires, tag) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || secret.len() != 64
        || !secret.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return None;
    }
    let expires_at: i64 = expires.parse().ok()?;
    let data = format!("{secret}.{expires_at}");
    super::tag_valid(state, "invite", session, &data, tag)
        .then(|| (format!("/desk/invite#{secret}"), expires_at))
}

/// What `invite` or `confirm_owner` (of pending owner `person`) will do. Reads only.
pub(super) async fn question(
    state: &AppState,
    account: &OwnerAccount,
    session: &str,
    action: domain::DeskAction,
    person: Option<&str>,
) -> Result<Confirm, Refused> {
    let consequences = if action == domain::DeskAction::Invite {
        vec![
            "The desk makes a one-time link, valid for 72 hours, and shows it to you once.".to_owned(),
            "Whoever opens it first chooses an email and a password and becomes an owner with every power you have: approve, merge, reopen, invite.".to_owned(),
            "Send it privately. The desk keeps only a fingerprint of it, so it cannot show it again.".to_owned(),
        ]
    } else {
        let pending = pending_owner(state, account, person).await?;
        vec![
            format!("{} becomes an owner with every power you have: approve, merge, reopen, invite.", pending.email),
            "Their approval then counts as a second person's. Confirm only someone you know is a different person from the one who invited them.".to_owned(),
            "The confirmation is recorded under your name in the owners' tamper-evident trail.".to_owned(),
        ]
    };
    Ok(Confirm {
        owner: account.email.clone(),
        csrf: csrf(state, session),
        bug: String::new(),
        action,
        report: None,
        person: person
            .filter(|_| action == domain::DeskAction::ConfirmOwner)
            .map(str::to_owned),
        head: None,
        consequences,
        choices: Vec::new(),
    })
}

fn missing_person() -> Refused {
    Refused::new(
        Kind::Invalid,
        "missing_person",
        "Name the owner to confirm: open the question again from the Owners page.",
    )
}

/// The pending owner `person` whom `account` may confirm, or why not (the store decides again
/// when it is done).
async fn pending_owner(
    state: &AppState,
    account: &OwnerAccount,
    person: Option<&str>,
) -> Result<store::OwnerListing, Refused> {
    let person = person.unwrap_or_default();
    if person.is_empty() {
        return Err(missing_person());
    }
    let listed = state
        .store
        .owner_listing()
        .await?
        .into_iter()
        .find(|o| o.id == person)
        .ok_or_else(|| {
            Refused::new(
                Kind::NotFound,
                "unknown_owner",
                "There is no owner with that id.",
            )
        })?;
    if listed.status != "pending" {
        return Err(Refused::new(
            Kind::Conflict,
            "not_pending",
            format!("{} is not waiting for a confirmation.", listed.email),
        ));
    }
    if listed.invited_by.as_deref() == Some(account.email.as_str()) || listed.id == account.id {
        return Err(Refused::new(
            Kind::Forbidden,
            "same_person",
            "The owner who invited them cannot confirm them: a second owner must.",
        ));
    }
    Ok(listed)
}

/// Does `invite` or `confirm_owner` (the CSRF token already checked): answers where the desk
/// goes next, and for an invitation the cookie that keeps its link for the page that shows it.
pub(super) async fn perform(
    state: &AppState,
    account: &OwnerAccount,
    session: &str,
    action: domain::DeskAction,
    person: Option<&str>,
) -> Result<(String, Option<HeaderValue>), Refused> {
    if action == domain::DeskAction::Invite {
        let (link, expires_at) = crate::service::owners::create_invite(state, account).await?;
        let secret = link.rsplit('#').next().unwrap_or_default();
        let data = format!("{secret}.{expires_at}");
        let tag = super::tag(state, "invite", session, &data);
        let cookie = invite_cookie(state, &format!("{data}.{tag}"), 600);
        return Ok(("/desk/owners".to_owned(), Some(cookie)));
    }
    let person = person.unwrap_or_default();
    if person.is_empty() {
        return Err(missing_person());
    }
    crate::service::owners::confirm_owner(state, account, person).await?;
    // The owner's line now says who confirmed them.
    Ok(("/desk/owners".to_owned(), None))
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
                refused.status(),
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
