//! The ledger: bugs under per-bug optimistic concurrency, their hash-chained audit events and
//! the outbox jobs their decisions cause — all three written in one transaction.

use crate::{Pool, Store, StoreError};
use domain::ledger::{chain, verify, ChainBreak, ChainedEvent, GENESIS_HASH};
use domain::workflow::{Bug, Decision, EventDraft, JobDraft, Millis, Refusal};
use std::time::Duration;

/// Attempts before a contended write gives up.
pub const MAX_ATTEMPTS: u32 = 20;
/// Lost optimistic races before a PostgreSQL writer re-reads under the bug's row lock.
pub const OPTIMISTIC_ATTEMPTS: u32 = 3;

/// A bug as stored, with the head of its event chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredBug {
    /// The engine's document (its `version` is the stored version).
    pub bug: Bug,
    /// Events in its chain.
    pub event_count: u64,
    /// Hash of its newest event.
    pub head_hash: String,
}

/// Why a command could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The engine refused the command.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// No such bug.
    #[error("no bug {0}")]
    NotFound(String),
    /// Other writers kept winning.
    #[error("bug {bug} changed under {attempts} consecutive attempts; try again")]
    Contended {
        /// The bug.
        bug: String,
        /// Attempts made.
        attempts: u32,
    },
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What an accepted command did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The bug afterwards.
    pub bug: Bug,
    /// Whether anything was recorded (false: acknowledged and dropped).
    pub changed: bool,
    /// Attempts it took.
    pub attempts: u32,
}

/// The result of verifying every chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerSummary {
    /// Bugs checked.
    pub bugs: u64,
    /// Events checked.
    pub events: u64,
    /// Events of the owners' trail checked.
    pub owner_events: u64,
}

/// Outcome of a compare-and-swap commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commit {
    /// Written.
    Done,
    /// Another writer got there first.
    VersionConflict,
}

type EventRow = (i64, String, String, String, String);

pub(crate) fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or_default()
}

pub(crate) fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(crate) fn json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn parse_bug(document: &str) -> Result<Bug, StoreError> {
    serde_json::from_str(document).map_err(|e| StoreError::Corrupt(format!("bug document: {e}")))
}

/// Jittered exponential backoff for a lost compare-and-swap: a random wait up to 2 ms,
/// doubling per attempt to at most 256 ms ("full jitter").
fn backoff(attempt: u32) -> Duration {
    use rand::Rng;
    let ceiling_us = 1_000u64 << attempt.min(8);
    Duration::from_micros(rand::thread_rng().gen_range(ceiling_us / 4..=ceiling_us))
}

/// Builds a [`StoredBug`] from its row.
pub(crate) fn stored_bug(row: (String, i64, i64, String)) -> Result<StoredBug, StoreError> {
    let (document, version, event_count, head_hash) = row;
    let mut bug = parse_bug(&document)?;
    bug.version = to_u64(version);
    Ok(StoredBug {
        bug,
        event_count: to_u64(event_count),
        head_hash,
    })
}

impl Store {
    /// Stores a new bug with the events and jobs of its opening decision.
    pub async fn create_bug(
        &self,
        bug: &Bug,
        events: &[EventDraft],
        jobs: &[JobDraft],
        now: Millis,
    ) -> Result<(), StoreError> {
        let chained = chain(&bug.id, 0, GENESIS_HASH, events);
        let head = chained
            .last()
            .map_or(GENESIS_HASH.to_owned(), |e| e.hash.clone());
        let document = json(bug)?;
        let job_payloads = jobs
            .iter()
            .map(|j| json(&j.payload))
            .collect::<Result<Vec<_>, _>>()?;
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            insert_bug!(tx, bug, &document, chained.len(), &head, now);
            insert_events!(tx, &chained);
            for (job, payload) in jobs.iter().zip(&job_payloads) {
                insert_job!(tx, job, Some(bug.id.as_str()), payload, now);
            }
            tx.commit().await?;
        });
        self.wake();
        Ok(())
    }

    /// Loads a bug.
    pub async fn load_bug(&self, id: &str) -> Result<Option<StoredBug>, StoreError> {
        match &self.pool {
            Pool::Sqlite(pool) => {
                let mut connection = pool.acquire().await?;
                Ok(read_bug!(connection, id))
            }
            Pool::Postgres(pool) => {
                let mut connection = pool.acquire().await?;
                Ok(read_bug!(connection, id))
            }
        }
    }

    /// How many bugs there are and the sum of their versions: it changes whenever any bug
    /// does (every recorded change adds one to a version), and is read from an index, so a
    /// page that polls it costs little however many bugs there are.
    pub async fn change_count(&self) -> Result<(i64, i64), StoreError> {
        let sql = "SELECT COUNT(*), CAST(COALESCE(SUM(version), 0) AS BIGINT) FROM bugs";
        Ok(match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_one(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).fetch_one(pool).await?,
        })
    }

    /// When `id` last changed (ms since the epoch), if it exists.
    pub async fn bug_updated_at(&self, id: &str) -> Result<Option<Millis>, StoreError> {
        let sql = "SELECT updated_at FROM bugs WHERE id = $1";
        Ok(match &self.pool {
            Pool::Sqlite(pool) => {
                sqlx::query_scalar(sql)
                    .bind(id)
                    .fetch_optional(pool)
                    .await?
            }
            Pool::Postgres(pool) => {
                sqlx::query_scalar(sql)
                    .bind(id)
                    .fetch_optional(pool)
                    .await?
            }
        })
    }

    /// Ids of every bug, oldest first.
    pub async fn bug_ids(&self) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT id FROM bugs ORDER BY created_at, id";
        Ok(match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_scalar(sql).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_scalar(sql).fetch_all(pool).await?,
        })
    }

    /// Ids of the bugs in any of `states`, oldest first.
    pub async fn bug_ids_in_states(
        &self,
        states: &[domain::BugState],
    ) -> Result<Vec<String>, StoreError> {
        let mut ids = Vec::new();
        for state in states {
            let sql = "SELECT id FROM bugs WHERE state = $1 ORDER BY created_at, id";
            let found: Vec<String> = match &self.pool {
                Pool::Sqlite(pool) => {
                    sqlx::query_scalar(sql)
                        .bind(state.as_str())
                        .fetch_all(pool)
                        .await?
                }
                Pool::Postgres(pool) => {
                    sqlx::query_scalar(sql)
                        .bind(state.as_str())
                        .fetch_all(pool)
                        .await?
                }
            };
            ids.extend(found);
        }
        Ok(ids)
    }

    /// Writes a decision made on version `read_version`, only if the bug is still at it.
    pub async fn commit_decision(
        &self,
        read_version: u64,
        decision: &Decision,
        now: Millis,
    ) -> Result<Commit, StoreError> {
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            let outcome = write_decision!(tx, read_version, decision, now);
            if outcome == Commit::Done {
                tx.commit().await?;
            }
            Ok(outcome)
        })
    }

    /// Applies a command through `decide`.
    ///
    /// PostgreSQL: optimistic — read, decide, compare-and-swap on the version; a loser
    /// re-reads, re-decides on the newer state and retries with jittered backoff, up to
    /// [`MAX_ATTEMPTS`] times. After [`OPTIMISTIC_ATTEMPTS`] lost races the re-read takes the
    /// bug's row lock (`FOR UPDATE`), which guarantees progress on a hot bug. SQLite admits one
    /// writer at a time anyway, so the read and the decision happen inside the write
    /// transaction. Every write, on both, is still a compare-and-swap on the version.
    pub async fn apply<F>(
        &self,
        bug_id: &str,
        now: Millis,
        decide: F,
    ) -> Result<Applied, ApplyError>
    where
        F: Fn(&Bug) -> Result<Decision, Refusal>,
    {
        for attempt in 1..=MAX_ATTEMPTS {
            let result = match &self.pool {
                Pool::Sqlite(pool) => {
                    let _writer = self.writer.lock().await;
                    let mut tx = match pool.begin_with("BEGIN IMMEDIATE").await {
                        Ok(tx) => tx,
                        Err(error) if is_busy(&error) => {
                            tokio::time::sleep(backoff(attempt)).await;
                            continue;
                        }
                        Err(error) => return Err(StoreError::from(error).into()),
                    };
                    let stored = read_bug!(tx, bug_id)
                        .ok_or_else(|| ApplyError::NotFound(bug_id.to_owned()))?;
                    let decision = decide(&stored.bug)?;
                    if !decision.changed {
                        return Ok(Applied {
                            bug: decision.bug,
                            changed: false,
                            attempts: attempt,
                        });
                    }
                    let outcome = write_decision_at!(tx, read(&stored), &decision, now);
                    if outcome == Commit::Done {
                        tx.commit().await.map_err(StoreError::from)?;
                    }
                    (outcome, decision)
                }
                Pool::Postgres(pool) if attempt <= OPTIMISTIC_ATTEMPTS => {
                    let stored = {
                        let mut connection = pool.acquire().await.map_err(StoreError::from)?;
                        read_bug!(connection, bug_id)
                    }
                    .ok_or_else(|| ApplyError::NotFound(bug_id.to_owned()))?;
                    let decision = decide(&stored.bug)?;
                    if !decision.changed {
                        return Ok(Applied {
                            bug: decision.bug,
                            changed: false,
                            attempts: attempt,
                        });
                    }
                    let outcome = self
                        .commit_decision(stored.bug.version, &decision, now)
                        .await?;
                    (outcome, decision)
                }
                Pool::Postgres(pool) => {
                    // A writer that keeps losing takes the bug's row lock for its re-read, so a
                    // hot bug cannot starve it; other bugs are not affected.
                    let mut tx = pool.begin().await.map_err(StoreError::from)?;
                    let stored = read_bug!(tx, bug_id, " FOR UPDATE")
                        .ok_or_else(|| ApplyError::NotFound(bug_id.to_owned()))?;
                    let decision = decide(&stored.bug)?;
                    if !decision.changed {
                        return Ok(Applied {
                            bug: decision.bug,
                            changed: false,
                            attempts: attempt,
                        });
                    }
                    let outcome = write_decision_at!(tx, read(&stored), &decision, now);
                    if outcome == Commit::Done {
                        tx.commit().await.map_err(StoreError::from)?;
                    }
                    (outcome, decision)
                }
            };
            match result {
                (Commit::Done, decision) => {
                    self.wake();
                    return Ok(Applied {
                        bug: decision.bug,
                        changed: true,
                        attempts: attempt,
                    });
                }
                (Commit::VersionConflict, _) => tokio::time::sleep(backoff(attempt)).await,
            }
        }
        Err(ApplyError::Contended {
            bug: bug_id.to_owned(),
            attempts: MAX_ATTEMPTS,
        })
    }

    /// A bug's events in chain order.
    pub async fn events_of(&self, bug_id: &str) -> Result<Vec<ChainedEvent>, StoreError> {
        let sql = "SELECT seq, body, prev_hash, hash, kind FROM audit_events WHERE bug_id = $1 ORDER BY seq";
        let rows: Vec<EventRow> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).bind(bug_id).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).bind(bug_id).fetch_all(pool).await?,
        };
        rows.into_iter()
            .map(|(seq, body, prev_hash, hash, _kind)| {
                let event = serde_json::from_str(&body)
                    .map_err(|e| StoreError::Corrupt(format!("event {bug_id}/{seq}: {e}")))?;
                Ok(ChainedEvent {
                    bug_id: bug_id.to_owned(),
                    seq: to_u64(seq),
                    event,
                    prev_hash,
                    hash,
                })
            })
            .collect()
    }

    /// Recomputes every bug's chain; the first break is the error.
    pub async fn verify_ledger(&self) -> Result<Result<LedgerSummary, ChainBreak>, StoreError> {
        let mut summary = LedgerSummary {
            bugs: 0,
            events: 0,
            owner_events: 0,
        };
        for id in self.bug_ids().await? {
            let stored = self
                .load_bug(&id)
                .await?
                .ok_or_else(|| StoreError::Corrupt(format!("bug {id} vanished")))?;
            let events = match self.events_of(&id).await {
                Ok(events) => events,
                Err(StoreError::Corrupt(reason)) => {
                    return Ok(Err(ChainBreak {
                        bug_id: id,
                        seq: 0,
                        reason,
                    }));
                }
                Err(error) => return Err(error),
            };
            if let Err(broken) = verify(&id, &events, &stored.head_hash, stored.event_count) {
                return Ok(Err(broken));
            }
            summary.bugs += 1;
            summary.events += events.len() as u64;
        }
        match self.verify_owner_trail().await? {
            Ok(count) => summary.owner_events = count,
            Err(broken) => return Ok(Err(broken)),
        }
        Ok(Ok(summary))
    }
}

pub(crate) fn is_busy(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|e| e.message().contains("database is locked") || e.message().contains("busy"))
}
