//! Who becomes an owner, on both backends: an invitation works once even when many accept it
//! at the same instant, a desk with two owners needs a second person to confirm a third, and
//! the owners' trail shows an owner that was added behind its back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use store::{ConfirmOutcome, InviteOutcome, NewOwner, Store};
use support::{fresh, raw};

fn person(id: &str, email: &str) -> NewOwner {
    NewOwner {
        id: id.into(),
        email: email.into(),
        password_hash: "$argon2id$v=19$x".into(),
    }
}

async fn first_owner(store: &Store) {
    assert!(store
        .ensure_owner(&person("owner-ana", " Ana@Desk.test "), 1)
        .await
        .unwrap());
}

async fn one_invitation_accepted_by_many_at_once_makes_one_owner(backend: &str) {
    let (store, _url, _dir) = fresh(backend).await;
    first_owner(&store).await;
    store
        .create_invite("invite-1", "owner-ana", 2, 1_000_000)
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for n in 0..16 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .accept_invite(
                    "invite-1",
                    &person(&format!("owner-{n}"), &format!("taker{n}@desk.test")),
                    3,
                )
                .await
                .unwrap()
        }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    let created = outcomes
        .iter()
        .filter(|o| **o == InviteOutcome::Created)
        .count();
    assert_eq!(created, 1, "{outcomes:?}");
    assert!(outcomes
        .iter()
        .all(|o| matches!(o, InviteOutcome::Created | InviteOutcome::Used)));
    assert_eq!(store.owner_listing().await.unwrap().len(), 2);
    assert_eq!(store.verify_owner_trail().await.unwrap(), Ok(2));
}

async fn two_invitations_accepted_at_once_leave_only_one_owner_unconfirmed(backend: &str) {
    let (store, _url, _dir) = fresh(backend).await;
    first_owner(&store).await;
    for n in 0..6 {
        store
            .create_invite(&format!("invite-{n}"), "owner-ana", 2, 1_000_000)
            .await
            .unwrap();
    }
    let mut tasks = Vec::new();
    for n in 0..6 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .accept_invite(
                    &format!("invite-{n}"),
                    &person(&format!("owner-{n}"), &format!("new{n}@desk.test")),
                    3,
                )
                .await
                .unwrap()
        }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    // The first owner's word makes exactly one more owner; every other one waits.
    let active = outcomes
        .iter()
        .filter(|o| **o == InviteOutcome::Created)
        .count();
    let pending = outcomes
        .iter()
        .filter(|o| **o == InviteOutcome::AwaitingConfirmation)
        .count();
    assert_eq!((active, pending), (1, 5), "{outcomes:?}");
}

async fn a_third_owner_counts_only_once_someone_other_than_the_inviter_confirms(backend: &str) {
    let (store, _url, _dir) = fresh(backend).await;
    first_owner(&store).await;
    store
        .create_invite("to-ben", "owner-ana", 2, 1_000_000)
        .await
        .unwrap();
    assert_eq!(
        store
            .accept_invite("to-ben", &person("owner-ben", "ben@desk.test"), 3)
            .await
            .unwrap(),
        InviteOutcome::Created
    );
    // Ana alone now tries to mint a third identity.
    store
        .create_invite("to-sock", "owner-ana", 4, 1_000_000)
        .await
        .unwrap();
    assert_eq!(
        store
            .accept_invite("to-sock", &person("owner-sock", "sock@desk.test"), 5)
            .await
            .unwrap(),
        InviteOutcome::AwaitingConfirmation
    );
    let sock = store
        .owner_by_email("SOCK@desk.test")
        .await
        .unwrap()
        .unwrap();
    assert!(!sock.active, "a pending owner is not an owner yet");
    assert_eq!(
        store
            .confirm_owner("owner-sock", "owner-ana", 6)
            .await
            .unwrap(),
        ConfirmOutcome::NeedsAnotherOwner,
        "the inviter cannot confirm their own invitee"
    );
    assert_eq!(
        store
            .confirm_owner("owner-sock", "owner-sock", 6)
            .await
            .unwrap(),
        ConfirmOutcome::NotAnOwner,
        "nor can the pending owner"
    );
    assert_eq!(
        store
            .confirm_owner("owner-sock", "owner-ben", 7)
            .await
            .unwrap(),
        ConfirmOutcome::Confirmed
    );
    assert_eq!(
        store
            .confirm_owner("owner-sock", "owner-ben", 8)
            .await
            .unwrap(),
        ConfirmOutcome::NotPending
    );
    assert!(
        store
            .owner_by_email("sock@desk.test")
            .await
            .unwrap()
            .unwrap()
            .active
    );
    let listing = store.owner_listing().await.unwrap();
    let sock = listing.iter().find(|o| o.id == "owner-sock").unwrap();
    assert_eq!(sock.invited_by.as_deref(), Some("ana@desk.test"));
    assert_eq!(sock.confirmed_by.as_deref(), Some("ben@desk.test"));
    // created ×3 and one confirmation, all chained.
    assert_eq!(store.verify_owner_trail().await.unwrap(), Ok(4));
}

async fn an_owner_added_behind_the_trails_back_breaks_verification(backend: &str) {
    let (store, url, _dir) = fresh(backend).await;
    first_owner(&store).await;
    assert!(store.verify_ledger().await.unwrap().is_ok());
    raw(
        &url,
        &[
            "INSERT INTO owners (id, email, password_hash, created_at, status) \
           VALUES ('owner-evil', 'evil@desk.test', 'x', 9, 'active')",
        ],
    )
    .await;
    let broken = store.verify_ledger().await.unwrap().unwrap_err();
    assert!(broken.reason.contains("owner-evil"), "{broken}");
}

on_both!(
    one_invitation_accepted_by_many_at_once_makes_one_owner,
    two_invitations_accepted_at_once_leave_only_one_owner_unconfirmed,
    a_third_owner_counts_only_once_someone_other_than_the_inviter_confirms,
    an_owner_added_behind_the_trails_back_breaks_verification,
);
