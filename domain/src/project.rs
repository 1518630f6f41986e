//! Projects: the targets one desk serves. A project names its components (a report names a
//! component, the component names the project), the local bare repository that holds its
//! code, the branch fixes go into, how its tests run, the folders a fix may change, and
//! whether the crew works its bugs. The rules here are pure: the server checks what needs
//! the disk (that the repository exists) and the profile names it knows.

use serde::{Deserialize, Serialize};

/// Longest project id, name, branch and folder.
pub const MAX_ID: usize = 40;
/// Longest display name.
pub const MAX_NAME: usize = 80;
/// Most components one project may name.
pub const MAX_COMPONENTS: usize = 32;
/// Most folders a fix may change.
pub const MAX_FIX_PATHS: usize = 16;
/// The id of the project configured by the environment (`R2R_LOCAL_FORGE`, …).
pub const ENVIRONMENT_PROJECT: &str = "default";
/// The id the bugs of a component no project serves are shown under: no project may take it.
pub const NO_PROJECT: &str = "none";

/// One project as owners define it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
// Unknown fields are read past: a definition a newer desk stored still reads after a roll
// back (the command line builds definitions from flags, never from this JSON).
pub struct ProjectSpec {
    /// Its id: lower-case letters, digits and dashes.
    pub id: String,
    /// Its display name.
    pub name: String,
    /// Components its reports name (ids like the project's), none shared with another project.
    pub components: Vec<String>,
    /// Absolute path of the bare git repository holding its code (the local forge).
    pub forge_path: String,
    /// The branch fixes are based on and merged into.
    pub branch: String,
    /// How its tests run (`rust`, `node`, `vitest`, `python`, `go`, `junit`).
    pub profile: String,
    /// Folders a fix may change, each ending in `/`.
    pub fix_allowed_paths: Vec<String>,
    /// Whether the crew works its bugs (else they wait for people).
    pub crew: bool,
    /// The GitHub repository (`owner/name`) its fixes go to, when they go to GitHub: the
    /// desk pushes each measured fix there and opens its draft pull request, and only that
    /// repository's webhook events move its bugs. `forge_path` is then the desk's bare clone
    /// of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github: Option<String>,
    /// The service the desk's deployer releases from its default branch, when it deploys
    /// it (a Rust project): its binary's name, its health's service, its public path
    /// `/live/<service>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy: Option<String>,
    /// Where a proposed reproduction may live (globs such as `tests/**/*.rs`); none means
    /// the profile's own ([`crate::test_paths::defaults`]). Never inside a fix path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub test_paths: Vec<String>,
    /// How its deployed service starts (port, arguments, environment); the default is
    /// `--addr 127.0.0.1:8080` with no environment.
    #[serde(default, skip_serializing_if = "crate::launch::Launch::is_default")]
    pub launch: crate::launch::Launch,
}

/// Whether `text` may name a deployed service: 1 to 64 lower-case letters, digits and
/// dashes, not starting with a dash.
pub fn valid_service(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && !text.starts_with('-')
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Whether `text` is a GitHub repository's full name, `owner/name`: an owner of 1 to 39
/// letters, digits and single dashes (not at either end), a name of 1 to 100 letters,
/// digits, `.`, `_` and `-` that is not `.` or `..` and does not end in `.git`.
pub fn valid_github_repository(text: &str) -> bool {
    let Some((owner, name)) = text.split_once('/') else {
        return false;
    };
    let owner_ok = (1..=39).contains(&owner.len())
        && !owner.starts_with('-')
        && !owner.ends_with('-')
        && !owner.contains("--")
        && owner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let name_ok = (1..=100).contains(&name.len())
        && name != "."
        && name != ".."
        && !name.to_ascii_lowercase().ends_with(".git")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    owner_ok && name_ok
}

/// Why a project definition is refused: the field and the reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ProjectError {
    /// The offending field.
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

/// The project field a launch setting is given in.
pub fn launch_field(setting: &str) -> &'static str {
    match setting {
        "port" => "launch_port",
        "args" => "launch_args",
        "assets" => "launch_assets",
        _ => "launch_env",
    }
}

fn refuse(field: &'static str, reason: impl Into<String>) -> ProjectError {
    ProjectError {
        field,
        reason: reason.into(),
    }
}

/// An id: 1 to 40 lower-case letters, digits and dashes, not starting with a dash.
pub fn valid_id(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_ID
        && !text.starts_with('-')
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A relative folder without empty parts, hidden parts (`.git`, `.github`, `..`), leading
/// dashes or odd characters.
fn safe_folder(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    !path.is_empty()
        && path.len() <= 200
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|part| !part.is_empty() && !part.starts_with('.') && !part.starts_with('-'))
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
}

/// A branch name git accepts and a shell cannot misread.
fn safe_branch(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('-')
        && !name.starts_with('/')
        && !name.ends_with('/')
        && !name.ends_with(".lock")
        && !name.contains("..")
        && !name.contains("//")
        && !name.contains("@{")
        && name != "HEAD"
        && !name.starts_with("refs/")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
}

impl ProjectSpec {
    /// The spec with every list trimmed and folders ending in `/` (what is stored).
    pub fn normalized(mut self) -> ProjectSpec {
        self.id = self.id.trim().to_owned();
        self.name = self.name.trim().to_owned();
        self.branch = self.branch.trim().to_owned();
        self.profile = self.profile.trim().to_owned();
        self.forge_path = self.forge_path.trim().to_owned();
        self.github = self
            .github
            .map(|g| g.trim().to_owned())
            .filter(|g| !g.is_empty());
        self.deploy = self
            .deploy
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty());
        self.components = self
            .components
            .iter()
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty())
            .collect();
        self.test_paths = self
            .test_paths
            .iter()
            .map(|p| p.trim().trim_start_matches("./").to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        self.fix_allowed_paths = self
            .fix_allowed_paths
            .iter()
            .map(|p| p.trim())
            .filter(|p| !p.is_empty())
            .map(|p| {
                if p.ends_with('/') {
                    p.to_owned()
                } else {
                    format!("{p}/")
                }
            })
            .collect();
        self
    }

    /// Checks this (normalized) definition against the others on the desk: `taken` holds
    /// every component already served — the environment's project's and the other
    /// projects' — with the project serving it; `profiles` the profile names this desk runs.
    pub fn check(&self, taken: &[(String, String)], profiles: &[&str]) -> Result<(), ProjectError> {
        self.launch
            .check()
            .map_err(|refused| refuse(launch_field(refused.field), refused.message))?;
        if !valid_id(&self.id) {
            return Err(refuse(
                "id",
                format!(
                    "expected 1 to {MAX_ID} lower-case letters, digits and dashes, got {:?}",
                    self.id
                ),
            ));
        }
        if self.id == NO_PROJECT || self.id == ENVIRONMENT_PROJECT {
            return Err(refuse(
                "id",
                format!(
                    "{:?} is reserved: `default` is the environment's project, `none` stands for the bugs no project serves",
                    self.id
                ),
            ));
        }
        if self.name.is_empty()
            || self.name.chars().count() > MAX_NAME
            || !self.name.chars().any(char::is_alphanumeric)
            || self
                .name
                .chars()
                .any(crate::airlock::unicode::is_unprintable)
        {
            return Err(refuse(
                "name",
                format!(
                    "expected 1 to {MAX_NAME} printable characters with at least one letter or digit (no control, line-separator or invisible formatting characters)"
                ),
            ));
        }
        if self.components.is_empty() || self.components.len() > MAX_COMPONENTS {
            return Err(refuse(
                "components",
                format!("name 1 to {MAX_COMPONENTS} components"),
            ));
        }
        for (at, component) in self.components.iter().enumerate() {
            if !valid_id(component) {
                return Err(refuse(
                    "components",
                    format!("{component:?} is not lower-case letters, digits and dashes"),
                ));
            }
            if self.components[..at].contains(component) {
                return Err(refuse(
                    "components",
                    format!("{component:?} is listed twice"),
                ));
            }
            if let Some((_, owner)) = taken
                .iter()
                .find(|(c, owner)| c == component && *owner != self.id)
            {
                return Err(refuse(
                    "components",
                    format!("{component:?} already belongs to the project {owner:?}"),
                ));
            }
        }
        if !self.forge_path.starts_with('/')
            || self
                .forge_path
                .chars()
                .any(crate::airlock::unicode::is_unprintable)
            || self.forge_path.split('/').any(|part| part == "..")
        {
            return Err(refuse(
                "forge_path",
                format!(
                    "expected the absolute path of a bare git repository, got {:?}",
                    self.forge_path
                ),
            ));
        }
        if !safe_branch(&self.branch) {
            return Err(refuse(
                "branch",
                format!("{:?} is not a branch name", self.branch),
            ));
        }
        if !profiles.contains(&self.profile.as_str()) {
            return Err(refuse(
                "profile",
                format!(
                    "expected one of {}, got {:?}",
                    profiles.join(", "),
                    self.profile
                ),
            ));
        }
        if self.fix_allowed_paths.is_empty() || self.fix_allowed_paths.len() > MAX_FIX_PATHS {
            return Err(refuse(
                "fix_allowed_paths",
                format!("name 1 to {MAX_FIX_PATHS} folders a fix may change, such as src/"),
            ));
        }
        if let Some(bad) = self.fix_allowed_paths.iter().find(|p| !safe_folder(p)) {
            return Err(refuse(
                "fix_allowed_paths",
                format!("{bad:?} is not a relative folder such as src/"),
            ));
        }
        if self.test_paths.len() > crate::test_paths::MAX_PATTERNS {
            return Err(refuse(
                "test_paths",
                format!(
                    "name at most {} patterns where tests live, such as tests/**/*.rs",
                    crate::test_paths::MAX_PATTERNS
                ),
            ));
        }
        if let Some(bad) = self
            .test_paths
            .iter()
            .find(|p| !crate::test_paths::valid_pattern(p))
        {
            return Err(refuse(
                "test_paths",
                format!(
                    "{bad:?} is not a relative pattern such as tests/**/*.rs (letters, digits, _ - . / * ?; no hidden or .. parts)"
                ),
            ));
        }
        if let Some(github) = self.github.as_deref() {
            if !valid_github_repository(github) {
                return Err(refuse(
                    "github",
                    format!("expected a GitHub repository as owner/name, got {github:?}"),
                ));
            }
        }
        if let Some(service) = self.deploy.as_deref() {
            if !valid_service(service) {
                return Err(refuse(
                    "deploy",
                    format!(
                        "expected a service name of lower-case letters, digits and dashes, got {service:?}"
                    ),
                ));
            }
            if self.profile != "rust" {
                return Err(refuse(
                    "deploy",
                    format!(
                        "the deployer builds Rust projects only (cargo build --release); this one's profile is {}",
                        self.profile
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ProjectSpec {
        ProjectSpec {
            id: "tallybook".into(),
            name: "Tallybook".into(),
            components: vec!["tallybook".into(), "splits".into()],
            forge_path: "/srv/forges/tallybook.git".into(),
            branch: "main".into(),
            profile: "python".into(),
            fix_allowed_paths: vec!["tallybook/".into()],
            crew: true,
            github: None,
            deploy: None,
            test_paths: Vec::new(),
            launch: crate::launch::Launch::default(),
        }
    }

    #[test]
    fn test_paths_are_plain_patterns_and_at_most_twenty() {
        let with = ProjectSpec {
            test_paths: vec![" ./tests/**/test_*.py ".into(), "  ".into()],
            ..spec()
        }
        .normalized();
        assert_eq!(with.test_paths, ["tests/**/test_*.py"]);
        assert_eq!(with.check(&taken(), PROFILES), Ok(()));
        for bad in ["../up/**", "/abs/**", ".hidden/*.py", "a b.py"] {
            let refused = ProjectSpec {
                test_paths: vec![bad.into()],
                ..spec()
            }
            .normalized()
            .check(&taken(), PROFILES)
            .unwrap_err();
            assert_eq!(refused.field, "test_paths", "{bad}");
        }
        let many = ProjectSpec {
            test_paths: (0..21).map(|i| format!("t{i}/**")).collect(),
            ..spec()
        };
        assert_eq!(
            many.check(&taken(), PROFILES).unwrap_err().field,
            "test_paths"
        );
    }

    const PROFILES: &[&str] = &["rust", "python"];

    fn taken() -> Vec<(String, String)> {
        vec![
            ("shoplite".into(), ENVIRONMENT_PROJECT.into()),
            ("splits".into(), "tallybook".into()),
        ]
    }

    #[test]
    fn a_good_definition_passes_and_may_keep_its_own_components() {
        assert_eq!(spec().check(&taken(), PROFILES), Ok(()));
    }

    #[test]
    fn a_rust_project_may_name_the_service_it_deploys() {
        let deploying = ProjectSpec {
            profile: "rust".into(),
            deploy: Some(" tally-web ".into()),
            ..spec()
        }
        .normalized();
        assert_eq!(deploying.deploy.as_deref(), Some("tally-web"));
        assert_eq!(deploying.check(&taken(), PROFILES), Ok(()));
    }

    #[test]
    fn a_github_repository_is_owner_and_name_and_blank_means_none() {
        for good in ["octo-org/shop", "o/x.y_z-1", "A1/.github-pages"] {
            let with = ProjectSpec {
                github: Some(format!(" {good} ")),
                ..spec()
            }
            .normalized();
            assert_eq!(with.github.as_deref(), Some(good));
            assert_eq!(with.check(&taken(), PROFILES), Ok(()), "{good}");
        }
        let blank = ProjectSpec {
            github: Some("  ".into()),
            ..spec()
        }
        .normalized();
        assert_eq!(blank.github, None);
        // A definition stored before projects could name GitHub still reads.
        let old = r#"{"id":"t","name":"t","components":["t"],"forge_path":"/f.git","branch":"main","profile":"python","fix_allowed_paths":["t/"],"crew":true}"#;
        let read: ProjectSpec = serde_json::from_str(old).unwrap();
        assert_eq!(read.github, None);
        assert!(!serde_json::to_string(&read).unwrap().contains("github"));
    }

    #[test]
    fn normalizing_trims_and_ends_folders_with_a_slash() {
        let loose = ProjectSpec {
            id: " tallybook ".into(),
            components: vec![" tallybook".into(), "".into()],
            fix_allowed_paths: vec!["tallybook".into(), " ".into()],
            ..spec()
        }
        .normalized();
        assert_eq!(loose.id, "tallybook");
        assert_eq!(loose.components, ["tallybook"]);
        assert_eq!(loose.fix_allowed_paths, ["tallybook/"]);
    }

    #[test]
    fn each_bad_field_is_named() {
        let field_of = |changed: ProjectSpec| {
            changed
                .normalized()
                .check(&taken(), PROFILES)
                .map_err(|e| e.field)
                .unwrap_err()
        };
        for (bad, field) in [
            (
                ProjectSpec {
                    fix_allowed_paths: vec![".git".into()],
                    ..spec()
                },
                "fix_allowed_paths",
            ),
            (
                ProjectSpec {
                    fix_allowed_paths: vec!["src/.github".into()],
                    ..spec()
                },
                "fix_allowed_paths",
            ),
            (
                ProjectSpec {
                    branch: "HEAD".into(),
                    ..spec()
                },
                "branch",
            ),
            (
                ProjectSpec {
                    branch: "refs/heads/x".into(),
                    ..spec()
                },
                "branch",
            ),
            (
                ProjectSpec {
                    name: "Tally\u{202e}koob".into(),
                    ..spec()
                },
                "name",
            ),
            (
                ProjectSpec {
                    name: "Tally\u{200b}book".into(),
                    ..spec()
                },
                "name",
            ),
            (
                ProjectSpec {
                    id: "Tally".into(),
                    ..spec()
                },
                "id",
            ),
            (
                ProjectSpec {
                    id: "-x".into(),
                    ..spec()
                },
                "id",
            ),
            (
                ProjectSpec {
                    id: "none".into(),
                    ..spec()
                },
                "id",
            ),
            (
                ProjectSpec {
                    id: "a".repeat(41),
                    ..spec()
                },
                "id",
            ),
            (
                ProjectSpec {
                    name: "".into(),
                    ..spec()
                },
                "name",
            ),
            (
                ProjectSpec {
                    name: "a\u{7}b".into(),
                    ..spec()
                },
                "name",
            ),
            (
                ProjectSpec {
                    name: "\u{301}\u{301}\u{301}".into(),
                    ..spec()
                },
                "name",
            ),
            (
                ProjectSpec {
                    name: "Tally\u{2028}book".into(),
                    ..spec()
                },
                "name",
            ),
            (
                ProjectSpec {
                    forge_path: "/srv/\u{1b}[31mred.git".into(),
                    ..spec()
                },
                "forge_path",
            ),
            (
                ProjectSpec {
                    components: vec![],
                    ..spec()
                },
                "components",
            ),
            (
                ProjectSpec {
                    components: vec!["shoplite".into()],
                    ..spec()
                },
                "components",
            ),
            (
                ProjectSpec {
                    components: vec!["a".into(), "a".into()],
                    ..spec()
                },
                "components",
            ),
            (
                ProjectSpec {
                    components: vec!["A b".into()],
                    ..spec()
                },
                "components",
            ),
            (
                ProjectSpec {
                    forge_path: "data/t.git".into(),
                    ..spec()
                },
                "forge_path",
            ),
            (
                ProjectSpec {
                    forge_path: "/srv/../etc".into(),
                    ..spec()
                },
                "forge_path",
            ),
            (
                ProjectSpec {
                    branch: "-x".into(),
                    ..spec()
                },
                "branch",
            ),
            (
                ProjectSpec {
                    branch: "a..b".into(),
                    ..spec()
                },
                "branch",
            ),
            (
                ProjectSpec {
                    branch: "main;rm".into(),
                    ..spec()
                },
                "branch",
            ),
            (
                ProjectSpec {
                    profile: "cobol".into(),
                    ..spec()
                },
                "profile",
            ),
            (
                ProjectSpec {
                    deploy: Some("shop".into()),
                    ..spec()
                },
                "deploy",
            ),
            (
                ProjectSpec {
                    profile: "rust".into(),
                    deploy: Some("Shop Lite".into()),
                    ..spec()
                },
                "deploy",
            ),
            (
                ProjectSpec {
                    profile: "rust".into(),
                    deploy: Some("../x".into()),
                    ..spec()
                },
                "deploy",
            ),
            (
                ProjectSpec {
                    github: Some("octo-org".into()),
                    ..spec()
                },
                "github",
            ),
            (
                ProjectSpec {
                    github: Some("octo-org/shop.git".into()),
                    ..spec()
                },
                "github",
            ),
            (
                ProjectSpec {
                    github: Some("-octo/shop".into()),
                    ..spec()
                },
                "github",
            ),
            (
                ProjectSpec {
                    github: Some("octo/..".into()),
                    ..spec()
                },
                "github",
            ),
            (
                ProjectSpec {
                    github: Some("octo/sh op".into()),
                    ..spec()
                },
                "github",
            ),
            (
                ProjectSpec {
                    github: Some("octo/shop/extra".into()),
                    ..spec()
                },
                "github",
            ),
            (
                ProjectSpec {
                    github: Some("../../etc/passwd".into()),
                    ..spec()
                },
                "github",
            ),
            (
                ProjectSpec {
                    github: Some("octo/shop?x=1".into()),
                    ..spec()
                },
                "github",
            ),
            (
                ProjectSpec {
                    fix_allowed_paths: vec![],
                    ..spec()
                },
                "fix_allowed_paths",
            ),
            (
                ProjectSpec {
                    fix_allowed_paths: vec!["../x".into()],
                    ..spec()
                },
                "fix_allowed_paths",
            ),
            (
                ProjectSpec {
                    fix_allowed_paths: vec!["/etc".into()],
                    ..spec()
                },
                "fix_allowed_paths",
            ),
            (
                ProjectSpec {
                    fix_allowed_paths: vec!["a b/".into()],
                    ..spec()
                },
                "fix_allowed_paths",
            ),
        ] {
            assert_eq!(field_of(bad.clone()), field, "{bad:?}");
        }
    }

    #[test]
    fn a_component_of_another_project_is_refused_with_its_owner() {
        let other = ProjectSpec {
            id: "ledger".into(),
            components: vec!["splits".into()],
            ..spec()
        };
        let error = other.check(&taken(), PROFILES).unwrap_err();
        assert!(error.reason.contains("\"tallybook\""), "{error}");
    }

    #[test]
    fn a_definition_reads_back_as_written_even_with_a_newer_desks_fields() {
        let text = serde_json::to_string(&spec()).unwrap();
        assert_eq!(serde_json::from_str::<ProjectSpec>(&text).unwrap(), spec());
        let mut extra: serde_json::Value = serde_json::from_str(&text).unwrap();
        extra["a_later_field"] = serde_json::json!(true);
        assert_eq!(
            serde_json::from_value::<ProjectSpec>(extra).unwrap(),
            spec()
        );
        let mut missing: serde_json::Value = serde_json::from_str(&text).unwrap();
        missing.as_object_mut().unwrap().remove("components");
        assert!(serde_json::from_value::<ProjectSpec>(missing).is_err());
    }
}
