//! The dependency cache (`R2R_DEPS_DIR`, `R2R_DEPS_CACHE_MB`): where a team's registry
//! dependencies are prepared before its code runs offline in the sandbox, and how much of the
//! disk they may take before the least recently used go.

use super::env::{ConfigError, Environment};
use std::path::PathBuf;

/// The default cap: 8 GiB (a Rust crate's vendored dependencies are 1–150 MB each).
const DEFAULT_CAP_MB: u64 = 8 * 1024;
/// The smallest and largest cap one may set.
const CAP_MB: std::ops::RangeInclusive<u64> = 64..=(1 << 20);

/// The dependency cache's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DepsConfig {
    /// Its folder (`R2R_DEPS_DIR`, default `data/deps`).
    pub dir: PathBuf,
    /// Its cap in bytes (`R2R_DEPS_CACHE_MB`, 64 to 1,048,576 MiB, default 8,192).
    pub cap_bytes: u64,
}

impl DepsConfig {
    /// Reads the section.
    pub fn from_env(env: &Environment) -> Result<DepsConfig, ConfigError> {
        // A blank value counts as unset, as for every variable.
        let dir = PathBuf::from(env.get("R2R_DEPS_DIR").unwrap_or("data/deps").trim());
        let cap_mb = match env.get("R2R_DEPS_CACHE_MB") {
            None => DEFAULT_CAP_MB,
            Some(text) => text
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|mb| CAP_MB.contains(mb))
                .ok_or_else(|| {
                    ConfigError::new(
                        "R2R_DEPS_CACHE_MB",
                        format!(
                            "expected the cache's cap in MiB, a whole number from {} to {}, got {text:?}",
                            CAP_MB.start(),
                            CAP_MB.end()
                        ),
                    )
                })?,
        };
        Ok(DepsConfig {
            dir,
            cap_bytes: cap_mb << 20,
        })
    }

    /// The cache these settings describe.
    pub fn cache(&self) -> sandbox::DepsCache {
        sandbox::DepsCache::new(&self.dir, self.cap_bytes)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_cache_has_a_folder_and_a_bounded_cap() {
        let defaults = DepsConfig::from_env(&Environment::from_pairs([])).unwrap();
        assert_eq!(defaults.dir, PathBuf::from("data/deps"));
        assert_eq!(defaults.cap_bytes, 8 << 30);
        let set = DepsConfig::from_env(&Environment::from_pairs([
            ("R2R_DEPS_DIR", " /srv/deps "),
            ("R2R_DEPS_CACHE_MB", "100"),
        ]))
        .unwrap();
        assert_eq!(set.dir, PathBuf::from("/srv/deps"));
        assert_eq!(set.cap_bytes, 100 << 20);
        for bad in ["0", "63", "-5", "1e3", "lots", "2000000"] {
            let error =
                DepsConfig::from_env(&Environment::from_pairs([("R2R_DEPS_CACHE_MB", bad)]))
                    .unwrap_err();
            assert_eq!(error.variable, "R2R_DEPS_CACHE_MB", "{bad:?}");
        }
        let blank = DepsConfig::from_env(&Environment::from_pairs([("R2R_DEPS_DIR", "  ")]));
        assert_eq!(blank.unwrap().dir, PathBuf::from("data/deps"));
    }
}
