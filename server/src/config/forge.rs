//! The local forge (`R2R_LOCAL_FORGE`, `R2R_LOCAL_FORGE_BRANCH`).

use super::{ConfigError, Environment};

/// The bare git repository serving as the local forge (`R2R_LOCAL_FORGE`).
pub fn local_forge(env: &Environment) -> Option<std::path::PathBuf> {
    env.get("R2R_LOCAL_FORGE")
        .map(|p| std::path::PathBuf::from(p.trim()))
}

/// Its default branch (`R2R_LOCAL_FORGE_BRANCH`, default `main`).
pub fn local_forge_branch(env: &Environment) -> Result<String, ConfigError> {
    Ok({
        let branch = env.get("R2R_LOCAL_FORGE_BRANCH").unwrap_or("main").trim();
        if branch.is_empty()
            || branch.starts_with('-')
            || branch.contains("..")
            || branch.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(ConfigError::new(
                "R2R_LOCAL_FORGE_BRANCH",
                format!("expected a git branch name such as main, got {branch:?}"),
            ));
        }
        branch.to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forge_branch_defaults_to_main_and_a_bad_name_is_named() {
        assert_eq!(local_forge_branch(&Environment::default()).unwrap(), "main");
        let set = Environment::from_pairs([("R2R_LOCAL_FORGE_BRANCH", " trunk ")]);
        assert_eq!(local_forge_branch(&set).unwrap(), "trunk");
        for bad in ["-x", "a..b", "two words", "tab\there", " - "] {
            let set = Environment::from_pairs([("R2R_LOCAL_FORGE_BRANCH", bad)]);
            let error = local_forge_branch(&set).unwrap_err();
            assert_eq!(error.variable, "R2R_LOCAL_FORGE_BRANCH", "{bad:?}");
        }
        let forge = Environment::from_pairs([("R2R_LOCAL_FORGE", " /srv/shop.git ")]);
        assert_eq!(
            local_forge(&forge),
            Some(std::path::PathBuf::from("/srv/shop.git"))
        );
        assert_eq!(local_forge(&Environment::default()), None);
    }
}
