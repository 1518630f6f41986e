//! `r2r serve`: connect, migrate, bootstrap, listen.

use crate::config::Config;
use crate::http::router;
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

/// A desk serving in the background of this process (the demo run's).
#[derive(Debug)]
pub struct SpawnedDesk {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its store.
    pub store: Store,
    server: tokio::task::JoinHandle<()>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

impl SpawnedDesk {
    /// Stops the server and its workers.
    pub async fn stop(self) {
        self.server.abort();
        for worker in self.workers {
            worker.abort();
        }
        self.store.close().await;
    }
}

/// Starts a desk on `config.addr` (port 0 picks one) inside this process.
pub async fn spawn(config: Config) -> anyhow::Result<SpawnedDesk> {
    let conf = leptos::config::get_configuration(Some(&config.leptos_toml))
        .with_context(|| format!("cannot read the site options in {}", config.leptos_toml))?;
    let mut leptos_options = conf.leptos_options;
    leptos_options.site_addr = config.addr;
    let (store, instance) = prepare(&config).await?;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.addr))?;
    let bound = listener.local_addr()?;
    let state = AppState::new(leptos_options, store.clone(), instance, &config);
    let workers = vec![tokio::spawn(crate::reasker::run(
        store.clone(),
        config.policy.clone(),
    ))];
    let server = tokio::spawn(async move {
        let app = router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "the desk stopped");
        }
    });
    Ok(SpawnedDesk {
        base: format!("http://{bound}"),
        store,
        server,
        workers,
    })
}

/// The hint the reproducer gives the model about the target, by profile.
pub fn project_hint(profile: sandbox::Profile) -> &'static str {
    match profile {
        sandbox::Profile::Rust => "The target is a Rust crate: put the test under tests/ as an integration test using the crate's public API.",
        sandbox::Profile::NodeTest => "The target is a Node.js project tested with node --test: put the test in a new file under test/.",
        sandbox::Profile::Vitest => "The target is a JavaScript/TypeScript project tested with Vitest: put the test in a new *.test file.",
    }
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
    let host = if bound.ip().is_unspecified() {
        std::net::SocketAddr::from(([127, 0, 0, 1], bound.port()))
    } else {
        bound
    };
    let settings = crew::service::CrewSettings {
        desk: format!("http://{host}"),
        manager: token(domain::Role::Manager),
        reproducer: token(domain::Role::Reproducer),
        fixer: token(domain::Role::Fixer),
        reviewer: token(domain::Role::Reviewer),
        poll: std::time::Duration::from_secs(2),
        project_hint: project_hint(config.target_profile).to_owned(),
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
pub fn start_concierge(
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
    let host = if bound.ip().is_unspecified() {
        std::net::SocketAddr::from(([127, 0, 0, 1], bound.port()))
    } else {
        bound
    };
    match crate::concierge::Concierge::new(&format!("http://{host}"), &token, &config.notify) {
        Ok(concierge) => {
            tracing::info!("the concierge runs in this process (own token, over HTTP)");
            Some(tokio::spawn(crate::concierge::run(
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

/// Serves until interrupted (Ctrl-C or SIGTERM).
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let conf = leptos::config::get_configuration(Some(&config.leptos_toml))
        .with_context(|| format!("cannot read the site options in {}", config.leptos_toml))?;
    let mut leptos_options = conf.leptos_options;
    leptos_options.site_addr = config.addr;
    let (store, instance) = prepare(&config).await?;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.addr))?;
    let bound = listener.local_addr()?;
    let state = AppState::new(leptos_options, store.clone(), instance, &config);
    // Tests and scripts read this line to learn the port.
    println!(
        "r2r listening on http://{bound} (storage: {})",
        store.backend().as_str()
    );
    let reasker = tokio::spawn(crate::reasker::run(store.clone(), config.policy.clone()));
    let crew = start_crew(&config, bound);
    let concierge = start_concierge(&config, bound);
    let github_worker = tokio::spawn(crate::github::run_worker(
        store.clone(),
        config.github.clone(),
        config.policy.clone(),
    ));
    axum::serve(
        listener,
        router(state).into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown_signal())
    .await?;
    reasker.abort();
    github_worker.abort();
    if let Some(concierge) = concierge {
        concierge.abort();
    }
    if let Some(crew) = crew {
        crew.stop();
    }
    store.close().await;
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
