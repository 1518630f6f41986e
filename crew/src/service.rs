//! The crew as a service: four roles, each with its own token, each talking to the desk's
//! HTTP API only. Every role sends a heartbeat every [`HEARTBEAT_EVERY`] (the desk calls the
//! crew connected while all four are younger than 90 s). The manager watches the bugs and
//! hands work off as tasks — triage itself, then `reproduce` to the reproducer, `fix` to the
//! fixer after a reporter's confirmation, `review` to the reviewer when a draft pull request
//! exists. A worker takes a task only after checking the body against the hash the desk
//! recorded, and accepts it by naming itself and that hash.

use crate::desk::{Desk, DeskError};
use crate::guard::TokenPrices;
use crate::provider::ModelProvider;
use domain::crew::StepVerdict;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often each role says it is alive.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(20);

/// How often the manager looks again at a bug whose crew step it checked and that did not
/// change since.
pub const RECHECK_EVERY: Duration = Duration::from_secs(5);

/// The most bugs whose crew step the manager checks in one round (a backlog is worked
/// through over several rounds, oldest first).
pub const CHECKS_PER_ROUND: usize = 50;

/// What the manager remembers between rounds.
#[derive(Default)]
struct Memory {
    /// Keys of what it did (`state:bug:vN`, `triage:bug:vN`).
    handled: HashSet<String>,
    /// When it last checked each bug's crew step, at which version.
    checked: std::collections::HashMap<String, (u64, std::time::Instant)>,
    /// The fingerprint of the last bug list it read: the next read waits for a change.
    seen: String,
}

/// How long a worker's ask for tasks waits at the desk for one to be sent.
const TASK_WAIT: Duration = Duration::from_secs(20);
/// How long the manager's read of the bug list waits for a change (its dead-task checks run
/// at least this often).
const BUG_WAIT: Duration = Duration::from_secs(5);
/// The pause between two rounds that found work: the waits happen at the desk.
const BETWEEN_ROUNDS: Duration = Duration::from_millis(50);

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
    /// How the reproducer works: context, feedback, and the target's hint.
    pub approach: crate::reproducer::Approach,
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
            let mut memory = Memory::default();
            loop {
                let result = if worker.role == "manager" {
                    worker.manage(&mut memory).await
                } else {
                    worker.work().await
                };
                match result {
                    // The desk waited for work (long polling): go on at once.
                    Ok(()) => tokio::time::sleep(BETWEEN_ROUNDS.min(worker.settings.poll)).await,
                    Err(error) => {
                        tracing::warn!(role = worker.role, %error, "crew round failed");
                        tokio::time::sleep(worker.settings.poll).await;
                    }
                }
            }
        }));
    }
    Ok(RunningCrew { handles })
}

/// An accepted task's lease as its worker holds it.
struct Lease {
    task: String,
    /// The acceptance time the desk last answered (0: the desk did not say).
    at: std::sync::atomic::AtomicI64,
    every: Duration,
}

/// How often to renew a lease of `lease_ms`: three times within it, at most every 5 minutes,
/// at least every second.
fn renew_every(lease_ms: Option<i64>) -> Duration {
    let ms = lease_ms
        .filter(|ms| *ms > 0)
        .unwrap_or(domain::crew::TASK_LEASE_MS)
        / 3;
    Duration::from_millis(u64::try_from(ms.clamp(1_000, 300_000)).unwrap_or(300_000))
}

impl Lease {
    /// Renews the lease until the work ends (this future is dropped then). Returns only when
    /// the lease is lost — another worker took the task — with the outcome to record: the
    /// work stops, since the other worker does it now.
    async fn keep(&self, desk: &Desk) -> String {
        use std::sync::atomic::Ordering;
        if self.at.load(Ordering::SeqCst) == 0 {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep(self.every).await;
            let at = self.at.load(Ordering::SeqCst);
            match desk
                .post_raw(
                    &format!("/api/v1/crew/tasks/{}/renew", self.task),
                    &json!({ "lease": at }),
                )
                .await
            {
                Ok((200, answer)) => {
                    if let Some(next) = answer["lease"].as_i64() {
                        self.at.store(next, Ordering::SeqCst);
                    }
                }
                Ok((409, _)) => {
                    return "stopped: the lease was lost (another worker has the task)".into()
                }
                // The desk was unreachable or refused otherwise: keep working, try again.
                Ok((status, answer)) => {
                    tracing::warn!(task = %self.task, status, %answer, "lease not renewed")
                }
                Err(error) => tracing::warn!(task = %self.task, %error, "lease not renewed"),
            }
        }
    }
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

    /// One manager round: triage new bugs, see that each bug's crew step is in hand (at most
    /// [`CHECKS_PER_ROUND`] bugs a round, each again only after [`RECHECK_EVERY`] unless it
    /// changed), hand reviews off. `memory` keeps what this manager already did (the desk's
    /// dedupe keys keep it idempotent across restarts too).
    async fn manage(&self, memory: &mut Memory) -> Result<(), DeskError> {
        let list = self.desk.bugs_after(&memory.seen, BUG_WAIT).await?;
        memory.seen = list.fingerprint.clone();
        let handled = &mut memory.handled;
        let mut checks = 0;
        for bug in &list.bugs {
            let id = bug.id.as_str();
            let state = bug.state.as_str();
            let version = bug.version;
            let key = format!("{state}:{id}:v{version}");
            if handled.contains(&key) {
                continue;
            }
            // A stranger's budget put its start off: the desk says when, and refuses the
            // crew's work on it until then.
            if bug.crew_budget_until.is_some() {
                continue;
            }
            match state {
                "new" => {
                    let triage = format!("triage:{id}:v{version}");
                    if !handled.contains(&triage) {
                        handled.insert(triage);
                        set(&self.doing, format!("triaging {id}"));
                        match crate::advisor::triage(
                            &self.desk,
                            self.model.as_ref(),
                            &self.prices,
                            id,
                        )
                        .await
                        {
                            // Triaged: the next round sends it on from there.
                            Ok(_) => continue,
                            // Advice only: without it the bug still goes to the reproducer.
                            Err(error) => tracing::info!(bug = id, %error, "no triage"),
                        }
                    }
                }
                "triaged" | "reopened" | "reproducing" | "confirmed" | "fixing" => {}
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
            if domain::crew::crew_step(bug.state).is_some() {
                // Not remembered in `handled`: the step is checked until the bug moves on (a
                // try may end, a worker may die).
                let due = memory
                    .checked
                    .get(id)
                    .is_none_or(|(v, at)| *v != version || at.elapsed() >= RECHECK_EVERY);
                if due && checks < CHECKS_PER_ROUND {
                    checks += 1;
                    memory
                        .checked
                        .insert(id.to_owned(), (version, std::time::Instant::now()));
                    if let Err(error) = self.reconcile(id, version).await {
                        tracing::warn!(bug = id, %error, "crew step not checked");
                    }
                }
                continue;
            }
            handled.insert(key);
        }
        let listed: HashSet<&str> = list.bugs.iter().map(|b| b.id.as_str()).collect();
        memory.checked.retain(|id, _| listed.contains(id.as_str()));
        set(&self.doing, "idle".into());
        Ok(())
    }

    /// Sees that the bug's crew step is in hand: sends the next try when the desk's verdict
    /// says so (its dedupe key names the try, so a restarted manager sends it once), and
    /// hands the bug to a person when every try ended without moving it on.
    async fn reconcile(&self, id: &str, version: u64) -> Result<(), DeskError> {
        let step = self.desk.crew_step(id).await?;
        let Some(crew_step) = step.step else {
            return Ok(());
        };
        if step.version != version {
            // It moved since the list was read: next round.
            return Ok(());
        }
        match crew_step.verdict {
            StepVerdict::Working | StepVerdict::Waiting { .. } => Ok(()),
            StepVerdict::HandOff { attempt } => {
                let body = json!({"bug": id, "state": step.state.as_str(), "version": version,
                                  "attempt": attempt});
                self.hand_off(
                    &crew_step.addressed_to,
                    &crew_step.kind,
                    id,
                    &format!("{}:{id}:v{version}:try{attempt}", crew_step.kind),
                    body,
                )
                .await
            }
            StepVerdict::GiveUp { failed } => {
                set(
                    &self.doing,
                    format!("handing {id} to a person after {failed} failed tries"),
                );
                let (status, answer) = self
                    .desk
                    .post_raw(
                        &format!("/api/v1/bugs/{id}/hand-to-human"),
                        &json!({"reason": "crew_step_failed"}),
                    )
                    .await?;
                if status != 200 {
                    // 409: it moved meanwhile; anything else is said and tried next round.
                    tracing::info!(bug = id, status, %answer, "not handed over");
                }
                Ok(())
            }
        }
    }

    /// One worker round: every open task addressed to this role, checked and accepted, then
    /// done.
    async fn work(&self) -> Result<(), DeskError> {
        let open = self.desk.open_tasks_waiting(TASK_WAIT).await?;
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
            // The lease is renewed while the work goes on, so a long sandbox run is not taken
            // for a dead worker's; the renewals stop with the work.
            let lease = Lease {
                task: id.to_owned(),
                at: answer["task"]["accepted_at"]
                    .as_i64()
                    .unwrap_or_default()
                    .into(),
                every: renew_every(answer["lease_ms"].as_i64()),
            };
            let outcome = tokio::select! {
                outcome = self.act(&task.kind, &bug) => Some(outcome),
                lost = lease.keep(&self.desk) => {
                    tracing::warn!(task = id, "{lost}");
                    None
                }
            };
            set(&self.doing, "idle".into());
            let Some(outcome) = outcome else {
                // Another worker has the task now and completes it.
                continue;
            };
            let held = lease.at.load(std::sync::atomic::Ordering::SeqCst);
            let mut done = json!({"outcome": outcome.chars().take(300).collect::<String>()});
            if held != 0 {
                done["lease"] = json!(held);
            }
            self.desk
                .post(&format!("/api/v1/crew/tasks/{id}/complete"), &done)
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
            ("reproducer", "reproduce") => match crate::reproducer::reproduce(
                &self.desk,
                model,
                &self.prices,
                bug,
                &self.settings.approach,
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
