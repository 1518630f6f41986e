//! Owner accounts, sessions, CSRF, invitations, role tokens and their rotation, and the
//! auth matrix: every operation in the served OpenAPI document, called with every kind of
//! credential, answers the status its declared security implies.

use crate::common;

use common::sign_in;
use domain::Role;
use serde_json::{json, Value};
use std::collections::BTreeMap;

use common::{owner_desk as desk, OWNER, PASSWORD};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_sign_in_invite_and_sign_out_with_csrf_on_every_change() {
    let desk = desk(&[]);
    let base = &desk.server.base;
    let client = reqwest::Client::new();
    let wrong = client
        .post(format!("{base}/api/v1/session"))
        .json(&json!({"email": OWNER, "password": "not it"}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let unknown = client
        .post(format!("{base}/api/v1/session"))
        .json(&json!({"email": "nobody@example.org", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        unknown.status(),
        401,
        "an unknown email looks like a wrong password"
    );

    let (cookie, csrf) = sign_in(&client, base, OWNER, PASSWORD).await;
    let me: Value = client
        .get(format!("{base}/api/v1/me"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["email"], OWNER);

    // A change without the CSRF token is refused, with a wrong one too.
    for token in [None, Some("0".repeat(64))] {
        let mut request = client
            .post(format!("{base}/api/v1/owners/invites"))
            .header("cookie", &cookie);
        if let Some(token) = &token {
            request = request.header("x-csrf-token", token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 403);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "csrf");
    }
    let invite: Value = client
        .post(format!("{base}/api/v1/owners/invites"))
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let link = invite["invite_link"].as_str().unwrap();
    let token = link.strip_prefix("/desk/invite#").unwrap();

    let accept = |email: &'static str, password: &'static str, token: String| {
        let client = client.clone();
        let url = format!("{base}/api/v1/owners/accept");
        async move {
            client
                .post(url)
                .json(&json!({"token": token, "email": email, "password": password}))
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(
        accept("second@example.org", "short", token.to_owned()).await,
        422
    );
    assert_eq!(
        accept(
            "second@example.org",
            "a long enough password",
            "f".repeat(64)
        )
        .await,
        404
    );
    assert_eq!(
        accept(
            "second@example.org",
            "a long enough password",
            token.to_owned()
        )
        .await,
        201
    );
    assert_eq!(
        accept(
            "third@example.org",
            "a long enough password",
            token.to_owned()
        )
        .await,
        409,
        "an invitation works once"
    );
    let (second_cookie, _) = sign_in(
        &client,
        base,
        "second@example.org",
        "a long enough password",
    )
    .await;
    assert_ne!(second_cookie, cookie);

    // Sign out: CSRF needed; afterwards the cookie is worth nothing.
    let no_csrf = client
        .delete(format!("{base}/api/v1/session"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(no_csrf.status(), 403);
    let out = client
        .delete(format!("{base}/api/v1/session"))
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 204);
    let after = client
        .get(format!("{base}/api/v1/me"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_attempts_are_rate_limited() {
    let desk = desk(&[("R2R_RATE_LOGIN", "3/60s")]);
    let client = reqwest::Client::new();
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let response = client
            .post(format!("{}/api/v1/session", desk.server.base))
            .json(&json!({"email": OWNER, "password": "guess"}))
            .send()
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
        if response.status() == 429 {
            assert!(response.headers().contains_key("retry-after"));
        }
    }
    assert_eq!(statuses, [401, 401, 401, 429]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_token_replaces_the_old_one_at_once() {
    let desk = desk(&[]);
    let client = reqwest::Client::new();
    let me = |token: String| {
        let client = client.clone();
        let url = format!("{}/api/v1/me", desk.server.base);
        async move {
            client
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    let old = desk.tokens[&Role::Fixer].clone();
    assert_eq!(me(old.clone()).await, 200);
    let scratch = tempfile::tempdir().unwrap();
    let output = common::r2r_with_env_file(&desk.env_file)
        .args(["token", "rotate", "--role", "fixer"])
        .env("DATABASE_URL", &desk.database_url)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8_lossy(&output.stdout);
    let new = printed
        .lines()
        .find_map(|l| l.strip_prefix("R2R_FIXER_TOKEN="))
        .unwrap()
        .to_owned();
    assert_ne!(new, old);
    assert_eq!(
        me(old).await,
        401,
        "the old token stopped working without a restart"
    );
    assert_eq!(me(new.clone()).await, 200);
    let file = std::fs::read_to_string(&desk.env_file).unwrap();
    assert!(file.contains(&new), "the env file holds the new token");
    assert_eq!(
        me(desk.tokens[&Role::Reviewer].clone()).await,
        200,
        "others unchanged"
    );
    let bad = common::r2r(scratch.path())
        .args(["token", "rotate", "--role", "boss"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown role"));
}

/// The credentials the matrix walks.
#[derive(Clone, Debug)]
enum Cred {
    None,
    Role(Role),
    Reporter,
    Owner,
    Worker,
}

fn expected(op: &Value, cred: &Cred) -> Expect {
    let realm = op["x-r2r-realm"].as_str().unwrap();
    let security: Vec<(String, Vec<String>)> = op["security"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|requirement| {
            requirement
                .as_object()
                .unwrap()
                .iter()
                .map(|(scheme, roles)| {
                    let roles = roles
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| r.as_str().unwrap().to_owned())
                        .collect();
                    (scheme.clone(), roles)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    match realm {
        "public" => Expect::NotAuthFailure,
        "reporter" => match cred {
            Cred::Reporter => Expect::NotAuthFailure,
            _ => Expect::Exactly(404),
        },
        _ => {
            let in_realm = match (cred, realm) {
                (Cred::Owner, "engineering") => true,
                (Cred::Role(role), "engineering") => *role != Role::Concierge,
                (Cred::Role(Role::Concierge), "concierge") => true,
                (Cred::Worker, "sandbox-worker") => true,
                _ => false,
            };
            if !in_realm {
                return Expect::Exactly(401);
            }
            let allowed = security
                .iter()
                .any(|(scheme, roles)| match (scheme.as_str(), cred) {
                    ("ownerSession", Cred::Owner) => true,
                    ("roleToken", Cred::Role(role)) => roles.iter().any(|r| r == role.as_str()),
                    ("workerToken", Cred::Worker) => true,
                    _ => false,
                });
            if allowed {
                Expect::NotAuthFailure
            } else {
                Expect::Exactly(403)
            }
        }
    }
}

#[derive(Debug, PartialEq)]
enum Expect {
    Exactly(u16),
    NotAuthFailure,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_answers_every_credential_as_its_security_declares() {
    let desk = desk(&[
        ("R2R_RATE_LOGIN", "1000/60s"),
        ("R2R_RATE_INTAKE", "1000/60s"),
    ]);
    let base = &desk.server.base;
    let client = reqwest::Client::new();
    // A report gives a bug to address and a reporter capability.
    let (bug, capability) = common::file_report(base, json!({"component": "shoplite", "title": "Negative total", "what_happened": "−₹100", "expected": "", "steps": ""})).await;

    let document: Value = client
        .get(format!("{base}/api/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(document["components"]["securitySchemes"]["roleToken"].is_object());
    let mut credentials = vec![Cred::None, Cred::Reporter, Cred::Owner, Cred::Worker];
    credentials.extend(Role::ALL.into_iter().map(Cred::Role));
    // A sandbox worker host's own token.
    let worker_token = server::auth::new_worker_token();
    store::Store::connect(&store::DatabaseUrl::parse(&desk.database_url).unwrap())
        .await
        .unwrap()
        .add_sandbox_worker("matrix-host", &server::auth::hash_secret(&worker_token), 1)
        .await
        .unwrap();

    let mut checked = 0;
    let mut seen = BTreeMap::new();
    for (path, methods) in document["paths"].as_object().unwrap() {
        for (method, op) in methods.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap().to_owned();
            assert!(op["security"].is_array(), "{id} declares its security");
            let url = format!(
                "{base}{}",
                path.replace("{id}", &bug).replace("{key}", "none")
            );
            for cred in &credentials {
                let mut request = client.request(method.to_uppercase().parse().unwrap(), &url);
                match cred {
                    Cred::None => {}
                    Cred::Role(role) => request = request.bearer_auth(&desk.tokens[role]),
                    Cred::Worker => request = request.bearer_auth(&worker_token),
                    Cred::Reporter => request = request.header("x-r2r-capability", &capability),
                    Cred::Owner => {
                        // A fresh session per call: the matrix includes signing out.
                        let (cookie, csrf) = sign_in(&client, base, OWNER, PASSWORD).await;
                        request = request
                            .header("cookie", cookie)
                            .header("x-csrf-token", csrf);
                    }
                }
                if method != "get" {
                    request = request.json(&json!({}));
                }
                let status = request.send().await.unwrap().status().as_u16();
                let want = expected(op, cred);
                match want {
                    Expect::Exactly(code) => {
                        assert_eq!(status, code, "{method} {path} as {cred:?}")
                    }
                    Expect::NotAuthFailure => assert!(
                        !matches!(status, 401 | 403) && status < 500,
                        "{method} {path} as {cred:?}: {status}"
                    ),
                }
                seen.insert((id.clone(), format!("{cred:?}")), status);
                checked += 1;
            }
        }
    }
    assert!(checked >= 20 * 9, "{checked} calls");
    // The cases the issue names.
    assert_eq!(seen[&("listBugs".to_owned(), "None".to_owned())], 401);
    assert_eq!(
        seen[&("getBug".to_owned(), "Role(Concierge)".to_owned())],
        401
    );
    assert_eq!(seen[&("approve".to_owned(), "Role(Fixer)".to_owned())], 403);
    assert_eq!(
        seen[&("claimNotifications".to_owned(), "Role(Fixer)".to_owned())],
        401
    );
    assert_eq!(
        seen[&("listBugs".to_owned(), "Worker".to_owned())],
        401,
        "a worker token opens nothing of the desk"
    );
    assert_eq!(
        seen[&("claimSandboxJob".to_owned(), "Role(Reproducer)".to_owned())],
        401
    );
    assert_eq!(
        seen[&("claimSandboxJob".to_owned(), "Owner".to_owned())],
        401
    );
    assert_eq!(
        seen[&("approve".to_owned(), "Owner".to_owned())],
        422,
        "past auth, the body is checked"
    );
}
