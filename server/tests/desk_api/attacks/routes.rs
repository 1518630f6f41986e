//! Attacks on the operation table: a route that exists outside it is guarded by nothing the
//! table says. `POST /api/v1/bugs/{id}/fix/start` once named an undeclared operation and fell
//! back to the rules of the public health check.

use super::support::Target;
use domain::Role;
use serde_json::json;

fn concrete(path: &str) -> String {
    path.split('/')
        .map(|part| {
            if part.starts_with('{') {
                "no-such-thing"
            } else {
                part
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_declared_operation_is_served_and_nothing_else_under_api_is() {
    let target = Target::start(&[]);
    for op in server::web::OPERATIONS {
        let method: reqwest::Method = op.method.parse().unwrap();
        let response = target
            .client
            .request(method, target.url(&concrete(op.path)))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        assert!(
            status != 405 && !body.contains("unknown_operation"),
            "{} {} is declared but not routed: {status} {body}",
            op.method,
            op.path
        );
    }
    // A path the table does not declare answers 404 as JSON, for any credential.
    for path in [
        "/api/v1/bugs/b-1/bogus",
        "/api/v1/bugs/b-1/fix/start/now",
        "/api/v2/bugs",
        "/api/v1/admin",
    ] {
        for bearer in [None, Some(target.token(Role::Fixer))] {
            let mut request = target.client.post(target.url(path)).json(&json!({}));
            if let Some(token) = &bearer {
                request = request.bearer_auth(token);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 404, "{path}");
            let body: serde_json::Value = response.json().await.unwrap();
            assert_eq!(body["error"], "unknown_operation", "{path}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starting_a_fix_is_refused_at_the_door_for_every_credential_but_the_fixers_and_the_managers(
) {
    let target = Target::start(&[]);
    let filed = target.file("Totals go negative", "−₹100").await;
    let bug = filed["bug_id"].as_str().unwrap();
    let path = format!("/api/v1/bugs/{bug}/fix/start");
    let owner = target.owner().await;
    // No credential: 401 from the table's realm, never the engine's word.
    let anonymous = target
        .client
        .post(target.url(&path))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let capability = filed["tracking_link"]
        .as_str()
        .unwrap()
        .trim_start_matches("/track#");
    let reporter = target
        .client
        .post(target.url(&path))
        .header("x-r2r-capability", capability)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(reporter.status(), 401);
    let (status, body) = target.post_as(&owner, &path, json!({})).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("forbidden")),
        "{body}"
    );
    // The concierge's token belongs to another realm: no credential here at all.
    let (status, _) = target.post_role(Role::Concierge, &path, json!({})).await;
    assert_eq!(status, 401);
    for role in [Role::Reproducer, Role::Reviewer, Role::Recorder] {
        let (status, body) = target.post_role(role, &path, json!({})).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (403, Some("forbidden")),
            "{role}: {body}"
        );
    }
    // The fixer passes the door; the engine then says the bug is not confirmed.
    let (status, body) = target.post_role(Role::Fixer, &path, json!({})).await;
    assert_eq!(status, 409, "{body}");
    // And the operation is in the published document, so the auth matrix walks it.
    let document: serde_json::Value = target
        .client
        .get(target.url("/api/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        document["paths"]["/api/v1/bugs/{id}/fix/start"]["post"]["operationId"],
        "startFix"
    );
}

#[test]
fn no_api_route_is_added_outside_the_operation_table() {
    // The router builds every /api route from the table; a literal route elsewhere would
    // bypass it. Read the server's own sources for one.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![root];
    let mut strays = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let squashed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
                if squashed.contains(".route(\"/api") {
                    strays.push(path.display().to_string());
                }
            }
        }
    }
    assert!(strays.is_empty(), "routes outside the table: {strays:#?}");
}
