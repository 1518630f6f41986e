//! `r2r bench desk`: what the owners' desk costs as the backlog grows — the dashboard's
//! latency and size with N bugs, and the CPU that open live pages use while nothing changes.

use crate::cli::bench::BenchError;
use crate::ratelimit::RateLimit;
use std::time::{Duration, Instant};
use store::DatabaseUrl;

/// Desk figures.
#[derive(Debug)]
pub struct DeskBench {
    /// Backend.
    pub storage: &'static str,
    /// Bugs on the desk.
    pub bugs: usize,
    /// Dashboard loads timed.
    pub loads: usize,
    /// Median and 95th percentile of a signed-in `GET /desk` (whole page, server-rendered).
    pub p50: Duration,
    /// 95th percentile.
    pub p95: Duration,
    /// The page's size in bytes.
    pub page_bytes: usize,
    /// Live pages held open while nothing changed.
    pub streams: usize,
    /// How long each idle window lasted.
    pub window: Duration,
    /// CPU seconds the process used in the window with no live page open.
    pub cpu_without: Option<f64>,
    /// CPU seconds the process used in the window with `streams` live pages open.
    pub cpu_with: Option<f64>,
}

/// This process's CPU time (user + system) in seconds, where the system tells it (Linux).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// CPU seconds used while `window` passes.
async fn cpu_over(window: Duration) -> Option<f64> {
    let before = cpu_seconds()?;
    tokio::time::sleep(window).await;
    Some(cpu_seconds()? - before)
}

/// Starts a desk on `url` (empty), files `bugs` bugs over HTTP (untimed), signs an owner in,
/// times `loads` dashboard loads, then measures the process's CPU over `window` without and
/// with `streams` live pages open.
pub async fn desk(
    url: &DatabaseUrl,
    bugs: usize,
    loads: usize,
    streams: usize,
    window: Duration,
) -> anyhow::Result<DeskBench> {
    let store = store::Store::connect(url).await?;
    store.migrate().await?;
    let existing = store.bug_ids().await?.len();
    if existing > 0 {
        return Err(BenchError::NotEmpty(existing).into());
    }
    store.close().await;
    let password = crate::auth::random_secret(16);
    let mut config = crate::config::Config::from_env(&Default::default(), Some("127.0.0.1:0"))?;
    config.database_url = url.clone();
    config.bootstrap_owner = Some(crate::config::BootstrapOwner {
        email: "bench@example.org".to_owned(),
        password_hash: crate::auth::hash_password(&password)
            .map_err(|e| anyhow::anyhow!("cannot hash the bench owner's password: {e}"))?,
    });
    let unlimited = RateLimit {
        count: u32::MAX,
        per: Duration::from_secs(1),
    };
    config.intake.intake_rate = unlimited;
    config.intake.answer_rate = unlimited;
    config.auth.session_key = Some(crate::secret::Secret::new(crate::auth::random_secret(32)));
    config.crew = crate::config::CrewMode::Off;
    let running = crate::start::start(&config).await?;
    let base = running.base.clone();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let result = measure(&client, &base, &password, bugs, loads, streams, window).await;
    let storage = running.store.backend().as_str();
    running.stop().await;
    let (p50, p95, page_bytes, cpu_without, cpu_with) = result?;
    Ok(DeskBench {
        storage,
        bugs,
        loads,
        p50,
        p95,
        page_bytes,
        streams,
        window,
        cpu_without,
        cpu_with,
    })
}

type Measured = (Duration, Duration, usize, Option<f64>, Option<f64>);

async fn measure(
    client: &reqwest::Client,
    base: &str,
    password: &str,
    bugs: usize,
    loads: usize,
    streams: usize,
    window: Duration,
) -> anyhow::Result<Measured> {
    // The backlog, from eight clients at once.
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut seeders = Vec::new();
    for _ in 0..8 {
        let (client, base, next) = (client.clone(), base.to_owned(), next.clone());
        seeders.push(tokio::spawn(async move {
            loop {
                let m = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if m >= bugs {
                    return Ok::<(), String>(());
                }
                let response = client
                    .post(format!("{base}/api/v1/reports"))
                    .json(&serde_json::json!({
                        "component": "shoplite",
                        "title": format!("backlog{m} item{m} code{m}"),
                        "what_happened": format!("Backlog entry {m}."),
                    }))
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
        seeder.await?.map_err(anyhow::Error::msg)?;
    }
    let signed_in = client
        .post(format!("{base}/desk/sign-in"))
        .form(&[
            ("email", "bench@example.org"),
            ("password", password),
            ("next", "/desk"),
        ])
        .send()
        .await?;
    let cookie = signed_in
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::to_owned)
        .ok_or_else(|| {
            anyhow::anyhow!("the bench owner could not sign in ({})", signed_in.status())
        })?;
    let mut times = Vec::with_capacity(loads);
    let mut page_bytes = 0;
    for _ in 0..loads {
        let started = Instant::now();
        let response = client
            .get(format!("{base}/desk"))
            .header(reqwest::header::COOKIE, &cookie)
            .send()
            .await?;
        let status = response.status();
        let body = response.bytes().await?;
        times.push(started.elapsed());
        anyhow::ensure!(status == 200, "GET /desk answered {status}");
        page_bytes = body.len();
    }
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    let (p50, p95) = (at(0.5), at(0.95));
    let cpu_without = cpu_over(window).await;
    let mut open = Vec::with_capacity(streams);
    for _ in 0..streams {
        let response = client
            .get(format!("{base}/desk/live"))
            .header(reqwest::header::COOKIE, &cookie)
            .send()
            .await?;
        anyhow::ensure!(
            response.status() == 200,
            "GET /desk/live answered {}",
            response.status()
        );
        open.push(response);
    }
    // Let the pages settle (each looks once after it opens), then measure.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cpu_with = cpu_over(window).await;
    drop(open);
    Ok((p50, p95, page_bytes, cpu_without, cpu_with))
}

impl std::fmt::Display for DeskBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cpu =
            |c: Option<f64>| c.map_or("n/a (no /proc)".to_owned(), |c| format!("{c:.2} CPU s"));
        writeln!(f, "desk benchmark · {} · {} bugs", self.storage, self.bugs)?;
        writeln!(
            f,
            "  {:<44} p50 {:>6.1} ms · p95 {:>6.1} ms · {} bytes",
            format!("GET /desk, signed in ({} loads)", self.loads),
            self.p50.as_secs_f64() * 1000.0,
            self.p95.as_secs_f64() * 1000.0,
            self.page_bytes
        )?;
        writeln!(
            f,
            "  {:<44} {}",
            format!("idle {} s, no live page open", self.window.as_secs()),
            cpu(self.cpu_without)
        )?;
        writeln!(
            f,
            "  {:<44} {}",
            format!(
                "idle {} s, {} live pages open",
                self.window.as_secs(),
                self.streams
            ),
            cpu(self.cpu_with)
        )
    }
}
