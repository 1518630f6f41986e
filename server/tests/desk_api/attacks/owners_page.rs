//! Attacks on the owners page's server functions: who may see the owners and make an
//! invitation, the invitation's link shown once to its maker only (a signed cookie of their
//! own browser), and confirming a pending owner only by someone other than their inviter.

use super::desk_fns::{call, call_as, strangers};
use super::support::{Session, Target};

/// An invitation made on the desk as a browser without JavaScript makes it: the form post to
/// `desk_act`, then the owners page the answer sends it to, with the cookie it set. The link,
/// and that page's `Set-Cookie` answer.
async fn invite_from_the_desk(target: &Target, owner: &Session) -> (String, String) {
    let made = target
        .client
        .post(target.url("/desk/fn/act"))
        .header("cookie", &owner.cookie)
        .header("accept", "text/html")
        .header("referer", target.url("/desk/owners/confirm?action=invite"))
        .form(&[("csrf", owner.csrf.as_str()), ("action", "invite")])
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 302);
    assert_eq!(made.headers()["location"], "/desk/owners");
    let kept = made.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        kept.starts_with("r2r_invite=")
            && kept.contains("HttpOnly")
            && kept.contains("SameSite=Strict")
            && kept.contains("Path=/desk"),
        "{kept}"
    );
    let pair = kept.split(';').next().unwrap().to_owned();
    let page = target
        .client
        .get(target.url("/desk/owners"))
        .header("cookie", format!("{}; {pair}", owner.cookie))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let cleared = page.headers()["set-cookie"].to_str().unwrap().to_owned();
    let html = page.text().await.unwrap();
    let start = html.find("/desk/invite#").expect("the link is on the page");
    let link: String = html[start..].chars().take(13 + 64).collect();
    assert!(link[13..].bytes().all(|b| b.is_ascii_hexdigit()), "{link}");
    assert!(html.contains("/pkg/r2r.js"), "the owners page hydrates");
    (link, format!("{pair}|{cleared}"))
}

async fn accept(target: &Target, link: &str, email: &str) -> u16 {
    target
        .client
        .post(target.url("/api/v1/owners/accept"))
        .json(&serde_json::json!({
            "token": link.trim_start_matches("/desk/invite#"),
            "email": email,
            "password": "a long enough password",
        }))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owners_page_is_on_server_functions_and_an_invitation_shows_once_to_its_maker() {
    let target = Target::start(&[]);
    let owner = target.owner().await;

    // Nobody and no crew token sees the owners or makes an invitation.
    for (who, cookie, bearer, status, code) in &strangers(&target) {
        let (got, body) = call(
            &target,
            cookie.as_deref(),
            bearer.as_deref(),
            "/desk/fn/owners",
            &[],
        )
        .await;
        assert_eq!(
            (got, body["code"].as_str()),
            (*status, Some(*code)),
            "{who}: {body}"
        );
        assert!(body.get("owners").is_none(), "{who}: {body}");
        let (got, body) = call(
            &target,
            cookie.as_deref(),
            bearer.as_deref(),
            "/desk/fn/act",
            &[("csrf", owner.csrf.as_str()), ("action", "invite")],
        )
        .await;
        assert_eq!(got, *status, "{who}: {body}");
    }
    // The owner without the session's token: refused, no cookie, no link.
    let forged = target
        .client
        .post(target.url("/desk/fn/act"))
        .header("cookie", &owner.cookie)
        .header("accept", "application/json")
        .form(&[("csrf", "forged"), ("action", "invite")])
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    assert!(forged.headers().get("set-cookie").is_none());

    // The question says what will happen; asking makes nothing.
    let (got, question) = call_as(
        &target,
        &owner,
        "/desk/fn/question",
        &[("action", "invite")],
    )
    .await;
    assert_eq!(got, 200, "{question}");
    assert!(question["consequences"][0]
        .as_str()
        .unwrap()
        .contains("shows it to you once"));
    let (_, listed) = call_as(&target, &owner, "/desk/fn/owners", &[]).await;
    assert!(listed["invite_link"].is_null(), "{listed}");
    let (status, _, html) = target
        .get_as(&owner, "/desk/owners/confirm?action=invite")
        .await;
    assert_eq!(status, 200);
    assert!(
        html.contains("Invite another owner?") && html.contains("/desk/fn/act"),
        "{html}"
    );

    // Made without JavaScript: shown on the page it comes back to, and cleared there.
    let (link, cookies) = invite_from_the_desk(&target, &owner).await;
    let (pair, cleared) = cookies.split_once('|').unwrap();
    assert!(
        cleared.starts_with("r2r_invite=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
    let (_, _, again) = target.get_as(&owner, "/desk/owners").await;
    assert!(!again.contains("/desk/invite#"), "shown twice");
    // The same cookie in another owner's session (another browser), or a forged one: ignored.
    let second = target.owner().await;
    for cookie in [
        format!("{}; {pair}", second.cookie),
        format!(
            "{}; r2r_invite={}.{}.{}",
            owner.cookie,
            "a".repeat(64),
            i64::MAX,
            "0".repeat(24)
        ),
        format!("{}; r2r_invite=<script>alert(1)</script>", owner.cookie),
    ] {
        let html = target
            .client
            .get(target.url("/desk/owners"))
            .header("cookie", cookie.clone())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            !html.contains("/desk/invite#") && !html.contains("<script>alert"),
            "{cookie}"
        );
    }
    // The link works, once.
    assert_eq!(accept(&target, &link, "second@e2e.test").await, 201);
    assert_eq!(accept(&target, &link, "third@e2e.test").await, 409);

    // With JavaScript: the same function answers JSON and sets the same cookie.
    let hydrated = target
        .client
        .post(target.url("/desk/fn/act"))
        .header("cookie", &owner.cookie)
        .header("accept", "application/json")
        .form(&[("csrf", owner.csrf.as_str()), ("action", "invite")])
        .send()
        .await
        .unwrap();
    assert!(
        hydrated.status().is_success() || hydrated.status().is_redirection(),
        "{}",
        hydrated.status()
    );
    let kept = hydrated.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (got, listed) = call(
        &target,
        Some(&format!("{}; {kept}", owner.cookie)),
        None,
        "/desk/fn/owners",
        &[],
    )
    .await;
    assert_eq!(got, 200, "{listed}");
    let third_link = listed["invite_link"].as_str().unwrap().to_owned();

    // Past two owners a newcomer waits; the one who invited them cannot confirm them, by the
    // question or by the action; the other owner can, and it shows on the page.
    assert_eq!(accept(&target, &third_link, "third@e2e.test").await, 201);
    let (_, listed) = call_as(&target, &owner, "/desk/fn/owners", &[]).await;
    let pending = listed["owners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["email"] == "third@e2e.test")
        .unwrap()
        .clone();
    assert_eq!(pending["pending"], true);
    assert_eq!(
        pending["can_confirm"], false,
        "the inviter is offered no button"
    );
    let person = pending["id"].as_str().unwrap();
    let (got, body) = call_as(
        &target,
        &owner,
        "/desk/fn/question",
        &[("action", "confirm_owner"), ("person", person)],
    )
    .await;
    assert_eq!(
        (got, body["code"].as_str()),
        (403, Some("same_person")),
        "{body}"
    );
    let (got, body) = call_as(
        &target,
        &owner,
        "/desk/fn/act",
        &[
            ("csrf", &owner.csrf),
            ("action", "confirm_owner"),
            ("person", person),
        ],
    )
    .await;
    assert!(
        matches!(got, 403 | 409),
        "the inviter confirmed: {got} {body}"
    );
    for bad in ["", "no-such-owner", "a\u{0}b", "<script>"] {
        let other = target
            .session("second@e2e.test", "a long enough password")
            .await;
        let (got, body) = call_as(
            &target,
            &other,
            "/desk/fn/question",
            &[("action", "confirm_owner"), ("person", bad)],
        )
        .await;
        assert!(matches!(got, 400 | 404 | 422), "{bad:?}: {got} {body}");
        assert!(!body.to_string().contains("<script>"), "{body}");
    }
    let other = target
        .session("second@e2e.test", "a long enough password")
        .await;
    let (got, question) = call_as(
        &target,
        &other,
        "/desk/fn/question",
        &[("action", "confirm_owner"), ("person", person)],
    )
    .await;
    assert_eq!(got, 200, "{question}");
    assert!(question["consequences"][0]
        .as_str()
        .unwrap()
        .contains("third@e2e.test"));
    assert_eq!(question["person"], person);
    let (got, body) = call_as(
        &target,
        &other,
        "/desk/fn/act",
        &[
            ("csrf", &other.csrf),
            ("action", "confirm_owner"),
            ("person", person),
        ],
    )
    .await;
    assert!(got < 400, "{got} {body}");
    let (_, _, html) = target.get_as(&owner, "/desk/owners").await;
    assert!(html.contains("confirmed by second@e2e.test"), "{html}");
}
