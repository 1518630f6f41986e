//! Running the crew's test code, and judging what the run proves.
//!
//! [`isolated`] states what an isolating backend promises ([`Sandbox`], [`SandboxJob`],
//! [`Limits`]); [`docker`] (the Engine API through bollard) and [`bwrap`] (bubblewrap with
//! cgroup v1 limits) keep that promise. [`process`] runs trusted code on the host with a
//! clean environment and a deadline — labelled `host` in every outcome so evidence never
//! claims isolation it did not have. [`classify`] reads a test runner's output and decides
//! whether a run is a genuine reproduction: the runner finished, printed its summary, and
//! the new test failed on an assertion. A compile error, a panic outside an assertion or a
//! timeout is not.

pub mod bwrap;
pub mod classify;
pub mod classify_go;
pub mod classify_junit;
pub mod classify_node;
pub mod confirm;
pub mod detect;
pub mod docker;
pub mod findings;
pub mod isolated;
pub mod pool;
pub mod prepare;
pub mod prepare_node;
pub mod prepare_python;
pub mod process;
pub mod profile;
pub mod service;
pub mod wire;

pub use classify::{classify_cargo_test, NotReproduced, Verdict};
pub use classify_go::classify_go_test;
pub use classify_junit::classify_junit;
pub use classify_node::{classify_node_tap, classify_vitest};
pub use isolated::{Limits, ReadOnlyMount, Sandbox, SandboxError, SandboxJob};
pub use pool::{Busy, Pool};
pub use prepare::{DepsCache, Ecosystem, PrepareError, Prepared};
pub use process::{run_on_host, Job, RunOutcome};
pub use profile::{share_read_only, Profile, Toolchains};
pub use service::{NetnsDialer, Service};

/// What the classifiers' tests share: captured outputs from `tests/fixtures`, and a finished
/// run around them.
#[cfg(test)]
pub(crate) mod test_support {
    /// The captured output `name` under `tests/fixtures`.
    pub fn fixture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// A run that exited 1 by itself with this output.
    pub fn run(stdout: &str, stderr: &str) -> crate::RunOutcome {
        crate::RunOutcome {
            exit_code: Some(1),
            timed_out: false,
            oom_killed: false,
            duration_ms: 10,
            backend: "host",
            workers: Vec::new(),
            confirmation: None,
            stdout: stdout.to_owned(),
            stderr: stderr.to_owned(),
        }
    }
}

/// An isolating backend: the one type the desk, the demo and every command name it by (parsed
/// once, from `R2R_SANDBOX_BACKEND` or a `--sandbox` flag).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Docker Engine (no network, the local image).
    Docker,
    /// bubblewrap (as root, cgroup v1).
    Bwrap,
}

impl Backend {
    /// Every backend.
    pub const ALL: [Backend; 2] = [Backend::Docker, Backend::Bwrap];

    /// Its name, as configured and as recorded in evidence.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Docker => "docker",
            Backend::Bwrap => "bwrap",
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl std::str::FromStr for Backend {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Backend::ALL
            .into_iter()
            .find(|b| b.as_str() == text.trim())
            .ok_or_else(|| format!("expected docker or bwrap, got {text:?}"))
    }
}

/// Connects to `backend`; `image` is Docker's local image.
pub async fn connect(backend: Backend, image: &str) -> Result<Box<dyn Sandbox>, SandboxError> {
    match backend {
        Backend::Docker => Ok(Box::new(docker::DockerSandbox::connect(image).await?)),
        Backend::Bwrap => Ok(Box::new(bwrap::BwrapSandbox::detect()?)),
    }
}
