//! `r2r project add|list|edit`: the projects one desk serves beside the one the environment
//! configures. Definitions go to the database; every running server on it serves the change
//! within a second.

use super::load_config;
use crate::projects::{DefineError, ProjectChange, Projects};
use clap::{Args, Subcommand};
use std::path::Path;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum ProjectCommand {
    /// Add a project: its components, its bare repository, how its tests run.
    Add {
        /// Id: lower-case letters, digits and dashes.
        #[arg(long)]
        id: String,
        /// The bare repository the team pushes to: what is not given is read from its tree
        /// (as `r2r project detect` reads it) and printed — the profile, the fix folders,
        /// the branch (its HEAD's) and the forge (this repository); the component is the id.
        #[arg(long, value_name = "PATH")]
        from_git: Option<std::path::PathBuf>,
        /// With --from-git: the branch, tag or commit read (default its HEAD).
        #[arg(long = "ref", value_name = "REF", requires = "from_git")]
        reference: Option<String>,
        #[command(flatten)]
        fields: Fields,
    },
    /// Every project this desk serves, the environment's first.
    List,
    /// Before any report: prepare a repository's dependencies (the one step that reaches a
    /// package registry) and run its own suite once in the networkless sandbox; exits 0 only
    /// on a green baseline.
    Preflight {
        /// The repository (a work tree or a bare repository).
        #[arg(long, value_name = "PATH")]
        repository: std::path::PathBuf,
        /// The branch, tag or commit to measure.
        #[arg(long = "ref", default_value = "HEAD", value_name = "REF")]
        reference: String,
        /// How its tests run (rust and python have their dependencies prepared so far);
        /// default: what `r2r project detect` finds.
        #[arg(long)]
        profile: Option<String>,
    },
    /// What the desk makes of a repository, read from its tree (nothing of it runs): the
    /// profile, lockfile, toolchain pins, fix folders and test folders, and what the desk
    /// cannot do for it yet; exits 0 when a profile fits.
    Detect {
        /// The repository (a work tree or a bare repository).
        #[arg(long, value_name = "PATH")]
        repository: std::path::PathBuf,
        /// The branch, tag or commit to read.
        #[arg(long = "ref", default_value = "HEAD", value_name = "REF")]
        reference: String,
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Change a project: only the options given change.
    Edit {
        /// The project's id.
        #[arg(long)]
        id: String,
        #[command(flatten)]
        fields: Fields,
    },
}

/// A project's fields; every one optional on `edit`.
#[derive(Args, Debug, Default)]
pub struct Fields {
    /// Display name (default: the id).
    #[arg(long)]
    name: Option<String>,
    /// Components its reports name, comma-separated (none another project serves).
    #[arg(long)]
    components: Option<String>,
    /// Absolute path of its bare git repository.
    #[arg(long, value_name = "PATH")]
    forge: Option<String>,
    /// The branch fixes go into (default main).
    #[arg(long)]
    branch: Option<String>,
    /// How its tests run: rust, node, vitest, python, go or junit.
    #[arg(long)]
    profile: Option<String>,
    /// Folders a fix may change, comma-separated (default src/).
    #[arg(long, value_name = "FOLDERS")]
    fix_paths: Option<String>,
    /// Whether the crew works its bugs: on or off (default on).
    #[arg(long, value_parser = parse_switch)]
    crew: Option<bool>,
    /// The GitHub repository its fixes go to, owner/name (one of R2R_GITHUB_REPOSITORIES;
    /// --forge is then the desk's bare clone of it); none: fixes stay in --forge.
    #[arg(long, value_name = "OWNER/NAME")]
    github: Option<String>,
    /// The service the desk's deployer releases from its branch (a Rust project: its
    /// binary's name, served at /live/<service>); none: not deployed.
    #[arg(long, value_name = "SERVICE")]
    deploy: Option<String>,
    /// Where its tests live, comma-separated globs such as tests/**/*.rs (a proposed
    /// reproduction must match one, never inside --fix-paths); default: what its profile's
    /// runner collects.
    #[arg(long, value_name = "GLOBS")]
    test_paths: Option<String>,
    /// The port its deployed service listens on inside its own network namespace (default
    /// 8080).
    #[arg(long, value_name = "PORT")]
    launch_port: Option<String>,
    /// Its deployed service's arguments, space-separated, {addr} and {port} filled in
    /// (default "--addr {addr}"; "" for none).
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    launch_args: Option<String>,
    /// Its deployed service's environment, NAME=VALUE pairs separated by ";" (never the
    /// desk's own R2R_* settings or DATABASE_URL).
    #[arg(long, value_name = "NAME=VALUE;…")]
    launch_env: Option<String>,
    /// The folder of its deployed service's static assets, served each at its own path
    /// (default static; none: none): the build hashes them and the recorder checks the live
    /// address serves exactly those.
    #[arg(long, value_name = "FOLDER")]
    launch_assets: Option<String>,
}

fn parse_switch(text: &str) -> Result<bool, String> {
    match text.trim() {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("expected on or off, got {other:?}")),
    }
}

impl Fields {
    /// The change these flags make (a relative forge path is taken from here, as a person
    /// typing it means).
    fn change(self) -> ProjectChange {
        ProjectChange {
            name: self.name,
            components: self.components,
            forge: self.forge.map(|path| {
                let path = Path::new(path.trim());
                if path.is_relative() {
                    std::env::current_dir()
                        .map(|dir| dir.join(path))
                        .unwrap_or_else(|_| path.to_path_buf())
                        .display()
                        .to_string()
                } else {
                    path.display().to_string()
                }
            }),
            branch: self.branch,
            profile: self.profile,
            fix_paths: self.fix_paths,
            crew: self.crew,
            github: self.github,
            deploy: self.deploy,
            test_paths: self.test_paths,
            launch_port: self.launch_port,
            launch_args: self.launch_args,
            launch_env: self.launch_env,
            launch_assets: self.launch_assets,
        }
    }
}

fn refused(error: DefineError) -> anyhow::Error {
    match error {
        DefineError::Invalid(invalid) => {
            anyhow::anyhow!("--{}: {}", flag_of(invalid.field), invalid.reason)
        }
        other => anyhow::anyhow!("{other}"),
    }
}

fn flag_of(field: &str) -> &str {
    match field {
        "forge_path" => "forge",
        "fix_allowed_paths" | "fix_paths" => "fix-paths",
        "test_paths" => "test-paths",
        other => other,
    }
}

/// Runs `r2r project …`.
pub async fn command(env_file: &Path, command: ProjectCommand) -> anyhow::Result<ExitCode> {
    // Reading a tree needs neither the configuration nor the database.
    if let ProjectCommand::Detect {
        repository,
        reference,
        json,
    } = &command
    {
        return super::preflight::detect(repository, reference, *json).await;
    }
    let config = load_config(env_file, None)?;
    let store = store::Store::connect(&config.database_url).await?;
    store.migrate().await?;
    let projects = Projects::new(&config);
    projects.reload(&store, true).await?;
    let now = crate::clock::now_ms();
    match command {
        ProjectCommand::Add {
            id,
            from_git,
            reference,
            fields,
        } => {
            let mut change = fields.change();
            if let Some(repository) = from_git {
                let (said, limits) = crate::service::detect::fill_from_tree(
                    &mut change,
                    &id,
                    &repository,
                    reference.as_deref(),
                )
                .await
                .map_err(|(field, reason)| {
                    anyhow::anyhow!("--from-git: {reason} (--{})", flag_of(field))
                })?;
                println!("detected  {}", said.join("; "));
                for limit in limits {
                    println!("not yet   {limit}");
                }
            }
            let spec = projects
                .add(&store, &id, change, "cli", now)
                .await
                .map_err(refused)?;
            println!(
                "added     {} ({}): components {}, {} tests, fixes in {}, crew {}{}",
                spec.id,
                spec.name,
                spec.components.join(","),
                spec.profile,
                spec.fix_allowed_paths.join(","),
                if spec.crew { "on" } else { "off" },
                spec.github
                    .as_deref()
                    .map_or(String::new(), |g| format!(", fixes pushed to GitHub {g}"))
                    + &spec
                        .deploy
                        .as_deref()
                        .map_or(String::new(), |d| format!(", released at /live/{d}"))
                    + &if spec.test_paths.is_empty() {
                        String::new()
                    } else {
                        format!(", tests at {}", spec.test_paths.join(","))
                    }
            );
        }
        ProjectCommand::Edit { id, fields } => {
            let spec = projects
                .edit(&store, &id, fields.change(), "cli", now)
                .await
                .map_err(refused)?;
            println!("changed   {}", spec.id);
        }
        ProjectCommand::Preflight {
            repository,
            reference,
            profile,
        } => {
            return super::preflight::preflight(
                env_file,
                &repository,
                &reference,
                profile.as_deref(),
            )
            .await
        }
        ProjectCommand::Detect { .. } => unreachable!("answered above"),
        ProjectCommand::List => {
            println!(
                "{:<14} {:<22} {:<8} {:<5} {:<24} {:<16} {:<24} {:<16} forge",
                "id", "components", "profile", "crew", "fix paths", "branch", "github", "deploys"
            );
            for target in &projects.scope().targets {
                println!(
                    "{:<14} {:<22} {:<8} {:<5} {:<24} {:<16} {:<24} {:<16} {}",
                    target.project,
                    target.components.join(","),
                    target.profile.as_str(),
                    if target.crew { "on" } else { "off" },
                    target.fix_allowed_paths.join(","),
                    target.branch,
                    match (&target.github, &target.follows) {
                        (Some(fixes), _) => fixes.clone(),
                        (None, Some(events)) => format!("{events} (events only)"),
                        (None, None) => "-".to_owned(),
                    },
                    target
                        .deploy
                        .as_deref()
                        .map_or("-".to_owned(), |d| format!("/live/{d}")),
                    target
                        .forge
                        .as_ref()
                        .map_or("none".to_owned(), |f| f.repository().display().to_string())
                );
            }
            for (id, _, why) in &projects.scope().unserved {
                println!("{id:<14} NOT SERVED: {why} (its bugs wait for a person; fix it with r2r project edit --id {id} and every field)");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
