//! One connection to a sandbox backend, made on first use (so a desk starts before its
//! container engine does), a bound on how many measurements run at once, and the commits
//! whose whole suite already ran green (a baseline runs once per commit).

use crate::{connect, Backend, Profile, Sandbox};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Every measurement slot was taken for the whole wait: nothing ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("all {concurrency} sandbox slots are busy")]
pub struct Busy {
    /// How many measurements may run at once.
    pub concurrency: usize,
}

/// Where a pool's runs go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    /// This process's own sandbox.
    Local(Backend),
    /// Worker hosts, through the desk's queue.
    Workers,
    /// No sandbox: nothing is measured.
    Nowhere,
}

/// The sandbox a desk measures in.
#[derive(Debug)]
pub struct Pool {
    backend: Option<Backend>,
    image: String,
    /// The target project's profile (its runner, toolchain and test layout).
    pub profile: Profile,
    connected: tokio::sync::Mutex<Option<Arc<dyn Sandbox>>>,
    /// This host's own backend when runs go elsewhere (worker hosts): what holds releases.
    own: tokio::sync::Mutex<Option<Arc<dyn Sandbox>>>,
    green: Mutex<HashSet<String>>,
    slots: Arc<tokio::sync::Semaphore>,
    concurrency: usize,
    remote: bool,
}

impl Pool {
    /// A pool over `backend` (none: every measurement is refused with the reason) running
    /// `image`, measuring `profile` projects, at most `concurrency` (≥ 1) at once.
    pub fn new(
        backend: Option<Backend>,
        image: &str,
        profile: Profile,
        concurrency: usize,
    ) -> Self {
        let concurrency = concurrency.max(1);
        Pool {
            backend,
            image: image.to_owned(),
            profile,
            connected: tokio::sync::Mutex::new(None),
            own: tokio::sync::Mutex::new(None),
            green: Mutex::new(HashSet::new()),
            slots: Arc::new(tokio::sync::Semaphore::new(concurrency)),
            concurrency,
            remote: false,
        }
    }

    /// A pool whose measurements all go to `remote` (the desk's queue of sandbox jobs, run by
    /// worker hosts), measuring `profile` projects, at most `concurrency` (≥ 1) at once;
    /// `backend` (running `image`) is this host's own, for what never leaves it (releases).
    pub fn remote(
        remote: Arc<dyn Sandbox>,
        backend: Option<Backend>,
        image: &str,
        profile: Profile,
        concurrency: usize,
    ) -> Self {
        let pool = Pool::new(backend, image, profile, concurrency);
        Pool {
            connected: tokio::sync::Mutex::new(Some(remote)),
            remote: true,
            ..pool
        }
    }

    /// A slot for one measurement (its baseline, runs and checks), held until dropped;
    /// waits `wait` at most, then [`Busy`]: nothing queues without limit.
    pub async fn slot(&self, wait: Duration) -> Result<tokio::sync::OwnedSemaphorePermit, Busy> {
        let busy = Busy {
            concurrency: self.concurrency,
        };
        match tokio::time::timeout(wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) | Err(_) => Err(busy),
        }
    }

    /// The connected backend, or why there is none.
    pub async fn get(&self) -> Result<Arc<dyn Sandbox>, String> {
        let mut connected = self.connected.lock().await;
        if let Some(sandbox) = connected.as_ref() {
            return Ok(sandbox.clone());
        }
        let Some(backend) = self.backend else {
            return Err("this desk has no sandbox (R2R_SANDBOX_BACKEND=none)".into());
        };
        let sandbox: Arc<dyn Sandbox> = connect(backend, &self.image)
            .await
            .map_err(|e| e.to_string())?
            .into();
        *connected = Some(sandbox.clone());
        Ok(sandbox)
    }

    /// This host's own backend, whatever runs measurements: a release is built and held
    /// only here (a worker host's word is never started by the desk).
    pub async fn local(&self) -> Result<Arc<dyn Sandbox>, String> {
        if !self.remote {
            return self.get().await;
        }
        let mut own = self.own.lock().await;
        if let Some(sandbox) = own.as_ref() {
            return Ok(sandbox.clone());
        }
        let Some(backend) = self.backend else {
            return Err("this desk has no sandbox of its own (R2R_SANDBOX_BACKEND=none): releases are built and run only in the desk's own sandbox".into());
        };
        let sandbox: Arc<dyn Sandbox> = connect(backend, &self.image)
            .await
            .map_err(|e| e.to_string())?
            .into();
        *own = Some(sandbox.clone());
        Ok(sandbox)
    }

    /// Where runs go, without connecting.
    pub fn runner(&self) -> Runner {
        match (self.remote, self.backend) {
            (true, _) => Runner::Workers,
            (false, Some(backend)) => Runner::Local(backend),
            (false, None) => Runner::Nowhere,
        }
    }

    /// Whether `commit`'s whole suite already ran green here.
    pub fn is_green(&self, commit: &str) -> bool {
        self.green
            .lock()
            .map(|green| green.contains(commit))
            .unwrap_or(false)
    }

    /// Remembers that `commit`'s whole suite ran green.
    pub fn mark_green(&self, commit: &str) {
        if let Ok(mut green) = self.green.lock() {
            green.insert(commit.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slots_are_bounded_and_come_back_when_dropped() {
        let pool = Pool::new(None, "unused", Profile::Rust, 2);
        let wait = Duration::from_millis(50);
        let first = pool.slot(wait).await;
        let second = pool.slot(wait).await;
        assert!(first.is_ok() && second.is_ok());
        assert_eq!(pool.slot(wait).await.err(), Some(Busy { concurrency: 2 }));
        drop(first);
        assert!(pool.slot(wait).await.is_ok());
    }

    #[tokio::test]
    async fn no_backend_says_so_and_green_commits_are_remembered() {
        let pool = Pool::new(None, "unused", Profile::Rust, 0);
        let refused = pool.get().await.err().unwrap_or_default();
        assert!(refused.contains("R2R_SANDBOX_BACKEND=none"), "{refused}");
        assert!(!pool.is_green("abc"));
        pool.mark_green("abc");
        assert!(pool.is_green("abc") && !pool.is_green("abd"));
    }
}
