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
pub mod classify_node;
pub mod docker;
pub mod isolated;
pub mod process;
pub mod profile;

pub use classify::{classify_cargo_test, NotReproduced, Verdict};
pub use classify_node::{classify_node_tap, classify_vitest};
pub use isolated::{Limits, ReadOnlyMount, Sandbox, SandboxError, SandboxJob};
pub use process::{run_on_host, Job, RunOutcome};
pub use profile::{share_read_only, Profile, Toolchains};

/// Connects to the named backend (`docker` or `bwrap`); `image` is Docker's local image.
pub async fn connect(backend: &str, image: &str) -> Result<Box<dyn Sandbox>, SandboxError> {
    match backend {
        "docker" => Ok(Box::new(docker::DockerSandbox::connect(image).await?)),
        "bwrap" => Ok(Box::new(bwrap::BwrapSandbox::detect()?)),
        other => Err(SandboxError::InvalidJob(format!(
            "unknown sandbox backend {other:?}; one of: docker, bwrap"
        ))),
    }
}
