//! `r2r bench ledger`: ledger throughput with per-bug rows against the seed design (the whole
//! workspace as one JSON document written by compare-and-swap), same database, same run.

use crate::clock::now_ms;
use domain::workflow::{decide, Actor, Bug, Command, EventDraft, Evidence, Policy};
use domain::Role;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use store::{DatabaseUrl, Store};

/// One workload's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Commands applied.
    pub commands: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Lost compare-and-swaps that were retried.
    pub retries: u64,
}

impl Figures {
    /// Commands per second.
    pub fn rate(&self) -> f64 {
        self.commands as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Both workloads and their ratio.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerBench {
    /// Storage backend name.
    pub storage: &'static str,
    /// Writers.
    pub writers: usize,
    /// Commands per writer.
    pub commands: usize,
    /// This design: one row per bug.
    pub per_bug: Figures,
    /// The seed design: one JSON document.
    pub one_document: Figures,
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The database already holds bugs: the benchmark writes its own and must not mix them in.
    #[error("the benchmark needs an empty database, and this one holds {0} bugs; point --database-url at a scratch database")]
    NotEmpty(usize),
    /// A store failure.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// A ledger failure.
    #[error(transparent)]
    Apply(#[from] store::ApplyError),
    /// A task panicked or was cancelled.
    #[error("a writer failed: {0}")]
    Writer(String),
}

fn note(
    bug: &Bug,
    n: usize,
    now: i64,
) -> Result<domain::workflow::Decision, domain::workflow::Refusal> {
    decide(
        bug,
        &Command::AddNote {
            note: format!("note-{n}"),
        },
        &Actor::Role {
            role: Role::Reviewer,
        },
        &Evidence::default(),
        &Policy::default(),
        now,
    )
}

/// The seed design's document: every bug and every event of the workspace.
#[derive(Serialize, Deserialize, Default)]
struct Workspace {
    bugs: BTreeMap<String, Bug>,
    events: Vec<EventDraft>,
}

async fn per_bug(store: &Store, writers: usize, commands: usize) -> Result<Figures, BenchError> {
    let now = now_ms();
    for writer in 0..writers {
        store
            .create_bug(
                &Bug::open(&format!("bench-{writer}"), "shoplite", "r"),
                &[],
                &[],
                now,
            )
            .await?;
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut retries = 0u64;
            for n in 0..commands {
                let applied = store
                    .apply(&format!("bench-{writer}"), now, |bug| note(bug, n, now))
                    .await?;
                retries += u64::from(applied.attempts - 1);
            }
            Ok::<u64, BenchError>(retries)
        }));
    }
    collect(tasks, writers * commands, started).await
}

async fn one_document(
    store: &Store,
    writers: usize,
    commands: usize,
) -> Result<Figures, BenchError> {
    let now = now_ms();
    let mut workspace = Workspace::default();
    for writer in 0..writers {
        let id = format!("doc-{writer}");
        workspace
            .bugs
            .insert(id.clone(), Bug::open(&id, "shoplite", "r"));
    }
    let initial =
        serde_json::to_string(&workspace).map_err(|e| BenchError::Writer(e.to_string()))?;
    store.bench_document_reset(&initial).await?;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let id = format!("doc-{writer}");
            let mut retries = 0u64;
            for n in 0..commands {
                let mut attempt = 0u32;
                loop {
                    let (version, text) = store.bench_document_read().await?;
                    let mut workspace: Workspace = serde_json::from_str(&text)
                        .map_err(|e| BenchError::Writer(e.to_string()))?;
                    let bug = workspace
                        .bugs
                        .get(&id)
                        .cloned()
                        .ok_or_else(|| BenchError::Writer(id.clone()))?;
                    let decision =
                        note(&bug, n, now).map_err(|e| BenchError::Writer(e.to_string()))?;
                    workspace.events.extend(decision.events);
                    workspace.bugs.insert(id.clone(), decision.bug);
                    let text = serde_json::to_string(&workspace)
                        .map_err(|e| BenchError::Writer(e.to_string()))?;
                    if store.bench_document_swap(version, &text).await? {
                        break;
                    }
                    retries += 1;
                    attempt += 1;
                    // The same full-jitter backoff the ledger uses, so only the design differs.
                    let ceiling = 1_000u64 << attempt.min(8);
                    let wait = rand::Rng::gen_range(&mut rand::thread_rng(), ceiling / 4..=ceiling);
                    tokio::time::sleep(Duration::from_micros(wait)).await;
                }
            }
            Ok::<u64, BenchError>(retries)
        }));
    }
    collect(tasks, writers * commands, started).await
}

type Writer = tokio::task::JoinHandle<Result<u64, BenchError>>;

/// Waits for every writer and sums the races they lost.
async fn collect(
    tasks: Vec<Writer>,
    commands: usize,
    started: Instant,
) -> Result<Figures, BenchError> {
    let mut retries = 0;
    for task in tasks {
        retries += task
            .await
            .map_err(|e| BenchError::Writer(e.to_string()))??;
    }
    Ok(Figures {
        commands: commands as u64,
        elapsed: started.elapsed(),
        retries,
    })
}

/// Runs both workloads on `url` (which must hold no bugs).
pub async fn ledger(
    url: &DatabaseUrl,
    writers: usize,
    commands: usize,
) -> Result<LedgerBench, BenchError> {
    let store = Store::connect(url).await?;
    store.migrate().await?;
    let existing = store.bug_ids().await?.len();
    if existing > 0 {
        return Err(BenchError::NotEmpty(existing));
    }
    let per_bug = per_bug(&store, writers, commands).await?;
    let one_document = one_document(&store, writers, commands).await?;
    Ok(LedgerBench {
        storage: store.backend().as_str(),
        writers,
        commands,
        per_bug,
        one_document,
    })
}

impl std::fmt::Display for LedgerBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let line = |f: &mut std::fmt::Formatter<'_>, name: &str, figures: &Figures| {
            writeln!(
                f,
                "  {name:<34} {:>9.0} commands/s  ({} commands in {:.2} s, {} lost races retried)",
                figures.rate(),
                figures.commands,
                figures.elapsed.as_secs_f64(),
                figures.retries
            )
        };
        writeln!(
            f,
            "ledger benchmark · {} · {} writers × {} commands (each writer on its own bug)",
            self.storage, self.writers, self.commands
        )?;
        line(f, "per-bug rows (this design)", &self.per_bug)?;
        line(f, "one JSON document (seed design)", &self.one_document)?;
        writeln!(
            f,
            "  {:<34} {:>9.1}×",
            "ratio",
            self.per_bug.rate() / self.one_document.rate().max(1e-9)
        )
    }
}
