//! `r2r bench intake` and `r2r bench airlock`: the reporter side's throughput, each against a
//! baseline measured in the same run.

use crate::cli::bench::BenchError;
use crate::ratelimit::RateLimit;
use crate::router::router;
use crate::web::AppState;
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::{DatabaseUrl, NewReport, ReportContent, Store};

/// Intake figures.
#[derive(Debug)]
pub struct IntakeBench {
    /// Backend.
    pub storage: &'static str,
    /// Reports filed.
    pub reports: usize,
    /// Concurrent clients.
    pub clients: usize,
    /// Reports/s over HTTP (airlock, clustering, ledger commit).
    pub http_rate: f64,
    /// Single-transaction inserts/s straight into the store (the mean of a run before the
    /// HTTP run and one after).
    pub raw_rate: f64,
    /// The slower and the faster of the two baseline runs.
    pub raw_spread: (f64, f64),
    /// Bugs the HTTP run opened (the rest joined).
    pub bugs_opened: usize,
    /// Open bugs filed before the timed run (`--open-bugs`).
    pub open_before: usize,
}

const WORDS: [&str; 24] = [
    "coupon", "cart", "invoice", "search", "login", "image", "filter", "shipping", "address",
    "receipt", "refund", "currency", "stock", "review", "wishlist", "banner", "footer", "sitemap",
    "session", "language", "font", "tooltip", "avatar", "calendar",
];

/// A report. A title names two product words and an item code unique to its subject, so two
/// different subjects share at most one of three terms (Dice ≤ 0.4, below the 0.55 join
/// threshold); every third report repeats the previous subject in other words (Dice 0.86: it
/// joins).
fn report_json(n: usize) -> serde_json::Value {
    let base = if n % 3 == 2 { n - 1 } else { n };
    let (a, b) = (WORDS[base % 24], WORDS[(base / 24) % 24]);
    let title = if n % 3 == 2 {
        format!("SKU{base} {b} {a} again")
    } else {
        format!("{a} {b} for SKU{base}")
    };
    serde_json::json!({
        "component": "shoplite",
        "title": title,
        "what_happened": format!("After step {n} the page said −₹{n}. Mail me at someone{n}@example.org or call +44 20 7946 0958."),
        "expected": "A total of zero or more.",
        "steps": "Open ShopLite\nAdd the tea set\nApply the coupon",
    })
}

/// A backlog report: one product word, shared with a timed report's title, and two codes of
/// its own — it opens a bug of its own and no timed report joins it (Dice 0.33), but every
/// timed report is compared with the backlog bugs that share its words.
fn backlog_json(m: usize) -> serde_json::Value {
    serde_json::json!({
        "component": "shoplite",
        "title": format!("{} backlog{m} item{m}", WORDS[m % 24]),
        "what_happened": format!("Backlog entry {m}."),
    })
}

/// Files `open_bugs` backlog reports (untimed), then `reports` reports over HTTP from
/// `clients` concurrent clients (timed), then inserts as many bare rows into a second, fresh
/// database of the same kind.
pub async fn intake(
    http_url: &DatabaseUrl,
    raw_url: &DatabaseUrl,
    reports: usize,
    clients: usize,
    open_bugs: usize,
) -> Result<IntakeBench, BenchError> {
    let store = Store::connect(http_url).await?;
    store.migrate().await?;
    if !store.bug_ids().await?.is_empty() {
        return Err(BenchError::NotEmpty(store.bug_ids().await?.len()));
    }
    let mut config = crate::config::Config::from_env(&Default::default(), Some("127.0.0.1:0"))
        .map_err(|e| BenchError::Writer(e.to_string()))?;
    let unlimited = RateLimit {
        count: u32::MAX,
        per: Duration::from_secs(1),
    };
    config.intake.intake_rate = unlimited;
    config.auth.session_key = Some(crate::secret::Secret::new(crate::auth::random_secret(32)));
    config.intake.answer_rate = unlimited;
    let state = AppState::new(
        leptos::prelude::LeptosOptions::builder()
            .output_name("r2r")
            .build(),
        store.clone(),
        "bench".to_owned(),
        &config,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| BenchError::Writer(e.to_string()))?;
    let base = format!(
        "http://{}",
        listener
            .local_addr()
            .map_err(|e| BenchError::Writer(e.to_string()))?
    );
    let server = tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            router(state).into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await;
    });
    let client = reqwest::Client::new();
    let backlog = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut seeders = Vec::new();
    for _ in 0..clients {
        let (client, base, backlog) = (client.clone(), base.clone(), Arc::clone(&backlog));
        seeders.push(tokio::spawn(async move {
            loop {
                let m = backlog.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if m >= open_bugs {
                    return Ok::<(), String>(());
                }
                let response = client
                    .post(format!("{base}/api/v1/reports"))
                    .json(&backlog_json(m))
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                if response.status() != 201 {
                    return Err(format!("backlog report {m}: HTTP {}", response.status()));
                }
            }
        }));
    }
    for seeder in seeders {
        seeder
            .await
            .map_err(|e| BenchError::Writer(e.to_string()))?
            .map_err(BenchError::Writer)?;
    }
    let open_before = store.bug_ids().await?.len();
    let raw = Arc::new(Store::connect(raw_url).await?);
    raw.migrate().await?;
    let raw_before = raw_inserts(&raw, reports, clients, "before").await?;
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, base, next) = (client.clone(), base.clone(), Arc::clone(&next));
        tasks.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= reports {
                    return Ok::<(), String>(());
                }
                let response = client
                    .post(format!("{base}/api/v1/reports"))
                    .json(&report_json(n))
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                if response.status() != 201 {
                    return Err(format!("report {n}: HTTP {}", response.status()));
                }
            }
        }));
    }
    for task in tasks {
        task.await
            .map_err(|e| BenchError::Writer(e.to_string()))?
            .map_err(BenchError::Writer)?;
    }
    let http_elapsed = started.elapsed();
    server.abort();
    let bugs_opened = store.bug_ids().await?.len() - open_before;

    // The baseline runs once before the HTTP run and once after (its fsync rate drifts from
    // minute to minute on a shared machine): the rate is the mean of the two.
    let raw_after = raw_inserts(&raw, reports, clients, "after").await?;
    let raw_rate = (raw_before + raw_after) / 2.0;
    Ok(IntakeBench {
        storage: store.backend().as_str(),
        reports,
        clients,
        http_rate: reports as f64 / http_elapsed.as_secs_f64(),
        raw_rate,
        raw_spread: (raw_before.min(raw_after), raw_before.max(raw_after)),
        bugs_opened,
        open_before,
    })
}

/// `reports` single-transaction inserts into `raw` from `clients` concurrent tasks (ids
/// prefixed with `run`); inserts per second.
async fn raw_inserts(
    raw: &Arc<Store>,
    reports: usize,
    clients: usize,
    run: &'static str,
) -> Result<f64, BenchError> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (raw, next) = (Arc::clone(raw), Arc::clone(&next));
        tasks.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= reports {
                    return Ok::<(), store::StoreError>(());
                }
                let report = NewReport {
                    id: format!("raw-{run}-{n}"),
                    capability_hash: format!("{:064x}", (run.len() << 40) + n),
                    component: "shoplite".to_owned(),
                    raw_sha256: format!("{:064x}", (run.len() << 40) + n),
                    contact: None,
                    content: ReportContent::Quarantined {
                        families: Vec::new(),
                    },
                };
                raw.bench_raw_report_insert(&report, crate::clock::now_ms())
                    .await?;
            }
        }));
    }
    for task in tasks {
        task.await
            .map_err(|e| BenchError::Writer(e.to_string()))??;
    }
    Ok(reports as f64 / started.elapsed().as_secs_f64())
}

impl std::fmt::Display for IntakeBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "intake benchmark · {} · {} reports from {} concurrent clients · {} open bugs before",
            self.storage, self.reports, self.clients, self.open_before
        )?;
        writeln!(
            f,
            "  {:<44} {:>9.0} reports/s  ({} bugs opened, the rest joined)",
            "HTTP intake (airlock + clustering + ledger)", self.http_rate, self.bugs_opened
        )?;
        writeln!(
            f,
            "  {:<44} {:>9.0} inserts/s  (mean of {:.0} and {:.0}: before and after)",
            "raw single-transaction insert (baseline)",
            self.raw_rate,
            self.raw_spread.0,
            self.raw_spread.1
        )?;
        writeln!(
            f,
            "  {:<44} {:>9.2}  (goal ≥ 0.5 on SQLite, ≥ 0.25 on PostgreSQL)",
            "ratio",
            self.http_rate / self.raw_rate.max(1e-9)
        )
    }
}

/// Airlock throughput against a bare `RegexSet` pass over the same texts.
#[derive(Debug)]
pub struct AirlockBench {
    /// Texts in the corpus.
    pub texts: usize,
    /// Bytes per pass.
    pub bytes: usize,
    /// Passes made.
    pub passes: usize,
    /// Airlock MB/s.
    pub airlock_mb_s: f64,
    /// Bare RegexSet MB/s.
    pub regexset_mb_s: f64,
}

/// Runs both over the shared real bug reports plus the wrapped injection payloads.
pub fn airlock(
    data: &std::path::Path,
    passes: usize,
) -> Result<AirlockBench, crate::cli::airlock::EvalError> {
    use domain::airlock::{admit, bare_regexset_pass, RawReport};
    let mut corpus: Vec<RawReport> = crate::cli::airlock::real_reports(data)?
        .into_iter()
        .map(|(title, body)| RawReport {
            component: "shoplite".to_owned(),
            title,
            what_happened: body,
            ..RawReport::default()
        })
        .collect();
    for payload in crate::cli::airlock::payloads(data)? {
        corpus.push(RawReport {
            component: "shoplite".to_owned(),
            title: "Checkout problem".to_owned(),
            what_happened: payload,
            ..RawReport::default()
        });
    }
    let texts: Vec<String> = corpus
        .iter()
        .map(|r| format!("{}\n{}", r.title, r.what_happened))
        .collect();
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut sink = 0usize;
    let started = Instant::now();
    for _ in 0..passes {
        for report in &corpus {
            sink += usize::from(matches!(
                admit(report),
                domain::airlock::Admission::Quarantined { .. }
            ));
        }
    }
    let airlock_elapsed = started.elapsed();
    let started = Instant::now();
    for _ in 0..passes {
        for text in &texts {
            sink += bare_regexset_pass(text);
        }
    }
    let regexset_elapsed = started.elapsed();
    std::hint::black_box(sink);
    let mb = (bytes * passes) as f64 / 1_000_000.0;
    Ok(AirlockBench {
        texts: texts.len(),
        bytes,
        passes,
        airlock_mb_s: mb / airlock_elapsed.as_secs_f64(),
        regexset_mb_s: mb / regexset_elapsed.as_secs_f64(),
    })
}

impl std::fmt::Display for AirlockBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "airlock benchmark · {} texts, {:.2} MB, {} passes",
            self.texts,
            self.bytes as f64 / 1_000_000.0,
            self.passes
        )?;
        writeln!(
            f,
            "  {:<44} {:>8.2} MB/s",
            "airlock (normalise, detect, decode, redact)", self.airlock_mb_s
        )?;
        writeln!(
            f,
            "  {:<44} {:>8.2} MB/s",
            "bare RegexSet pass (baseline)", self.regexset_mb_s
        )?;
        writeln!(
            f,
            "  {:<44} {:>8.2}  (goal ≥ 0.5)",
            "ratio",
            self.airlock_mb_s / self.regexset_mb_s.max(1e-9)
        )
    }
}
