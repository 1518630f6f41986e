//! The fixer's candidate, measured by the desk.
//!
//! `GET /api/v1/bugs/{id}/fix/context` gives the fixer what it may read: the default branch's
//! head, the folders a fix may change and their files, and the confirmed test. `POST
//! /api/v1/bugs/{id}/fix/candidate` carries whole files (at most two, each ≤ 24,000
//! characters, inside the allowed folders, never the confirmed test). The desk writes them
//! onto a snapshot of the default branch together with the confirmed test — copied from the
//! evidence the reporter confirmed, byte for byte — and runs in its own sandbox the whole
//! suite (the confirmed test must pass in it) and the profile's formatter and linter. Every
//! attempt is evidence. A failed attempt is recorded (`fail_fix_attempt`; the engine sends the
//! bug to a person after the second); a candidate that passes everything becomes a commit by
//! the desk on a new branch of the local forge and a draft pull request with the evidence in
//! its description. After that the crew has nothing left to do: people approve and merge.

use super::reproduction::{evidence_label, invalid, short, RERUN_DEADLINE};
use super::snapshot::Snapshot;
use crate::error::Kind;
use crate::service::commands::Fetched;
use crate::service::commands::{dry_run, load, record};
use crate::web::AppState;
use crate::web::Refused;
use api_types::{ContextFile, FixContext};
use domain::workflow::{Actor, Command, CommitSha};
use forge::{DraftRequest, Forge, LocalForge};
use sandbox::{Toolchains, Verdict};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Most files the context hands the fixer, and characters per file.
const CONTEXT_FILES: usize = 40;

fn fixer() -> Actor {
    Actor::Role {
        role: domain::Role::Fixer,
    }
}

/// The confirmed test, as the reporter confirmed it: from the desk's own evidence, checked
/// against the hash the ledger holds.
struct ConfirmedTest {
    path: String,
    name: String,
    source: String,
    sha256: String,
    assertion: String,
}

async fn confirmed_test(
    state: &AppState,
    bug: &domain::workflow::Bug,
) -> Result<ConfirmedTest, Refused> {
    let reproduction = bug.reproduction.as_ref().ok_or_else(|| {
        Refused::new(
            Kind::Conflict,
            "no_reproduction",
            "this bug has no measured reproduction to fix against",
        )
    })?;
    let evidence = state
        .store
        .evidence_for(&bug.id)
        .await?
        .into_iter()
        .find(|e| e.id == reproduction.id)
        .ok_or_else(|| {
            Refused::internal(format!(
                "the reproduction's evidence {} is missing",
                reproduction.id
            ))
        })?;
    let source = evidence.body["test_source"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let sha256 = hex::encode(Sha256::digest(source.as_bytes()));
    if sha256 != reproduction.test_sha256 {
        return Err(Refused::internal(format!(
            "the stored test of {} does not match the confirmed hash",
            reproduction.id
        )));
    }
    Ok(ConfirmedTest {
        path: reproduction.test_path.clone(),
        name: evidence.body["test_name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        source,
        sha256,
        assertion: reproduction.assertion.clone(),
    })
}

/// `GET /api/v1/bugs/{id}/fix/context` (fixer): what a fix may be written from.
pub async fn context(state: &AppState, id: &str) -> Result<FixContext, Refused> {
    let bug = load(state, id).await?;
    let test = confirmed_test(state, &bug).await?;
    let target = state.target_of(&bug.component).await;
    let forge = super::forge::forge_of(&target)?;
    let head = super::forge::current_head(state, &target).await?;
    let allowed = &target.fix_allowed_paths;
    let mut files = Vec::new();
    for path in forge
        .regular_files(&head, allowed)
        .await
        .map_err(Refused::forge)?
        .into_iter()
        .filter(|p| crew::schema::safe_path(p) && *p != test.path)
        .take(CONTEXT_FILES)
    {
        if let Some(content) = forge.file_at(&head, &path).await.map_err(Refused::forge)? {
            if content.chars().count() <= crew::schema::MAX_FILE_CHARS {
                files.push(ContextFile { path, content });
            }
        }
    }
    Ok(FixContext {
        bug: bug.id,
        state: bug.state,
        attempts: bug.fix_attempts,
        max_attempts: state.reporter.scope().policy.max_fix_attempts,
        base: head.as_str().to_owned(),
        profile: target.profile.as_str().to_owned(),
        allowed_paths: allowed.to_vec(),
        confirmed_test: api_types::ConfirmedTest {
            path: test.path,
            name: test.name,
            source: test.source,
            sha256: test.sha256,
            assertion: test.assertion,
        },
        files,
    })
}

/// The fixer's candidate: whole files, edits of existing files, and a summary.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// The changed files, whole.
    #[serde(default)]
    pub files: Vec<crew::schema::FixFile>,
    /// Edits of files at the base (a file too large to send whole), applied by the desk.
    #[serde(default)]
    pub edits: Vec<crew::schema::FixEdit>,
    /// What the change does, in a line or two.
    pub summary: String,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    provider: Option<String>,
}

/// Stores one fix attempt's evidence (passed or failed).
async fn store_attempt(
    state: &AppState,
    bug: &str,
    evidence_id: &str,
    label: &str,
    now: i64,
    body: Value,
) -> Result<(), Refused> {
    state
        .store
        .add_evidence(&store::EvidenceRecord {
            id: evidence_id.to_owned(),
            bug_id: bug.to_owned(),
            kind: "fix_attempt".into(),
            label: label.into(),
            created_at: now,
            body,
        })
        .await
        .map_err(Refused::storage)
}

/// One check's result, as stored and as answered.
fn check_json(name: &str, outcome: &sandbox::RunOutcome, passed: bool, detail: &str) -> Value {
    super::reproduction::run_evidence(
        json!({"check": name, "passed": passed, "detail": detail}),
        outcome,
    )
}

/// The fix's files whole: those sent whole as they are, and each edited file read at
/// `base` with its edits applied. An edit of a file the base does not have, or whose text
/// does not occur exactly once, refuses the candidate (nothing is run or counted).
async fn whole_files(
    forge: &LocalForge,
    base: &CommitSha,
    draft: &crew::schema::FixDraft,
) -> Result<Vec<crew::schema::FixFile>, Refused> {
    let mut files = draft.files.clone();
    for path in draft.paths() {
        if files.iter().any(|f| f.path == path) {
            continue;
        }
        let Some(original) = forge.file_at(base, path).await.map_err(Refused::forge)? else {
            return Err(invalid(
                "invalid_fix",
                format!("{path} does not exist at {base}: a new file is sent whole, not edited"),
            ));
        };
        if original.chars().count() > crew::schema::MAX_EDITED_FILE_CHARS {
            return Err(invalid(
                "invalid_fix",
                format!(
                    "{path} has more than {} characters at {base}: too large to edit",
                    crew::schema::MAX_EDITED_FILE_CHARS
                ),
            ));
        }
        let edits: Vec<&crew::schema::FixEdit> =
            draft.edits.iter().filter(|e| e.path == path).collect();
        let content = crew::schema::apply_edits(&original, &edits)
            .map_err(|why| invalid("invalid_fix", why))?;
        files.push(crew::schema::FixFile {
            path: path.to_owned(),
            content,
        });
    }
    Ok(files)
}

/// Judges a check that failed on the fix (`outcome`) by running the same check (taken out of
/// `at_base`) on the base: passed when the base fails it too and the fix adds no finding;
/// the detail says which.
async fn judge_against_base<F, Fut>(
    name: &str,
    outcome: &sandbox::RunOutcome,
    at_base: &mut Vec<(&'static str, sandbox::SandboxJob)>,
    run: F,
) -> Result<(bool, String), sandbox::SandboxError>
where
    F: FnOnce(sandbox::SandboxJob) -> Fut,
    Fut: std::future::Future<Output = Result<sandbox::RunOutcome, sandbox::SandboxError>>,
{
    let cut_short = outcome.timed_out || outcome.oom_killed;
    let Some(at) = at_base.iter().position(|(n, _)| *n == name) else {
        return Ok((false, "reported problems".to_owned()));
    };
    if cut_short {
        return Ok((false, "did not finish (time or memory limit)".to_owned()));
    }
    let (_, job) = at_base.swap_remove(at);
    let base = run(job).await?;
    let base_clean = base.exit_code == Some(0) && !base.timed_out && !base.oom_killed;
    if base_clean || base.timed_out || base.oom_killed {
        return Ok((false, "reported problems (the base is clean)".to_owned()));
    }
    let both = |o: &sandbox::RunOutcome| format!("{}\n{}", o.stdout, o.stderr);
    let new = sandbox::findings::new_findings(&both(&base), &both(outcome));
    let at_base_count = sandbox::findings::findings(&both(&base)).len();
    Ok(match new.first() {
        None if at_base_count > 0 => (
            true,
            format!("no new findings ({at_base_count} at the base too)"),
        ),
        // Failed at the base and on the fix with nothing a finding can be read from: the
        // desk cannot tell what the fix added, so it does not pass it.
        None => (
            false,
            "reported problems the desk cannot compare with the base's".to_owned(),
        ),
        Some(first) => (
            false,
            format!(
                "{} new finding(s) against the base, first: {}",
                new.len(),
                first.chars().take(200).collect::<String>()
            ),
        ),
    })
}

/// `POST /api/v1/bugs/{id}/fix/candidate` (fixer).
pub async fn candidate(
    state: &AppState,
    id: &str,
    candidate: Candidate,
) -> Result<Measured, Refused> {
    let bug = load(state, id).await?;
    // Role and state first: nothing is built for a bug that is not being fixed.
    dry_run(
        state,
        &bug,
        &Command::FailFixAttempt {
            run: "probe".into(),
        },
        &fixer(),
        &Fetched::default(),
    )?;
    let _measuring = state.measure(id)?;
    let _everywhere = super::leadership::measure(state, id).await?;
    let test = confirmed_test(state, &bug).await?;
    let target = state.target_of(&bug.component).await;
    let allowed: Vec<&str> = target
        .fix_allowed_paths
        .iter()
        .map(String::as_str)
        .collect();
    // The same strict rules the crew applies to the model's answer, enforced here again.
    let shape =
        json!({"files": candidate.files, "edits": candidate.edits, "summary": candidate.summary})
            .to_string();
    let draft = crew::schema::fix(&shape, &allowed, &test.path)
        .map_err(|e| invalid("invalid_fix", e.to_string()))?;
    let forge = super::forge::forge_of(&target)?;
    let base = super::forge::current_head(state, &target).await?;
    // The same bound as a proposed reproduction's (`R2R_SANDBOX_CONCURRENCY`).
    let _slot = super::reproduction::sandbox_slot(&state.sandbox).await?;
    let snapshot = Snapshot::new()?;
    snapshot.export(forge, &base).await?;
    snapshot
        .prepare(&state.deps, &state.run_limits, target.profile)
        .await?;
    for file in draft.paths().into_iter().chain([test.path.as_str()]) {
        if snapshot.through_symlink(file) {
            return Err(invalid(
                "symlink_path",
                format!("{file} is or passes through a symlink at {base}; a fix writes regular files only"),
            ));
        }
    }
    let files = whole_files(forge, &base, &draft).await?;
    let mut written: Vec<(String, String)> = files
        .iter()
        .map(|f| (f.path.clone(), f.content.clone()))
        .collect();
    written.push((test.path.clone(), test.source.clone()));
    for (path, content) in &written {
        snapshot.write(path, content)?;
    }
    snapshot.share_read_only()?;
    let sandbox = state.sandbox.get().await.map_err(|reason| {
        Refused::new(
            Kind::Unavailable,
            "sandbox_unavailable",
            format!("the desk cannot measure the fix now: {reason}"),
        )
    })?;
    let profile = target.profile;
    let toolchains = Toolchains::detect();
    let mut checks = Vec::new();
    // The whole suite, with the confirmed test in it: it must pass, and so must everything.
    let mut suite = profile
        .job(snapshot.root(), None, &toolchains, RERUN_DEADLINE)
        .map_err(|e| invalid("invalid_target", e.to_string()))?;
    snapshot.attach(&mut suite);
    let outcome = sandbox.run(&suite).await.map_err(Refused::sandbox)?;
    let green = outcome.exit_code == Some(0) && !outcome.timed_out && !outcome.oom_killed;
    let confirmed_passed = matches!(
        profile.classify(&outcome, &test.name),
        Verdict::Passed { .. }
    );
    let detail = match (green, confirmed_passed) {
        (true, true) => format!("the whole suite passed, {} among it", test.name),
        (_, false) => format!("{} did not pass", test.name),
        (false, true) => "the suite failed".to_owned(),
    };
    checks.push(check_json(
        "suite",
        &outcome,
        green && confirmed_passed,
        &detail,
    ));
    let changed: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let jobs = profile
        .checks(snapshot.root(), &changed, &toolchains, RERUN_DEADLINE)
        .map_err(|e| invalid("invalid_target", e.to_string()))?;
    let mut failed = Vec::new();
    for (name, mut job) in jobs {
        snapshot.attach(&mut job);
        let outcome = sandbox.run(&job).await.map_err(Refused::sandbox)?;
        let passed = outcome.exit_code == Some(0) && !outcome.timed_out && !outcome.oom_killed;
        if passed {
            checks.push(check_json(name, &outcome, true, "clean"));
        } else {
            failed.push((name, outcome));
        }
    }
    // A check that failed on the fix runs once more on the base: real projects carry lint
    // debt, so a fix is judged by the findings it adds.
    if !failed.is_empty() {
        let base_snapshot = Snapshot::new()?;
        base_snapshot.export(forge, &base).await?;
        base_snapshot
            .prepare(&state.deps, &state.run_limits, profile)
            .await?;
        base_snapshot.write(&test.path, &test.source)?;
        base_snapshot.share_read_only()?;
        let mut at_base = profile
            .checks(base_snapshot.root(), &changed, &toolchains, RERUN_DEADLINE)
            .map_err(|e| invalid("invalid_target", e.to_string()))?;
        for (name, outcome) in failed {
            let judged = judge_against_base(name, &outcome, &mut at_base, |mut job| {
                base_snapshot.attach(&mut job);
                let sandbox = &sandbox;
                async move { sandbox.run(&job).await }
            })
            .await
            .map_err(Refused::sandbox)?;
            checks.push(check_json(name, &outcome, judged.0, &judged.1));
        }
    }
    let passed = checks.iter().all(|c| c["passed"] == json!(true));
    let now = crate::clock::now_ms();
    let evidence_id = format!("fix-{now}-{:08x}", rand::random::<u32>());
    let files_json: Vec<Value> = files
        .iter()
        .map(|f| {
            let edits = draft.edits.iter().filter(|e| e.path == f.path).count();
            json!({
                "path": f.path,
                "sha256": hex::encode(Sha256::digest(f.content.as_bytes())),
                "chars": f.content.chars().count(),
                "sent": if edits == 0 { "whole".to_owned() } else { format!("{edits} edit(s)") },
            })
        })
        .collect();
    let attempt = bug.fix_attempts + 1;
    let mut body = json!({
        "base": base.as_str(),
        "attempt": attempt,
        "project": target.project,
        "profile": profile,
        "summary": draft.summary,
        "files": files_json,
        "confirmed_test": {"path": test.path, "sha256": test.sha256, "name": test.name},
        "checks": checks,
        "passed": passed,
        "model": short(candidate.model.clone()),
        "provider": short(candidate.provider.clone()),
    });
    let label = evidence_label(candidate.provider.as_deref());
    let summary: Vec<Value> = checks
        .iter()
        .map(|c| {
            json!({"check": c["check"], "passed": c["passed"], "duration_ms": c["duration_ms"], "detail": c["detail"]})
        })
        .collect();
    if !passed {
        store_attempt(state, id, &evidence_id, label, now, body).await?;
        let recorded = record(
            state,
            id,
            Command::FailFixAttempt {
                run: evidence_id.clone(),
            },
            &fixer(),
            &Fetched::default(),
        )
        .await?;
        return Ok(Measured::Failed(json!({
            "error": "fix_failed",
            "message": format!(
                "attempt {attempt} of {} failed the desk's checks (evidence {evidence_id}); the bug is now {}",
                state.reporter.scope().policy.max_fix_attempts,
                recorded.state.as_str()
            ),
            "state": recorded.state.as_str(),
            "attempt": attempt,
            "evidence": evidence_id,
            "checks": summary,
        })));
    }
    // Everything passed: the desk commits exactly what it measured.
    let branch = format!("r2r/fix-{id}-{attempt}-{:06x}", rand::random::<u32>() >> 8);
    let message = format!(
        "{}\n\nFix for {id}, measured by the desk (evidence {evidence_id}).\nConfirmed test {} (sha256 {}) included unchanged.\n",
        draft.summary, test.path, test.sha256
    );
    let head = forge
        .commit_files(&base, &written, &message, &branch)
        .await
        .map_err(Refused::forge)?;
    let model_line = match (&candidate.provider, &candidate.model) {
        (Some(provider), Some(model)) => format!("{provider} / {model}"),
        (Some(provider), None) => provider.clone(),
        _ => "not stated".into(),
    };
    let mut description = format!(
        "{}\n\nEvidence {evidence_id} ({label}), measured by the desk in its {} sandbox at base {}:\n",
        draft.summary,
        checks
            .first()
            .and_then(|c| c["backend"].as_str())
            .unwrap_or("unknown"),
        base.as_str()
    );
    for check in &checks {
        description.push_str(&format!(
            "- {}: passed in {} ms ({})\n",
            check["check"].as_str().unwrap_or_default(),
            check["duration_ms"],
            check["detail"].as_str().unwrap_or_default()
        ));
    }
    description.push_str(&format!(
        "\nConfirmed test: {} (sha256 {}), unchanged.\nWritten by: {model_line}.\nThe crew drafted this change; people approve its exact head and merge it.\n",
        test.path, test.sha256
    ));
    let request = DraftRequest {
        branch: branch.clone(),
        title: format!("Fix {id}: {}", draft.summary)
            .chars()
            .take(200)
            .collect(),
        body: description,
    };
    let draft_pull = match super::forge::github_remote(state, &target) {
        // On GitHub: the desk pushes the branch with its token (the crew and the sandbox
        // never see it), then opens the draft through the REST API.
        Some((repository, remote)) => {
            forge.push_branch(&remote, &branch).await.map_err(|e| {
                Refused::new(
                    Kind::Upstream,
                    "github_push_failed",
                    format!("the desk could not push {branch} to {repository}: {e}"),
                )
            })?;
            state
                .github
                .forge(&repository)
                .open_draft(&request)
                .await
                .map_err(Refused::forge)?
        }
        None => forge.open_draft(&request).await.map_err(Refused::forge)?,
    };
    if draft_pull.head != head {
        return Err(Refused::new(
            Kind::Conflict,
            "branch_moved",
            format!("branch {branch} moved from {head} before its pull request was opened; push again and resubmit"),
        ));
    }
    body["head"] = json!(draft_pull.head.as_str());
    body["branch"] = json!(branch);
    body["pull_request"] = json!(draft_pull.number);
    store_attempt(state, id, &evidence_id, label, now, body).await?;
    let changed_paths = forge
        .changed_paths(&draft_pull.head)
        .await
        .map_err(Refused::forge)?;
    let recorded = record(
        state,
        id,
        Command::SubmitFix {
            number: draft_pull.number,
            head: draft_pull.head.clone(),
            changed_paths,
        },
        &fixer(),
        &Fetched::default(),
    )
    .await?;
    let mut answer = json!(recorded);
    answer["pull_request"] = json!(draft_pull.number);
    answer["head"] = json!(draft_pull.head.as_str());
    answer["branch"] = json!(branch);
    answer["evidence"] = json!(evidence_id);
    answer["checks"] = json!(summary);
    Ok(Measured::Accepted(answer))
}

/// What the desk's measurement of a candidate decided.
#[derive(Clone, Debug, PartialEq)]
pub enum Measured {
    /// Everything passed: committed, and a draft pull request opened (its number, head,
    /// branch, evidence and checks).
    Accepted(Value),
    /// A check failed: the attempt is recorded as failed evidence (and after the last
    /// attempt the bug goes to a person).
    Failed(Value),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(exit: i32, stderr: &str) -> sandbox::RunOutcome {
        sandbox::RunOutcome {
            exit_code: Some(exit),
            timed_out: false,
            oom_killed: false,
            duration_ms: 1,
            backend: "test",
            workers: Vec::new(),
            confirmation: None,
            stdout: String::new(),
            stderr: stderr.to_owned(),
        }
    }

    const DEBT: &str = "error: unused variable: `x`\n  --> src/lib.rs:3:9\nerror: could not compile `t` (lib) due to 1 previous error\n";

    async fn judged(fix: sandbox::RunOutcome, base: sandbox::RunOutcome) -> (bool, String, bool) {
        let mut at_base = vec![(
            "lint",
            sandbox::SandboxJob::new(std::path::Path::new("/tmp"), Vec::new(), RERUN_DEADLINE),
        )];
        let ran = std::sync::atomic::AtomicBool::new(false);
        let (passed, detail) = judge_against_base("lint", &fix, &mut at_base, |_| {
            ran.store(true, std::sync::atomic::Ordering::SeqCst);
            async move { Ok(base) }
        })
        .await
        .unwrap();
        (passed, detail, ran.into_inner())
    }

    #[tokio::test]
    async fn a_failed_check_passes_only_when_the_base_has_the_same_findings() {
        // The base's debt, moved by the fix: no new finding.
        let moved = DEBT.replace("lib.rs:3:9", "lib.rs:9:9");
        let (passed, detail, ran) = judged(outcome(101, &moved), outcome(101, DEBT)).await;
        assert!(passed && ran, "{detail}");
        assert!(
            detail.contains("no new findings (1 at the base too)"),
            "{detail}"
        );
        // One more finding than the base.
        let more = format!("{DEBT}error: this `if` has identical blocks\n  --> src/lib.rs:20:5\n");
        let (passed, detail, _) = judged(outcome(101, &more), outcome(101, DEBT)).await;
        assert!(!passed, "{detail}");
        assert!(
            detail.contains("1 new finding(s)") && detail.contains("identical blocks"),
            "{detail}"
        );
        // A clean base: whatever the fix reports is its own.
        let (passed, detail, _) = judged(outcome(101, &moved), outcome(0, "")).await;
        assert!(!passed && detail.contains("the base is clean"), "{detail}");
        // Both fail with nothing to compare (a crash, no finding lines): not passed.
        let (passed, detail, _) = judged(
            outcome(1, "Segmentation fault"),
            outcome(1, "Segmentation fault"),
        )
        .await;
        assert!(!passed && detail.contains("cannot compare"), "{detail}");
        // A fix cut short by a limit is never compared (and the base is not run).
        let mut timed_out = outcome(101, &moved);
        timed_out.timed_out = true;
        let (passed, _, ran) = judged(timed_out, outcome(101, DEBT)).await;
        assert!(!passed && !ran);
    }
}
