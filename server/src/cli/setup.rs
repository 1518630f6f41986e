//! `r2r setup`: writes `.env.local` with fresh secrets, never overwriting one that exists.

use crate::config::Environment;
use crate::config::{looks_like_owner_email, parse_env_file};
use domain::Role;
use rand::{Rng, RngCore};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// What setup did to each variable.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SetupReport {
    /// Variables written now.
    pub generated: Vec<String>,
    /// Variables that already had a value and were left alone.
    pub kept: Vec<String>,
    /// The first owner's one-time password, when it was generated now (shown once).
    pub owner_password: Option<String>,
}

/// Why setup failed.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The existing file is not `KEY=VALUE` lines.
    #[error("{path} line {line}: {reason}; fix or remove the line and run setup again")]
    Malformed {
        /// The file.
        path: String,
        /// Line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// `--owner-email` is not an email address.
    #[error("--owner-email: expected an email address such as owner@example.org, got {0:?}")]
    OwnerEmail(String),
    /// Reading or writing the file failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Hashing the password failed.
    #[error("cannot hash the owner password: {0}")]
    Hash(String),
}

fn random_hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    rand::rngs::OsRng.fill_bytes(&mut buffer);
    hex::encode(buffer)
}

/// A one-time password from an alphabet without look-alike characters.
fn one_time_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyzABCDEFGHJKMNPQRSTUVWXYZ23456789";
    let mut rng = rand::rngs::OsRng;
    let chars: String = (0..20)
        .map(|_| char::from(ALPHABET[rng.gen_range(0..ALPHABET.len())]))
        .collect();
    // Groups of five are easier to type from a terminal.
    chars
        .as_bytes()
        .chunks(5)
        .map(|chunk| String::from_utf8_lossy(chunk).into_owned())
        .collect::<Vec<_>>()
        .join("-")
}

/// Creates or completes the env file at `path`.
pub fn run(path: &Path, owner_email: &str) -> Result<SetupReport, SetupError> {
    if !looks_like_owner_email(owner_email) {
        return Err(SetupError::OwnerEmail(owner_email.to_owned()));
    }
    let display = path.display().to_string();
    let existing_text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(SetupError::Io {
                path: display,
                source,
            })
        }
    };
    let existing =
        parse_env_file(&existing_text).map_err(|(line, reason)| SetupError::Malformed {
            path: display.clone(),
            line,
            reason,
        })?;

    let mut report = SetupReport::default();
    let mut additions: Vec<(String, String)> = Vec::new();
    let mut want = |name: &str, make: &mut dyn FnMut() -> Result<String, SetupError>| {
        if existing
            .get(name)
            .is_some_and(|value| !value.trim().is_empty())
        {
            report.kept.push(name.to_owned());
            Ok::<(), SetupError>(())
        } else {
            additions.push((name.to_owned(), make()?));
            report.generated.push(name.to_owned());
            Ok(())
        }
    };
    for role in Role::ALL {
        want(role.token_variable(), &mut || Ok(new_role_token(role)))?;
    }
    want("R2R_GITHUB_WEBHOOK_SECRET", &mut || Ok(random_hex(32)))?;
    want("R2R_SESSION_KEY", &mut || Ok(random_hex(64)))?;
    want("R2R_OWNER_EMAIL", &mut || Ok(owner_email.to_owned()))?;
    // The demo desk's crew: deterministic, and labelled `simulated demo` in every piece of
    // evidence. Set R2R_MODEL_PROVIDER=openai-compatible (and R2R_MODEL_*) for a real model.
    want("R2R_MODEL_PROVIDER", &mut || Ok("scripted".to_owned()))?;
    // The embedded database beside the env file, by its absolute path: a desk started from
    // another folder opens the same database instead of making a new one there.
    want("DATABASE_URL", &mut || {
        let home = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let home = home.canonicalize().map_err(|source| SetupError::Io {
            path: home.display().to_string(),
            source,
        })?;
        Ok(format!("sqlite://{}/data/r2r.db", home.display()))
    })?;
    let mut password = None;
    want("R2R_OWNER_PASSWORD_HASH", &mut || {
        let fresh = one_time_password();
        let hash = crate::auth::hash_password(&fresh)
            .map_err(|error| SetupError::Hash(error.to_string()))?;
        password = Some(fresh);
        Ok(hash)
    })?;
    report.owner_password = password;

    if !additions.is_empty() {
        let mut text = existing_text;
        if text.is_empty() {
            text.push_str(
                "# Reporter-to-Release secrets, written by `r2r setup`. Never commit this file.\n",
            );
        } else if !text.ends_with('\n') {
            text.push('\n');
        }
        for (name, value) in &additions {
            // Single quotes keep `$` in argon2 hashes literal for shells that source the file.
            text.push_str(&format!("{name}='{value}'\n"));
        }
        write_private(path, &text).map_err(|source| SetupError::Io {
            path: display,
            source,
        })?;
    }
    Ok(report)
}

/// A fresh token for `role`: `r2r_<role>_<64 hex>`.
pub fn new_role_token(role: Role) -> String {
    format!("r2r_{}_{}", role.as_str(), random_hex(32))
}

/// Sets one variable in an env file (replacing its line, or appending it), keeping every
/// other line as it was; the file stays owner-only.
pub fn set_variable(path: &Path, name: &str, value: &str) -> Result<(), SetupError> {
    let display = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(SetupError::Io {
                path: display,
                source,
            })
        }
    };
    parse_env_file(&text).map_err(|(line, reason)| SetupError::Malformed {
        path: display.clone(),
        line,
        reason,
    })?;
    let line_of = |line: &str| {
        let bare = line.trim().strip_prefix("export ").unwrap_or(line.trim());
        bare.split_once('=')
            .is_some_and(|(key, _)| key.trim() == name)
    };
    let new_line = format!("{name}='{value}'");
    let mut replaced = false;
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| {
            if line_of(line) {
                replaced = true;
                new_line.clone()
            } else {
                line.to_owned()
            }
        })
        .collect();
    if !replaced {
        lines.push(new_line);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    write_private(path, &out).map_err(|source| SetupError::Io {
        path: display,
        source,
    })
}

/// Writes the file atomically with owner-only permissions.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(text.as_bytes())?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|error| error.error)?;
    Ok(())
}

pub fn write_env_file(env_file: &std::path::Path, owner_email: &str) -> anyhow::Result<ExitCode> {
    let report = crate::cli::setup::run(env_file, owner_email)?;
    let path = env_file.display();
    for name in &report.generated {
        println!("generated {name}");
    }
    for name in &report.kept {
        println!("kept      {name} (already set in {path})");
    }
    match &report.owner_password {
        Some(password) => {
            println!();
            println!("First owner account: {owner_email}");
            println!("One-time password:   {password}");
            println!("This password is shown once and is not stored anywhere; only its hash is in {path}.");
        }
        None => println!(
            "\nThe first owner's password was printed when it was generated; it is not shown again."
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// The demo target: when no forge is configured, ShopLite goes into `data/shoplite.git` beside
/// the env file (a bare repository the desk's local forge serves) and `R2R_LOCAL_FORGE`
/// points at it.
pub async fn setup_demo_forge(env_file: &std::path::Path) -> anyhow::Result<()> {
    let env = Environment::load(env_file)?;
    if env.get("R2R_LOCAL_FORGE").is_some() || env.get("R2R_GITHUB_REPOSITORIES").is_some() {
        return Ok(());
    }
    let shoplite = std::path::Path::new("shoplite");
    if !shoplite.join("src/lib.rs").is_file() {
        println!("no shoplite/ folder here: the demo target was not set up (run setup from the repository root for it)");
        return Ok(());
    }
    // Beside the env file (the repository root for `.env.local`).
    let home = match env_file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.canonicalize()?,
        _ => std::env::current_dir()?,
    };
    let bare = home.join("data/shoplite.git");
    if !bare.join("HEAD").is_file() {
        std::fs::create_dir_all(bare.parent().unwrap_or(std::path::Path::new(".")))?;
        crate::cli::demo_run::seed_forge(shoplite, &bare).await?;
        println!(
            "created   {} (ShopLite, the demo target, in a local forge)",
            bare.display()
        );
    }
    crate::cli::setup::set_variable(env_file, "R2R_LOCAL_FORGE", &bare.display().to_string())?;
    println!("set       R2R_LOCAL_FORGE={}", bare.display());
    // The Python demo target, in its own forge beside ShopLite's, served by the same desk as
    // the project `tallybook`.
    let tallybook = std::path::Path::new("tallybook");
    let tally_bare = home.join("data/tallybook.git");
    if tallybook.join("tallybook/split.py").is_file() && !tally_bare.join("HEAD").is_file() {
        crate::cli::demo_run::seed_tallybook(tallybook, &tally_bare).await?;
        println!(
            "created   {} (Tallybook, the Python demo target, in a local forge)",
            tally_bare.display()
        );
    }
    if tally_bare.join("HEAD").is_file() {
        define_tallybook(env_file, &tally_bare).await?;
    }
    // The embedded setup releases what it merges: the deployer builds every new head of the
    // forge's main in the sandbox and the recorder proves it live (unless already chosen).
    if env.get("R2R_DEPLOY").is_none() {
        let releases = home.join("data/releases");
        crate::cli::setup::set_variable(env_file, "R2R_DEPLOY", "on")?;
        crate::cli::setup::set_variable(
            env_file,
            "R2R_DEPLOY_DIR",
            &releases.display().to_string(),
        )?;
        println!(
            "set       R2R_DEPLOY=on (releases in {}, live at /live/shoplite)",
            releases.display()
        );
    }
    Ok(())
}

/// Defines the project `tallybook` (Python, its forge at `bare`) in the desk's database
/// unless it is there already; a component clash is said, not fatal.
async fn define_tallybook(env_file: &Path, bare: &Path) -> anyhow::Result<()> {
    let config = crate::cli::load_config(env_file, None)?;
    let store = store::Store::connect(&config.database_url).await?;
    store.migrate().await?;
    let projects = crate::projects::Projects::new(&config);
    projects.reload(&store, true).await?;
    if projects.scope().project("tallybook").is_none() {
        let spec = domain::project::ProjectSpec {
            id: "tallybook".into(),
            name: "Tallybook (the Python demo)".into(),
            components: vec!["tallybook".into()],
            forge_path: bare.display().to_string(),
            branch: "main".into(),
            profile: "python".into(),
            fix_allowed_paths: vec!["tallybook/".into()],
            crew: true,
            github: None,
            deploy: None,
            test_paths: Vec::new(),
            launch: domain::launch::Launch::default(),
        };
        match projects
            .define(&store, spec, None, "setup", crate::clock::now_ms())
            .await
        {
            Ok(_) => println!(
                "added     project tallybook (component tallybook, python tests, fixes in tallybook/): one desk serves ShopLite and Tallybook"
            ),
            Err(crate::projects::DefineError::Invalid(why)) => {
                println!("skipped   project tallybook: {why}")
            }
            Err(other) => return Err(other.into()),
        }
    }
    store.close().await;
    Ok(())
}

/// `r2r setup`: writes the env file, then seeds the demo's local forge.
pub async fn command(env_file: &Path, owner_email: &str) -> anyhow::Result<ExitCode> {
    let code = write_env_file(env_file, owner_email)?;
    setup_demo_forge(env_file).await?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::{PasswordHash, PasswordVerifier};

    #[test]
    fn setup_writes_every_secret_and_a_working_owner_password() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env.local");
        let report = run(&path, "owner@desk.test").unwrap();
        assert!(report.kept.is_empty());
        let values = parse_env_file(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for role in Role::ALL {
            let token = &values[role.token_variable()];
            assert!(token.len() >= 64, "{token}");
        }
        assert_eq!(values["R2R_GITHUB_WEBHOOK_SECRET"].len(), 64);
        assert_eq!(values["R2R_SESSION_KEY"].len(), 128);
        assert_eq!(values["R2R_OWNER_EMAIL"], "owner@desk.test");
        // The database beside the env file, whatever folder the desk is started from.
        assert_eq!(
            values["DATABASE_URL"],
            format!(
                "sqlite://{}/data/r2r.db",
                dir.path().canonicalize().unwrap().display()
            )
        );
        let password = report.owner_password.unwrap();
        let hash = PasswordHash::new(&values["R2R_OWNER_PASSWORD_HASH"]).unwrap();
        assert!(argon2::Argon2::default()
            .verify_password(password.as_bytes(), &hash)
            .is_ok());
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_second_run_keeps_every_secret_and_prints_no_password() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env.local");
        run(&path, "owner@desk.test").unwrap();
        let before = std::fs::read_to_string(&path).unwrap();
        let report = run(&path, "other@desk.test").unwrap();
        assert!(report.generated.is_empty(), "{:?}", report.generated);
        assert_eq!(report.kept.len(), 12);
        assert_eq!(report.owner_password, None);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }

    #[test]
    fn setup_completes_a_partial_file_without_touching_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env.local");
        std::fs::write(
            &path,
            "# mine\nR2R_FIXER_TOKEN=custom\nDATABASE_URL=sqlite://x.db",
        )
        .unwrap();
        let report = run(&path, "owner@desk.test").unwrap();
        assert_eq!(report.kept, ["R2R_FIXER_TOKEN", "DATABASE_URL"]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\nR2R_FIXER_TOKEN=custom\nDATABASE_URL=sqlite://x.db\n"));
        let values = parse_env_file(&text).unwrap();
        assert_eq!(values["R2R_FIXER_TOKEN"], "custom");
        assert!(values["R2R_REVIEWER_TOKEN"].starts_with("r2r_reviewer_"));
    }

    #[test]
    fn set_variable_replaces_one_line_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env.local");
        std::fs::write(&path, "# keep\nA=1\nexport R2R_FIXER_TOKEN='old'\nB=2\n").unwrap();
        set_variable(&path, "R2R_FIXER_TOKEN", "new").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# keep\nA=1\nR2R_FIXER_TOKEN='new'\nB=2\n"
        );
        set_variable(&path, "C", "3").unwrap();
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .ends_with("B=2\nC='3'\n"));
    }

    #[test]
    fn a_malformed_file_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env.local");
        std::fs::write(&path, "R2R_FIXER_TOKEN=x\nthis is not a pair\n").unwrap();
        let error = run(&path, "owner@desk.test").unwrap_err();
        assert!(error.to_string().contains("line 2"), "{error}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "R2R_FIXER_TOKEN=x\nthis is not a pair\n"
        );
    }

    #[test]
    fn a_bad_owner_email_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env.local");
        assert!(matches!(run(&path, "nope"), Err(SetupError::OwnerEmail(_))));
        assert!(!path.exists());
    }
}
