//! `r2r demo run`: the whole loop on the bundled ShopLite, in one process, as a controlled
//! acceptance run.
//!
//! Everything real except the model: a fresh SQLite desk served on 127.0.0.1, ShopLite in a
//! local forge (a bare git repository), the sandbox (Docker or bubblewrap), the crew's roles
//! each with its own token over HTTP, an owner signed in with a session and CSRF token, the
//! recorder checking the deployed commit's health. The model is the `scripted` provider, and
//! the evidence it leads to is labelled `simulated demo`. Each step must leave the bug in the
//! state it should; the run prints a timeline and exits 0 only if every step held.

use crate::config::{Config, Environment};
use crate::start::Desk as StartedDesk;
use anyhow::{anyhow, bail, Context};
use domain::workflow::CommitSha;
use domain::Role;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What to run against.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// `docker` or `bwrap`.
    pub sandbox: sandbox::Backend,
    /// Docker's image.
    pub image: String,
    /// The ShopLite crate folder.
    pub shoplite: PathBuf,
    /// Leptos.toml (the desk's site options).
    pub leptos_toml: String,
}

/// One step of the timeline.
#[derive(Clone, Debug)]
pub struct Step {
    /// What happened.
    pub name: &'static str,
    /// How long it took.
    pub duration: Duration,
    /// What it produced, or why it failed.
    pub detail: String,
    /// Whether it held.
    pub held: bool,
}

/// The run's result.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Steps in order.
    pub steps: Vec<Step>,
}

/// Goal: from the reporter's confirmation to a tested draft pull request and its merge.
pub const GOAL_CONFIRM_TO_MERGE: Duration = Duration::from_secs(15);
/// How long the run waits for the deployer's release of the merge.
const RELEASE_DEADLINE: Duration = Duration::from_secs(180);
/// Goal: from the merge to `verified`.
pub const GOAL_MERGE_TO_VERIFIED: Duration = Duration::from_secs(10);

const CONFIRM_TO_MERGE: &[&str] = &[
    "fix drafted: suite, format and lint green in the sandbox; draft PR",
    "advisory code review (note)",
    "owner approves the exact head",
    "owner merges (real git merge)",
];
const MERGE_TO_VERIFIED: &[&str] = &[
    "release: the deployer builds the merge in the sandbox and starts it",
    "recorder verifies the live commit",
    "reporter confirms the fix",
];

impl Timeline {
    /// Whether every step held.
    pub fn held(&self) -> bool {
        !self.steps.is_empty() && self.steps.iter().all(|s| s.held)
    }

    /// Total time of the named steps (when all of them ran).
    pub fn span(&self, names: &[&str]) -> Option<Duration> {
        names
            .iter()
            .map(|name| {
                self.steps
                    .iter()
                    .find(|s| s.name == *name && s.held)
                    .map(|s| s.duration)
            })
            .sum()
    }

    /// The printed report.
    pub fn render(&self, backend: &str) -> String {
        let mut out = format!(
            "CONTROLLED ACCEPTANCE RUN — ShopLite, local forge, {backend} sandbox, scripted model (its output is labelled \"simulated demo\")\n\n"
        );
        let mut total = Duration::ZERO;
        for (index, step) in self.steps.iter().enumerate() {
            total += step.duration;
            out.push_str(&format!(
                "{:>2}. {:<4} {:>8.2} s  {}\n      {}\n",
                index + 1,
                if step.held { "ok" } else { "FAIL" },
                step.duration.as_secs_f64(),
                step.name,
                step.detail
            ));
        }
        out.push_str(&format!("\ntotal {:.2} s\n", total.as_secs_f64()));
        for (label, names, goal) in [
            (
                "confirmation → tested draft PR → merge",
                CONFIRM_TO_MERGE,
                GOAL_CONFIRM_TO_MERGE,
            ),
            (
                "merge → verified",
                MERGE_TO_VERIFIED,
                GOAL_MERGE_TO_VERIFIED,
            ),
        ] {
            match self.span(names) {
                Some(span) => out.push_str(&format!(
                    "{label}: {:.2} s (goal ≤ {} s: {})\n",
                    span.as_secs_f64(),
                    goal.as_secs(),
                    if span <= goal { "met" } else { "missed" }
                )),
                None => out.push_str(&format!("{label}: did not complete\n")),
            }
        }
        out.push_str(if self.held() {
            "RESULT: every step held\n"
        } else {
            "RESULT: FAILED — a step did not hold\n"
        });
        out
    }
}

struct Run {
    timeline: Timeline,
}

impl Run {
    /// Runs one step; its error ends the run.
    async fn step<T>(
        &mut self,
        name: &'static str,
        work: impl std::future::Future<Output = anyhow::Result<(T, String)>>,
    ) -> anyhow::Result<T> {
        let started = Instant::now();
        let result = work.await;
        let duration = started.elapsed();
        match result {
            Ok((value, detail)) => {
                self.timeline.steps.push(Step {
                    name,
                    duration,
                    detail,
                    held: true,
                });
                Ok(value)
            }
            Err(error) => {
                self.timeline.steps.push(Step {
                    name,
                    duration,
                    detail: format!("{error:#}"),
                    held: false,
                });
                Err(error)
            }
        }
    }
}

/// Runs git in `dir` with a fixed identity; its output, or an error with what it said.
pub(crate) fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = std::process::Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=ShopLite",
            "-c",
            "user.email=shop@shoplite.invalid",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .context("cannot run git")?;
    if !output.status.success() {
        bail!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Creates the bare repository `bare` holding ShopLite (its shipped code, without the
/// regression test the crew has to write) at `main`.
pub async fn seed_forge(shoplite: &Path, bare: &Path) -> anyhow::Result<()> {
    forge::LocalForge::init(bare, "main").await?;
    let work = tempfile::tempdir()?;
    let work = work.path();
    crate::cli::demo::prepare_scratch(shoplite, work, false)?;
    std::fs::remove_dir_all(work.join("tests"))?;
    git(work, &["init", "--quiet", "--initial-branch", "main"])?;
    git(work, &["add", "."])?;
    git(work, &["commit", "--quiet", "-m", "ShopLite as shipped"])?;
    git(
        work,
        &[
            "push",
            "--quiet",
            bare.to_str().ok_or_else(|| anyhow!("non-UTF-8 path"))?,
            "main",
        ],
    )?;
    Ok(())
}

/// Creates the bare repository `bare` holding Tallybook (the Python demo target) as shipped:
/// every file of `tallybook` but its regression tests and Python caches, in one commit on
/// `main`.
pub async fn seed_tallybook(tallybook: &Path, bare: &Path) -> anyhow::Result<()> {
    fn copy(from: &Path, to: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            let name = entry.file_name();
            if matches!(
                name.to_str(),
                Some("regressions" | "__pycache__" | ".pytest_cache")
            ) {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                copy(&entry.path(), &to.join(&name))?;
            } else if kind.is_file() {
                std::fs::copy(entry.path(), to.join(&name))?;
            }
        }
        Ok(())
    }
    forge::LocalForge::init(bare, "main").await?;
    let work = tempfile::tempdir()?;
    let work = work.path();
    copy(tallybook, work)?;
    git(work, &["init", "--quiet", "--initial-branch", "main"])?;
    git(work, &["add", "."])?;
    git(work, &["commit", "--quiet", "-m", "Tallybook as shipped"])?;
    git(
        work,
        &[
            "push",
            "--quiet",
            bare.to_str().ok_or_else(|| anyhow!("non-UTF-8 path"))?,
            "main",
        ],
    )?;
    Ok(())
}

pub(crate) fn random_hex(bytes: usize) -> String {
    use rand::RngCore;
    let mut buffer = vec![0u8; bytes];
    rand::rngs::OsRng.fill_bytes(&mut buffer);
    hex::encode(buffer)
}

/// A fresh token for every role, as `r2r setup` makes them.
pub(crate) struct FreshTokens(Vec<(Role, String)>);

impl FreshTokens {
    pub(crate) fn new() -> Self {
        FreshTokens(
            Role::ALL
                .into_iter()
                .map(|role| (role, crate::cli::setup::new_role_token(role)))
                .collect(),
        )
    }

    /// The role's token.
    pub(crate) fn of(&self, role: Role) -> String {
        self.0
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, t)| t.clone())
            .unwrap_or_default()
    }

    /// Each role's token variable and token, for a desk's environment.
    pub(crate) fn variables(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|(role, token)| (role.token_variable().to_owned(), token.clone()))
            .collect()
    }
}

/// A desk seen from outside, over HTTP, as a reporter sees it.
pub(crate) struct Desk {
    pub(crate) base: String,
    pub(crate) client: reqwest::Client,
}

impl Desk {
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> anyhow::Result<(u16, Value)> {
        let response = request.send().await?;
        let status = response.status().as_u16();
        Ok((status, response.json().await.unwrap_or(Value::Null)))
    }

    async fn file(&self, title: &str, what: &str) -> anyhow::Result<Value> {
        self.file_json(&json!({
            "component": "shoplite", "title": title, "what_happened": what,
            "expected": "A payable total of ₹0", "steps": "Put ₹200 of goods in the cart\nApply coupon SAVE300\nRead the total",
        }))
        .await
    }

    /// Files a report (`POST /api/v1/reports`); anything but 201 is an error.
    pub(crate) async fn file_json(&self, report: &Value) -> anyhow::Result<Value> {
        let (status, body) = self
            .send(
                self.client
                    .post(format!("{}/api/v1/reports", self.base))
                    .json(report),
            )
            .await?;
        if status != 201 {
            bail!("filing answered {status}: {body}");
        }
        Ok(body)
    }

    async fn tracking(&self, capability: &str) -> anyhow::Result<Value> {
        let (status, body) = self
            .send(
                self.client
                    .get(format!("{}/api/v1/track", self.base))
                    .header("x-r2r-capability", capability),
            )
            .await?;
        if status != 200 {
            bail!("tracking answered {status}: {body}");
        }
        Ok(body)
    }

    pub(crate) async fn answer(&self, capability: &str, kind: &str) -> anyhow::Result<Value> {
        let tracking = self.tracking(capability).await?;
        let question = &tracking["question"];
        if question["kind"] != json!(kind) {
            bail!("the reporter was not asked about the {kind}: {tracking}");
        }
        let (status, body) = self
            .send(
                self.client
                    .post(format!("{}/api/v1/track/answer", self.base))
                    .header("x-r2r-capability", capability)
                    .json(
                        &json!({"request_id": question["request_id"], "kind": kind, "yes": true}),
                    ),
            )
            .await?;
        if status != 200 {
            bail!("the answer was refused ({status}): {body}");
        }
        Ok(body)
    }
}

pub(crate) fn expect_state(answer: &Value, state: &str) -> anyhow::Result<()> {
    if answer["state"] != json!(state) {
        bail!("expected the bug to be {state}: {answer}");
    }
    Ok(())
}

pub(crate) fn capability(filed: &Value) -> anyhow::Result<String> {
    filed["tracking_link"]
        .as_str()
        .and_then(|link| link.split_once('#'))
        .map(|(_, key)| key.to_owned())
        .ok_or_else(|| anyhow!("no tracking link in {filed}"))
}

/// Runs the loop; the timeline is returned even when a step failed.
pub async fn run(options: &RunOptions) -> Timeline {
    let mut run = Run {
        timeline: Timeline::default(),
    };
    let scratch = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => {
            run.timeline.steps.push(Step {
                name: "prepare",
                duration: Duration::ZERO,
                detail: error.to_string(),
                held: false,
            });
            return run.timeline;
        }
    };
    let mut desk_handle = None;
    let _ = the_loop(&mut run, options, scratch.path(), &mut desk_handle).await;
    if let Some(desk) = desk_handle {
        desk.stop().await;
    }
    run.timeline
}

async fn the_loop(
    run: &mut Run,
    options: &RunOptions,
    dir: &Path,
    spawned: &mut Option<StartedDesk>,
) -> anyhow::Result<()> {
    let tokens = FreshTokens::new();
    let token = |role: Role| tokens.of(role);
    let owner_email = "owner@shoplite.invalid";
    let owner_password = random_hex(16);

    let desk = run
        .step(
            "desk started: fresh SQLite, ShopLite in a local forge",
            async {
                let bare = dir.join("shoplite.git");
                seed_forge(&options.shoplite, &bare).await?;
                let mut pairs = tokens.variables();
                pairs.extend([
                    (
                        "DATABASE_URL".to_owned(),
                        format!("sqlite://{}/desk.db", dir.display()),
                    ),
                    ("R2R_ADDR".to_owned(), "127.0.0.1:0".to_owned()),
                    ("R2R_OWNER_EMAIL".to_owned(), owner_email.to_owned()),
                    (
                        "R2R_OWNER_PASSWORD_HASH".to_owned(),
                        crate::auth::hash_password(&owner_password)
                            .map_err(|e| anyhow!("cannot hash the owner password: {e}"))?,
                    ),
                    ("R2R_SESSION_KEY".to_owned(), random_hex(32)),
                    ("R2R_LOCAL_FORGE".to_owned(), bare.display().to_string()),
                    (
                        "R2R_SANDBOX_BACKEND".to_owned(),
                        options.sandbox.to_string(),
                    ),
                    ("R2R_SANDBOX_IMAGE".to_owned(), options.image.clone()),
                    ("R2R_LEPTOS_TOML".to_owned(), options.leptos_toml.clone()),
                    // The run plays the crew and the concierge itself, step by step.
                    ("R2R_CREW".to_owned(), "off".to_owned()),
                    ("R2R_CONCIERGE".to_owned(), "off".to_owned()),
                    // The real release: every head of the forge's main is built, started and
                    // recorded by the desk's deployer and recorder.
                    ("R2R_DEPLOY".to_owned(), "on".to_owned()),
                    (
                        "R2R_DEPLOY_DIR".to_owned(),
                        dir.join("releases").display().to_string(),
                    ),
                ]);
                let env =
                    Environment::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
                let config = Config::from_env(&env, None).map_err(|e| anyhow!("{e}"))?;
                let desk = crate::start::start(&config).await?;
                let detail = format!("{} · forge {}", desk.base, bare.display());
                Ok((desk, detail))
            },
        )
        .await?;
    let base = desk.base.clone();
    *spawned = Some(desk);
    let http = Desk {
        base: base.clone(),
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(420))
            .build()?,
    };
    let model = crew::scripted::Scripted;
    let prices = crew::guard::TokenPrices {
        input_per_k: 0,
        output_per_k: 0,
        max_output_tokens: 0,
    };
    let role = |role: Role| crew::desk::Desk::new(&base, &token(role));

    let (bug, first) = run
        .step("report filed through the airlock", async {
            let filed = http
                .file(
                    "SAVE300 makes the total negative",
                    "With ₹200 in the cart and coupon SAVE300 the total shows −₹100",
                )
                .await?;
            if filed["quarantined"] == json!(true) {
                bail!("the airlock quarantined a plain report: {filed}");
            }
            let bug = filed["bug_id"].as_str().unwrap_or_default().to_owned();
            let detail = format!("bug {bug}, reporter's capability kept in the link's fragment");
            Ok(((bug, capability(&filed)?), detail))
        })
        .await?;
    run.step("second report clusters onto the same bug", async {
        let filed = http
            .file(
                "Coupon SAVE300 gives a negative total",
                "The checkout total went below zero, −₹100, after the SAVE300 coupon on a ₹200 cart",
            )
            .await?;
        if filed["bug_id"] != json!(bug) {
            bail!("the second report opened another bug: {filed}");
        }
        Ok(((), format!("joined {bug}")))
    })
    .await?;
    run.step("triage (advisory, manager token)", async {
        let answer = crew::advisor::triage(&role(Role::Manager)?, &model, &prices, &bug).await?;
        expect_state(&answer, "triaged")?;
        Ok(((), "triaged; the model's read stored as a note".to_owned()))
    })
    .await?;
    run.step(
        "reproduced: failing test measured in the desk's sandbox",
        async {
            let answer = crew::reproducer::reproduce(
                &role(Role::Reproducer)?,
                &model,
                &prices,
                &bug,
                &crew::reproducer::Approach::full(crate::config::project_hint(
                    sandbox::Profile::Rust,
                )),
            )
            .await?;
            expect_state(&answer, "awaiting_reporter")?;
            let run = &answer["desk_run"];
            Ok((
                (),
                format!(
                    "{} sandbox, test run {} ms, verdict {}; advisory review {}",
                    run["backend"].as_str().unwrap_or("?"),
                    run["duration_ms"],
                    run["verdict"]["kind"]
                        .as_str()
                        .or(run["verdict"].as_str())
                        .unwrap_or("reproduced"),
                    answer["advisory_review"].as_str().unwrap_or("missing")
                ),
            ))
        },
    )
    .await?;
    run.step(
        "concierge tells both reporters (tracking-page inbox)",
        async {
            let notify = crate::config::NotifyConfig::default();
            let concierge =
                crate::workers::concierge::Concierge::new(&base, &token(Role::Concierge), &notify)?;
            let round = concierge.round().await?;
            if round.failed > 0 || round.delivered < 2 {
                bail!("the concierge delivered {round:?}");
            }
            let tracking = http.tracking(&first).await?;
            let inbox = tracking["inbox"].to_string();
            if !inbox.contains("Is this the bug you saw?") {
                bail!("the reporter's inbox lacks the question: {inbox}");
            }
            Ok((
                (),
                format!(
                    "{} notice(s) delivered over HTTP with the concierge's own token",
                    round.delivered
                ),
            ))
        },
    )
    .await?;
    run.step("reporter confirms: that is my bug", async {
        let answer = http.answer(&first, "reproduction").await?;
        expect_state(&answer, "confirmed")?;
        Ok(((), "confirmed through the tracking link".to_owned()))
    })
    .await?;
    let (number, head) = run
        .step(CONFIRM_TO_MERGE[0], async {
            let outcome = crew::fixer::fix(&role(Role::Fixer)?, &model, &prices, &bug).await?;
            let answer = match outcome {
                crew::fixer::FixOutcome::Drafted(answer) => answer,
                crew::fixer::FixOutcome::Exhausted(answer) => bail!("no fix: {answer}"),
            };
            expect_state(&answer, "in_review")?;
            let head = CommitSha::parse(answer["head"].as_str().unwrap_or_default())
                .map_err(|e| anyhow!("{e}"))?;
            let checks: Vec<String> = answer["checks"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    format!(
                        "{} {} ms",
                        c["check"].as_str().unwrap_or("?"),
                        c["duration_ms"]
                    )
                })
                .collect();
            let number = answer["pull_request"].as_u64().unwrap_or_default();
            let detail = format!("draft PR #{number} at {head}; {}", checks.join(", "));
            Ok(((number, head), detail))
        })
        .await?;
    run.step(CONFIRM_TO_MERGE[1], async {
        crew::advisor::review_fix(&role(Role::Reviewer)?, &model, &prices, &bug).await?;
        Ok(((), "stored as a note; not an approval".to_owned()))
    })
    .await?;
    let (cookie, csrf) = {
        let response = http
            .client
            .post(format!("{base}/api/v1/session"))
            .json(&json!({"email": owner_email, "password": owner_password}))
            .send()
            .await?;
        let cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("the owner's sign-in set no cookie"))?;
        let body: Value = response.json().await?;
        let csrf = body["csrf_token"].as_str().unwrap_or_default().to_owned();
        (cookie, csrf)
    };
    let owner_post = |path: String, body: Value| {
        http.client
            .post(format!("{base}{path}"))
            .header("cookie", &cookie)
            .header("x-csrf-token", &csrf)
            .json(&body)
    };
    run.step(CONFIRM_TO_MERGE[2], async {
        let (status, answer) = http
            .send(owner_post(
                format!("/api/v1/bugs/{bug}/approve"),
                json!({"head": head.as_str()}),
            ))
            .await?;
        if status != 200 {
            bail!("approval refused ({status}): {answer}");
        }
        expect_state(&answer, "approved")?;
        Ok(((), format!("PR #{number} approved at {head}")))
    })
    .await?;
    let merge = run
        .step(CONFIRM_TO_MERGE[3], async {
            let response = owner_post(
                format!("/api/v1/bugs/{bug}/merge"),
                json!({"head": head.as_str()}),
            )
            .send()
            .await?;
            let merge = response
                .headers()
                .get("x-r2r-merge-commit")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let status = response.status().as_u16();
            let answer: Value = response.json().await.unwrap_or(Value::Null);
            if status != 200 {
                bail!("merge refused ({status}): {answer}");
            }
            expect_state(&answer, "merged")?;
            let merge = CommitSha::parse(merge.as_deref().unwrap_or_default())
                .map_err(|e| anyhow!("no merge commit: {e}"))?;
            let detail = format!("main is now {merge}");
            Ok((merge, detail))
        })
        .await?;
    // The deployer picks up the merge on its own; the run only watches the desk's report.
    let release = |wanted: &'static [&'static str]| {
        let http = &http;
        let merge = merge.clone();
        let manager = token(Role::Manager);
        async move {
            let until = std::time::Instant::now() + RELEASE_DEADLINE;
            loop {
                let (_, status) = http
                    .send(
                        http.client
                            .get(format!("{}/api/v1/crew", http.base))
                            .bearer_auth(&manager),
                    )
                    .await?;
                let release = &status["release"];
                if release["commit"] == json!(merge.as_str()) {
                    let step = release["step"].as_str().unwrap_or_default();
                    if wanted.contains(&step) {
                        return Ok::<Value, anyhow::Error>(release.clone());
                    }
                    if step == "failed" {
                        bail!("the release of {merge} failed: {}", release["detail"]);
                    }
                }
                if std::time::Instant::now() > until {
                    bail!(
                        "the release of {merge} was not {} within {} s: {release}",
                        wanted.join(" or "),
                        RELEASE_DEADLINE.as_secs()
                    );
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    run.step(MERGE_TO_VERIFIED[0], async {
        let started = release(&["checking", "live"]).await?;
        Ok((
            (),
            format!("{} sandbox: {}", options.sandbox, started["detail"]),
        ))
    })
    .await?;
    run.step(MERGE_TO_VERIFIED[1], async {
        let live = release(&["live"]).await?;
        let detail = live["detail"].as_str().unwrap_or_default().to_owned();
        if !detail.contains("recorded as ") {
            bail!("the release is live but not recorded: {detail}");
        }
        let (_, health) = http
            .send(
                http.client
                    .get(format!("{}/live/shoplite/api/health", http.base)),
            )
            .await?;
        if health["commit"] != json!(merge.as_str()) {
            bail!("/live/shoplite does not serve {merge}: {health}");
        }
        Ok((
            (),
            format!("{detail}; /live/shoplite serves exactly {merge}"),
        ))
    })
    .await?;
    run.step(MERGE_TO_VERIFIED[2], async {
        let answer = http.answer(&first, "fix").await?;
        expect_state(&answer, "verified")?;
        Ok((
            (),
            "verified by the reporter — the reporter has the last word".to_owned(),
        ))
    })
    .await?;
    let store = spawned.as_ref().map(|d| d.store.clone());
    run.step("ledger verifies (hash chains intact)", async {
        let store = store.ok_or_else(|| anyhow!("no store"))?;
        match store.verify_ledger().await? {
            Ok(summary) => Ok(((), format!("{summary:?}"))),
            Err(broken) => bail!("the ledger is broken: {broken:?}"),
        }
    })
    .await?;
    Ok(())
}
