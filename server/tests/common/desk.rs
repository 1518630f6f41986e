//! One way to build a desk for a test: [`TestDesk::with`] names what it needs — PostgreSQL
//! instead of SQLite, a local forge and what its first commit holds, the crew's tokens, the
//! first owner, the sandbox, any other setting — and `start` runs the real `r2r serve` on it.
//! The desk then files reports, calls the API as a role or an owner, and opens its store.

use super::{local_forge_with, start_server_with, RunningServer, OWNER, PASSWORD};
use domain::Role;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What a forge's first commit holds.
type Fill = Box<dyn FnOnce(&Path) + Send>;

/// What a [`TestDesk`] is started with (see [`TestDesk::with`]).
#[must_use]
pub struct DeskSpec {
    postgres: bool,
    database_url: Option<String>,
    forge: Option<(String, Fill)>,
    roles: Vec<Role>,
    owner: bool,
    env: Vec<(String, String)>,
    tokens: HashMap<Role, String>,
}

/// A running desk and what a test needs of it. Everything it made (its folder, its server)
/// goes when it is dropped.
pub struct TestDesk {
    /// The `r2r serve` process.
    pub server: RunningServer,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// Its database.
    pub database_url: String,
    /// The crew's and concierge's tokens it was given, by role.
    pub tokens: HashMap<Role, String>,
    /// An env file holding those tokens (`ROLE_TOKEN='…'` lines), for `r2r` commands.
    pub env_file: PathBuf,
    /// Every setting it was started with (the tokens included).
    pub env: Vec<(String, String)>,
    /// The local forge's bare repository, when it has one.
    pub bare: Option<PathBuf>,
    /// The working clone the forge's first commit was made in.
    pub work: Option<PathBuf>,
    /// A client for its API.
    pub client: reqwest::Client,
    /// Its scratch folder (the SQLite file, the forge).
    pub dir: tempfile::TempDir,
}

impl TestDesk {
    /// A desk on a fresh SQLite file, with nothing else until asked.
    pub fn with() -> DeskSpec {
        DeskSpec {
            postgres: false,
            database_url: None,
            forge: None,
            roles: Vec::new(),
            owner: false,
            env: Vec::new(),
            tokens: HashMap::new(),
        }
    }

    /// A second server of `desk`: the same database, tokens, forge and settings.
    pub fn beside(desk: &TestDesk) -> DeskSpec {
        DeskSpec {
            database_url: Some(desk.database_url.clone()),
            env: desk.env.clone(),
            tokens: desk.tokens.clone(),
            ..TestDesk::with()
        }
    }

    /// The token of `role` (it must have been asked for).
    pub fn token(&self, role: Role) -> &str {
        self.tokens
            .get(&role)
            .unwrap_or_else(|| panic!("the desk was started without a {role:?} token"))
    }

    /// Its API as its roles call it.
    pub fn as_roles(&self) -> Roles {
        Roles::at(&self.base, &self.tokens)
    }

    /// The local forge's bare repository (it must have been asked for).
    pub fn bare(&self) -> &Path {
        self.bare.as_deref().expect("the desk has no forge")
    }

    /// `method path` as `role` (its bearer token), with a JSON `body`: the status and the JSON
    /// answer (`Null` when the answer is not JSON).
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        role: Role,
        body: Option<Value>,
    ) -> (u16, Value) {
        call_with(
            &self.client,
            &self.base,
            self.token(role),
            method,
            path,
            body,
        )
        .await
    }

    /// `POST /api/v1/bugs/{bug}/{action}` as `role` with `body` (the answer borrows only the
    /// desk, so a closure can hand it on).
    pub fn act(
        &self,
        role: Role,
        bug: &str,
        action: &str,
        body: Value,
    ) -> impl std::future::Future<Output = (u16, Value)> + '_ {
        let path = format!("/api/v1/bugs/{bug}/{action}");
        async move { self.call("POST", &path, role, Some(body)).await }
    }

    /// Files a report (the JSON of `POST /api/v1/reports`): the bug it joined and the
    /// reporter's capability.
    pub async fn file(&self, report: Value) -> (String, String) {
        super::file_report(&self.base, report).await
    }

    /// Files the coupon report the cart and ShopLite targets reproduce.
    pub async fn file_coupon_bug(&self) -> (String, String) {
        self.file(serde_json::json!({
            "component": "shoplite", "title": "Coupon makes the total negative",
            "what_happened": "-100", "expected": "0", "steps": "",
        }))
        .await
    }

    /// Signs the first owner in (the desk must have been started with one): the session's
    /// cookie pair and its CSRF token.
    pub async fn owner_session(&self) -> (String, String) {
        assert!(
            self.env.iter().any(|(k, _)| k == "R2R_OWNER_EMAIL"),
            "the desk was started without an owner"
        );
        super::sign_in(&self.client, &self.base, OWNER, PASSWORD).await
    }

    /// Files a coupon report and walks its bug to the reporter's first question as the crew
    /// would: reproduction started (as the manager) and proposed, recorded through the engine
    /// with a reproduced re-run as the desk's sandbox would give. Needs the manager's token.
    /// The bug and the reporter's capability.
    pub async fn bug_awaiting_reporter(&self) -> (String, String) {
        use domain::workflow::{decide, Actor, Command, Evidence, Policy, Reproduction, Rerun};
        let (bug, capability) = self
            .file(serde_json::json!({
                "component": "shoplite", "title": "SAVE300 makes the total negative",
                "what_happened": "−₹100", "expected": "", "steps": "",
            }))
            .await;
        let (status, _) = self
            .act(
                Role::Manager,
                &bug,
                "reproduction/start",
                serde_json::json!({}),
            )
            .await;
        assert_eq!(status, 200);
        let store = self.store().await;
        let now = server::clock::now_ms();
        store
            .apply(&bug, now, |b| {
                let evidence = Evidence {
                    rerun: Some(Rerun::Reproduced),
                    ..Evidence::default()
                };
                decide(
                    b,
                    &Command::ProposeReproduction {
                        reproduction: Reproduction {
                            id: "run-1".into(),
                            test_path: "tests/coupon.rs".into(),
                            test_sha256: "5".repeat(64),
                            assertion: "payable -100 < 0".into(),
                            summary: None,
                        },
                    },
                    &Actor::Role {
                        role: Role::Reproducer,
                    },
                    &evidence,
                    &Policy::default(),
                    now,
                )
            })
            .await
            .unwrap();
        store.close().await;
        (bug, capability)
    }

    /// A bug walked to `in_review`: to the reporter's question
    /// ([`TestDesk::bug_awaiting_reporter`]), the reporter's yes, the fix started, the branch
    /// `fix/attack` with `change` pushed from `work` (a clone of the desk's forge) and its
    /// draft recorded as the desk records a measured one. The bug and the draft's head.
    pub async fn bug_in_review(&self, work: &Path, change: &[(&str, &str)]) -> (String, String) {
        let (bug, capability) = self.bug_awaiting_reporter().await;
        let tracking: Value = self
            .client
            .get(format!("{}/api/v1/track", self.base))
            .header("x-r2r-capability", &capability)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let answered = self
            .client
            .post(format!("{}/api/v1/track/answer", self.base))
            .header("x-r2r-capability", &capability)
            .json(&serde_json::json!({"request_id": tracking["question"]["request_id"], "kind": "reproduction", "yes": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(answered.status(), 200);
        let (status, _) = self
            .act(Role::Fixer, &bug, "fix/start", serde_json::json!({}))
            .await;
        assert_eq!(status, 200);
        super::git(work, &["checkout", "--quiet", "-b", "fix/attack"]);
        for (path, text) in change {
            super::write(work, path, text);
        }
        super::git(work, &["add", "."]);
        super::git(work, &["commit", "--quiet", "-m", "the fix"]);
        super::git(work, &["push", "--quiet", "origin", "fix/attack"]);
        let head = super::git(work, &["rev-parse", "HEAD"]);
        let bare = super::git(work, &["remote", "get-url", "origin"]);
        let opened = super::open_measured_draft(
            &self.database_url,
            Path::new(bare.trim()),
            &bug,
            "fix/attack",
        )
        .await;
        assert_eq!(opened, head.trim());
        (bug, head.trim().to_owned())
    }

    /// Its store (another connection to its database).
    pub async fn store(&self) -> store::Store {
        store::Store::connect(&store::DatabaseUrl::parse(&self.database_url).unwrap())
            .await
            .unwrap()
    }
}

/// A desk's API as its roles call it: its address and the roles' tokens. A [`TestDesk`] gives
/// one ([`TestDesk::as_roles`]); a test that starts its servers itself (restarts, several
/// servers on one database) makes one with [`Roles::at`].
#[derive(Clone)]
pub struct Roles {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// The roles' tokens.
    pub tokens: HashMap<Role, String>,
    client: reqwest::Client,
}

impl Roles {
    /// The server at `base`, called with `tokens`.
    pub fn at(base: &str, tokens: &HashMap<Role, String>) -> Roles {
        Roles {
            base: base.to_owned(),
            tokens: tokens.clone(),
            client: reqwest::Client::new(),
        }
    }

    /// The token of `role`.
    pub fn token(&self, role: Role) -> &str {
        self.tokens
            .get(&role)
            .unwrap_or_else(|| panic!("no {role:?} token"))
    }

    /// `method path` as `role`, with a JSON `body`: the status and the JSON answer.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        role: Role,
        body: Option<Value>,
    ) -> (u16, Value) {
        call_with(
            &self.client,
            &self.base,
            self.token(role),
            method,
            path,
            body,
        )
        .await
    }
}

/// A fresh token for every role, and the variables that give them to a server.
pub fn role_tokens() -> (HashMap<Role, String>, Vec<(String, String)>) {
    let tokens: HashMap<Role, String> = Role::ALL
        .into_iter()
        .map(|role| (role, server::cli::setup::new_role_token(role)))
        .collect();
    let env = token_env(&tokens);
    (tokens, env)
}

/// The variables that give `tokens` to a server (`ROLE_TOKEN`), in a stable order.
pub fn token_env(tokens: &HashMap<Role, String>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = tokens
        .iter()
        .map(|(role, token)| (role.token_variable().to_owned(), token.clone()))
        .collect();
    env.sort();
    env
}

/// `method base+path` with bearer `token` and a JSON `body`: the status and the JSON answer
/// (`Null` when the answer is not JSON). What [`TestDesk::call`] does, for a test that holds
/// only an address and a token.
pub async fn call_with(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = client
        .request(method, format!("{base}{path}"))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

impl DeskSpec {
    /// On a fresh PostgreSQL database (the test command's server) instead of SQLite.
    pub fn postgres(mut self) -> Self {
        self.postgres = true;
        self
    }

    /// On `url` (a database another desk of the test uses too).
    pub fn database(mut self, url: &str) -> Self {
        self.database_url = Some(url.to_owned());
        self
    }

    /// With a local forge, `<name>.git` on branch `main`, whose first commit holds what `fill`
    /// writes; the desk serves it (`R2R_LOCAL_FORGE`).
    pub fn forge(mut self, name: &str, fill: impl FnOnce(&Path) + Send + 'static) -> Self {
        self.forge = Some((name.to_owned(), Box::new(fill)));
        self
    }

    /// With the forge holding ShopLite without its tests (the crew writes the test).
    pub fn shoplite(self) -> Self {
        self.forge("shoplite", |work| {
            server::cli::demo::prepare_scratch(&super::repo_root().join("shoplite"), work, false)
                .unwrap();
            std::fs::remove_dir_all(work.join("tests")).unwrap();
        })
    }

    /// With the forge holding [`super::cart_crate`].
    pub fn cart(self) -> Self {
        self.forge("cart", super::cart_crate)
    }

    /// With the tokens of `roles`.
    pub fn roles(mut self, roles: &[Role]) -> Self {
        self.roles.extend_from_slice(roles);
        self
    }

    /// With every role's token.
    pub fn all_roles(self) -> Self {
        self.roles(&Role::ALL)
    }

    /// With the first owner ([`OWNER`], [`PASSWORD`]) and a fixed session key.
    pub fn owner(mut self) -> Self {
        self.owner = true;
        self
    }

    /// Measuring in `backend` (`docker`, `bwrap`, `none`).
    pub fn sandbox(self, backend: &str) -> Self {
        self.env("R2R_SANDBOX_BACKEND", backend)
    }

    /// With setting `name` at `value`.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// With each of `settings`.
    pub fn envs(mut self, settings: &[(&str, &str)]) -> Self {
        for (name, value) in settings {
            self = self.env(name, value);
        }
        self
    }

    /// Makes the forge and the database it asks for and starts the desk.
    pub async fn start(mut self) -> TestDesk {
        let dir = tempfile::tempdir().unwrap();
        let (bare, work) = match self.forge.take() {
            Some((name, fill)) => {
                let (bare, work) = local_forge_with(dir.path(), &name, fill).await;
                (Some(bare), Some(work))
            }
            None => (None, None),
        };
        if self.postgres && self.database_url.is_none() {
            match store::testing::fresh_postgres().await {
                store::DatabaseUrl::Postgres { url } => self.database_url = Some(url),
                other => panic!("expected a PostgreSQL database, got {other:?}"),
            }
        }
        self.launch_in(dir, bare, work)
    }

    /// Starts the desk at once (no forge, no PostgreSQL: those need [`DeskSpec::start`]).
    pub fn launch(self) -> TestDesk {
        assert!(
            self.forge.is_none() && (!self.postgres || self.database_url.is_some()),
            "a forge or a fresh PostgreSQL database needs `start`"
        );
        self.launch_in(tempfile::tempdir().unwrap(), None, None)
    }

    fn launch_in(
        self,
        dir: tempfile::TempDir,
        bare: Option<PathBuf>,
        work: Option<PathBuf>,
    ) -> TestDesk {
        let database_url = self
            .database_url
            .unwrap_or_else(|| format!("sqlite://{}/desk.db", dir.path().display()));
        let mut tokens = self.tokens;
        let mut env_text: String = tokens
            .iter()
            .map(|(role, token)| format!("{}='{token}'\n", role.token_variable()))
            .collect();
        let mut env = Vec::new();
        for role in self.roles {
            let token = server::cli::setup::new_role_token(role);
            env_text.push_str(&format!("{}='{token}'\n", role.token_variable()));
            env.push((role.token_variable().to_owned(), token.clone()));
            tokens.insert(role, token);
        }
        let env_file = dir.path().join("desk.env");
        std::fs::write(&env_file, &env_text).unwrap();
        if self.owner {
            env.push(("R2R_OWNER_EMAIL".into(), OWNER.into()));
            env.push((
                "R2R_OWNER_PASSWORD_HASH".into(),
                server::auth::hash_password(PASSWORD).unwrap(),
            ));
            env.push(("R2R_SESSION_KEY".into(), "k".repeat(64)));
        }
        if let Some(bare) = &bare {
            env.push(("R2R_LOCAL_FORGE".into(), bare.display().to_string()));
        }
        env.extend(self.env);
        let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let server = start_server_with(&database_url, &pairs);
        TestDesk {
            base: server.base.clone(),
            server,
            database_url,
            tokens,
            env_file,
            env,
            bare,
            work,
            client: reqwest::Client::new(),
            dir,
        }
    }
}
