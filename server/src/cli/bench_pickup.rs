//! `r2r bench pickup`: how soon an idle crew worker has a task sent to it. Desk servers start
//! in this process on one database (two on PostgreSQL: the worker waits at the second, the
//! manager sends through the first, so the database's notice must cross); the worker asks
//! for tasks with `wait_ms` (long polling) and the manager sends one task at a time. The
//! figure is the time from the manager's send to the worker's answer.

use std::time::{Duration, Instant};
use store::DatabaseUrl;

/// The figures.
#[derive(Debug)]
pub struct PickupBench {
    /// Backend.
    pub storage: &'static str,
    /// Servers the worker and the manager used (1 on SQLite, 2 on PostgreSQL).
    pub servers: usize,
    /// Tasks timed, sorted pick-up times.
    pub times: Vec<Duration>,
}

async fn desk(
    url: &DatabaseUrl,
    tokens: &[(domain::Role, String)],
) -> anyhow::Result<crate::start::Desk> {
    let mut config = crate::config::Config::from_env(&Default::default(), Some("127.0.0.1:0"))?;
    config.database_url = url.clone();
    config.crew = crate::config::CrewMode::Off;
    config.sandbox_backend = None;
    config.auth.role_tokens = tokens
        .iter()
        .map(|(role, token)| (*role, crate::secret::Secret::new(token.clone())))
        .collect();
    crate::start::start(&config).await
}

/// Runs the benchmark against an empty database at `url`.
pub async fn pickup(url: &DatabaseUrl, tasks: usize) -> anyhow::Result<PickupBench> {
    let tokens: Vec<(domain::Role, String)> = [domain::Role::Manager, domain::Role::Fixer]
        .into_iter()
        .map(|role| (role, crate::cli::setup::new_role_token(role)))
        .collect();
    let sender = desk(url, &tokens).await?;
    let second = match url {
        DatabaseUrl::Postgres { .. } => Some(desk(url, &tokens).await?),
        DatabaseUrl::Sqlite { .. } => None,
    };
    let waiter_base = second
        .as_ref()
        .map_or(sender.base.clone(), |d| d.base.clone());
    let client = reqwest::Client::new();
    let (manager, fixer) = (tokens[0].1.clone(), tokens[1].1.clone());
    let run = format!("{:08x}", rand::random::<u32>());
    let mut times = Vec::new();
    for n in 0..tasks {
        let waiting = tokio::spawn({
            let (client, base, fixer) = (client.clone(), waiter_base.clone(), fixer.clone());
            async move {
                let answer: serde_json::Value = client
                    .get(format!("{base}/api/v1/crew/tasks?wait_ms=20000"))
                    .bearer_auth(fixer)
                    .send()
                    .await?
                    .json()
                    .await?;
                anyhow::Ok((answer, Instant::now()))
            }
        });
        // The worker is idle at the desk before anything is sent.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let body = format!(r#"{{"bug":"bug-bench-{n}","version":1}}"#);
        let sent_at = Instant::now();
        let sent = client
            .post(format!("{}/api/v1/crew/tasks", sender.base))
            .bearer_auth(&manager)
            .json(&serde_json::json!({"addressed_to": "fixer", "kind": "fix", "bug": format!("bug-bench-{n}"),
                                      "body": body, "dedupe_key": format!("bench:{run}:{n}")}))
            .send()
            .await?;
        anyhow::ensure!(
            sent.status().as_u16() == 201,
            "the manager's task was not taken: {}",
            sent.text().await?
        );
        let (answer, answered_at) = waiting.await??;
        anyhow::ensure!(
            answer["tasks"].as_array().is_some_and(|t| !t.is_empty()),
            "the worker's wait ended without the task: {answer}"
        );
        times.push(answered_at.saturating_duration_since(sent_at));
        // Taken and done, so that the next wait sees only the next task.
        let id = answer["tasks"][0]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let hash = answer["tasks"][0]["body_sha256"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let accepted: serde_json::Value = client
            .post(format!("{waiter_base}/api/v1/crew/tasks/{id}/accept"))
            .bearer_auth(&fixer)
            .json(&serde_json::json!({"addressed_to": "fixer", "body_sha256": hash}))
            .send()
            .await?
            .json()
            .await?;
        let lease = accepted["task"]["accepted_at"].as_i64().unwrap_or_default();
        client
            .post(format!("{waiter_base}/api/v1/crew/tasks/{id}/complete"))
            .bearer_auth(&fixer)
            .json(&serde_json::json!({"outcome": "bench", "lease": lease}))
            .send()
            .await?;
    }
    let storage = sender.store.backend().as_str();
    let servers = 1 + usize::from(second.is_some());
    if let Some(second) = second {
        second.stop().await;
    }
    sender.stop().await;
    times.sort();
    Ok(PickupBench {
        storage,
        servers,
        times,
    })
}
