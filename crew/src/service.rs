//! The crew as a service: four roles, each with its own token, each talking to the desk's
//! HTTP API only. Every role sends a heartbeat every [`HEARTBEAT_EVERY`] (the desk calls the
//! crew connected while all four are younger than 90 s). The manager watches the bugs and
//! hands work off as tasks — triage itself, then `reproduce` to the reproducer, `fix` to the
//! fixer after a reporter's confirmation, `review` to the reviewer when a draft pull request
//! exists. A worker takes a task only after checking the body against the hash the desk
//! recorded, and accepts it by naming itself and that hash.

use crate::desk::{Desk, DeskError};
use crate::provider::ModelProvider;
use crate::reproducer::TokenPrices;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often each role says it is alive.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(20);

/// What the crew needs to run.
#[derive(Clone, Debug)]
pub struct CrewSettings {
    /// The desk's base URL.
    pub desk: String,
    /// Tokens: manager, reproducer, fixer, reviewer.
    pub manager: String,
    /// The reproducer's token.
    pub reproducer: String,
    /// The fixer's token.
    pub fixer: String,
    /// The reviewer's token.
    pub reviewer: String,
    /// How often the manager and the workers look for work.
    pub poll: Duration,
    /// What the reproducer tells the model about the target.
    pub project_hint: String,
}

/// The running crew: its tasks (abort them to stop it).
#[derive(Debug)]
pub struct RunningCrew {
    handles: Vec<tokio::task::JoinHandle<()>>,
}

impl RunningCrew {
    /// Stops every role.
    pub fn stop(self) {
        for handle in self.handles {
            handle.abort();
        }
    }
}

type Doing = Arc<Mutex<String>>;

fn set(doing: &Doing, text: String) {
    if let Ok(mut now) = doing.lock() {
        *now = text;
    }
}

fn get(doing: &Doing) -> String {
    doing.lock().map(|d| d.clone()).unwrap_or_default()
}

async fn heartbeats(desk: Desk, doing: Doing) {
    loop {
        let detail: String = get(&doing).chars().take(200).collect();
        if let Err(error) = desk
            .post("/api/v1/crew/heartbeat", &json!({"detail": detail}))
            .await
        {
            tracing::warn!(%error, "heartbeat not delivered");
        }
        tokio::time::sleep(HEARTBEAT_EVERY).await;
    }
}

/// Starts the four roles.
pub fn spawn(
    settings: CrewSettings,
    model: Arc<dyn ModelProvider>,
    prices: TokenPrices,
) -> Result<RunningCrew, DeskError> {
    let mut handles = Vec::new();
    let roles = [
        ("manager", settings.manager.clone()),
        ("reproducer", settings.reproducer.clone()),
        ("fixer", settings.fixer.clone()),
        ("reviewer", settings.reviewer.clone()),
    ];
    for (role, token) in roles {
        let desk = Desk::new(&settings.desk, &token)?;
        let doing: Doing = Arc::new(Mutex::new("idle".to_owned()));
        handles.push(tokio::spawn(heartbeats(desk.clone(), doing.clone())));
        let worker = Worker {
            role,
            desk,
            doing,
            model: model.clone(),
            prices,
            settings: settings.clone(),
        };
        handles.push(tokio::spawn(async move {
            let mut handled = HashSet::new();
            loop {
                let result = if worker.role == "manager" {
                    worker.manage(&mut handled).await
                } else {
                    worker.work().await
                };
                if let Err(error) = result {
                    tracing::warn!(role = worker.role, %error, "crew round failed");
                }
                tokio::time::sleep(worker.settings.poll).await;
            }
        }));
    }
    Ok(RunningCrew { handles })
}

struct Worker {
    role: &'static str,
    desk: Desk,
    doing: Doing,
    model: Arc<dyn ModelProvider>,
    prices: TokenPrices,
    settings: CrewSettings,
}

impl Worker {
    async fn hand_off(
        &self,
        to: &str,
        kind: &str,
        bug: &str,
        key: &str,
        body: Value,
    ) -> Result<(), DeskError> {
        self.desk
            .post(
                "/api/v1/crew/tasks",
                &json!({
                    "addressed_to": to, "kind": kind, "bug": bug,
                    "body": body.to_string(), "dedupe_key": key,
                }),
            )
            .await
            .map(|_| ())
    }

    /// One manager round: triage new bugs, hand off what each state calls for. `handled`
    /// keeps what this manager already did (the desk's dedupe keys keep it idempotent across
    /// restarts too).
    async fn manage(&self, handled: &mut HashSet<String>) -> Result<(), DeskError> {
        let list = self.desk.bugs().await?;
        for bug in &list.bugs {
            let id = bug.id.as_str();
            let state = bug.state.as_str();
            let version = bug.version;
            let key = format!("{state}:{id}:v{version}");
            if handled.contains(&key) {
                continue;
            }
            let body = json!({"bug": id, "state": state, "version": version});
            match state {
                "new" => {
                    set(&self.doing, format!("triaging {id}"));
                    if let Err(error) =
                        crate::advisor::triage(&self.desk, self.model.as_ref(), &self.prices, id)
                            .await
                    {
                        // Advice only: without it the bug still goes to the reproducer.
                        tracing::info!(bug = id, %error, "no triage");
                        self.hand_off(
                            "reproducer",
                            "reproduce",
                            id,
                            &format!("reproduce:{id}:v{version}"),
                            body,
                        )
                        .await?;
                    }
                }
                "triaged" | "reopened" => {
                    self.hand_off(
                        "reproducer",
                        "reproduce",
                        id,
                        &format!("reproduce:{id}:v{version}"),
                        body,
                    )
                    .await?;
                }
                "confirmed" => {
                    self.hand_off("fixer", "fix", id, &format!("fix:{id}:v{version}"), body)
                        .await?;
                }
                "in_review" => {
                    let view = self.desk.bug(id).await?;
                    let Some(head) = view.bug.pull_request.map(|pr| pr.head.as_str().to_owned())
                    else {
                        continue;
                    };
                    self.hand_off(
                        "reviewer",
                        "review",
                        id,
                        &format!("review:{id}:{head}"),
                        json!({"bug": id, "head": head}),
                    )
                    .await?;
                }
                _ => {}
            }
            handled.insert(key);
        }
        set(&self.doing, "idle".into());
        Ok(())
    }

    /// One worker round: every open task addressed to this role, checked and accepted, then
    /// done.
    async fn work(&self) -> Result<(), DeskError> {
        let open = self.desk.open_tasks().await?;
        for task in &open.tasks {
            let id = task.id.as_str();
            let body = task.body.as_str();
            let hash = hex::encode(Sha256::digest(body.as_bytes()));
            if task.body_sha256 != hash {
                tracing::warn!(
                    task = id,
                    "body does not match its recorded hash; not taken"
                );
                continue;
            }
            let (status, answer) = self
                .desk
                .post_raw(
                    &format!("/api/v1/crew/tasks/{id}/accept"),
                    &json!({"addressed_to": self.role, "body_sha256": hash}),
                )
                .await?;
            if status != 200 {
                tracing::info!(task = id, %answer, "not accepted");
                continue;
            }
            let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
            let bug = parsed["bug"].as_str().unwrap_or_default().to_owned();
            set(&self.doing, format!("{} {bug}", task.kind));
            let outcome = self.act(&task.kind, &bug).await;
            set(&self.doing, "idle".into());
            self.desk
                .post(
                    &format!("/api/v1/crew/tasks/{id}/complete"),
                    &json!({"outcome": outcome.chars().take(300).collect::<String>()}),
                )
                .await?;
        }
        Ok(())
    }

    /// Hands `bug` to a person for `reason` (nothing when `None`); what to add to the task's
    /// outcome.
    async fn hand_over(&self, bug: &str, reason: Option<&str>) -> String {
        let Some(reason) = reason else {
            return String::new();
        };
        match self
            .desk
            .post(
                &format!("/api/v1/bugs/{bug}/hand-to-human"),
                &json!({ "reason": reason }),
            )
            .await
        {
            Ok(_) => format!("; handed to a person ({reason})"),
            Err(error) => format!("; could not hand it to a person: {error}"),
        }
    }

    async fn act(&self, kind: &str, bug: &str) -> String {
        let model = self.model.as_ref();
        match (self.role, kind) {
            ("reproducer", "reproduce") => match crate::reproducer::reproduce_once(
                &self.desk,
                model,
                &self.prices,
                bug,
                &self.settings.project_hint,
            )
            .await
            {
                Ok(answer) => format!(
                    "proposed; bug is {}",
                    answer["state"].as_str().unwrap_or("?")
                ),
                Err(error) => {
                    let handed = self.hand_over(bug, error.hand_over_reason()).await;
                    format!("no reproduction: {error}{handed}")
                }
            },
            ("fixer", "fix") => {
                match crate::fixer::fix(&self.desk, model, &self.prices, bug).await {
                    Ok(crate::fixer::FixOutcome::Drafted(answer)) => format!(
                        "draft pull request #{} at {}",
                        answer["pull_request"],
                        answer["head"].as_str().unwrap_or("?")
                    ),
                    Ok(crate::fixer::FixOutcome::Exhausted(answer)) => format!(
                        "attempts used up: {}",
                        answer["message"].as_str().unwrap_or_default()
                    ),
                    Err(error) => {
                        // A test that does not reproduce is the reproducer's finding, not the
                        // fixer's.
                        let reason = error.hand_over_reason().filter(|r| *r != "not_reproduced");
                        let handed = self.hand_over(bug, reason).await;
                        format!("no fix: {error}{handed}")
                    }
                }
            }
            ("reviewer", "review") => {
                match crate::advisor::review_fix(&self.desk, model, &self.prices, bug).await {
                    Ok(_) => "advisory review stored as a note".into(),
                    Err(error) => format!("no review: {error}"),
                }
            }
            _ => format!("{} does not do {kind:?} tasks", self.role),
        }
    }
}
