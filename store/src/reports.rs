//! Reports: filing one (clustering it into an open bug or opening a new bug, in the same
//! transaction as the ledger write), finding a report by its capability hash, the quarantine
//! queue and the messages owners send a reporter through their link.

use crate::ledger::to_u64;
use crate::{Pool, Store, StoreError};
use domain::airlock::Dossier;
use domain::workflow::Millis;

/// What the airlock made of a report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportContent {
    /// Clean: only the redacted dossier is kept.
    Admitted(Dossier),
    /// Hostile: only the families hit are kept.
    Quarantined {
        /// Families, by stable name.
        families: Vec<String>,
    },
}

impl ReportContent {
    /// The airlock's verdict as stored content, with the raw text's SHA-256.
    pub fn from_admission(admission: domain::airlock::Admission) -> (ReportContent, String) {
        use domain::airlock::Admission;
        match admission {
            Admission::Admitted {
                dossier,
                raw_sha256,
            } => (ReportContent::Admitted(dossier), raw_sha256),
            Admission::Quarantined {
                families,
                raw_sha256,
            } => (
                ReportContent::Quarantined {
                    families: families.iter().map(|f| f.as_str().to_owned()).collect(),
                },
                raw_sha256,
            ),
        }
    }

    /// The redacted title clustering compares (empty when quarantined).
    pub fn title(&self) -> &str {
        match self {
            ReportContent::Admitted(dossier) => &dossier.title,
            ReportContent::Quarantined { .. } => "",
        }
    }
}

/// The open bug among `open` that a report titled `title` in `component` joins, by the
/// clustering rule (Dice of title terms ≥ [`domain::cluster::JOIN_THRESHOLD`], same
/// component, the most similar; the earliest on a tie).
pub fn choose_cluster(component: &str, title: &str, open: &[OpenCluster]) -> Option<String> {
    let terms = domain::cluster::title_terms(title);
    let mut best: Option<(&OpenCluster, f64)> = None;
    for candidate in open.iter().filter(|c| c.component == component) {
        let score = domain::cluster::similarity_to_stored(&terms, &candidate.terms);
        if score >= domain::cluster::JOIN_THRESHOLD && best.is_none_or(|(_, b)| score > b) {
            best = Some((candidate, score));
        }
    }
    best.map(|(c, _)| c.bug_id.clone())
}

pub(crate) type ClusterRow = (String, String, Option<String>, Option<String>);
type Rows<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Vec<ClusterRow>, sqlx::Error>> + Send + 'a>,
>;

/// The open clusters of `component` whose first title shares a term with `terms` (and those
/// filed before terms were stored), oldest first: only they can reach the join threshold. On
/// PostgreSQL the GIN index on the terms finds them without reading every open bug; SQLite
/// keeps its own index in memory ([`ClusterIndex`]) and asks this only of the component.
pub(crate) trait SharingClusters {
    fn sharing_clusters<'a>(&'a mut self, component: &'a str, terms: &'a [String]) -> Rows<'a>;
}

/// The fewest terms a cluster must share with a title of `terms` terms to reach the join
/// threshold: `2s / (n + m) ≥ t` with `m ≥ s` gives `s ≥ t·n / (2 − t)`.
fn fewest_shared(terms: usize) -> usize {
    let t = domain::cluster::JOIN_THRESHOLD;
    let bound = t * terms as f64 / (2.0 - t);
    // Rounded down a hair first so that float error can only make the filter looser.
    ((bound - 1e-9).ceil() as usize).max(1)
}

/// The most title terms for which intake asks PostgreSQL for clusters holding a pair of them
/// (at most 28 pairs); longer titles ask for any one term.
const PAIRS_UP_TO: usize = 8;

impl SharingClusters for sqlx::PgConnection {
    fn sharing_clusters<'a>(&'a mut self, component: &'a str, terms: &'a [String]) -> Rows<'a> {
        Box::pin(async move {
            // A cluster that can reach the threshold shares at least `fewest_shared` terms;
            // when that is two or more it holds at least one pair of the title's terms, and
            // the GIN index answers "holds this pair" by intersecting two posting lists —
            // without visiting the many clusters that share one common word.
            let array = "string_to_array(r.title_terms, ' ')";
            let pairs: Vec<(usize, usize)> =
                if fewest_shared(terms.len()) >= 2 && terms.len() <= PAIRS_UP_TO {
                    (0..terms.len())
                        .flat_map(|i| (i + 1..terms.len()).map(move |j| (i, j)))
                        .collect()
                } else {
                    Vec::new()
                };
            let holds = if pairs.is_empty() {
                format!("{array} && $2::text[]")
            } else {
                // ($2, the whole list, is named too, so every parameter has a type.)
                let any_pair = pairs
                    .iter()
                    .map(|(i, j)| format!("{array} @> ARRAY[${}, ${}]::text[]", i + 3, j + 3))
                    .collect::<Vec<_>>()
                    .join(" OR ");
                format!("cardinality($2::text[]) > 0 AND ({any_pair})")
            };
            let sql = format!(
                "SELECT bug_id, component, title_terms, dossier FROM ( \
                 SELECT r.bug_id, r.component, r.title_terms, NULL::text AS dossier, r.created_at, r.id \
                 FROM reports r JOIN bugs b ON b.id = r.bug_id \
                 WHERE r.component = $1 AND r.opens_bug = 1 AND b.state <> 'verified' AND ({holds}) \
                 UNION ALL \
                 SELECT r.bug_id, r.component, NULL, r.dossier, r.created_at, r.id \
                 FROM reports r JOIN bugs b ON b.id = r.bug_id \
                 WHERE r.component = $1 AND r.opens_bug = 1 AND b.state <> 'verified' \
                 AND r.title_terms IS NULL) u ORDER BY created_at, id"
            );
            let mut query = sqlx::query_as(&sql).bind(component).bind(terms);
            for term in terms {
                query = query.bind(term);
            }
            query.fetch_all(self).await
        })
    }
}

impl SharingClusters for sqlx::SqliteConnection {
    fn sharing_clusters<'a>(&'a mut self, component: &'a str, _terms: &'a [String]) -> Rows<'a> {
        Box::pin(async move {
            sqlx::query_as(
                "SELECT r.bug_id, r.component, r.title_terms, \
                 CASE WHEN r.title_terms IS NULL THEN r.dossier END FROM reports r \
                 JOIN bugs b ON b.id = r.bug_id \
                 WHERE r.component = $1 AND r.opens_bug = 1 AND b.state <> 'verified' \
                 ORDER BY r.created_at, r.id",
            )
            .bind(component)
            .fetch_all(self)
            .await
        })
    }
}

/// A report to file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewReport {
    /// Id.
    pub id: String,
    /// SHA-256 (hex) of the reporter's capability.
    pub capability_hash: String,
    /// Component from the project's list.
    pub component: String,
    /// SHA-256 of the raw text.
    pub raw_sha256: String,
    /// Optional contact address the reporter gave (owners only; never the crew).
    pub contact: Option<String>,
    /// The airlock's verdict.
    pub content: ReportContent,
}

/// An open bug a new report may join, by the title of the report that opened it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenCluster {
    /// The bug.
    pub bug_id: String,
    /// Its component.
    pub component: String,
    /// The terms of its first report's (redacted) title, as [`domain::cluster::stored_terms`].
    pub terms: String,
}

/// The stranger's budget a report is filed under: its client's (hashed) key, how many new
/// bugs of one component may start the crew in `window`, and the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrangerBudget {
    /// The client's key (a hash; no address is stored).
    pub client_hash: String,
    /// Crew starts per window and component.
    pub limit: u32,
    /// The window, in milliseconds.
    pub window: Millis,
}

/// True about once in 64 calls: for upkeep that need not run on every write.
pub(crate) fn now_and_then() -> bool {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    CALLS.fetch_add(1, Ordering::Relaxed).is_multiple_of(64)
}

/// What a report's intake is limited by, decided in its own transaction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IntakeLimits {
    /// The client's intake rate bucket: a report finding it empty is not filed.
    pub rate: Option<crate::rate::Bucket>,
    /// The client's stranger's budget: when the crew may start on what the report opens.
    pub budget: Option<StrangerBudget>,
}

/// A report refused by its client's intake rate: nothing was stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimited {
    /// Milliseconds until the client may file again.
    pub retry_ms: u64,
}

/// Where a filed report went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filed {
    /// The bug it belongs to; `None` when quarantined.
    pub bug_id: Option<String>,
    /// Whether it opened that bug (false: joined an existing one).
    pub opened: bool,
    /// An earlier report with exactly the same raw text.
    pub repeat_of: Option<String>,
}

/// A stored report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredReport {
    /// Id.
    pub id: String,
    /// Its bug; `None` when quarantined.
    pub bug_id: Option<String>,
    /// Component.
    pub component: String,
    /// Whether the airlock quarantined it.
    pub quarantined: bool,
    /// Families hit (quarantined only).
    pub families: Vec<String>,
    /// The dossier (admitted only).
    pub dossier: Option<Dossier>,
    /// Whether it opened its bug.
    pub opens_bug: bool,
    /// An earlier report with the same raw text.
    pub repeat_of: Option<String>,
    /// Contact address, if given.
    pub contact: Option<String>,
    /// When filed.
    pub created_at: Millis,
    /// SHA-256 of the capability (for a constant-time re-check by the caller).
    pub capability_hash: String,
}

/// A message from an owner to a reporter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportMessage {
    /// Order within the report.
    pub seq: u64,
    /// The owner who wrote it.
    pub author: String,
    /// The text.
    pub body: String,
    /// When.
    pub at: Millis,
}

type ReportRow = (
    String,
    Option<String>,
    String,
    String,
    String,
    Option<String>,
    i64,
    Option<String>,
    Option<String>,
    i64,
    String,
);

const REPORT_COLUMNS: &str = "id, bug_id, component, status, families, dossier, opens_bug, \
                              repeat_of, contact, created_at, capability_hash";

fn to_report(row: ReportRow) -> Result<StoredReport, StoreError> {
    let (id, bug_id, component, status, families, dossier, opens_bug, repeat_of, contact, at, cap) =
        row;
    let families: Vec<String> = serde_json::from_str(&families)
        .map_err(|e| StoreError::Corrupt(format!("report {id} families: {e}")))?;
    let dossier = dossier
        .map(|d| serde_json::from_str::<Dossier>(&d))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("report {id} dossier: {e}")))?;
    Ok(StoredReport {
        id,
        bug_id,
        component,
        quarantined: status == domain::ReportStatus::Quarantined.as_str(),
        families,
        dossier,
        opens_bug: opens_bug != 0,
        repeat_of,
        contact,
        created_at: at,
        capability_hash: cap,
    })
}

/// The open clusters of a SQLite store, kept in memory once loaded (a SQLite desk has one
/// writing process; intake runs under its writer lock), with an index from each title term
/// to the clusters that have it: a report is compared only with the clusters that share a
/// term with its title — the only ones that can reach the join threshold — so its cost does
/// not grow with every open bug.
#[derive(Debug, Default)]
pub(crate) struct ClusterCache {
    open: Option<ClusterIndex>,
    /// PostgreSQL: the intake generation this server's last committed batch took; the index
    /// is whole only while the next batch takes the one after it (no other server filed).
    generation: Option<i64>,
}

/// Open clusters in the order they were opened, and who has which term.
#[derive(Debug, Default)]
pub(crate) struct ClusterIndex {
    /// By slot, oldest first; `None` once forgotten.
    slots: Vec<Option<OpenCluster>>,
    /// Each bug's slot.
    by_bug: std::collections::HashMap<String, usize>,
    /// `component \0 term` → slots, ascending.
    by_term: std::collections::HashMap<String, Vec<usize>>,
    /// How many terms each slot's title has.
    term_counts: Vec<usize>,
}

fn term_key(component: &str, term: &str) -> String {
    format!("{component}\0{term}")
}

impl ClusterIndex {
    fn push(&mut self, cluster: OpenCluster) {
        if self.by_bug.contains_key(&cluster.bug_id) {
            return;
        }
        let slot = self.slots.len();
        let mut count = 0;
        for term in cluster.terms.split(' ').filter(|t| !t.is_empty()) {
            count += 1;
            self.by_term
                .entry(term_key(&cluster.component, term))
                .or_default()
                .push(slot);
        }
        self.by_bug.insert(cluster.bug_id.clone(), slot);
        self.slots.push(Some(cluster));
        self.term_counts.push(count);
    }

    fn forget(&mut self, bug_id: &str) {
        if let Some(slot) = self.by_bug.remove(bug_id) {
            if let Some(entry) = self.slots.get_mut(slot) {
                *entry = None;
            }
        }
    }

    /// The clusters of `component` whose similarity to `terms` (distinct terms) reaches the
    /// join threshold, oldest first. A slot found in k of the terms' lists shares k terms, so
    /// its Sørensen–Dice score is computed from counts alone — the same number
    /// [`domain::cluster::similarity_to_stored`] computes — and only the few that reach the
    /// threshold are copied out.
    fn sharing(&self, component: &str, terms: &[String]) -> Vec<OpenCluster> {
        let mut slots: Vec<usize> = terms
            .iter()
            .filter_map(|term| self.by_term.get(&term_key(component, term)))
            .flatten()
            .copied()
            .collect();
        slots.sort_unstable();
        let mut out = Vec::new();
        let mut i = 0;
        while i < slots.len() {
            let slot = slots[i];
            let mut shared = 0usize;
            while i < slots.len() && slots[i] == slot {
                shared += 1;
                i += 1;
            }
            let theirs = self.term_counts.get(slot).copied().unwrap_or_default();
            if terms.is_empty() || theirs == 0 {
                continue;
            }
            let score = 2.0 * shared as f64 / (terms.len() + theirs) as f64;
            if score >= domain::cluster::JOIN_THRESHOLD {
                if let Some(Some(cluster)) = self.slots.get(slot) {
                    out.push(cluster.clone());
                }
            }
        }
        out
    }
}

impl Store {
    fn cluster_cache(&self) -> std::sync::MutexGuard<'_, ClusterCache> {
        match self.clusters.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub(crate) fn cached_clusters(
        &self,
        component: &str,
        terms: &[String],
    ) -> Option<Vec<OpenCluster>> {
        self.cluster_cache()
            .open
            .as_ref()
            .map(|index| index.sharing(component, terms))
    }

    pub(crate) fn fill_cluster_cache(&self, open: Vec<OpenCluster>) {
        let mut index = ClusterIndex::default();
        for cluster in open {
            index.push(cluster);
        }
        self.cluster_cache().open = Some(index);
    }

    pub(crate) fn remember_cluster(&self, cluster: OpenCluster) {
        if let Some(index) = self.cluster_cache().open.as_mut() {
            index.push(cluster);
        }
    }

    /// PostgreSQL, inside an intake batch that took generation `taken`: whether this server
    /// filed the batch before it (so its index holds every open cluster). When another
    /// server filed in between, the index is forgotten.
    pub(crate) fn clusters_whole_at(&self, taken: i64) -> bool {
        let mut cache = self.cluster_cache();
        let whole = cache.generation == Some(taken - 1);
        if !whole {
            cache.open = None;
        }
        whole
    }

    /// PostgreSQL: the batch that took generation `taken` committed.
    pub(crate) fn clusters_committed_at(&self, taken: i64) {
        self.cluster_cache().generation = Some(taken);
    }

    /// Forgets every cached cluster: they are loaded again from the database.
    pub(crate) fn forget_cluster_cache(&self) {
        self.cluster_cache().open = None;
    }

    pub(crate) fn forget_cluster(&self, bug_id: &str) {
        if let Some(index) = self.cluster_cache().open.as_mut() {
            index.forget(bug_id);
        }
    }

    /// The report whose capability hashes to `capability_hash` (hex).
    pub async fn report_by_capability_hash(
        &self,
        capability_hash: &str,
    ) -> Result<Option<StoredReport>, StoreError> {
        let sql = format!("SELECT {REPORT_COLUMNS} FROM reports WHERE capability_hash = $1");
        let row: Option<ReportRow> = match &self.pool {
            Pool::Sqlite(pool) => {
                sqlx::query_as(&sql)
                    .bind(capability_hash)
                    .fetch_optional(pool)
                    .await?
            }
            Pool::Postgres(pool) => {
                sqlx::query_as(&sql)
                    .bind(capability_hash)
                    .fetch_optional(pool)
                    .await?
            }
        };
        row.map(to_report).transpose()
    }

    /// A report by id.
    pub async fn report(&self, id: &str) -> Result<Option<StoredReport>, StoreError> {
        let sql = format!("SELECT {REPORT_COLUMNS} FROM reports WHERE id = $1");
        let row: Option<ReportRow> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(&sql).bind(id).fetch_optional(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(&sql).bind(id).fetch_optional(pool).await?,
        };
        row.map(to_report).transpose()
    }

    /// Reports of one bug, first filed first.
    pub async fn reports_of_bug(&self, bug_id: &str) -> Result<Vec<StoredReport>, StoreError> {
        let sql = format!(
            "SELECT {REPORT_COLUMNS} FROM reports WHERE bug_id = $1 ORDER BY created_at, id"
        );
        let rows: Vec<ReportRow> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(&sql).bind(bug_id).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(&sql).bind(bug_id).fetch_all(pool).await?,
        };
        rows.into_iter().map(to_report).collect()
    }

    /// Marks quarantined report `id` handled by `owner_id` at `at`: it leaves the queue.
    /// `Some(false)` when it already was (the first owner and time are kept); `None` when no
    /// quarantined report has that id.
    pub async fn mark_quarantine_handled(
        &self,
        id: &str,
        owner_id: &str,
        at: Millis,
    ) -> Result<Option<bool>, StoreError> {
        // One statement: the report must be quarantined, and a second mark changes nothing.
        let sql = "INSERT INTO quarantine_handled (report_id, owner_id, at) \
                   SELECT id, $2, $3 FROM reports WHERE id = $1 AND status = 'quarantined' \
                   ON CONFLICT (report_id) DO NOTHING";
        let inserted = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query(sql)
                .bind(id)
                .bind(owner_id)
                .bind(at)
                .execute(pool)
                .await?
                .rows_affected(),
            Pool::Postgres(pool) => sqlx::query(sql)
                .bind(id)
                .bind(owner_id)
                .bind(at)
                .execute(pool)
                .await?
                .rows_affected(),
        };
        if inserted == 1 {
            return Ok(Some(true));
        }
        Ok(match self.report(id).await? {
            Some(report) if report.quarantined => Some(false),
            _ => None,
        })
    }

    /// Moves every report of bug `from` to bug `to` (a duplicate merged into the bug that
    /// stays): each reporter's tracking link then follows `to`. Answers how many moved; asked
    /// again, none.
    pub async fn reassign_reports(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        let sql = "UPDATE reports SET bug_id = $2 WHERE bug_id = $1";
        Ok(match &self.pool {
            Pool::Sqlite(pool) => sqlx::query(sql)
                .bind(from)
                .bind(to)
                .execute(pool)
                .await?
                .rows_affected(),
            Pool::Postgres(pool) => sqlx::query(sql)
                .bind(from)
                .bind(to)
                .execute(pool)
                .await?
                .rows_affected(),
        })
    }

    /// Who marked quarantined report `id` handled, and when.
    pub async fn quarantine_handled_by(
        &self,
        id: &str,
    ) -> Result<Option<(String, Millis)>, StoreError> {
        let sql = "SELECT owner_id, at FROM quarantine_handled WHERE report_id = $1";
        Ok(match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).bind(id).fetch_optional(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).bind(id).fetch_optional(pool).await?,
        })
    }

    /// How many reports the airlock quarantined, and how many of them an owner marked handled
    /// (two index counts: what the desk's change fingerprint reads of the queue).
    pub async fn quarantine_counts(&self) -> Result<(i64, i64), StoreError> {
        let sql = "SELECT (SELECT COUNT(*) FROM reports WHERE status = 'quarantined'), \
                   (SELECT COUNT(*) FROM quarantine_handled)";
        Ok(match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_one(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).fetch_one(pool).await?,
        })
    }

    /// Quarantined reports not yet handled, newest first: metadata only, there is no text to
    /// show.
    pub async fn quarantine_queue(&self, limit: u32) -> Result<Vec<StoredReport>, StoreError> {
        let sql = format!(
            "SELECT {REPORT_COLUMNS} FROM reports WHERE status = 'quarantined' \
             AND NOT EXISTS (SELECT 1 FROM quarantine_handled h WHERE h.report_id = reports.id) \
             ORDER BY created_at DESC, id LIMIT $1"
        );
        let rows: Vec<ReportRow> = match &self.pool {
            Pool::Sqlite(pool) => {
                sqlx::query_as(&sql)
                    .bind(i64::from(limit))
                    .fetch_all(pool)
                    .await?
            }
            Pool::Postgres(pool) => {
                sqlx::query_as(&sql)
                    .bind(i64::from(limit))
                    .fetch_all(pool)
                    .await?
            }
        };
        rows.into_iter().map(to_report).collect()
    }

    /// Appends a message from an owner to a report's reporter, with the concierge's job to
    /// deliver it (one transaction); returns its sequence number, or `None` when there is no
    /// such report.
    pub async fn add_report_message(
        &self,
        report_id: &str,
        author: &str,
        body: &str,
        now: Millis,
    ) -> Result<Option<u64>, StoreError> {
        for_each_backend!(self, pool, begin => {
            let mut tx = begin().await?;
            let exists: Option<(String, Option<String>)> =
                sqlx::query_as("SELECT id, bug_id FROM reports WHERE id = $1")
                    .bind(report_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            let Some((_, bug_id)) = exists else {
                return Ok(None);
            };
            let next: i64 = sqlx::query_scalar(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM report_messages WHERE report_id = $1",
            )
            .bind(report_id)
            .fetch_one(&mut *tx)
            .await?;
            sqlx::query(
                "INSERT INTO report_messages (report_id, seq, author, body, at) VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(report_id)
            .bind(next)
            .bind(author)
            .bind(body)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            // The concierge takes it to the reporter's other channels (email, webhook).
            let job = message_job(report_id, bug_id.as_deref(), next, body, now);
            let payload = serde_json::to_string(&job.payload)
                .map_err(|e| StoreError::Corrupt(e.to_string()))?;
            insert_job!(tx, job, bug_id.as_deref(), &payload, now);
            tx.commit().await?;
            self.wake();
            Ok(Some(to_u64(next)))
        })
    }

    /// Messages to a report's reporter, in order.
    pub async fn report_messages(&self, report_id: &str) -> Result<Vec<ReportMessage>, StoreError> {
        let sql =
            "SELECT seq, author, body, at FROM report_messages WHERE report_id = $1 ORDER BY seq";
        let rows: Vec<(i64, String, String, i64)> = match &self.pool {
            Pool::Sqlite(pool) => sqlx::query_as(sql).bind(report_id).fetch_all(pool).await?,
            Pool::Postgres(pool) => sqlx::query_as(sql).bind(report_id).fetch_all(pool).await?,
        };
        Ok(rows
            .into_iter()
            .map(|(seq, author, body, at)| ReportMessage {
                seq: to_u64(seq),
                author,
                body,
                at,
            })
            .collect())
    }
}

/// The concierge's job for message `seq` to `report_id`'s reporter.
fn message_job(
    report_id: &str,
    bug_id: Option<&str>,
    seq: i64,
    text: &str,
    now: Millis,
) -> domain::workflow::JobDraft {
    let mut payload = std::collections::BTreeMap::from([
        ("report".to_owned(), report_id.to_owned()),
        ("text".to_owned(), text.to_owned()),
        ("seq".to_owned(), seq.to_string()),
    ]);
    if let Some(bug) = bug_id {
        payload.insert("bug".to_owned(), bug.to_owned());
    }
    domain::workflow::JobDraft {
        idempotency_key: format!("message:{report_id}:{seq}"),
        kind: "owner_message".to_owned(),
        consumer: domain::workflow::Consumer::Concierge,
        available_at: now,
        payload,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const WORDS: [&str; 12] = [
        "coupon", "total", "negative", "cart", "image", "login", "crash", "slow", "price",
        "checkout", "banner", "search",
    ];

    fn title(seed: u64) -> String {
        // A small deterministic mix: three to five words, sometimes a code of its own.
        let mut x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let mut words = Vec::new();
        for _ in 0..(3 + seed % 3) {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            words.push(WORDS[(x >> 33) as usize % WORDS.len()].to_owned());
        }
        if seed.is_multiple_of(4) {
            words.push(format!("SKU{}", seed % 97));
        }
        words.join(" ")
    }

    #[test]
    fn fewer_shared_terms_than_fewest_shared_never_reach_the_threshold() {
        for n in 1..=30usize {
            let s_min = fewest_shared(n);
            for m in 1..=40usize {
                for s in 0..=n.min(m) {
                    let score = 2.0 * s as f64 / (n + m) as f64;
                    if score >= domain::cluster::JOIN_THRESHOLD {
                        assert!(s >= s_min, "n {n} m {m} s {s} reaches it below {s_min}");
                    }
                }
            }
        }
        assert_eq!(fewest_shared(3), 2);
        assert_eq!(fewest_shared(1), 1);
    }

    #[test]
    fn the_index_picks_exactly_what_comparing_with_every_open_cluster_picks() {
        let mut index = ClusterIndex::default();
        let mut all = Vec::new();
        for n in 0..600u64 {
            let cluster = OpenCluster {
                bug_id: format!("bug-{n}"),
                component: if n % 5 == 0 { "desk" } else { "shoplite" }.to_owned(),
                terms: domain::cluster::stored_terms(&title(n)),
            };
            index.push(cluster.clone());
            all.push(cluster);
        }
        // Some clusters close (verified, or refused at attach): forgotten by both.
        for n in (0..600).step_by(7) {
            let bug = format!("bug-{n}");
            index.forget(&bug);
            all.retain(|c| c.bug_id != bug);
        }
        let mut joined = 0;
        for probe in 10_000..11_500u64 {
            let text = title(probe % 700);
            for component in ["shoplite", "desk"] {
                let terms: Vec<String> = domain::cluster::title_terms(&text).into_iter().collect();
                let narrowed = index.sharing(component, &terms);
                assert!(narrowed.len() <= all.len());
                assert!(
                    narrowed.iter().all(|c| {
                        domain::cluster::similarity_to_stored(
                            &terms.iter().cloned().collect(),
                            &c.terms,
                        ) >= domain::cluster::JOIN_THRESHOLD
                    }),
                    "only clusters that can join are copied out"
                );
                let full = choose_cluster(component, &text, &all);
                assert_eq!(
                    choose_cluster(component, &text, &narrowed),
                    full,
                    "{component}: {text}"
                );
                joined += usize::from(full.is_some());
            }
        }
        assert!(
            joined > 100,
            "the probes must join often enough to test something: {joined}"
        );
        // Pushing a bug twice changes nothing; a title sharing no term finds nothing.
        index.push(all[0].clone());
        assert!(index.sharing("shoplite", &["zebra".to_owned()]).is_empty());
    }
}
