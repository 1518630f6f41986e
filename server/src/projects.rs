//! The targets one desk serves: the project the environment configures (`R2R_LOCAL_FORGE`,
//! `R2R_TARGET_PROFILE`, `R2R_FIX_ALLOWED_PATHS`, `R2R_COMPONENTS`, id `default`) and the
//! projects owners defined (`r2r project add`, the desk's API), kept in the database.
//!
//! A report names a component; the component names its project; the project's forge,
//! profile and allowed folders are what every reproduction, context, fix, approval and merge
//! of that bug use. Every server on the database notices a change within a second: a lookup
//! reads the projects' stamp at most once a second and rebuilds its [`Scope`] when it moved.

use domain::project::{ProjectError, ProjectSpec, ENVIRONMENT_PROJECT};
use domain::workflow::{Millis, Policy};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// How stale a server's view of the projects may be.
pub const REFRESH_EVERY: Duration = Duration::from_secs(1);

/// One project as the desk works it.
#[derive(Clone, Debug)]
pub struct Target {
    /// Its id (`default` for the environment's).
    pub project: String,
    /// Its display name.
    pub name: String,
    /// The components its reports name.
    pub components: Vec<String>,
    /// Its local forge, when it has one (a GitHub-only environment project has none).
    pub forge: Option<Arc<forge::LocalForge>>,
    /// How its tests run.
    pub profile: sandbox::Profile,
    /// Folders a fix may change.
    pub fix_allowed_paths: Vec<String>,
    /// Where a proposed reproduction may live (globs); empty: the profile's defaults.
    pub test_paths: Vec<String>,
    /// Whether the crew works its bugs (for the environment's: `R2R_CREW_COMPONENTS`).
    pub crew: bool,
    /// The branch fixes go into.
    pub branch: String,
    /// The GitHub repository its fixes are pushed to and opened in as draft pull requests
    /// (the environment's: `R2R_GITHUB_FIX_REPOSITORY`; a stored project's: its `github`).
    pub github: Option<String>,
    /// The GitHub repository whose webhook events move its bugs: its `github`, and for the
    /// environment's project without one the first of `R2R_GITHUB_REPOSITORIES` that no
    /// stored project names. An event
    /// from any other repository moves none of its bugs, whatever pull request number or
    /// commit it names.
    pub follows: Option<String>,
    /// The service the desk's deployer releases from its default branch (the environment's:
    /// `R2R_DEPLOY_SERVICE` with `R2R_DEPLOY=on`; a stored project's: its `deploy`).
    pub deploy: Option<String>,
    /// How that service starts (the environment's: `R2R_DEPLOY_PORT`, `R2R_DEPLOY_ARGS`,
    /// `R2R_DEPLOY_ENV`; a stored project's: its `launch`).
    pub launch: domain::launch::Launch,
    /// The stored definition (none for the environment's project).
    pub spec: Option<ProjectSpec>,
    /// When it last changed, and by whom (stored projects).
    pub updated: Option<(Millis, String)>,
}

/// Every target and what follows from them: the components reports may name and the
/// crew's policy (its allowed components widened by every project the crew works).
#[derive(Debug)]
pub struct Scope {
    /// The environment's project first, then the stored ones by id.
    pub targets: Vec<Arc<Target>>,
    /// Every component a report may name.
    pub components: Vec<String>,
    /// The engine's policy.
    pub policy: Policy,
    /// Stored projects that are not served: id, when it last changed, and why.
    pub unserved: Vec<(String, Millis, String)>,
    /// What a component no project serves gets: no forge, no crew.
    nobody: Arc<Target>,
}

/// The id a component no project serves is shown under.
pub use domain::project::NO_PROJECT;

impl Scope {
    /// The target serving `component`; for a component no project serves (its project's
    /// definition unreadable, or removed from `R2R_COMPONENTS`) a target with no forge and no
    /// crew, so its bugs wait for a person instead of landing in another project's code.
    pub fn target_of(&self, component: &str) -> Arc<Target> {
        self.targets
            .iter()
            .find(|t| t.components.iter().any(|c| c == component))
            .unwrap_or(&self.nobody)
            .clone()
    }

    /// The environment's project.
    pub fn environment(&self) -> Arc<Target> {
        self.targets[0].clone()
    }

    /// The project `id`, if served.
    pub fn project(&self, id: &str) -> Option<Arc<Target>> {
        self.targets.iter().find(|t| t.project == id).cloned()
    }

    /// Every component served, with its project (for checking a new definition).
    pub fn taken(&self) -> Vec<(String, String)> {
        self.targets
            .iter()
            .flat_map(|t| t.components.iter().map(|c| (c.clone(), t.project.clone())))
            .collect()
    }
}

/// The desk's projects, refreshed from the database.
#[derive(Debug)]
pub struct Projects {
    environment: Arc<Target>,
    github: GitHubRules,
    base_policy: Policy,
    current: RwLock<Arc<Scope>>,
    stamp: tokio::sync::Mutex<Option<(i64, Millis)>>,
    checked: Mutex<Option<Instant>>,
}

/// A definition the desk refuses, or could not store.
#[derive(Debug, thiserror::Error)]
pub enum DefineError {
    /// A field is wrong.
    #[error(transparent)]
    Invalid(#[from] ProjectError),
    /// The id is taken (adding) or unknown (editing).
    #[error("{0}")]
    Conflict(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] store::StoreError),
}

/// What a project's GitHub repository must satisfy on this desk.
#[derive(Clone, Debug, Default)]
struct GitHubRules {
    /// `R2R_GITHUB_REPOSITORIES`: the only repositories whose webhooks are taken.
    listed: Vec<String>,
    /// Whether `R2R_GITHUB_TOKEN` is set (pushing needs it).
    token: bool,
}

impl GitHubRules {
    /// Why `repository` cannot be a project's on this desk, if it cannot.
    fn refusal(&self, repository: &str) -> Option<String> {
        if !self
            .listed
            .iter()
            .any(|r| r.eq_ignore_ascii_case(repository))
        {
            return Some(format!(
                "{repository} is not in R2R_GITHUB_REPOSITORIES, so its pull requests' events would be refused"
            ));
        }
        if !self.token {
            return Some(format!(
                "pushing fixes to {repository} needs R2R_GITHUB_TOKEN, which is not set"
            ));
        }
        None
    }
}

fn profiles() -> Vec<&'static str> {
    sandbox::Profile::ALL.iter().map(|p| p.as_str()).collect()
}

/// What an owner gives to add or change a project (the CLI's flags, the desk's form): each
/// field given replaces the project's (or the new project's default), each absent one keeps it.
/// Lists are comma-separated.
#[derive(Clone, Debug, Default)]
pub struct ProjectChange {
    /// Display name.
    pub name: Option<String>,
    /// Components.
    pub components: Option<String>,
    /// The bare repository's absolute path.
    pub forge: Option<String>,
    /// The branch fixes go into.
    pub branch: Option<String>,
    /// How its tests run.
    pub profile: Option<String>,
    /// Folders a fix may change.
    pub fix_paths: Option<String>,
    /// Whether the crew works its bugs.
    pub crew: Option<bool>,
    /// The GitHub repository (`owner/name`) its fixes go to; empty or `none`: none.
    pub github: Option<String>,
    /// The service its deployer releases; empty or `none`: not deployed.
    pub deploy: Option<String>,
    /// Where its tests live (comma-separated globs); empty or `default`: the profile's.
    pub test_paths: Option<String>,
    /// Its deployed service's port inside its namespace; empty: 8080.
    pub launch_port: Option<String>,
    /// Its deployed service's arguments (space-separated, `{addr}` and `{port}` filled in).
    pub launch_args: Option<String>,
    /// Its deployed service's environment (`NAME=VALUE` pairs separated by `;`).
    pub launch_env: Option<String>,
    /// The folder of its deployed service's static assets; `none`: none.
    pub launch_assets: Option<String>,
}

fn list_of(text: &str) -> Vec<String> {
    text.split(',').map(|p| p.trim().to_owned()).collect()
}

/// A new project's defaults: named by its id, branch `main`, fixes in `src/`, crew on.
fn blank(id: &str) -> ProjectSpec {
    ProjectSpec {
        id: id.trim().to_owned(),
        name: id.trim().to_owned(),
        components: Vec::new(),
        forge_path: String::new(),
        branch: "main".to_owned(),
        profile: String::new(),
        fix_allowed_paths: vec!["src/".to_owned()],
        crew: true,
        github: None,
        deploy: None,
        test_paths: Vec::new(),
        launch: domain::launch::Launch::default(),
    }
}

impl ProjectChange {
    /// `base` with every given field replaced; a launch setting that does not read is
    /// refused by its field.
    pub fn over(self, base: ProjectSpec) -> Result<ProjectSpec, ProjectError> {
        let launch = domain::launch::Launch::parse_with_assets(
            &base.launch,
            self.launch_port.as_deref(),
            self.launch_args.as_deref(),
            self.launch_env.as_deref(),
            self.launch_assets.as_deref(),
        )
        .map_err(|refused| ProjectError {
            field: domain::project::launch_field(refused.field),
            reason: refused.message,
        })?;
        Ok(ProjectSpec {
            launch,
            name: self.name.unwrap_or(base.name),
            components: self.components.as_deref().map_or(base.components, list_of),
            forge_path: self.forge.unwrap_or(base.forge_path),
            branch: self.branch.unwrap_or(base.branch),
            profile: self.profile.unwrap_or(base.profile),
            fix_allowed_paths: self
                .fix_paths
                .as_deref()
                .map_or(base.fix_allowed_paths, list_of),
            crew: self.crew.unwrap_or(base.crew),
            github: match self.github {
                Some(text) if text.trim().is_empty() || text.trim() == "none" => None,
                Some(text) => Some(text),
                None => base.github,
            },
            deploy: match self.deploy {
                Some(text) if text.trim().is_empty() || text.trim() == "none" => None,
                Some(text) => Some(text),
                None => base.deploy,
            },
            test_paths: match self.test_paths {
                Some(text) if text.trim().is_empty() || text.trim() == "default" => Vec::new(),
                Some(text) => list_of(&text),
                None => base.test_paths,
            },
            ..base
        })
    }
}

impl Projects {
    /// Adds project `id` with `change` over the defaults.
    pub async fn add(
        &self,
        store: &store::Store,
        id: &str,
        change: ProjectChange,
        by: &str,
        now: Millis,
    ) -> Result<ProjectSpec, DefineError> {
        self.define(store, change.over(blank(id))?, None, by, now)
            .await
    }

    /// Changes project `id`: only the fields `change` gives. A stored project that is not
    /// served (its definition no longer reads, or clashes) is replaced whole, from the
    /// defaults. The environment's project is changed in its variables, never here.
    pub async fn edit(
        &self,
        store: &store::Store,
        id: &str,
        change: ProjectChange,
        by: &str,
        now: Millis,
    ) -> Result<ProjectSpec, DefineError> {
        self.reload(store, true).await?;
        let scope = self.scope();
        let id = id.trim();
        let (base, updated_at) = match scope.project(id) {
            Some(target) => match (target.spec.clone(), target.updated.clone()) {
                (Some(spec), Some((updated_at, _))) => (spec, updated_at),
                _ => {
                    return Err(ProjectError {
                        field: "id",
                        reason: "the environment's project is changed in its variables (R2R_LOCAL_FORGE, R2R_TARGET_PROFILE, …)".to_owned(),
                    }
                    .into())
                }
            },
            None => match scope.unserved.iter().find(|(u, _, _)| u == id) {
                // Not served here, but readable (its repository is not listed in this
                // process's settings, say): changed from what is stored, so a field not given
                // is kept, never silently reset; an unreadable one starts from the defaults.
                Some((_, updated_at, _)) => {
                    let stored = store
                        .projects()
                        .await?
                        .into_iter()
                        .find(|row| row.id == id)
                        .and_then(|row| serde_json::from_str::<ProjectSpec>(&row.spec).ok());
                    (stored.unwrap_or_else(|| blank(id)), *updated_at)
                }
                None => {
                    return Err(ProjectError {
                        field: "id",
                        reason: format!(
                            "no project {id:?} (the environment's project `default` is changed in its variables)"
                        ),
                    }
                    .into())
                }
            },
        };
        self.define(store, change.over(base)?, Some(updated_at), by, now)
            .await
    }

    /// The environment's project from `config`, before any stored project is read.
    pub fn new(config: &crate::config::Config) -> Self {
        let environment = Arc::new(Target {
            project: ENVIRONMENT_PROJECT.to_owned(),
            name: "configured by the environment".to_owned(),
            components: config.intake.components.clone(),
            forge: config
                .local_forge
                .as_ref()
                .map(|path| Arc::new(forge::LocalForge::new(path, &config.local_forge_branch))),
            profile: config.target_profile,
            fix_allowed_paths: config.fix_allowed_paths.clone(),
            test_paths: config.test_paths.clone(),
            crew: !config.policy.allowed_components.is_empty(),
            branch: config.local_forge_branch.clone(),
            github: config.github.fix_repository.clone(),
            follows: config.github.fix_repository.clone(),
            deploy: config.deploy.as_ref().map(|d| d.service.clone()),
            launch: config
                .deploy
                .as_ref()
                .map(|d| d.launch.clone())
                .unwrap_or_default(),
            spec: None,
            updated: None,
        });
        let github = GitHubRules {
            listed: config.github.repositories.clone(),
            token: config.github.token.is_some(),
        };
        let scope = build(&environment, &config.policy, &github, Vec::new());
        Projects {
            environment,
            github,
            base_policy: config.policy.clone(),
            current: RwLock::new(Arc::new(scope)),
            stamp: tokio::sync::Mutex::new(None),
            checked: Mutex::new(None),
        }
    }

    /// The scope as last read.
    pub fn scope(&self) -> Arc<Scope> {
        match self.current.read() {
            Ok(scope) => scope.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The scope, read again from the database when a second has passed since the last look
    /// and the projects changed meanwhile. A database error keeps the last scope (and says so).
    pub async fn fresh(&self, store: &store::Store) -> Arc<Scope> {
        let due = {
            let mut checked = match self.checked.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            let due = checked.is_none_or(|at| at.elapsed() >= REFRESH_EVERY);
            if due {
                *checked = Some(Instant::now());
            }
            due
        };
        if due {
            if let Err(error) = self.reload(store, false).await {
                tracing::warn!(%error, "could not read the projects; keeping the last view");
            }
        }
        self.scope()
    }

    /// Reads the projects again now if their stamp moved (or always, with `force`).
    pub async fn reload(&self, store: &store::Store, force: bool) -> Result<(), store::StoreError> {
        let mut stamp = self.stamp.lock().await;
        let now = store.projects_stamp().await?;
        if !force && *stamp == Some(now) {
            return Ok(());
        }
        let stored = store.projects().await?;
        let mut specs = Vec::with_capacity(stored.len());
        let mut unreadable = Vec::new();
        for row in stored {
            match serde_json::from_str::<ProjectSpec>(&row.spec) {
                Ok(spec) => specs.push((spec, row.updated_at, row.updated_by)),
                Err(error) => {
                    tracing::warn!(project = %row.id, %error, "a stored project does not parse; it is not served");
                    unreadable.push((
                        row.id,
                        row.updated_at,
                        format!("its stored definition does not read: {error}"),
                    ));
                }
            }
        }
        let mut scope = build(&self.environment, &self.base_policy, &self.github, specs);
        scope.unserved.extend(unreadable);
        match self.current.write() {
            Ok(mut current) => *current = Arc::new(scope),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(scope),
        }
        *stamp = Some(now);
        Ok(())
    }

    /// Adds (`expected` none) or replaces (at the `updated_at` the editor read) a project,
    /// after checking it against every other target and that its forge is a bare repository.
    pub async fn define(
        &self,
        store: &store::Store,
        spec: ProjectSpec,
        expected: Option<Millis>,
        by: &str,
        now: Millis,
    ) -> Result<ProjectSpec, DefineError> {
        self.reload(store, true).await?;
        let spec = spec.normalized();
        if spec.id == ENVIRONMENT_PROJECT {
            return Err(ProjectError {
                field: "id",
                reason: format!(
                    "{ENVIRONMENT_PROJECT:?} is the project the environment configures (R2R_LOCAL_FORGE and friends)"
                ),
            }
            .into());
        }
        let scope = self.scope();
        spec.check(&scope.taken(), &profiles())?;
        if let Some(github) = spec.github.as_deref() {
            if let Some(reason) = self.github.refusal(github) {
                return Err(ProjectError {
                    field: "github",
                    reason,
                }
                .into());
            }
            let same = |r: Option<&str>| r.is_some_and(|r| r.eq_ignore_ascii_case(github));
            for other in scope.targets.iter().filter(|t| t.project != spec.id) {
                if same(other.github.as_deref()) {
                    return Err(ProjectError {
                        field: "github",
                        reason: format!(
                            "{github} is already the repository of the project {:?} (its events would move both projects' bugs)",
                            other.project
                        ),
                    }
                    .into());
                }
                // The environment's project follows it without naming it: taken only while
                // that project has no bugs, whose pull requests would change hands.
                if same(other.follows.as_deref()) {
                    for component in &other.components {
                        if store.bugs_naming(component).await? > 0 {
                            return Err(ProjectError {
                                field: "github",
                                reason: format!(
                                    "the project {:?} follows {github}'s events and has bugs (component {component:?}); it stays theirs",
                                    other.project
                                ),
                            }
                            .into());
                        }
                    }
                }
            }
        }
        // The repository, as git sees it: a bare repository (a work tree's `.git` would have
        // its checked-out branch moved under it), named by its real path, and no other
        // project's.
        let forge = std::fs::canonicalize(&spec.forge_path).map_err(|e| ProjectError {
            field: "forge_path",
            reason: format!("{}: {e}", spec.forge_path),
        })?;
        let bare = tokio::process::Command::new("git")
            .arg("--git-dir")
            .arg(&forge)
            .args(["rev-parse", "--is-bare-repository"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .await
            .map_err(|e| DefineError::Conflict(format!("cannot run git: {e}")))?;
        if !bare.status.success() || String::from_utf8_lossy(&bare.stdout).trim() != "true" {
            return Err(ProjectError {
                field: "forge_path",
                reason: format!("{} is not a bare git repository", forge.display()),
            }
            .into());
        }
        if let Some(service) = spec.deploy.as_deref() {
            if let Some(other) = scope
                .targets
                .iter()
                .find(|t| t.project != spec.id && t.deploy.as_deref() == Some(service))
            {
                return Err(ProjectError {
                    field: "deploy",
                    reason: format!(
                        "/live/{service} is already the project {:?}'s service",
                        other.project
                    ),
                }
                .into());
            }
        }
        let spec = ProjectSpec {
            forge_path: forge.display().to_string(),
            ..spec
        };
        for other in scope.targets.iter().filter(|t| t.project != spec.id) {
            let theirs = other
                .forge
                .as_ref()
                .and_then(|f| std::fs::canonicalize(f.repository()).ok());
            if theirs.as_deref() == Some(forge.as_path()) {
                return Err(ProjectError {
                    field: "forge_path",
                    reason: format!(
                        "{} is already the repository of the project {:?}",
                        forge.display(),
                        other.project
                    ),
                }
                .into());
            }
        }
        // A component its bugs name stays, and so does the repository of a project with bugs:
        // they would silently move to another project's code.
        // What is stored now, served here or not: a shell whose settings cannot serve the
        // project (its repository unlisted there, say) still meets every guard below.
        let stored_before = match scope.project(&spec.id).and_then(|t| t.spec.clone()) {
            Some(before) => Some(before),
            None => store
                .projects()
                .await?
                .into_iter()
                .find(|row| row.id == spec.id)
                .and_then(|row| serde_json::from_str::<ProjectSpec>(&row.spec).ok()),
        };
        if let Some(before) = stored_before {
            let moved = match (&before.github, &spec.github) {
                (Some(a), Some(b)) => !a.eq_ignore_ascii_case(b),
                (a, b) => a.is_some() != b.is_some(),
            };
            if moved {
                for component in &before.components {
                    if store.bugs_naming(component).await? > 0 {
                        return Err(ProjectError {
                            field: "github",
                            reason: format!(
                                "the project's bugs (component {component:?}) follow pull requests in {}; it stays",
                                before.github.as_deref().unwrap_or("its own repository")
                            ),
                        }
                        .into());
                    }
                }
            }
            if before.branch != spec.branch {
                for component in &before.components {
                    if store.bugs_naming(component).await? > 0 {
                        return Err(ProjectError {
                            field: "branch",
                            reason: format!(
                                "the project's bugs (component {component:?}) were measured, merged and released on {}; it stays (their evidence would point at another history)",
                                before.branch
                            ),
                        }
                        .into());
                    }
                }
            }
            if before.forge_path != spec.forge_path {
                for component in &before.components {
                    if store.bugs_naming(component).await? > 0 {
                        return Err(ProjectError {
                            field: "forge_path",
                            reason: format!(
                                "the project's bugs (component {component:?}) were measured in {}; it stays",
                                before.forge_path
                            ),
                        }
                        .into());
                    }
                }
            }
            for dropped in before
                .components
                .iter()
                .filter(|c| !spec.components.contains(c))
            {
                let bugs = store.bugs_naming(dropped).await?;
                if bugs > 0 {
                    return Err(ProjectError {
                        field: "components",
                        reason: format!(
                            "{dropped:?} is named by {bugs} bug{} of this project; it stays",
                            if bugs == 1 { "" } else { "s" }
                        ),
                    }
                    .into());
                }
            }
        }
        let text = serde_json::to_string(&spec).map_err(|e| {
            DefineError::Conflict(format!("the definition does not serialize: {e}"))
        })?;
        match store
            .write_project(&spec.id, &text, &store::projects::claims(&text), expected, now, by)
            .await?
        {
            store::projects::ProjectWrite::Written => {}
            store::projects::ProjectWrite::ComponentTaken { component, project } => {
                return Err(match component.split_once(':') {
                    Some(("github", repository)) => ProjectError {
                        field: "github",
                        reason: format!("{repository} is already the repository of the project {project:?}"),
                    },
                    Some(("deploy", service)) => ProjectError {
                        field: "deploy",
                        reason: format!("/live/{service} is already the project {project:?}'s service"),
                    },
                    Some(("forge", path)) => ProjectError {
                        field: "forge_path",
                        reason: format!("{path} is already the repository of the project {project:?}"),
                    },
                    _ => ProjectError {
                        field: "components",
                        reason: format!("{component:?} already belongs to the project {project:?}"),
                    },
                }
                .into())
            }
            store::projects::ProjectWrite::Stale => {
                return Err(DefineError::Conflict(match expected {
                    None => format!("a project {:?} exists already (edit it instead)", spec.id),
                    Some(_) => format!(
                        "the project {:?} is not there or changed since it was read (read it again)",
                        spec.id
                    ),
                }))
            }
        }
        self.reload(store, true).await?;
        Ok(spec)
    }
}

/// The scope of the environment's project and `stored` ones (each with when and by whom it
/// last changed). A stored project whose components another already serves is not served
/// (the store refuses such a write; a row written by hand could still clash).
fn build(
    environment: &Arc<Target>,
    base: &Policy,
    github: &GitHubRules,
    stored: Vec<(ProjectSpec, Millis, String)>,
) -> Scope {
    // The environment's project without a fix repository and without a local forge (its pull
    // requests opened outside the desk, known by number) follows the first listed
    // repository, unless a stored project names it (then none): never another one, so its
    // bugs' pull requests cannot change hands when projects change. With a local forge its
    // pull requests are the forge's, and no GitHub event is about them.
    let environment = if environment.github.is_none() && environment.forge.is_none() {
        let named = |r: &str| {
            stored.iter().any(|(spec, _, _)| {
                spec.github
                    .as_deref()
                    .is_some_and(|g| g.eq_ignore_ascii_case(r))
            })
        };
        let follows = github.listed.first().filter(|r| !named(r)).cloned();
        if follows == environment.follows {
            environment.clone()
        } else {
            Arc::new(Target {
                follows,
                ..(**environment).clone()
            })
        }
    } else {
        environment.clone()
    };
    let mut targets = vec![environment.clone()];
    let mut unserved = Vec::new();
    let mut components = environment.components.clone();
    let mut policy = base.clone();
    for (spec, updated_at, updated_by) in stored {
        if spec.id == NO_PROJECT || spec.id == ENVIRONMENT_PROJECT {
            unserved.push((
                spec.id.clone(),
                updated_at,
                format!("{:?} is a reserved id", spec.id),
            ));
            continue;
        }
        if let Some(clash) = spec.components.iter().find(|c| components.contains(c)) {
            tracing::warn!(project = %spec.id, "a stored project names a component another serves; it is not served");
            unserved.push((
                spec.id.clone(),
                updated_at,
                format!("its component {clash:?} is served by another project"),
            ));
            continue;
        }
        let Some(profile) = sandbox::Profile::parse(&spec.profile) else {
            tracing::warn!(project = %spec.id, profile = %spec.profile, "a stored project names an unknown profile; it is not served");
            unserved.push((
                spec.id.clone(),
                updated_at,
                format!("its profile {:?} is not one this desk runs", spec.profile),
            ));
            continue;
        };
        if let Some(repository) = spec.github.as_deref() {
            let reason = github.refusal(repository).or_else(|| {
                targets
                    .iter()
                    .find(|t| {
                        [t.github.as_deref(), t.follows.as_deref()]
                            .into_iter()
                            .flatten()
                            .any(|r| r.eq_ignore_ascii_case(repository))
                    })
                    .map(|t| {
                        format!(
                            "its GitHub repository {repository} is the project {:?}'s",
                            t.project
                        )
                    })
            });
            if let Some(reason) = reason {
                tracing::warn!(project = %spec.id, %reason, "a stored project's GitHub repository cannot be its; it is not served");
                unserved.push((spec.id.clone(), updated_at, reason));
                continue;
            }
        }
        if let Some(service) = spec.deploy.as_deref() {
            if let Some(other) = targets
                .iter()
                .find(|t| t.deploy.as_deref() == Some(service))
            {
                let reason = format!(
                    "its service /live/{service} is the project {:?}'s",
                    other.project
                );
                tracing::warn!(project = %spec.id, %reason, "a stored project's service is another's; it is not served");
                unserved.push((spec.id.clone(), updated_at, reason));
                continue;
            }
        }
        components.extend(spec.components.iter().cloned());
        if spec.crew {
            policy
                .allowed_components
                .extend(spec.components.iter().cloned());
        }
        targets.push(Arc::new(Target {
            project: spec.id.clone(),
            name: spec.name.clone(),
            components: spec.components.clone(),
            forge: Some(Arc::new(forge::LocalForge::new(
                std::path::Path::new(&spec.forge_path),
                &spec.branch,
            ))),
            profile,
            fix_allowed_paths: spec.fix_allowed_paths.clone(),
            test_paths: spec.test_paths.clone(),
            crew: spec.crew,
            branch: spec.branch.clone(),
            github: spec.github.clone(),
            follows: spec.github.clone(),
            deploy: spec.deploy.clone(),
            launch: spec.launch.clone(),
            spec: Some(spec),
            updated: Some((updated_at, updated_by)),
        }));
    }
    Scope {
        targets,
        components,
        policy,
        unserved,
        nobody: Arc::new(Target {
            project: NO_PROJECT.to_owned(),
            name: "served by no project".to_owned(),
            components: Vec::new(),
            forge: None,
            profile: sandbox::Profile::Rust,
            fix_allowed_paths: Vec::new(),
            test_paths: Vec::new(),
            crew: false,
            branch: String::new(),
            github: None,
            follows: None,
            deploy: None,
            launch: domain::launch::Launch::default(),
            spec: None,
            updated: None,
        }),
    }
}
