//! Carries each real-bug case ([`super::real_bugs`]) through a desk of its own: a fresh
//! SQLite desk on 127.0.0.1, the repository at the fix's parent in a bare repository the
//! desk adds as a project (read from its tree, as `r2r project add --from-git` does), the
//! report filed over HTTP, triage and reproduction by the crew's roles with their own
//! tokens, the reporter's yes through the tracking link, and the fix measured by the desk.
//! The furthest stage, the desk's stated reason when it stopped, and the time are printed.

use super::demo_run::{capability, expect_state, git, random_hex, Desk, FreshTokens};
use super::real_bugs::{load_cases, mirror_of, Case, Material, Oracle};
use crate::config::{Config, Environment};
use anyhow::{anyhow, bail};
use domain::Role;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The stages a case goes through, in order.
pub const STAGES: [&str; 6] = [
    "material read",
    "project added",
    "report filed",
    "reproduced",
    "confirmed",
    "fix measured",
];

/// What to run.
#[derive(Debug)]
pub struct RealBugOptions {
    /// The folder of case files.
    pub cases: PathBuf,
    /// Where the mirrors are.
    pub mirrors: PathBuf,
    /// Only these case ids (all when empty).
    pub only: Vec<String>,
    /// The configured model instead of the oracle (read from the env file).
    pub provider: bool,
    /// The env file (`--provider` reads the model's variables from it).
    pub env_file: PathBuf,
}

/// How one case ended.
#[derive(Debug)]
pub struct Outcome {
    /// How many of [`STAGES`] it passed.
    pub reached: usize,
    /// Why it stopped (empty when it passed every stage).
    pub reason: String,
    /// What the last stage said.
    pub detail: String,
    /// Wall time.
    pub elapsed: Duration,
}

/// Runs every case and prints a line each and a summary; exit 0 when every case reached a
/// measured fix.
pub async fn command(options: RealBugOptions) -> anyhow::Result<ExitCode> {
    if !options.mirrors.is_dir() {
        bail!(
            "--mirrors {}: not a folder (where `fetch` put the repositories: owner+name/repo)",
            options.mirrors.display()
        );
    }
    let mut cases = load_cases(&options.cases)?;
    if !options.only.is_empty() {
        for id in &options.only {
            if !cases.iter().any(|c| &c.id == id) {
                bail!("--case {id}: no such case in {}", options.cases.display());
            }
        }
        cases.retain(|c| options.only.contains(&c.id));
    }
    let model_env = if options.provider {
        Some(Environment::load(&options.env_file)?)
    } else {
        None
    };
    println!(
        "real bugs · {} case(s) · model: {} · stages: {}",
        cases.len(),
        if options.provider {
            "the configured provider"
        } else {
            "the oracle (upstream test and fix)"
        },
        STAGES.join(" → ")
    );
    let mut outcomes = Vec::new();
    for case in &cases {
        let outcome = one(case, &options.mirrors, model_env.as_ref()).await;
        println!(
            "{:<28} {:<8} {:<6} {:>6.1} s  {:<14} {}",
            case.id,
            case.profile,
            case.set,
            outcome.elapsed.as_secs_f64(),
            if outcome.reached == STAGES.len() {
                "FIX MEASURED".to_owned()
            } else {
                format!("stopped before {}", STAGES[outcome.reached])
            },
            if outcome.reason.is_empty() {
                outcome.detail.clone()
            } else {
                outcome.reason.clone()
            }
        );
        outcomes.push((case, outcome));
    }
    println!();
    for (n, stage) in STAGES.iter().enumerate() {
        let count = |set: Option<&str>| {
            outcomes
                .iter()
                .filter(|(c, o)| o.reached > n && set.is_none_or(|s| c.set == s))
                .count()
        };
        println!(
            "{stage:<16} {:>3} of {:<3} (built on {}, measured only {})",
            count(None),
            outcomes.len(),
            count(Some("built")),
            count(Some("measured"))
        );
    }
    let all = outcomes.iter().all(|(_, o)| o.reached == STAGES.len());
    Ok(if all {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// One case through its own desk.
pub async fn one(case: &Case, mirrors: &Path, model_env: Option<&Environment>) -> Outcome {
    let started = Instant::now();
    let mut reached = 0;
    let mut detail = String::new();
    let scratch = tempfile::tempdir();
    let result = match scratch {
        Ok(ref dir) => {
            stages(
                case,
                mirrors,
                model_env,
                dir.path(),
                &mut reached,
                &mut detail,
            )
            .await
        }
        Err(error) => Err(anyhow!("no scratch folder: {error}")),
    };
    Outcome {
        reached,
        reason: result
            .err()
            .map_or(String::new(), |e| one_line(&format!("{e:#}"))),
        detail,
        elapsed: started.elapsed(),
    }
}

fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 400 {
        format!("{}…", flat.chars().take(400).collect::<String>())
    } else {
        flat
    }
}

/// Commits the tree of `rev` in `mirror` as the only commit of `bare`'s `main`, through a
/// work tree at `work`.
fn snapshot_commit(mirror: &Path, rev: &str, work: &Path, bare: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(work)?;
    let unpacked = std::process::Command::new("sh")
        .args([
            "-c",
            "git --git-dir \"$1\" archive --format=tar \"$2\" | tar -x -C \"$3\"",
            "sh",
        ])
        .arg(mirror)
        .arg(rev)
        .arg(work)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()?;
    if !unpacked.status.success() {
        bail!(
            "git archive {rev}: {}",
            String::from_utf8_lossy(&unpacked.stderr).trim()
        );
    }
    let message = format!("The tree of {rev}");
    git(work, &["init", "-q", "-b", "main"])?;
    git(work, &["add", "-A", "-f"])?;
    git(work, &["commit", "-q", "--no-verify", "-m", &message])?;
    git(
        work,
        &[
            "push",
            "-q",
            &bare.display().to_string(),
            "main:refs/heads/main",
        ],
    )?;
    Ok(())
}

/// The process's variables the desk's sandbox and dependency cache read, passed on.
fn sandbox_pairs() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(name, _)| {
            [
                "R2R_SANDBOX_",
                "R2R_DEPS_",
                "R2R_REGISTRY",
                "R2R_PYPI",
                "R2R_NPM",
                "R2R_CRATES",
            ]
            .iter()
            .any(|prefix| name.starts_with(prefix))
                || name == "DOCKER_HOST"
        })
        .collect()
}

async fn stages(
    case: &Case,
    mirrors: &Path,
    model_env: Option<&Environment>,
    dir: &Path,
    reached: &mut usize,
    detail: &mut String,
) -> anyhow::Result<()> {
    // 1. The material, from the mirror, checked against the case's hash.
    let mirror = mirror_of(mirrors, &case.repository).ok_or_else(|| {
        anyhow!(
            "no mirror of {} under {} (the material is not on this machine)",
            case.repository,
            mirrors.display()
        )
    })?;
    let material = Material::read(&mirror, case)?;
    let sha = material.sha256(case);
    match &case.material_sha256 {
        Some(recorded) if *recorded != sha => bail!(
            "the mirror's material has SHA-256 {sha}, the case recorded {recorded}: another history"
        ),
        Some(_) => *detail = "material matches".to_owned(),
        None => *detail = format!("material_sha256 not recorded; it is {sha}"),
    }
    let oracle = Oracle::new(case, &material)?;
    *reached = 1;

    // 2. The repository at the parent, as the team's bare repository, added as a project.
    let bare = dir.join(format!("{}.git", case.id));
    let bare_text = bare.display().to_string();
    git(dir, &["init", "-q", "--bare", &bare_text])?;
    let mirror_text = mirror.display().to_string();
    let pushed = git(
        dir,
        &[
            "--git-dir",
            &mirror_text,
            "push",
            "-q",
            &bare_text,
            &format!("{}:refs/heads/main", case.parent),
        ],
    );
    let history = match pushed {
        Ok(_) => {
            // Tags, for versions computed from them; a mirror without tags is fine.
            let _ = git(
                dir,
                &[
                    "--git-dir",
                    &mirror_text,
                    "push",
                    "-q",
                    &bare_text,
                    "--tags",
                ],
            );
            "with its history"
        }
        // A mirror whose older history is incomplete (a partial fetch): the parent's tree
        // as one commit, which is all the desk measures.
        Err(_) => {
            snapshot_commit(&mirror, &case.parent, &dir.join("tree"), &bare)?;
            "as one commit (the mirror's history is incomplete)"
        }
    };
    git(
        dir,
        &[
            "--git-dir",
            &bare_text,
            "symbolic-ref",
            "HEAD",
            "refs/heads/main",
        ],
    )?;
    let tokens = FreshTokens::new();
    let mut pairs = tokens.variables();
    pairs.extend(sandbox_pairs());
    pairs.extend([
        (
            "DATABASE_URL".to_owned(),
            format!("sqlite://{}/desk.db", dir.display()),
        ),
        ("R2R_ADDR".to_owned(), "127.0.0.1:0".to_owned()),
        (
            "R2R_OWNER_EMAIL".to_owned(),
            "owner@eval.invalid".to_owned(),
        ),
        (
            "R2R_OWNER_PASSWORD_HASH".to_owned(),
            crate::auth::hash_password(&random_hex(16))
                .map_err(|e| anyhow!("cannot hash a password: {e}"))?,
        ),
        ("R2R_SESSION_KEY".to_owned(), random_hex(32)),
        // The run plays the crew and the reporter itself, step by step.
        ("R2R_CREW".to_owned(), "off".to_owned()),
        ("R2R_CONCIERGE".to_owned(), "off".to_owned()),
        ("R2R_DEPLOY".to_owned(), "off".to_owned()),
    ]);
    let env = Environment::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let config = Config::from_env(&env, None).map_err(|e| anyhow!("{e}"))?;
    {
        let store = store::Store::connect(&config.database_url).await?;
        store.migrate().await?;
        let projects = crate::projects::Projects::new(&config);
        projects.reload(&store, true).await?;
        let mut change = crate::projects::ProjectChange {
            crew: Some(true),
            ..Default::default()
        };
        let (said, limits) =
            crate::service::detect::fill_from_tree(&mut change, &case.id, &bare, None)
                .await
                .map_err(|(field, reason)| {
                    anyhow!("the desk could not add it ({field}): {reason}")
                })?;
        if change.profile.as_deref() != Some(case.profile.as_str()) {
            bail!(
                "the desk detected the profile {:?}, the case expects {}",
                change.profile,
                case.profile
            );
        }
        let spec = projects
            .add(&store, &case.id, change, "eval", crate::clock::now_ms())
            .await
            .map_err(|e| anyhow!("the desk refused the project: {e:?}"))?;
        *detail = format!(
            "{history}; {}; fixes in {}{}",
            said.join("; "),
            spec.fix_allowed_paths.join(","),
            if limits.is_empty() {
                String::new()
            } else {
                format!("; not yet: {}", limits.join("; "))
            }
        );
        store.close().await;
    }
    *reached = 2;

    // 3. The desk, and the report through its airlock.
    let desk = crate::start::start(&config).await?;
    let result = through_the_desk(
        case, &desk.base, &tokens, oracle, model_env, reached, detail,
    )
    .await;
    desk.stop().await;
    result
}

async fn through_the_desk(
    case: &Case,
    base: &str,
    tokens: &FreshTokens,
    oracle: Oracle,
    model_env: Option<&Environment>,
    reached: &mut usize,
    detail: &mut String,
) -> anyhow::Result<()> {
    let http = Desk {
        base: base.to_owned(),
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(1_800))
            .build()?,
    };
    let filed = http
        .file_json(&json!({
            "component": case.id,
            "title": case.report.title,
            "what_happened": case.report.what_happened,
            "expected": case.report.expected,
        }))
        .await?;
    if filed["quarantined"] == json!(true) {
        bail!("the airlock quarantined the report");
    }
    let bug = filed["bug_id"].as_str().unwrap_or_default().to_owned();
    let reporter = capability(&filed)?;
    *detail = format!("bug {bug}");
    *reached = 3;

    let (model, prices): (Box<dyn crew::ModelProvider>, crew::guard::TokenPrices) = match model_env
    {
        Some(env) => crew::config::provider_from(|name| env.get(name).map(str::to_owned))
            .map_err(|e| anyhow!("{e}"))?,
        None => (
            Box::new(oracle),
            crew::guard::TokenPrices {
                input_per_k: 0,
                output_per_k: 0,
                max_output_tokens: 0,
            },
        ),
    };
    let role = |role: Role| crew::desk::Desk::new(base, &tokens.of(role));
    let triaged =
        crew::advisor::triage(&role(Role::Manager)?, model.as_ref(), &prices, &bug).await?;
    expect_state(&triaged, "triaged")?;
    let profile = sandbox::Profile::parse(&case.profile)
        .ok_or_else(|| anyhow!("unknown profile {}", case.profile))?;
    let answer = crew::reproducer::reproduce(
        &role(Role::Reproducer)?,
        model.as_ref(),
        &prices,
        &bug,
        &crew::reproducer::Approach::full(crate::config::project_hint(profile)),
    )
    .await?;
    expect_state(&answer, "awaiting_reporter")?;
    let run = &answer["desk_run"];
    *detail = format!(
        "{} failed as the desk ran it ({} sandbox, {} ms)",
        case.test.name,
        run["backend"].as_str().unwrap_or("?"),
        run["duration_ms"]
    );
    *reached = 4;

    let confirmed = http.answer(&reporter, "reproduction").await?;
    expect_state(&confirmed, "confirmed")?;
    *reached = 5;

    let outcome = crew::fixer::fix(&role(Role::Fixer)?, model.as_ref(), &prices, &bug).await?;
    let answer = match outcome {
        crew::fixer::FixOutcome::Drafted(answer) => answer,
        crew::fixer::FixOutcome::Exhausted(answer) => {
            bail!(
                "the fix failed the desk's checks twice: {}",
                answer["checks"]
            )
        }
    };
    expect_state(&answer, "in_review")?;
    let checks: Vec<String> = answer["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let said = c["detail"].as_str().unwrap_or_default();
            format!(
                "{} {} ms{}",
                c["check"].as_str().unwrap_or("?"),
                c["duration_ms"],
                if c["check"] == json!("suite") || said == "clean" {
                    String::new()
                } else {
                    format!(" ({said})")
                }
            )
        })
        .collect();
    *detail = format!(
        "draft PR #{} at {}: {}",
        answer["pull_request"],
        answer["head"].as_str().unwrap_or("?"),
        checks.join(", ")
    );
    *reached = 6;
    Ok(())
}
