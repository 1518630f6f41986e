//! What the attacks share: a running desk with an owner, a browser-like client, and a bug
//! walked to review on a local forge through the same routes the crew uses.

use crate::common::{self, OwnerDesk, OWNER, PASSWORD};
use domain::Role;
use serde_json::{json, Value};
use std::path::PathBuf;

/// A desk under attack, and an HTTP client that follows no redirects (a browser's view of
/// each answer).
pub struct Target {
    pub desk: OwnerDesk,
    pub client: reqwest::Client,
}

/// An owner's session: the cookie pair and its CSRF token.
#[derive(Clone)]
pub struct Session {
    pub cookie: String,
    pub csrf: String,
}

impl Target {
    pub fn start(extra: &[(&str, &str)]) -> Target {
        Target {
            desk: common::owner_desk(extra),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    pub fn base(&self) -> &str {
        &self.desk.server.base
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }

    pub fn token(&self, role: Role) -> String {
        self.desk.tokens[&role].clone()
    }

    /// Signs in as `email`.
    pub async fn session(&self, email: &str, password: &str) -> Session {
        let (cookie, csrf) = common::sign_in(&self.client, self.base(), email, password).await;
        Session { cookie, csrf }
    }

    /// Signs in as the first owner.
    pub async fn owner(&self) -> Session {
        self.session(OWNER, PASSWORD).await
    }

    /// Files a report as an anonymous stranger; the answer's JSON.
    pub async fn file(&self, title: &str, what_happened: &str) -> Value {
        let response = self
            .client
            .post(self.url("/api/v1/reports"))
            .json(&json!({
                "component": "shoplite", "title": title, "what_happened": what_happened,
                "expected": "", "steps": "",
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201, "the report was filed");
        response.json().await.unwrap()
    }

    /// GET as the owner: status, headers, body.
    pub async fn get_as(
        &self,
        session: &Session,
        path: &str,
    ) -> (u16, reqwest::header::HeaderMap, String) {
        let response = self
            .client
            .get(self.url(path))
            .header("cookie", &session.cookie)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    }

    /// A JSON POST with the owner's session and CSRF token.
    pub async fn post_as(&self, session: &Session, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(self.url(path))
            .header("cookie", &session.cookie)
            .header("x-csrf-token", &session.csrf)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// A JSON POST with a role's bearer token.
    pub async fn post_role(&self, role: Role, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(self.url(path))
            .bearer_auth(self.token(role))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// A desk form post (what a browser sends from the desk's own page).
    pub async fn form_as(&self, session: &Session, path: &str, form: &[(&str, &str)]) -> u16 {
        let mut fields: Vec<(&str, &str)> = vec![("csrf", &session.csrf)];
        fields.extend_from_slice(form);
        self.client
            .post(self.url(path))
            .header("cookie", &session.cookie)
            .header("origin", self.base())
            .form(&fields)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }
}

/// A local forge whose default branch holds `files`, for [`Target::start`]'s
/// `R2R_LOCAL_FORGE`: (the bare repository, a working clone, the folder that holds both).
pub async fn forge(files: &[(&str, &str)]) -> (PathBuf, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
        .collect();
    let (bare, work) = common::local_forge_with(dir.path(), "shop", |work| {
        for (path, text) in &files {
            common::write(work, path, text);
        }
    })
    .await;
    (bare, work, dir)
}

/// [`crate::common::TestDesk::bug_awaiting_reporter`] on the target's desk.
pub async fn bug_awaiting_reporter(target: &Target) -> (String, String) {
    target.desk.bug_awaiting_reporter().await
}

/// [`crate::common::TestDesk::bug_in_review`] on the target's desk.
pub async fn bug_in_review(
    target: &Target,
    work: &std::path::Path,
    change: &[(&str, &str)],
) -> (String, String) {
    target.desk.bug_in_review(work, change).await
}
