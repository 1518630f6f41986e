//! Starting a desk: connect and migrate, bootstrap the first owner, listen, and start every
//! worker — one path ([`start`]) behind `r2r serve`, the demo run and the tests that run a
//! desk in-process, so a worker added here runs everywhere.

use crate::config::Config;
use crate::router::router;
use crate::web::AppState;
use anyhow::Context;
use store::{NewOwner, Store};

use crate::clock::now_ms;

fn random_id(prefix: &str) -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 12];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("{prefix}-{}", hex::encode(bytes))
}

/// Prepares the database: migrations, installation id, first owner. Returns the store and id.
pub async fn prepare(config: &Config) -> anyhow::Result<(Store, String)> {
    let store = Store::connect(&config.database_url)
        .await
        .with_context(|| format!("DATABASE_URL={:?}", config.database_url))?;
    store.migrate().await?;
    crate::auth::import_role_tokens(&store, &config.auth).await?;
    let instance = store.ensure_instance(&random_id("desk"), now_ms()).await?;
    if let Some(owner) = &config.bootstrap_owner {
        let created = store
            .ensure_owner(
                &NewOwner {
                    id: random_id("owner"),
                    email: owner.email.clone(),
                    password_hash: owner.password_hash.clone(),
                },
                now_ms(),
            )
            .await?;
        if created {
            tracing::info!(email = %owner.email, "created the first owner account");
        }
    }
    Ok((store, instance))
}

/// Starts the crew in this process when the configuration says so; it reaches the desk at
/// `bound` over HTTP with each role's own token, like any other client.
fn start_crew(config: &Config, bound: std::net::SocketAddr) -> Option<crew::service::RunningCrew> {
    let crate::config::CrewMode::InProcess { model_env } = &config.crew else {
        tracing::info!("the crew is not running in this process (R2R_CREW=off or no R2R_MODEL_PROVIDER); start it with r2r crew run");
        return None;
    };
    let token = |role: domain::Role| {
        config
            .auth
            .role_tokens
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, t)| t.expose().to_owned())
            .unwrap_or_default()
    };
    let (model, prices) = match crew::config::provider_from(|name| {
        model_env
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.expose().to_owned())
    }) {
        Ok(built) => built,
        Err(reason) => {
            tracing::error!(%reason, "the crew cannot start");
            return None;
        }
    };
    let host = loopback(bound);
    let settings = crew::service::CrewSettings {
        desk: format!("http://{host}"),
        manager: token(domain::Role::Manager),
        reproducer: token(domain::Role::Reproducer),
        fixer: token(domain::Role::Fixer),
        reviewer: token(domain::Role::Reviewer),
        poll: std::time::Duration::from_secs(2),
        approach: config.crew_approach.clone(),
    };
    match crew::service::spawn(settings, model.into(), prices) {
        Ok(crew) => {
            tracing::info!("the crew runs in this process (four roles, own tokens, over HTTP)");
            Some(crew)
        }
        Err(error) => {
            tracing::error!(%error, "the crew cannot start");
            None
        }
    }
}

/// Starts the concierge in this process when configured; like the crew it reaches the desk
/// at `bound` over HTTP with its own token.
fn start_concierge(
    config: &Config,
    bound: std::net::SocketAddr,
) -> Option<tokio::task::JoinHandle<()>> {
    if !config.notify.in_process {
        tracing::info!("the concierge is not running in this process (R2R_CONCIERGE=off or no R2R_CONCIERGE_TOKEN); start it with r2r concierge run");
        return None;
    }
    let token = config
        .auth
        .role_tokens
        .iter()
        .find(|(r, _)| *r == domain::Role::Concierge)
        .map(|(_, t)| t.expose().to_owned())?;
    let host = loopback(bound);
    match crate::workers::concierge::Concierge::new(
        &format!("http://{host}"),
        &token,
        &config.notify,
    ) {
        Ok(concierge) => {
            tracing::info!("the concierge runs in this process (own token, over HTTP)");
            Some(tokio::spawn(crate::workers::concierge::run(
                concierge,
                std::time::Duration::from_secs(2),
            )))
        }
        Err(error) => {
            tracing::error!(%error, "the concierge cannot start");
            None
        }
    }
}

/// A desk started by [`start`]: its server and every worker this configuration asks for.
#[derive(Debug)]
pub struct Desk {
    /// The address it listens on (port 0 in the configuration picks one).
    pub bound: std::net::SocketAddr,
    /// `http://127.0.0.1:PORT` (loopback even when listening on every address).
    pub base: String,
    /// Its store.
    pub store: Store,
    server: tokio::task::JoinHandle<()>,
    stop_serving: tokio::sync::watch::Sender<bool>,
    workers: Vec<tokio::task::JoinHandle<()>>,
    crew: Option<crew::service::RunningCrew>,
}

impl Desk {
    /// Stops taking requests, lets those in flight finish, stops every worker and closes the
    /// store.
    pub async fn stop(self) {
        let _ = self.stop_serving.send(true);
        let _ = self.server.await;
        for worker in self.workers {
            worker.abort();
        }
        if let Some(crew) = self.crew {
            crew.stop();
        }
        self.store.close().await;
    }
}

/// The one way a desk starts — `r2r serve`, the demo run and tests alike: connect and
/// migrate, bootstrap, listen on `config.addr`, and start every worker: the re-asker and the
/// GitHub event worker always, the crew and the concierge when the configuration runs them
/// in this process (`R2R_CREW`, `R2R_CONCIERGE`).
pub async fn start(config: &Config) -> anyhow::Result<Desk> {
    let conf = leptos::config::get_configuration(Some(&config.leptos_toml))
        .with_context(|| format!("cannot read the site options in {}", config.leptos_toml))?;
    let mut leptos_options = conf.leptos_options;
    leptos_options.site_addr = config.addr;
    if let Some(forge) = &config.local_forge {
        // A git repository has a HEAD (bare: at its top; with a work tree: in .git).
        let is_repository = forge.join("HEAD").is_file() || forge.join(".git/HEAD").is_file();
        if !is_repository {
            anyhow::bail!(
                "R2R_LOCAL_FORGE: {} is not a git repository ({}); point it at the project's bare repository, or leave it unset",
                forge.display(),
                if forge.exists() { "no HEAD in it" } else { "no such directory" }
            );
        }
    }
    let (store, instance) = prepare(config).await?;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.addr))?;
    let bound = listener.local_addr()?;
    let mut state = AppState::new(leptos_options, store.clone(), instance, config);
    state.server = std::sync::Arc::new(crate::web::ServerSeat::new(
        config
            .server_address
            .clone()
            .unwrap_or_else(|| format!("http://{}", loopback(bound))),
    ));
    state
        .projects
        .reload(&store, true)
        .await
        .context("cannot read the projects")?;
    let state_for_workers = state.clone();
    let (stop_serving, stopped) = tokio::sync::watch::channel(false);
    let limits = config.http;
    let server = tokio::spawn(crate::web::listen::serve(
        listener,
        router(state),
        limits,
        config.intake.trusted_proxies.clone(),
        stopped,
    ));
    let mut workers = vec![
        tokio::spawn(crate::workers::reasker::run(
            store.clone(),
            config.policy.clone(),
        )),
        tokio::spawn(crate::workers::distrust::run(
            store.clone(),
            config.policy.clone(),
        )),
        tokio::spawn(crate::workers::github::run_worker(
            store.clone(),
            config.github.clone(),
            state_for_workers.projects.clone(),
        )),
        tokio::spawn(crate::workers::wakeups::run(store.clone())),
        tokio::spawn(crate::workers::instances::run(
            store.clone(),
            state_for_workers.server.clone(),
        )),
        tokio::spawn(crate::changes::run(
            store.clone(),
            state_for_workers.changes.clone(),
        )),
        // Projects another process defined (`r2r project add`) are served within a second.
        tokio::spawn({
            let (projects, store) = (state_for_workers.projects.clone(), store.clone());
            async move {
                loop {
                    tokio::time::sleep(crate::projects::REFRESH_EVERY).await;
                    projects.fresh(&store).await;
                }
            }
        }),
    ];
    workers.extend(start_concierge(config, bound));
    let recorder = config
        .auth
        .role_tokens
        .iter()
        .find(|(role, _)| *role == domain::Role::Recorder)
        .map(|(_, token)| crate::workers::deployer::RecorderSeat {
            desk: format!("http://{}", loopback(bound)),
            token: token.expose().to_owned(),
        });
    if let Some(deploy) = &config.deploy {
        tracing::info!(service = %deploy.service, "the deployer releases what lands on the default branch");
        workers.push(tokio::spawn(crate::workers::deployer::run(
            state_for_workers.clone(),
            deploy.clone(),
            recorder.clone(),
        )));
    }
    // Stored projects that name a service are released by deployers of their own.
    workers.push(tokio::spawn(crate::workers::deployer::supervise(
        state_for_workers.clone(),
        config.deploy_dir.clone(),
        recorder,
    )));
    let crew = start_crew(config, bound);
    Ok(Desk {
        bound,
        base: format!("http://{}", loopback(bound)),
        store,
        server,
        stop_serving,
        workers,
        crew,
    })
}

/// `bound`, with an unspecified address (0.0.0.0, ::) replaced by loopback: where this
/// process's own clients (crew, concierge) reach the desk.
fn loopback(bound: std::net::SocketAddr) -> std::net::SocketAddr {
    if bound.ip().is_unspecified() {
        std::net::SocketAddr::from(([127, 0, 0, 1], bound.port()))
    } else {
        bound
    }
}

/// `r2r serve`: [`start`], then serve until interrupted (Ctrl-C or SIGTERM).
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let desk = start(&config).await?;
    // Tests and scripts read this line to learn the port.
    println!(
        "r2r listening on http://{} (storage: {})",
        desk.bound,
        desk.store.backend().as_str()
    );
    shutdown_signal().await;
    desk.stop().await;
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}
