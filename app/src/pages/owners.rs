//! `/desk/owners`: the desk's owners as a hydrated page on the [`desk_owners`] server
//! function. Inviting another owner and confirming a pending one ask first, like every desk
//! action (the question's page `/desk/owners/confirm?action=…` without JavaScript, the page's
//! dialog with it), and are done by `desk_act`. A new invitation's link is shown once: the
//! desk keeps only its fingerprint.

use super::confirm::{Asking, QuestionDialog};
use super::desk::DeskRefusal;
use crate::desk_fns::desk_owners;
use crate::erase::IntoAnySync;
use crate::layout::PageTitle;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use {
    super::confirm::Ask,
    super::desk::DeskNav,
    crate::dto::{DeskAction, OwnersDesk},
    crate::net::format_time,
    crate::screen::{OwnersScreen, ServerHtml},
};

/// `/desk/owners`.
#[component]
pub fn OwnersPage() -> impl IntoView {
    let asking = Asking::provide();
    // Fetched again after an action: an invitation made in the dialog shows at once.
    let owners = Resource::new(move || asking.act.version().get(), |_| desk_owners());
    view! {
        <PageTitle text="Owners · Desk · Reporter-to-Release"/>
        <Transition fallback=|| view! { <p class="hint">"Loading the owners…"</p> }>
            {move || Suspend::new(async move {
                match owners.await {
                    Ok(owners) => view! {
                        <div class="fragment" on:submit=asking.on_submit()
                            inner_html=owners.html.into_inner()></div>
                    }.into_any_sync(),
                    Err(error) => view! { <DeskRefusal error back="/desk".to_owned()/> }.into_any_sync(),
                }
            })}
        </Transition>
        <QuestionDialog/>
    }
}

/// The owners page as the server sends it.
#[cfg(feature = "ssr")]
pub(crate) fn owners_screen(owners: OwnersDesk) -> OwnersScreen {
    OwnersScreen {
        html: ServerHtml::render(view! { <OwnersView owners=owners.clone()/> }),
        data: owners,
    }
}

#[cfg(feature = "ssr")]
#[component]
fn OwnersView(owners: OwnersDesk) -> impl IntoView {
    view! {
        <DeskNav owner=owners.owner.clone()/>
        <section class="panel">
            <h1>"Owners"</h1>
            <p class="hint">"People who can approve, merge, reopen and invite. A tier-2 change needs two of them, one a code owner. Once the desk has two owners, a new owner counts only after an owner other than the one who invited them confirms them."</p>
            <ul class="plain" data-testid="owners">
                {owners.owners.iter().map(|o| {
                    let how = match (&o.invited_by, &o.confirmed_by) {
                        (None, _) => "first owner".to_owned(),
                        (Some(by), None) => format!("invited by {by}"),
                        (Some(by), Some(confirmed)) => format!("invited by {by}, confirmed by {confirmed}"),
                    };
                    view! {
                        <li data-testid="owner-line">
                            <strong>{o.email.clone()}</strong>
                            " · " {how}
                            {o.pending.then(|| view! { " · " <span class="badge" data-testid="owner-pending">"waiting for a second owner's confirmation"</span> })}
                            {o.can_confirm.then(|| view! {
                                " "
                                <Ask bug=String::new() action=DeskAction::ConfirmOwner label=format!("Confirm {}…", o.email) person=o.id.clone()/>
                            })}
                        </li>
                    }
                }).collect_view()}
            </ul>
            {match owners.invite_link.clone() {
                Some(link) => view! {
                    <div class="notice" role="status">
                        <p><strong>"The invitation, shown this once:"</strong></p>
                        <p><code class="hash" data-testid="invite-link">{link}</code></p>
                        <p class="hint">{format!("Put it after this desk's address and send it privately. It works once, until {}.", owners.expires_at.map(format_time).unwrap_or_default())}</p>
                    </div>
                }.into_any_sync(),
                None => view! {
                    <Ask bug=String::new() action=DeskAction::Invite label="Invite another owner…".to_owned()/>
                }.into_any_sync(),
            }}
        </section>
    }
}
