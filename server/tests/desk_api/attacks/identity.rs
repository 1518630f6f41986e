//! Attacks on "distinct people decide": one owner counted twice, one owner minting a second
//! approving identity, forged sign-ins and sign-outs from another site, and sign-in limits
//! dodged with spaces or turned against an owner.

use super::support::{bug_in_review, forge, Target};
use crate::common::{OWNER, PASSWORD};
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_owner_approving_through_the_api_and_through_the_desk_form_counts_once() {
    // A tier-2 change (a migration) with the owner as its code owner: it needs two people.
    let (bare, work, _dir) = forge(&[
        (".github/CODEOWNERS", &format!("* {OWNER}\n")),
        ("migrations/0001.sql", "CREATE TABLE t (x INT);\n"),
    ])
    .await;
    let target = Target::start(&[("R2R_LOCAL_FORGE", bare.to_str().unwrap())]);
    let (bug, head) = bug_in_review(
        &target,
        &work,
        &[("migrations/0001.sql", "CREATE TABLE t (x BIGINT);\n")],
    )
    .await;
    let owner = target.owner().await;
    let (status, body) = target
        .post_as(
            &owner,
            &format!("/api/v1/bugs/{bug}/approve"),
            json!({"head": head}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let status = target
        .form_as(
            &owner,
            "/desk/fn/act",
            &[("action", "approve"), ("bug", &bug), ("head", &head)],
        )
        .await;
    assert!(status < 500, "{status}");
    let (_, _, text) = target.get_as(&owner, &format!("/api/v1/bugs/{bug}")).await;
    let bug_json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        bug_json["bug"]["state"], "in_review",
        "one person approved twice; tier 2 still needs a second: {bug_json}"
    );
    let approvers: std::collections::BTreeSet<String> = bug_json["bug"]["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["approver"]["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(approvers.len(), 1, "{approvers:?}");
    // And the merge is refused: one person cannot satisfy a tier-2 gate alone.
    let (status, _) = target
        .post_as(
            &owner,
            &format!("/api/v1/bugs/{bug}/merge"),
            json!({"head": head}),
        )
        .await;
    assert_eq!(status, 409);
}

async fn invite(target: &Target, session: &super::support::Session) -> String {
    let (status, body) = target
        .post_as(session, "/api/v1/owners/invites", json!({}))
        .await;
    assert_eq!(status, 201, "{body}");
    body["invite_link"]
        .as_str()
        .unwrap()
        .trim_start_matches("/desk/invite#")
        .to_owned()
}

async fn accept(target: &Target, token: &str, email: &str) -> (u16, Value) {
    let response = target
        .client
        .post(target.url("/api/v1/owners/accept"))
        .json(&json!({"token": token, "email": email, "password": "a long enough password"}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_owner_alone_cannot_mint_a_second_approving_identity_once_the_desk_has_two_owners() {
    let target = Target::start(&[]);
    let ana = target.owner().await;
    let to_ben = invite(&target, &ana).await;
    assert_eq!(
        accept(&target, &to_ben, "ben@example.org").await.1["status"],
        "active"
    );
    let ben = target
        .session("ben@example.org", "a long enough password")
        .await;

    // An account that reads exactly like an existing owner's (a zero-width space, a byte
    // order mark) or carries markup is refused, and the invitation is not spent.
    let to_twin = invite(&target, &ana).await;
    for twin in [
        "owner@e2e.test\u{200B}",
        "\u{FEFF}ben@example.org",
        "a<b>c@evil.example",
    ] {
        let (status, body) = accept(&target, &to_twin, twin).await;
        assert_eq!(status, 422, "{twin:?}: {body}");
    }
    // Ana invites a sock puppet and accepts the invitation herself.
    let to_sock = invite(&target, &ana).await;
    let (status, body) = accept(&target, &to_sock, " Sock@Example.org ").await;
    assert_eq!(
        (status, body["status"].as_str()),
        (201, Some("pending")),
        "{body}"
    );
    let signed_in = target
        .client
        .post(target.url("/api/v1/session"))
        .json(&json!({"email": "sock@example.org", "password": "a long enough password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 403, "a pending owner cannot sign in");
    let sock_id = body["id"].as_str().unwrap().to_owned();
    let (status, body) = target
        .post_as(
            &ana,
            &format!("/api/v1/owners/{sock_id}/confirm"),
            json!({}),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("needs_another_owner"))
    );

    // Ben, a second person, confirms: now (and only now) the account works.
    let (status, _) = target
        .post_as(
            &ben,
            &format!("/api/v1/owners/{sock_id}/confirm"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    target
        .session("sock@example.org", "a long enough password")
        .await;
    let (_, _, text) = target.get_as(&ana, "/api/v1/owners").await;
    let owners: Value = serde_json::from_str(&text).unwrap();
    let sock = owners["owners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == sock_id.as_str())
        .unwrap()
        .clone();
    assert_eq!(sock["invited_by"], OWNER);
    assert_eq!(sock["confirmed_by"], "ben@example.org");

    // The trail of who made whom an owner verifies (and would show an edit).
    let verified = crate::common::r2r_with_env_file(&target.desk.env_file)
        .args(["ledger", "verify"])
        .env("DATABASE_URL", &target.desk.database_url)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&verified.stdout);
    assert!(verified.status.success(), "{printed}");
    assert!(printed.contains("4 owner events"), "{printed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_site_can_neither_sign_an_owner_in_nor_sign_them_out() {
    let target = Target::start(&[]);
    // Login CSRF: a page on another site posts the attacker's credentials to the desk.
    let forged = target
        .client
        .post(target.url("/desk/sign-in"))
        .header("origin", "http://evil.example")
        .form(&[("email", OWNER), ("password", PASSWORD), ("next", "/desk")])
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    assert!(
        !forged.headers().contains_key("set-cookie"),
        "no session from a cross-site form"
    );
    let forged_json = target
        .client
        .post(target.url("/api/v1/session"))
        .header("sec-fetch-site", "cross-site")
        .body(format!(r#"{{"email":"{OWNER}","password":"{PASSWORD}"}}"#))
        .send()
        .await
        .unwrap();
    assert_eq!(forged_json.status(), 403);

    // Logout CSRF: another site's form posts to sign-out with the owner's cookie.
    let owner = target.owner().await;
    let forged_out = target
        .client
        .post(target.url("/desk/sign-out"))
        .header("cookie", &owner.cookie)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(forged_out.status(), 403);
    assert!(!forged_out.headers().contains_key("set-cookie"));
    let (status, _, _) = target.get_as(&owner, "/api/v1/me").await;
    assert_eq!(status, 200, "the session survived");

    // The desk's own page still signs in and out.
    let own = target
        .client
        .post(target.url("/desk/sign-in"))
        .header("origin", target.base())
        .form(&[("email", OWNER), ("password", PASSWORD), ("next", "/desk")])
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), 303);
    assert!(own.headers().contains_key("set-cookie"));
    let out = target
        .client
        .post(target.url("/desk/sign-out"))
        .header("cookie", &owner.cookie)
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 303);
    let (status, _, _) = target.get_as(&owner, "/api/v1/me").await;
    assert_eq!(status, 401, "signed out for real");
}

async fn attempt(target: &Target, client_ip: &str, email: &str, password: &str) -> u16 {
    target
        .client
        .post(target.url("/api/v1/session"))
        .header("x-forwarded-for", client_ip)
        .json(&json!({"email": email, "password": password}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spaces_and_capitals_do_not_buy_fresh_sign_in_attempts() {
    let target = Target::start(&[
        ("R2R_RATE_LOGIN", "3/1h"),
        ("R2R_TRUSTED_PROXIES", "127.0.0.1"),
    ]);
    // Many clients, each guessing once, each writing the address differently: one address.
    let mut statuses = Vec::new();
    for n in 0..31 {
        let variant = format!(
            "{}{}{}",
            " ".repeat(n % 7),
            if n % 2 == 0 {
                OWNER.to_uppercase()
            } else {
                OWNER.to_owned()
            },
            "\t".repeat(n / 7)
        );
        statuses.push(attempt(&target, &format!("10.1.0.{n}"), &variant, "guess").await);
    }
    // The address's own bucket holds 30 (ten times the per-client limit) and refills slowly:
    // the attempts after it are refused whatever the spelling.
    assert!(statuses[..30].iter().all(|s| *s == 401), "{statuses:?}");
    assert_eq!(statuses[30], 429, "{statuses:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_guessing_an_owners_password_cannot_lock_the_owner_out() {
    let target = Target::start(&[
        ("R2R_RATE_LOGIN", "3/60s"),
        ("R2R_TRUSTED_PROXIES", "127.0.0.1"),
    ]);
    let mut stranger = Vec::new();
    for _ in 0..5 {
        stranger.push(attempt(&target, "10.2.0.66", OWNER, "guess").await);
    }
    assert_eq!(stranger, [401, 401, 401, 429, 429]);
    assert_eq!(
        attempt(&target, "10.2.0.7", OWNER, PASSWORD).await,
        201,
        "the owner, from their own address, still signs in"
    );
}

/// `X-Forwarded-For` is a claim: without `R2R_TRUSTED_PROXIES` it chooses nothing (a stranger
/// who writes a new address into it each time buys no fresh guesses), and behind a trusted
/// proxy only the right-most address the proxy appended counts — an address the stranger
/// writes to its left (the owner's) is not charged, so the owner still signs in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cannot_choose_its_address_with_x_forwarded_for() {
    let direct = Target::start(&[("R2R_RATE_LOGIN", "3/60s")]);
    let mut rotating = Vec::new();
    for n in 0..5 {
        rotating.push(attempt(&direct, &format!("10.5.0.{n}"), OWNER, "guess").await);
    }
    assert_eq!(
        rotating,
        [401, 401, 401, 429, 429],
        "one socket, one client, whatever the header says"
    );
    drop(direct);

    let proxied = Target::start(&[
        ("R2R_RATE_LOGIN", "3/60s"),
        ("R2R_TRUSTED_PROXIES", "127.0.0.1"),
    ]);
    let mut stranger = Vec::new();
    for _ in 0..5 {
        // The stranger writes the owner's address; the proxy appends the stranger's own.
        stranger.push(attempt(&proxied, "10.2.0.7, 10.2.0.66", OWNER, "guess").await);
    }
    assert_eq!(stranger, [401, 401, 401, 429, 429]);
    assert_eq!(
        attempt(&proxied, "10.2.0.7", OWNER, PASSWORD).await,
        201,
        "the owner's address was never charged"
    );
}
