//! Attacks with markup: an anonymous report's title closed the owner's `<title>` and ran
//! script with the owner's cookie, which read the CSRF token and invited a new owner. The
//! served HTML must carry a stranger's text escaped wherever it lands, and every page must
//! carry a Content-Security-Policy that would stop an inline script even then.

use super::support::Target;

/// The reviewer's payload, shortened: close the title, run script.
const TITLE_BREAKER: &str =
    "Crew page eta froze</title><script>fetch('/api/v1/me')</script><img src=x onerror=alert(1)>";

fn title_of(html: &str) -> &str {
    let start = html.find("<title>").map_or(0, |i| i + "<title>".len());
    let end = html[start..]
        .find("</title>")
        .map_or(html.len(), |i| start + i);
    &html[start..end]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_title_cannot_close_the_owners_title_element_and_run_script() {
    let target = Target::start(&[]);
    let filed = target.file(TITLE_BREAKER, "It froze.").await;
    let bug = filed["bug_id"].as_str().unwrap();
    let owner = target.owner().await;
    for path in [format!("/desk/bugs/{bug}"), "/desk".to_owned()] {
        let (status, _, html) = target.get_as(&owner, &path).await;
        assert_eq!(status, 200, "{path}");
        assert!(
            !html.contains("<script>fetch"),
            "{path}: the payload's script is served raw"
        );
        assert!(
            !html.contains("<img src=x"),
            "{path}: the payload's image is served raw"
        );
        assert_eq!(
            html.matches("<title>").count(),
            1,
            "{path}: exactly one title element"
        );
    }
    let (_, _, html) = target.get_as(&owner, &format!("/desk/bugs/{bug}")).await;
    let title = title_of(&html);
    assert!(
        title.contains("&lt;/title&gt;&lt;script&gt;"),
        "the title text is escaped: {title}"
    );
    // The confirmation page of an action on that bug.
    let (_, _, act_html) = target
        .get_as(&owner, &format!("/desk/bugs/{bug}/confirm?action=reopen"))
        .await;
    assert!(act_html.contains("Reopen this bug?"), "{act_html}");
    assert!(!act_html.contains("<script>fetch"), "{act_html}");
}

fn nonce_of(policy: &str) -> Option<&str> {
    let start = policy.find("'nonce-")? + "'nonce-".len();
    let end = policy[start..].find('\'')? + start;
    Some(&policy[start..end])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_carries_a_script_policy_with_a_fresh_nonce() {
    let target = Target::start(&[]);
    let owner = target.owner().await;
    let filed = target.file("Totals go negative", "−₹100").await;
    let bug = filed["bug_id"].as_str().unwrap();
    let mut nonces = std::collections::HashSet::new();
    for path in [
        "/".to_owned(),
        "/report".to_owned(),
        "/track".to_owned(),
        "/shoplite".to_owned(),
        "/demo".to_owned(),
        "/desk/sign-in".to_owned(),
        "/desk".to_owned(),
        format!("/desk/bugs/{bug}"),
        "/desk/crew".to_owned(),
        "/desk/owners".to_owned(),
        "/desk/invite".to_owned(),
        "/no-such-page".to_owned(),
    ] {
        // Signed in, the sign-in page only redirects: ask for it as a stranger.
        let anonymous = super::support::Session {
            cookie: String::new(),
            csrf: String::new(),
        };
        let who = if path == "/desk/sign-in" {
            &anonymous
        } else {
            &owner
        };
        for _ in 0..2 {
            let (_, headers, html) = target.get_as(who, &path).await;
            assert!(
                headers[reqwest::header::CONTENT_TYPE]
                    .to_str()
                    .unwrap()
                    .starts_with("text/html"),
                "{path}"
            );
            let policy = headers
                .get(reqwest::header::CONTENT_SECURITY_POLICY)
                .unwrap_or_else(|| panic!("{path} has no Content-Security-Policy"))
                .to_str()
                .unwrap()
                .to_owned();
            for directive in [
                "object-src 'none'",
                "base-uri 'none'",
                "frame-ancestors 'none'",
            ] {
                assert!(policy.contains(directive), "{path}: {policy}");
            }
            let script_src = policy
                .split(';')
                .find(|d| d.trim().starts_with("script-src"))
                .unwrap_or_else(|| panic!("{path}: no script-src in {policy}"));
            assert!(
                !script_src.contains("'unsafe-inline'"),
                "{path}: {script_src}"
            );
            let nonce = nonce_of(script_src)
                .unwrap_or_else(|| panic!("{path}: no nonce in {script_src}"))
                .to_owned();
            assert!(nonce.len() >= 16, "{path}: a short nonce {nonce}");
            assert!(nonces.insert(nonce.clone()), "{path}: a nonce was reused");
            // Every inline script the page itself serves carries this response's nonce.
            for (at, _) in html.match_indices("<script") {
                let tag = &html[at..html[at..].find('>').map_or(html.len(), |e| at + e)];
                if !tag.contains("src=") {
                    assert!(
                        tag.contains(&format!("nonce=\"{nonce}\"")),
                        "{path}: inline script without the nonce: {tag}"
                    );
                }
            }
        }
    }
    // JSON answers allow nothing at all.
    let (_, headers, _) = target.get_as(&owner, "/api/v1/me").await;
    let policy = headers[reqwest::header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap();
    assert!(policy.contains("default-src 'none'"), "{policy}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_report_form_gives_typed_text_back_as_text_not_markup() {
    // Any site can post this form; a refusal writes what was typed back into the fields.
    let target = Target::start(&[]);
    let breaker = "</textarea><img src=x onerror=alert(1)>";
    let response = target
        .client
        .post(target.url("/report"))
        .form(&[
            ("component", "shoplite"),
            ("title", ""),
            ("what_happened", breaker),
            ("expected", breaker),
            ("steps", breaker),
            ("contact", "\"><svg onload=alert(2)>"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let html = response.text().await.unwrap();
    assert!(!html.contains("<img src=x"), "typed markup served raw");
    assert!(!html.contains("<svg onload"), "typed markup served raw");
    assert!(
        html.contains("&lt;/textarea&gt;&lt;img src=x"),
        "typed text kept, escaped"
    );
}

/// Another site's page cannot make a visitor's browser file a report or answer a question
/// through the script-free forms: the browser's own `Sec-Fetch-Site` (or `Origin`) refuses it
/// with 403 before anything is counted or recorded, and the visitor's text comes back in the
/// form. The desk's own page, a typed address and a client that is not a browser still post.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_sites_page_cannot_post_the_report_or_answer_forms() {
    let target = Target::start(&[]);
    let fields = [
        ("component", "shoplite"),
        ("title", "Coupon SAVE300 makes the total negative"),
        ("what_happened", "The payable total shows minus 100 rupees"),
        ("expected", "Zero"),
        ("steps", "Add one item for 200, apply SAVE300"),
    ];
    for (name, value) in [
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
        ("origin", "http://evil.example"),
    ] {
        let response = target
            .client
            .post(target.url("/report"))
            .header(name, value)
            .form(&fields)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{name}: {value}");
        let html = response.text().await.unwrap();
        assert!(html.contains("Nothing was recorded"), "{html}");
        assert!(
            html.contains("SAVE300 makes the total negative"),
            "the text comes back"
        );
        let answered = target
            .client
            .post(target.url("/track/answer"))
            .header(name, value)
            .form(&[
                ("capability", "whatever"),
                ("request_id", "q"),
                ("kind", "fix"),
                ("answer", "no"),
                ("reason", "reopen it"),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(answered.status(), 403, "{name}: {value}");
    }
    for (name, value) in [
        ("sec-fetch-site", "same-origin"),
        ("sec-fetch-site", "none"),
    ] {
        let response = target
            .client
            .post(target.url("/report"))
            .header(name, value)
            .form(&fields)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201, "{name}: {value}");
    }
    let plain = target
        .client
        .post(target.url("/report"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 201, "a client that is not a browser page");
}
