//! Filing reports: every report goes through one batch at a time. A report waits in a queue;
//! the first filer that finds the intake free files every waiting report in one transaction,
//! and each is answered only once that transaction is committed. Concurrent reports thus
//! share one durable write (one fsync) and, on PostgreSQL, one hold of the intake lock,
//! instead of queueing for one each. One report's failure costs the others nothing: should
//! one fail, the batch is filed again with each report in its own savepoint (not on the
//! usual path, which saves two statements a report).

use crate::ledger::{json, Commit};
use crate::reports::{
    ClusterRow, Filed, IntakeLimits, NewReport, OpenCluster, RateLimited, ReportContent,
    SharingClusters,
};
use crate::{Store, StoreError};
use domain::airlock::Dossier;
use domain::workflow::{Bug, Decision, Millis, Refusal};
use std::sync::Arc;

/// Attempts before filing gives up when crew commands keep changing the chosen bug.
const FILE_ATTEMPTS: u32 = 10;

/// Most reports filed in one transaction.
const MOST_PER_BATCH: usize = 64;

/// What a report's filing answers.
pub type Answer = Result<Result<Filed, RateLimited>, StoreError>;

type Choose = Box<dyn Fn(&[OpenCluster]) -> Option<String> + Send + Sync>;
type Attach = Box<dyn Fn(&Bug) -> Result<Decision, Refusal> + Send + Sync>;
type Open = Box<dyn Fn(Millis) -> Decision + Send + Sync>;

/// One report waiting for its batch.
struct Intake {
    report: NewReport,
    now: Millis,
    limits: IntakeLimits,
    choose: Choose,
    attach: Attach,
    open: Open,
}

/// The reports waiting to be filed, and the gate one batch at a time passes.
#[derive(Default)]
pub(crate) struct IntakeQueue {
    waiting: std::sync::Mutex<Vec<(Intake, tokio::sync::oneshot::Sender<Answer>)>>,
    gate: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for IntakeQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntakeQueue").finish_non_exhaustive()
    }
}

impl IntakeQueue {
    fn waiting(
        &self,
    ) -> std::sync::MutexGuard<'_, Vec<(Intake, tokio::sync::oneshot::Sender<Answer>)>> {
        match self.waiting.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

impl Store {
    /// Files a report, durable when answered.
    ///
    /// A quarantined report is stored alone (no bug) and the concierge is told. An admitted
    /// report joins the bug of an earlier report with the same raw text, else the open bug
    /// `choose` picks from the open clusters of its component, through the engine's
    /// `attach` decision; when nothing fits (or the engine refuses) `open` opens a new bug.
    /// Intake is serialised (SQLite's write lock; on PostgreSQL, the row lock of the intake
    /// generation each batch takes), so two reports
    /// of one new bug filed at the same moment still end up in one cluster; reports filed at
    /// the same moment are filed in one transaction (see the module).
    ///
    /// The same transaction takes the client's intake token (`limits.rate`): a report that
    /// finds none is not filed (`Err(RateLimited)`), and the token and the report are one
    /// durable write. Under a stranger's budget (`limits.budget`) it decides when the crew
    /// starts on a bug the report opens (passed to `open`; `now` without a budget) and, for a
    /// report that joins a bug whose start was put off, brings that start forward to this
    /// client's turn.
    ///
    /// Dropping the returned future does not undo a report already taken into a batch.
    pub async fn file_report<C, A, O>(
        &self,
        report: &NewReport,
        now: Millis,
        limits: &IntakeLimits,
        choose: C,
        attach: A,
        open: O,
    ) -> Answer
    where
        C: Fn(&[OpenCluster]) -> Option<String> + Send + Sync + 'static,
        A: Fn(&Bug) -> Result<Decision, Refusal> + Send + Sync + 'static,
        O: Fn(Millis) -> Decision + Send + Sync + 'static,
    {
        let (reply, mut answer) = tokio::sync::oneshot::channel();
        self.intake.waiting().push((
            Intake {
                report: report.clone(),
                now,
                limits: limits.clone(),
                choose: Box::new(choose),
                attach: Box::new(attach),
                open: Box::new(open),
            },
            reply,
        ));
        let lost = || {
            Err(StoreError::Corrupt(format!(
                "report {}: its intake batch stopped before answering",
                report.id
            )))
        };
        loop {
            tokio::select! {
                biased;
                answered = &mut answer => return answered.unwrap_or_else(|_| lost()),
                gate = Arc::clone(&self.intake.gate).lock_owned() => {
                    let batch: Vec<_> = {
                        let mut waiting = self.intake.waiting();
                        let take = waiting.len().min(MOST_PER_BATCH);
                        waiting.drain(..take).collect()
                    };
                    if batch.is_empty() {
                        // An earlier batch took this report: its answer is on the way.
                        drop(gate);
                        return answer.await.unwrap_or_else(|_| lost());
                    }
                    // The batch runs on its own task, so a filer that goes away (its client
                    // hung up) does not abandon the others' reports half-filed.
                    let store = self.clone();
                    tokio::spawn(async move {
                        let _gate = gate;
                        store.file_batch(batch).await;
                    });
                }
            }
        }
    }

    /// Files `batch` in one transaction and answers each report once it is committed (or
    /// each with the error that stopped it).
    async fn file_batch(&self, batch: Vec<(Intake, tokio::sync::oneshot::Sender<Answer>)>) {
        let (size, started) = (batch.len(), std::time::Instant::now());
        let (intakes, replies): (Vec<Intake>, Vec<_>) = batch.into_iter().unzip();
        // Should a closure panic mid-batch, the transaction is rolled back and so is what the
        // cluster index learnt from it.
        let undo = ForgetClustersUnlessKept(self, false);
        // First without a savepoint per report (two statements fewer each); should one
        // report fail, that pass is rolled back whole and the batch filed again with one
        // savepoint per report, so that the failure costs the others nothing.
        let mut answers = Vec::new();
        let mut filed_at = None;
        let mut committed = Ok(Pass::Again);
        for careful in [false, true] {
            answers.clear();
            committed = self
                .file_pass(&intakes, careful, &mut answers, &mut filed_at)
                .await;
            if !matches!(committed, Ok(Pass::Again)) {
                break;
            }
            // What the index learnt from the rolled-back pass is forgotten.
            self.forget_cluster_cache();
        }
        let _kept = undo.keep(matches!(committed, Ok(Pass::Filed)));
        tracing::debug!(
            reports = size,
            ms = started.elapsed().as_secs_f64() * 1e3,
            commit_ms = filed_at.map_or(0.0, |at: std::time::Instant| at.elapsed().as_secs_f64()
                * 1e3),
            committed = matches!(committed, Ok(Pass::Filed)),
            "intake batch"
        );
        let mut answers = answers.into_iter();
        match committed {
            Ok(Pass::Filed) => {
                self.wake();
                let latest = intakes
                    .iter()
                    .filter(|intake| intake.limits.rate.is_some())
                    .map(|intake| intake.now)
                    .max();
                if let Some(now) = latest {
                    if let Err(error) = self.now_and_then_forget(now).await {
                        tracing::warn!(%error, "old rate buckets were not deleted");
                    }
                }
                for reply in replies {
                    let _ = reply.send(answers.next().unwrap_or_else(|| {
                        Err(StoreError::Corrupt(
                            "the intake batch lost an answer".into(),
                        ))
                    }));
                }
            }
            failed => {
                // Nothing of the batch was kept: what the cluster index learnt from it is
                // forgotten with it (`undo`).
                let message = match failed {
                    Err(error) => error.to_string(),
                    Ok(_) => "a report failed twice".to_owned(),
                };
                let not_kept = || {
                    Err(StoreError::NotCommitted(format!(
                        "the intake transaction did not commit: {message}"
                    )))
                };
                for reply in replies {
                    let _ = reply.send(match answers.next() {
                        Some(Err(own)) => Err(own),
                        _ => not_kept(),
                    });
                }
            }
        }
    }

    /// One pass over the batch's reports in one transaction, pushing each report's answer
    /// to `answers`. `careful`: each report in its own savepoint, so one that fails is
    /// undone alone; otherwise a report that fails ends the pass (`Pass::Again`, nothing
    /// kept). `filed_at`: when the commit started.
    async fn file_pass(
        &self,
        intakes: &[Intake],
        careful: bool,
        answers: &mut Vec<Answer>,
        filed_at: &mut Option<std::time::Instant>,
    ) -> Result<Pass, StoreError> {
        let postgres = self.backend() == crate::Backend::Postgres;
        // The rate buckets the batch's reports take their tokens from: each held once, at the
        // batch's level (so the hold lasts until its commit), spent in memory and written back
        // once before the commit.
        let mut buckets: std::collections::HashMap<String, HeldBucket> =
            std::collections::HashMap::new();
        for_each_backend!(self, pool, begin => {
            async {
                let mut batch_tx = begin().await?;
                // SQLite: this process is the only writer, so its clusters in memory are
                // whole. PostgreSQL: whole while no other server filed since this one's last
                // batch (the generation every batch takes under the intake lock says so);
                // otherwise each report asks the database for the clusters sharing its words.
                let mut generation = None;
                let mut whole = true;
                if postgres {
                    // The generation's row lock, held to the commit, is the intake lock.
                    let taken: i64 = sqlx::query_scalar(
                        "UPDATE intake_generation SET generation = generation + 1 RETURNING generation",
                    )
                    .fetch_one(&mut *batch_tx)
                    .await?;
                    whole = self.clusters_whole_at(taken);
                    generation = Some(taken);
                }
                for intake in intakes {
                    let (report, now, limits) = (&intake.report, intake.now, &intake.limits);
                    let budget = limits.budget.as_ref();
                    // The client's token first: a report that finds none is refused before
                    // anything of it is written.
                    let mut spent = None;
                    if let Some(bucket) = &limits.rate {
                        let before = match buckets.get(&bucket.key) {
                            Some(held) => *held,
                            None => {
                                let (tokens, updated) = hold_bucket!(batch_tx, bucket, now);
                                HeldBucket { tokens, updated, changed: false }
                            }
                        };
                        let held = buckets.entry(bucket.key.clone()).or_insert(before);
                        let (left, took) = crate::rate::refill_and_take(bucket.refill, held.tokens, now - held.updated);
                        if !took {
                            let retry_ms = crate::rate::retry_ms(bucket.refill, left);
                            answers.push(Ok(Err(RateLimited { retry_ms })));
                            continue;
                        }
                        *held = HeldBucket { tokens: left, updated: now.max(held.updated), changed: true };
                        spent = Some((bucket.key.clone(), before));
                    }
                    let mut answer = Err(StoreError::Corrupt(format!(
                        "report {} could not be filed: its bug kept changing over {FILE_ATTEMPTS} attempts",
                        report.id
                    )));
                    for _ in 0..FILE_ATTEMPTS {
                        if careful {
                            sqlx::query("SAVEPOINT intake_report").execute(&mut *batch_tx).await?;
                        }
                        // An attempt that answers `None` wrote nothing (its bug changed before
                        // its first write): it is tried again.
                        let attempt: Result<Option<Result<Filed, RateLimited>>, StoreError> = async {
                            let (status, families, dossier) = match &report.content {
                                ReportContent::Admitted(dossier) => (domain::ReportStatus::Admitted.as_str(), "[]".to_owned(), Some(json(dossier)?)),
                                ReportContent::Quarantined { families } => (domain::ReportStatus::Quarantined.as_str(), json(families)?, None),
                            };
                            Ok({
                                let tx = &mut *batch_tx;
                                let repeat_of: Option<(String, Option<String>, String)> = sqlx::query_as(
                                    "SELECT r.id, r.bug_id, COALESCE(b.state, '') FROM reports r \
                                     LEFT JOIN bugs b ON b.id = r.bug_id \
                                     WHERE r.raw_sha256 = $1 ORDER BY r.created_at, r.id LIMIT 1",
                                )
                                .bind(&report.raw_sha256)
                                .fetch_optional(&mut *tx)
                                .await?;
                                let repeat_id = repeat_of.as_ref().map(|(id, _, _)| id.clone());
                                if dossier.is_none() {
                                    insert_report!(tx, report, status, &families, None::<String>, None::<String>,
                                        false, &repeat_id, now);
                                    let job = domain::workflow::JobDraft {
                                        idempotency_key: format!("quarantine:{}", report.id),
                                        kind: "notify_owners_quarantine".to_owned(),
                                        consumer: domain::workflow::Consumer::Concierge,
                                        available_at: now,
                                        payload: [("report".to_owned(), report.id.clone())].into(),
                                    };
                                    let payload = json(&job.payload)?;
                                    insert_job!(tx, job, None::<&str>, &payload, now);
                                    Some(Ok(Filed { bug_id: None, opened: false, repeat_of: repeat_id }))
                                } else {
                                    // An identical earlier report whose bug is still open decides the cluster.
                                    let mut target = repeat_of
                                        .and_then(|(_, bug, state)| bug.filter(|_| state != "verified"));
                                    if target.is_none() {
                                        let terms: Vec<String> =
                                            domain::cluster::title_terms(report.content.title()).into_iter().collect();
                                        let cached = if whole {
                                            self.cached_clusters(&report.component, &terms)
                                        } else {
                                            None
                                        };
                                        let open_clusters = match cached {
                                            Some(list) => list,
                                            None => {
                                                // While the index in memory can be whole (above): load every
                                                // component once and keep it; otherwise ask each time for the
                                                // clusters sharing a term (PostgreSQL's GIN index on the terms).
                                                let every = whole;
                                                let component = if every { "" } else { report.component.as_str() };
                                                // Reports filed before terms had their own column fall back to the dossier.
                                                let rows: Vec<ClusterRow> = if every {
                                                    sqlx::query_as(
                                                        "SELECT r.bug_id, r.component, r.title_terms, \
                                                         CASE WHEN r.title_terms IS NULL THEN r.dossier END FROM reports r \
                                                         JOIN bugs b ON b.id = r.bug_id \
                                                         WHERE r.opens_bug = 1 AND b.state <> 'verified' \
                                                         ORDER BY r.created_at, r.id",
                                                    )
                                                    .fetch_all(&mut *tx)
                                                    .await?
                                                } else {
                                                    SharingClusters::sharing_clusters(&mut *tx, component, &terms).await?
                                                };
                                                let all = rows
                                                    .into_iter()
                                                    .map(|(bug_id, component, terms, dossier)| {
                                                        let terms = match (terms, dossier) {
                                                            (Some(terms), _) => terms,
                                                            (None, dossier) => domain::cluster::stored_terms(
                                                                &serde_json::from_str::<Dossier>(dossier.as_deref().unwrap_or_default())
                                                                    .map_err(|e| {
                                                                        StoreError::Corrupt(format!("dossier of bug {bug_id}: {e}"))
                                                                    })?
                                                                    .title,
                                                            ),
                                                        };
                                                        Ok(OpenCluster { bug_id, component, terms })
                                                    })
                                                    .collect::<Result<Vec<_>, StoreError>>()?;
                                                if every {
                                                    self.fill_cluster_cache(all);
                                                    self.cached_clusters(&report.component, &terms).unwrap_or_default()
                                                } else {
                                                    all.into_iter().filter(|c| c.component == report.component).collect()
                                                }
                                            }
                                        };
                                        target = (intake.choose)(&open_clusters);
                                    }
                                    let joined = match &target {
                                        Some(bug_id) => {
                                            // The bug and its crew start, if a stranger's budget put one
                                            // down: one read.
                                            let row: Option<BugAndStart> = sqlx::query_as(
                                                "SELECT b.document, b.version, b.event_count, b.head_hash, \
                                                 c.component, c.start_at FROM bugs b \
                                                 LEFT JOIN crew_starts c ON c.bug_id = b.id WHERE b.id = $1",
                                            )
                                            .bind(bug_id)
                                            .fetch_optional(&mut *tx)
                                            .await?;
                                            let stored = match row {
                                                Some((document, version, events, head, component, start_at)) => Some((
                                                    crate::ledger::stored_bug((document, version, events, head))?,
                                                    component.zip(start_at),
                                                )),
                                                None => None,
                                            };
                                            match stored.map(|(s, start)| ((intake.attach)(&s.bug), s, start)) {
                                                Some((Ok(decision), read, start)) if decision.changed => {
                                                    match write_decision_at!(tx, read(&read), &decision, now) {
                                                        Commit::Done => Some(Some((bug_id.clone(), start))),
                                                        // A crew command changed the bug meanwhile: start over.
                                                        Commit::VersionConflict => None,
                                                    }
                                                }
                                                // Already in the cluster (cannot happen for a new id) or refused
                                                // (the bug closed meanwhile): forget it, open a new bug instead.
                                                _ => {
                                                    self.forget_cluster(bug_id);
                                                    Some(None)
                                                }
                                            }
                                        }
                                        None => Some(None),
                                    };
                                    match joined {
                                        None => None,
                                        Some(Some((bug_id, start))) => {
                                            insert_report!(tx, report, status, &families, &dossier, Some(&bug_id),
                                                false, &repeat_id, now);
                                            if let Some(budget) = budget {
                                                join_crew_start!(tx, budget, &bug_id, start, now);
                                            }
                                            Some(Ok(Filed { bug_id: Some(bug_id), opened: false, repeat_of: repeat_id }))
                                        }
                                        Some(None) => {
                                            // `open` names the new bug: decided once to learn its id, and again
                                            // with its crew start when the budget puts that off.
                                            let decision = match budget {
                                                Some(budget) => {
                                                    let probe = (intake.open)(now);
                                                    let crew_at = claim_crew_start!(
                                                        tx, budget, &probe.bug.id, &report.component, now);
                                                    if crew_at > now { (intake.open)(crew_at) } else { probe }
                                                }
                                                None => (intake.open)(now),
                                            };
                                            let bug = &decision.bug;
                                            let chained = domain::ledger::chain(
                                                &bug.id, 0, domain::ledger::GENESIS_HASH, &decision.events);
                                            let head = chained
                                                .last()
                                                .map_or(domain::ledger::GENESIS_HASH.to_owned(), |e| e.hash.clone());
                                            insert_bug!(tx, bug, json(bug)?, chained.len(), &head, now);
                                            insert_events!(tx, &chained);
                                            for job in &decision.jobs {
                                                let payload = json(&job.payload)?;
                                                insert_job!(tx, job, Some(bug.id.as_str()), &payload, now);
                                            }
                                            insert_report!(tx, report, status, &families, &dossier, Some(&bug.id),
                                                true, &repeat_id, now);
                                            self.remember_cluster(OpenCluster {
                                                bug_id: bug.id.clone(),
                                                component: report.component.clone(),
                                                terms: domain::cluster::stored_terms(report.content.title()),
                                            });
                                            Some(Ok(Filed { bug_id: Some(bug.id.clone()), opened: true, repeat_of: repeat_id }))
                                        }
                                    }
                                }
                            })
                        }
                        .await;
                        if careful {
                            if !matches!(attempt, Ok(Some(_))) {
                                sqlx::query("ROLLBACK TO SAVEPOINT intake_report")
                                    .execute(&mut *batch_tx)
                                    .await?;
                            }
                            sqlx::query("RELEASE SAVEPOINT intake_report").execute(&mut *batch_tx).await?;
                        }
                        match attempt {
                            Ok(None) => continue,
                            Ok(Some(filed)) => answer = Ok(filed),
                            // Part of the report may be written: without a savepoint, only
                            // the whole pass can be undone.
                            Err(_) if !careful => return Ok(Pass::Again),
                            Err(error) => answer = Err(error),
                        }
                        break;
                    }
                    if answer.is_err() {
                        // Nothing of the report was kept: neither is its token.
                        if let Some((key, before)) = spent {
                            buckets.insert(key, before);
                        }
                    }
                    answers.push(answer);
                }
                for (key, held) in &buckets {
                    if held.changed {
                        store_bucket!(batch_tx, key, held.tokens, held.updated);
                    }
                }
                *filed_at = Some(std::time::Instant::now());
                batch_tx.commit().await?;
                if let Some(taken) = generation {
                    self.clusters_committed_at(taken);
                }
                Ok(Pass::Filed)
            }
            .await
        })
    }
}

/// A bug's row as [`crate::ledger::stored_bug`] reads it, and its crew start's component and
/// time, if it has one.
type BugAndStart = (String, i64, i64, String, Option<String>, Option<Millis>);

/// How a pass over an intake batch ended.
enum Pass {
    /// Committed.
    Filed,
    /// A report failed without a savepoint: nothing was kept; file again, carefully.
    Again,
}

/// A rate bucket an intake batch holds: its tokens and time as the batch's reports spent them,
/// and whether they changed.
#[derive(Clone, Copy)]
struct HeldBucket {
    tokens: f64,
    updated: Millis,
    changed: bool,
}

/// Forgets the cached clusters when dropped, unless the batch was kept.
struct ForgetClustersUnlessKept<'a>(&'a Store, bool);

impl ForgetClustersUnlessKept<'_> {
    fn keep(mut self, kept: bool) -> Self {
        self.1 = kept;
        self
    }
}

impl Drop for ForgetClustersUnlessKept<'_> {
    fn drop(&mut self) {
        if !self.1 {
            self.0.forget_cluster_cache();
        }
    }
}
