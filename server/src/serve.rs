//! `r2r serve`: connect, migrate, bootstrap, listen.

use crate::config::Config;
use crate::http::{router, AppState};
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
