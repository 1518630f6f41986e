//! `r2r project preflight`: what the desk would make of a repository before any report —
//! its dependencies prepared (the one step that reaches a registry, running nothing of the
//! project's), then its own test suite run once in the networkless sandbox from the
//! read-only cache. Prints the toolchain, the dependencies, the suite's counts and the time;
//! exits 0 only on a green baseline.

use crate::service::detect::exported;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The longest a preflight's suite may run.
const SUITE_DEADLINE: Duration = Duration::from_secs(1200);

/// libtest's counts over every test binary: passed, failed, ignored.
pub fn libtest_counts(output: &str) -> Option<(u64, u64, u64)> {
    let mut counts = None;
    for line in output.lines() {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            continue;
        };
        let (mut passed, mut failed, mut ignored) = counts.unwrap_or((0, 0, 0));
        for part in rest.split(';') {
            let words: Vec<&str> = part.split_whitespace().collect();
            let (number, word) = match words.as_slice() {
                [_, n, w, ..] if n.parse::<u64>().is_ok() => (*n, *w),
                [n, w, ..] => (*n, *w),
                _ => continue,
            };
            let Ok(n) = number.parse::<u64>() else {
                continue;
            };
            match word {
                "passed" => passed += n,
                "failed" => failed += n,
                "ignored" => ignored += n,
                _ => {}
            }
        }
        counts = Some((passed, failed, ignored));
    }
    counts
}

/// Prints what [`sandbox::detect::detect`] makes of a tree, one part a line.
fn print_detection(found: &sandbox::detect::Detection) {
    let or_none = |parts: &[String]| {
        if parts.is_empty() {
            "none".to_owned()
        } else {
            parts.join(", ")
        }
    };
    println!(
        "profile     {}",
        match (&found.profile, &found.manifest) {
            (Some(profile), Some(manifest)) => format!("{} (from {manifest})", profile.as_str()),
            (Some(profile), None) => profile.as_str().to_owned(),
            (None, _) => "none fits".to_owned(),
        }
    );
    println!(
        "lockfile    {}",
        found.lockfile.as_deref().unwrap_or("none")
    );
    println!("toolchain   {}", or_none(&found.toolchain));
    println!("fix paths   {}", or_none(&found.fix_paths));
    println!("tests in    {}", or_none(&found.test_folders));
    if !found.subprojects.is_empty() {
        println!("projects in {}", found.subprojects.join(", "));
    }
    for limit in &found.limits {
        println!("not yet     {limit}");
    }
}

/// `r2r project detect`: what the desk makes of the repository at `repository`
/// (`reference` in it), read from its tree; nothing of it runs. Exits 0 when a profile fits.
pub async fn detect(repository: &Path, reference: &str, json: bool) -> anyhow::Result<ExitCode> {
    let (snapshot, commit) = exported(repository, reference)
        .await
        .map_err(|reason| anyhow::anyhow!(reason))?;
    let found = sandbox::detect::detect(snapshot.root());
    if json {
        let mut value = serde_json::to_value(&found)?;
        value["commit"] = serde_json::Value::String(commit.to_string());
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!("repository  {} at {commit}", repository.display());
        print_detection(&found);
    }
    Ok(if found.profile.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Runs the preflight of the repository at `repository` (`reference` in it) as `profile`, or
/// as the profile its tree says when none is given.
pub async fn preflight(
    env_file: &Path,
    repository: &Path,
    reference: &str,
    profile: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let config = super::load_config(env_file, None)?;
    let given = match profile {
        Some(text) => Some(sandbox::Profile::parse(text.trim()).ok_or_else(|| {
            anyhow::anyhow!(
                "--profile: expected rust, node, vitest, python, go or junit, got {text:?}"
            )
        })?),
        None => None,
    };
    let started = Instant::now();
    let (snapshot, commit) = exported(repository, reference)
        .await
        .map_err(|reason| anyhow::anyhow!(reason))?;
    println!("repository  {} at {commit}", repository.display());
    let found = sandbox::detect::detect(snapshot.root());
    let profile = match given {
        Some(profile) => profile,
        None => {
            print_detection(&found);
            found.profile.ok_or_else(|| {
                anyhow::anyhow!(
                    "no profile fits this repository ({}); name one with --profile",
                    found.limits.join("; ")
                )
            })?
        }
    };
    let toolchains = sandbox::Toolchains::detect();
    if profile == sandbox::Profile::Rust {
        let rustc = toolchains
            .rust_sysroot
            .as_ref()
            .and_then(|root| {
                std::process::Command::new(root.join("bin/rustc"))
                    .arg("-V")
                    .output()
                    .ok()
            })
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_else(|| "none found".to_owned());
        println!("toolchain   {rustc} (the host's, mounted read-only)");
        if snapshot.root().join("rust-toolchain.toml").is_file()
            || snapshot.root().join("rust-toolchain").is_file()
        {
            println!("            the repository pins a toolchain (rust-toolchain): the sandbox uses the host's all the same");
        }
    }
    let cache = config.deps.cache();
    let prepare_started = Instant::now();
    if let Err(refused) = snapshot.prepare(&cache, &config.run_limits, profile).await {
        println!("deps        NOT PREPARED: {}", refused.error.message);
        return Ok(ExitCode::FAILURE);
    }
    match snapshot.prepared() {
        Some(prepared) if prepared.ecosystem == sandbox::Ecosystem::Node && prepared.crates == 0 => {
            println!("deps        none needed (package.json declares no dependency)")
        }
        Some(prepared) if prepared.ecosystem == sandbox::Ecosystem::Node => println!(
            "deps        {} packages, {:.1} MB, {} in {:.1} s (installed with its install scripts off, at {}'s versions; cache {})",
            prepared.crates,
            prepared.bytes as f64 / 1e6,
            if prepared.reused { "reused" } else { "fetched" },
            prepare_started.elapsed().as_secs_f64(),
            prepared.lockfile.display(),
            cache.root().display()
        ),
        Some(prepared) if matches!(prepared.ecosystem, sandbox::Ecosystem::Python { .. }) => println!(
            "deps        {} entries installed from wheels, {:.1} MB, {} in {:.1} s (the versions chosen: {}; cache {})",
            prepared.crates,
            prepared.bytes as f64 / 1e6,
            if prepared.reused { "reused" } else { "fetched" },
            prepare_started.elapsed().as_secs_f64(),
            prepared.lockfile.display(),
            cache.root().display()
        ),
        Some(prepared) => println!(
            "deps        {} crates, {:.1} MB, {} in {:.1} s ({}; cache {})",
            prepared.crates,
            prepared.bytes as f64 / 1e6,
            if prepared.reused { "reused" } else { "fetched" },
            prepare_started.elapsed().as_secs_f64(),
            if prepared.generated {
                "no Cargo.lock: the desk generated one and keeps it"
            } else {
                "the repository's Cargo.lock"
            },
            cache.root().display()
        ),
        None => println!(
            "deps        none prepared for the {} profile (it runs as the tree is)",
            profile.as_str()
        ),
    }
    snapshot
        .share_read_only()
        .map_err(|r| anyhow::anyhow!(r.error.message))?;
    let backend = config.sandbox_backend.ok_or_else(|| {
        anyhow::anyhow!("R2R_SANDBOX_BACKEND is none: there is no sandbox to run the suite in")
    })?;
    let sandbox = sandbox::connect(backend, &config.sandbox_image).await?;
    let mut job = profile.job(snapshot.root(), None, &toolchains, SUITE_DEADLINE)?;
    snapshot.attach(&mut job);
    let outcome = sandbox.run(&job).await?;
    let green = outcome.exit_code == Some(0) && !outcome.timed_out && !outcome.oom_killed;
    let counts = match profile {
        sandbox::Profile::Rust => {
            libtest_counts(&format!("{}\n{}", outcome.stdout, outcome.stderr))
        }
        _ => None,
    };
    println!(
        "suite       {} in {:.1} s ({backend}, no network){}",
        if green { "GREEN" } else { "RED" },
        outcome.duration_ms as f64 / 1e3,
        counts.map_or(String::new(), |(p, f, i)| format!(
            ": {p} passed, {f} failed, {i} ignored"
        )),
    );
    if !green {
        let failing = profile.failing_tests(&outcome);
        let why = if outcome.timed_out {
            format!("it ran past {} s", SUITE_DEADLINE.as_secs())
        } else if outcome.oom_killed {
            "it ran out of the sandbox's memory".to_owned()
        } else if failing.is_empty() {
            let tail: Vec<&str> = outcome.stderr.lines().rev().take(8).collect();
            tail.into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n            ")
        } else {
            format!("failing: {}", failing.join(", "))
        };
        println!("            {why}");
    }
    println!("total       {:.1} s", started.elapsed().as_secs_f64());
    Ok(if green {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::libtest_counts;

    #[test]
    fn libtest_counts_add_up_over_binaries_and_nothing_is_none() {
        let output = "running 3 tests\ntest result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s\n\
                      test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n";
        assert_eq!(libtest_counts(output), Some((5, 1, 1)));
        assert_eq!(libtest_counts("error[E0425]: cannot find value"), None);
    }
}
