//! What every handler is given: the store, the forge, the sandbox pool, the reporter side's
//! settings and limiters, owner sessions and the model budget — built once from the
//! configuration.

use crate::error::Kind;
use crate::ratelimit::Limiter;
use app::dto::SiteSettings;
use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;
use std::sync::Arc;
use store::Store;

/// Shared state of every handler.
#[derive(Clone, Debug, FromRef)]
pub struct AppState {
    /// Leptos site options (site root, output name).
    pub leptos_options: LeptosOptions,
    /// The ledger.
    pub store: Store,
    /// This installation's id.
    pub instance: String,
    /// This server process among the servers on one database: its id (new at every start)
    /// and where the others reach it.
    pub server: Arc<ServerSeat>,
    /// The reporter side: components, limits, policy.
    pub reporter: Arc<ReporterDesk>,
    /// Owner sessions and sign-in limits.
    pub auth: Arc<crate::auth::AuthDesk>,
    /// GitHub settings.
    pub github: Arc<crate::config::GitHubConfig>,
    /// The projects this desk serves (the environment's and the stored ones).
    pub projects: Arc<crate::projects::Projects>,
    /// The sandbox the desk re-runs proposed tests in (connected on first use).
    pub sandbox: Arc<sandbox::Pool>,
    /// Where a project's registry dependencies are prepared before its code runs offline.
    pub deps: sandbox::DepsCache,
    /// The limits of a project's measurement runs.
    pub run_limits: sandbox::Limits,
    /// The model budget.
    pub spend: domain::spend::Budget,
    /// How long an accepted crew task is its worker's (`R2R_CREW_TASK_LEASE`).
    pub task_lease_ms: i64,
    /// How often a crew step is tried before a person gets the bug (`R2R_CREW_RETRIES`).
    pub crew_retry: domain::crew::RetryPolicy,
    /// The health's last write probe: when, and whether the database took the write.
    pub write_probe: Arc<std::sync::Mutex<Option<WriteProbe>>>,
    /// What the deployer has live and what it is doing (`R2R_DEPLOY`).
    pub releases: Arc<Releases>,
    /// Held while two bugs are merged (`mark_duplicate`): one merge at a time in this process.
    pub merges: Arc<tokio::sync::Mutex<()>>,
    /// Moves when something a desk page shows changed (`/desk/live` waits on it).
    pub changes: crate::changes::Changes,
    /// The stored projects' deployers' boards, by project id (the environment's is
    /// `releases`).
    pub project_releases: Arc<std::sync::RwLock<std::collections::HashMap<String, Arc<Releases>>>>,
    /// Bugs whose proposed reproduction or fix candidate this process is measuring now.
    pub measuring: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
}

/// A bug's measurement in progress ([`AppState::measure`]); ends when dropped.
#[derive(Debug)]
pub struct Measuring {
    bugs: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    bug: String,
}

impl Drop for Measuring {
    fn drop(&mut self) {
        let mut bugs = match self.bugs.lock() {
            Ok(bugs) => bugs,
            Err(poisoned) => poisoned.into_inner(),
        };
        bugs.remove(&self.bug);
    }
}

/// This server process among the servers on one database.
#[derive(Debug)]
pub struct ServerSeat {
    /// Its id: random, new at every start.
    pub id: String,
    /// Its base URL, where other servers reach it.
    pub address: String,
    /// When it started (ms).
    pub started_at: i64,
}

impl ServerSeat {
    /// A new seat reached at `address`.
    pub fn new(address: String) -> ServerSeat {
        ServerSeat {
            id: format!("srv-{:016x}", rand::random::<u64>()),
            address,
            started_at: crate::clock::now_ms(),
        }
    }
}

/// When health last probed a write, and whether the database took it.
pub type WriteProbe = (std::time::Instant, Result<(), String>);

impl AppState {
    /// The state for `config`.
    pub fn new(
        leptos_options: LeptosOptions,
        store: Store,
        instance: String,
        config: &crate::config::Config,
    ) -> Self {
        let projects = Arc::new(crate::projects::Projects::new(config));
        AppState {
            leptos_options,
            store: store.clone(),
            instance,
            server: Arc::new(ServerSeat::new(String::new())),
            reporter: Arc::new(ReporterDesk::new(&config.intake, projects.clone(), &store)),
            auth: Arc::new(crate::auth::AuthDesk::new(&config.auth, &store)),
            github: Arc::new(config.github.clone()),
            projects,
            sandbox: Arc::new(desk_sandbox(config, &store)),
            deps: config.deps.cache(),
            run_limits: config.run_limits.clone(),
            spend: config.spend,
            task_lease_ms: config.task_lease_ms,
            crew_retry: config.crew_retry,
            write_probe: Arc::default(),
            releases: Arc::new(Releases {
                service: config.deploy.as_ref().map(|d| d.service.clone()),
                dir: config.deploy.as_ref().map(|d| d.dir.clone()),
                ..Releases::default()
            }),
            merges: Arc::default(),
            changes: crate::changes::Changes::default(),
            project_releases: Arc::default(),
            measuring: Arc::default(),
        }
    }

    /// The deployer's board of `project` (the environment's for `default`, empty when it
    /// deploys nothing).
    pub fn releases_of(&self, project: &str) -> Arc<Releases> {
        if project == domain::project::ENVIRONMENT_PROJECT {
            return self.releases.clone();
        }
        self.project_releases
            .read()
            .ok()
            .and_then(|boards| boards.get(project).cloned())
            .unwrap_or_default()
    }

    /// Every deploying project's board, the environment's first: (project, board).
    pub fn all_releases(&self) -> Vec<(String, Arc<Releases>)> {
        let mut all = Vec::new();
        if self.releases.service.is_some() {
            all.push((
                domain::project::ENVIRONMENT_PROJECT.to_owned(),
                self.releases.clone(),
            ));
        }
        if let Ok(boards) = self.project_releases.read() {
            let mut stored: Vec<_> = boards
                .iter()
                .map(|(id, board)| (id.clone(), board.clone()))
                .collect();
            stored.sort_by(|a, b| a.0.cmp(&b.0));
            all.extend(stored);
        }
        all
    }

    /// The board of the project served at `/live/<service>`.
    pub fn releases_serving(&self, service: &str) -> Option<Arc<Releases>> {
        self.all_releases()
            .into_iter()
            .map(|(_, board)| board)
            .find(|board| board.service.as_deref() == Some(service))
    }

    /// Marks `bug` as being measured (a proposed reproduction or a fix candidate) until the
    /// answer, or 409 `already_measuring` at once when this process measures one for it
    /// already: only one of two could be recorded, so the second would run for nothing.
    pub fn measure(&self, bug: &str) -> Result<Measuring, crate::web::Refused> {
        let mut bugs = match self.measuring.lock() {
            Ok(bugs) => bugs,
            Err(poisoned) => poisoned.into_inner(),
        };
        if !bugs.insert(bug.to_owned()) {
            return Err(crate::web::Refused::new(
                Kind::Conflict,
                "already_measuring",
                format!(
                    "the desk is measuring another proposal for {bug} now; nothing of this one was run or recorded (wait for that answer)"
                ),
            ));
        }
        Ok(Measuring {
            bugs: self.measuring.clone(),
            bug: bug.to_owned(),
        })
    }

    /// What the pages need from the configuration.
    pub fn site_settings(&self) -> SiteSettings {
        SiteSettings {
            components: self.reporter.scope().components.clone(),
        }
    }

    /// The target serving `component`, from a view of the projects at most a second old.
    pub async fn target_of(&self, component: &str) -> Arc<crate::projects::Target> {
        self.projects.fresh(&self.store).await.target_of(component)
    }
}

/// The reporter side's settings and limiters, shared by every handler.
#[derive(Debug)]
pub struct ReporterDesk {
    /// The projects: the components a report may name and the crew's rules follow from them.
    projects: Arc<crate::projects::Projects>,
    /// Per-client limit on filing.
    pub intake: Limiter,
    /// Per-client limit on tracking reads and answers.
    pub answers: Limiter,
    /// The proxies whose `X-Forwarded-For` names the client.
    pub trusted_proxies: crate::config::TrustedProxies,
    /// New bugs from one address and component the crew starts on in an hour.
    pub stranger_bugs_per_hour: u32,
}

impl ReporterDesk {
    /// From the configuration.
    pub fn new(
        config: &crate::config::IntakeConfig,
        projects: Arc<crate::projects::Projects>,
        store: &Store,
    ) -> Self {
        ReporterDesk {
            projects,
            intake: Limiter::new("intake", config.intake_rate).shared_in(store),
            answers: Limiter::new("answers", config.answer_rate).shared_in(store),
            trusted_proxies: config.trusted_proxies.clone(),
            stranger_bugs_per_hour: config.stranger_bugs_per_hour,
        }
    }

    /// The components reports may name and the engine's policy, as last read (a lookup
    /// through [`AppState::target_of`] or [`ReporterDesk::fresh`] reads them again).
    pub fn scope(&self) -> Arc<crate::projects::Scope> {
        self.projects.scope()
    }

    /// The same, read again when a second has passed and the projects changed.
    pub async fn fresh(&self, store: &Store) -> Arc<crate::projects::Scope> {
        self.projects.fresh(store).await
    }
}

/// The desk's sandbox pool from the configuration (`R2R_SANDBOX_BACKEND`,
/// `R2R_SANDBOX_IMAGE`, `R2R_TARGET_PROFILE`, `R2R_SANDBOX_CONCURRENCY`; with
/// `R2R_SANDBOX_RUNNER=workers`, the queue `store` holds, for worker hosts).
pub fn desk_sandbox(config: &crate::config::Config, store: &Store) -> sandbox::Pool {
    if let Some(claim_timeout) = config.sandbox_workers {
        return sandbox::Pool::remote(
            Arc::new(crate::sandbox_queue::QueuedSandbox::new(
                store.clone(),
                claim_timeout,
                config.sandbox_confirm,
            )),
            config.sandbox_backend,
            &config.sandbox_image,
            config.target_profile,
            config.sandbox_concurrency,
        );
    }
    sandbox::Pool::new(
        config.sandbox_backend,
        &config.sandbox_image,
        config.target_profile,
        config.sandbox_concurrency,
    )
}

/// The deployer's board: the live instance of the service (if any) and the release in
/// progress. The deployer worker writes it; the `/live/<service>` proxy and the pages read it.
#[derive(Debug, Default)]
pub struct Releases {
    /// The deployed service's name (`None`: no deployer on this desk).
    pub service: Option<String>,
    /// The deployer's folder: each release built here, by commit.
    pub dir: Option<std::path::PathBuf>,
    live: std::sync::RwLock<Option<LiveInstance>>,
    /// Another server on the database leads this service's deployer: its base URL, where
    /// `/live/<service>` is answered.
    leader_elsewhere: std::sync::RwLock<Option<String>>,
    progress: std::sync::Mutex<Option<ReleaseProgress>>,
    rollback: std::sync::Mutex<Option<Rollback>>,
}

/// An owner's request to serve an earlier release again, waiting for the deployer.
#[derive(Debug)]
pub struct Rollback {
    /// The earlier release.
    pub commit: domain::workflow::CommitSha,
    /// Why, in the owner's words.
    pub reason: String,
    /// The owner.
    pub owner: domain::workflow::Actor,
    /// Told the bugs whose fix is no longer live once the release is live, or why not.
    pub reply: tokio::sync::oneshot::Sender<Result<Vec<String>, String>>,
}

/// A running, healthy instance of one commit, held in the desk's sandbox.
#[derive(Clone, Debug)]
pub struct LiveInstance {
    /// The commit it was built from.
    pub commit: String,
    /// The SHA-256 of the artifact it runs, as hashed when built and again before its start.
    pub artifact_sha256: String,
    /// The only way to it: connections opened inside its own network namespace.
    pub dialer: Arc<sandbox::NetnsDialer>,
    /// Where it listens inside that namespace.
    pub addr: std::net::SocketAddr,
}

/// Where the latest release stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseProgress {
    /// The commit being released.
    pub commit: String,
    /// Its step.
    pub step: ReleaseStep,
    /// What happened, in words (a failure carries its log tail).
    pub detail: String,
}

/// A release's steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseStep {
    /// Running the project's own suite on the commit in the sandbox (the release gate).
    Testing,
    /// Building the commit in the sandbox.
    Building,
    /// Starting the new instance and waiting for its health.
    Starting,
    /// The recorder is checking both addresses.
    Checking,
    /// Live and recorded.
    Live,
    /// The build or the new instance failed; the previous instance stays live.
    Failed,
    /// The project's own suite failed on the commit: it is not released, the previous
    /// instance stays live.
    Held,
}

impl ReleaseStep {
    /// In words.
    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseStep::Testing => "testing",
            ReleaseStep::Building => "building",
            ReleaseStep::Starting => "starting",
            ReleaseStep::Checking => "checking",
            ReleaseStep::Live => "live",
            ReleaseStep::Failed => "failed",
            ReleaseStep::Held => "held",
        }
    }
}

impl Releases {
    /// An empty board for `service`, whose releases are built in `dir`.
    pub fn serving(service: &str, dir: &std::path::Path) -> Releases {
        Releases {
            service: Some(service.to_owned()),
            dir: Some(dir.to_owned()),
            ..Releases::default()
        }
    }

    /// Hands `request` to the deployer; gives it back when another is waiting.
    pub fn request_rollback(&self, request: Rollback) -> Result<(), Rollback> {
        match self.rollback.lock() {
            Ok(mut slot) if slot.is_none() => {
                *slot = Some(request);
                Ok(())
            }
            _ => Err(request),
        }
    }

    /// The rollback an owner asked for, if any (the deployer takes it).
    pub fn take_rollback(&self) -> Option<Rollback> {
        self.rollback.lock().ok().and_then(|mut slot| slot.take())
    }

    /// The live instance.
    pub fn live(&self) -> Option<LiveInstance> {
        self.live.read().ok().and_then(|live| live.clone())
    }

    /// Makes `instance` the live one.
    pub fn set_live(&self, instance: LiveInstance) {
        if let Ok(mut live) = self.live.write() {
            *live = Some(instance);
        }
    }

    /// Forgets the live instance (this server no longer leads the service's deployer).
    pub fn clear_live(&self) {
        if let Ok(mut live) = self.live.write() {
            *live = None;
        }
    }

    /// Another server leads the deployer (at `address`), or this one does (`None`).
    pub fn set_leader_elsewhere(&self, address: Option<String>) {
        if let Ok(mut leader) = self.leader_elsewhere.write() {
            *leader = address;
        }
    }

    /// The base URL of the server that leads the deployer, when it is another one.
    pub fn leader_elsewhere(&self) -> Option<String> {
        self.leader_elsewhere.read().ok().and_then(|l| l.clone())
    }

    /// The release in progress, or the last one.
    pub fn progress(&self) -> Option<ReleaseProgress> {
        self.progress.lock().ok().and_then(|p| p.clone())
    }

    /// Records where the release of `commit` stands.
    pub fn report(&self, commit: &str, step: ReleaseStep, detail: impl Into<String>) {
        if let Ok(mut progress) = self.progress.lock() {
            *progress = Some(ReleaseProgress {
                commit: commit.to_owned(),
                step,
                detail: detail.into(),
            });
        }
    }
}
