//! The sandbox's limits for a project's runs (`R2R_SANDBOX_MEMORY_MB`, `R2R_SANDBOX_CPU`,
//! `R2R_SANDBOX_PIDS`, `R2R_SANDBOX_WORK_MB`): sized by default for real suites — a Rust
//! crate with registry dependencies builds in its run, Jest and Vitest start workers — and
//! each bounded so one setting cannot hand a run the whole host.

use super::env::{ConfigError, Environment};

/// One bounded whole number from `name`, or `default`.
fn bounded(
    env: &Environment,
    name: &str,
    default: u64,
    range: std::ops::RangeInclusive<u64>,
    what: &str,
) -> Result<u64, ConfigError> {
    match env.get(name) {
        None => Ok(default),
        Some(text) => text
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|n| range.contains(n))
            .ok_or_else(|| {
                ConfigError::new(
                    name,
                    format!(
                        "expected {what}, a whole number from {} to {}, got {text:?}",
                        range.start(),
                        range.end()
                    ),
                )
            }),
    }
}

/// Reads the limits of a project's sandbox runs.
pub fn run_limits(env: &Environment) -> Result<sandbox::Limits, ConfigError> {
    let memory_mb = bounded(
        env,
        "R2R_SANDBOX_MEMORY_MB",
        2048,
        256..=16_384,
        "the memory of one run in MiB (its /work folder counts against it)",
    )?;
    let cpu_millis = bounded(
        env,
        "R2R_SANDBOX_CPU",
        1000,
        250..=8_000,
        "the CPU of one run in thousandths of a core",
    )?;
    let pids = bounded(
        env,
        "R2R_SANDBOX_PIDS",
        256,
        32..=4096,
        "the most processes and threads of one run",
    )?;
    let work_mb = bounded(
        env,
        "R2R_SANDBOX_WORK_MB",
        2048,
        64..=8_192,
        "the size of one run's writable /work folder in MiB",
    )?;
    Ok(sandbox::Limits {
        memory_bytes: memory_mb << 20,
        cpu_millis: u32::try_from(cpu_millis).unwrap_or(u32::MAX),
        pids: u32::try_from(pids).unwrap_or(u32::MAX),
        work_bytes: work_mb << 20,
        tmp_bytes: 256 << 20,
        ..sandbox::Limits::default()
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn run_limits_default_to_a_real_suite_and_refuse_what_is_out_of_bounds() {
        let defaults = run_limits(&Environment::from_pairs([])).unwrap();
        assert_eq!(defaults.memory_bytes, 2048 << 20);
        assert_eq!(defaults.cpu_millis, 1000);
        assert_eq!(defaults.pids, 256);
        assert_eq!(defaults.work_bytes, 2048 << 20);
        let set = run_limits(&Environment::from_pairs([
            ("R2R_SANDBOX_MEMORY_MB", "512"),
            ("R2R_SANDBOX_CPU", " 1500 "),
        ]))
        .unwrap();
        assert_eq!((set.memory_bytes, set.cpu_millis), (512 << 20, 1500));
        for (name, bad) in [
            ("R2R_SANDBOX_MEMORY_MB", "100"),
            ("R2R_SANDBOX_MEMORY_MB", "2g"),
            ("R2R_SANDBOX_CPU", "0"),
            ("R2R_SANDBOX_PIDS", "1000000"),
            ("R2R_SANDBOX_WORK_MB", "-1"),
        ] {
            let error = run_limits(&Environment::from_pairs([(name, bad)])).unwrap_err();
            assert_eq!(error.variable, name, "{bad:?}");
        }
    }
}
