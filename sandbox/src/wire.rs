//! A sandbox job and its outcome as they travel between a desk and a worker on another host
//! (`r2r sandbox worker`): the job's command, environment, limits and deadline as they are,
//! its snapshot as a tar archive, its toolchain mounts by their place inside only (each worker
//! mounts its own toolchain there), and back the outcome with, for a build, the files it left
//! in `/out`.
//!
//! Nothing of the desk's host travels: no host path, no variable but the job's own.

use crate::isolated::{Limits, ReadOnlyMount, SandboxError, SandboxJob};
use crate::profile::{Toolchains, RUST_TOOLCHAIN_DIR};
use crate::RunOutcome;
use base64::Engine;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The largest snapshot a job may carry (as a tar archive).
pub const MAX_SNAPSHOT_BYTES: usize = 48 * 1024 * 1024;
/// The largest output a build may send back (as a tar archive).
pub const MAX_OUTPUT_BYTES: usize = 48 * 1024 * 1024;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The limits of a job, as sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireLimits {
    /// Memory, swap included, in bytes.
    pub memory_bytes: u64,
    /// CPU share in thousandths of one core.
    pub cpu_millis: u32,
    /// Most processes and threads.
    pub pids: u32,
    /// `/work` size.
    pub work_bytes: u64,
    /// `/tmp` size.
    pub tmp_bytes: u64,
    /// Most bytes kept of each output stream.
    pub output_bytes: usize,
}

/// One job as sent to a worker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireJob {
    /// The command and its arguments.
    pub command: Vec<String>,
    /// The complete environment.
    pub env: Vec<(String, String)>,
    /// Where read-only toolchains appear inside (the worker mounts its own).
    pub mounts: Vec<String>,
    /// Whether the job writes an artifact to `/out` that comes back.
    pub wants_output: bool,
    /// Wall-clock limit in milliseconds.
    pub deadline_ms: u64,
    /// Resource limits.
    pub limits: WireLimits,
    /// The snapshot, a tar archive in base64.
    pub snapshot: String,
}

/// A run's outcome as a worker reports it: what happened, or why it could not run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireOutcome {
    /// What happened, when it ran.
    #[serde(default)]
    pub ran: Option<WireRun>,
    /// Why it could not run at all.
    #[serde(default)]
    pub error: Option<String>,
}

/// A completed run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireRun {
    /// Exit code, when the process exited by itself.
    pub exit_code: Option<i32>,
    /// Killed at the deadline.
    pub timed_out: bool,
    /// Killed for memory.
    pub oom_killed: bool,
    /// Wall-clock time.
    pub duration_ms: u64,
    /// `docker` or `bwrap`.
    pub backend: String,
    /// Captured standard output.
    pub stdout: String,
    /// Captured standard error.
    pub stderr: String,
    /// What the job left in `/out` (tar, base64), when it wanted output.
    #[serde(default)]
    pub output: Option<String>,
}

fn invalid(why: String) -> SandboxError {
    SandboxError::InvalidJob(why)
}

/// Archives `dir` (symlinks as symlinks, never followed), at most `limit` bytes.
fn archive(dir: &Path, limit: usize) -> Result<Vec<u8>, String> {
    let mut builder = tar::Builder::new(Vec::new());
    builder.follow_symlinks(false);
    builder
        .append_dir_all(".", dir)
        .map_err(|e| format!("cannot archive {}: {e}", dir.display()))?;
    let bytes = builder
        .into_inner()
        .map_err(|e| format!("cannot archive {}: {e}", dir.display()))?;
    if bytes.len() > limit {
        return Err(format!(
            "{} holds {} bytes, more than the {} a job may carry",
            dir.display(),
            bytes.len(),
            limit
        ));
    }
    Ok(bytes)
}

/// What an archive may hold besides regular files and folders.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Links {
    /// Symbolic links too (a repository's snapshot has them; they resolve inside the sandbox).
    Allowed,
    /// Nothing else: a build's output is files the desk copies, never a link to one of its own.
    Refused,
}

/// Unpacks a base64 tar archive into `dir`: regular files and folders (and symbolic links
/// when `links` allows) whose sizes add up to at most `limit`; anything else — a hard link, a
/// sparse file (a few bytes that unpack to terabytes), a device, a path leaving `dir` — is
/// refused with its name.
fn unarchive(encoded: &str, dir: &Path, limit: usize, links: Links) -> Result<(), String> {
    if encoded.len() > limit / 3 * 4 + 4 {
        return Err(format!("the archive is larger than {limit} bytes"));
    }
    let bytes = B64
        .decode(encoded)
        .map_err(|e| format!("the archive is not base64: {e}"))?;
    let mut archive = tar::Archive::new(bytes.as_slice());
    archive.set_preserve_permissions(false);
    archive.set_overwrite(false);
    let entries = archive
        .entries()
        .map_err(|e| format!("cannot read the archive: {e}"))?;
    let mut total: u64 = 0;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("cannot read the archive: {e}"))?;
        let name = entry
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "?".to_owned());
        let kind = entry.header().entry_type();
        let allowed =
            kind.is_file() || kind.is_dir() || (kind.is_symlink() && links == Links::Allowed);
        if !allowed {
            return Err(format!(
                "the archive holds {name:?}, which is neither a file nor a folder{}",
                if links == Links::Allowed {
                    " nor a symbolic link"
                } else {
                    ""
                }
            ));
        }
        total = total.saturating_add(entry.header().size().unwrap_or(u64::MAX));
        if total > limit as u64 {
            return Err(format!("the archive unpacks to more than {limit} bytes"));
        }
        let inside = entry
            .unpack_in(dir)
            .map_err(|e| format!("cannot unpack {name:?}: {e}"))?;
        if !inside {
            return Err(format!("{name:?} would land outside the folder"));
        }
    }
    Ok(())
}

/// The most a job may ask of a worker (a job asking more is refused, whoever sent it).
const MOST: Limits = Limits {
    memory_bytes: 16 * 1024 * 1024 * 1024,
    cpu_millis: 8_000,
    pids: 4_096,
    work_bytes: 8 * 1024 * 1024 * 1024,
    tmp_bytes: 4 * 1024 * 1024 * 1024,
    output_bytes: 16 * 1024 * 1024,
};

/// Text a worker reported, made safe to log and to show: control characters escaped (no
/// forged log lines, no terminal escapes), at most `most` characters.
fn plain(text: &str, most: usize) -> String {
    let mut out: String = text
        .chars()
        .take(most)
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if text.chars().count() > most {
        out.push_str(" [cut]");
    }
    out
}

impl WireJob {
    /// Packs `job` for a worker: its snapshot archived, its mounts by target only.
    pub fn pack(job: &SandboxJob) -> Result<WireJob, SandboxError> {
        job.validate()?;
        let snapshot = archive(&job.snapshot, MAX_SNAPSHOT_BYTES).map_err(invalid)?;
        let limits = &job.limits;
        Ok(WireJob {
            command: job.command.clone(),
            env: job.env.clone(),
            mounts: job
                .mounts
                .iter()
                .map(|m| m.target.display().to_string())
                .collect(),
            wants_output: job.output.is_some(),
            deadline_ms: crate::isolated::millis(job.deadline),
            limits: WireLimits {
                memory_bytes: limits.memory_bytes,
                cpu_millis: limits.cpu_millis,
                pids: limits.pids,
                work_bytes: limits.work_bytes,
                tmp_bytes: limits.tmp_bytes,
                output_bytes: limits.output_bytes,
            },
            snapshot: B64.encode(snapshot),
        })
    }

    /// Unpacks the job into `scratch` (a fresh folder only this worker can enter) on this
    /// worker's host: the snapshot at `scratch/snapshot` readable by the sandbox's user, each
    /// mount from this host's own toolchains, `/out` at `scratch/out` when wanted. Refuses a
    /// mount this host has no toolchain for, and anything [`SandboxJob::validate`] refuses.
    pub fn unpack(
        &self,
        scratch: &Path,
        toolchains: &Toolchains,
    ) -> Result<SandboxJob, SandboxError> {
        use std::os::unix::fs::PermissionsExt;
        let snapshot = scratch.join("snapshot");
        std::fs::create_dir(&snapshot)
            .map_err(|e| invalid(format!("cannot create {}: {e}", snapshot.display())))?;
        let limits = &self.limits;
        if limits.memory_bytes > MOST.memory_bytes
            || limits.cpu_millis > MOST.cpu_millis
            || limits.pids > MOST.pids
            || limits.work_bytes > MOST.work_bytes
            || limits.tmp_bytes > MOST.tmp_bytes
            || limits.output_bytes > MOST.output_bytes
            || limits.memory_bytes == 0
            || limits.cpu_millis == 0
            || limits.pids == 0
        {
            return Err(invalid(format!(
                "the job's limits {limits:?} are outside what this worker runs (at most {MOST:?})"
            )));
        }
        unarchive(
            &self.snapshot,
            &snapshot,
            MAX_SNAPSHOT_BYTES,
            Links::Allowed,
        )
        .map_err(invalid)?;
        crate::share_read_only(&snapshot)
            .map_err(|e| invalid(format!("cannot share the snapshot: {e}")))?;
        let mut mounts = Vec::new();
        for target in &self.mounts {
            let host = match target.as_str() {
                RUST_TOOLCHAIN_DIR => toolchains.rust_sysroot.clone().ok_or_else(|| {
                    invalid(format!(
                        "this worker has no Rust toolchain for {target} (rustc --print sysroot, or R2R_SANDBOX_RUST_SYSROOT)"
                    ))
                })?,
                crate::prepare::RUST_VENDOR_DIR => {
                    return Err(invalid(format!(
                        "this project needs its prepared registry dependencies at {target}, and worker hosts do not receive them yet: run its measurements in the desk's own sandbox (R2R_SANDBOX_RUNNER=local)"
                    )))
                }
                other => {
                    return Err(invalid(format!(
                        "this worker has no toolchain to mount at {other}"
                    )))
                }
            };
            mounts.push(ReadOnlyMount {
                host,
                target: PathBuf::from(target),
            });
        }
        // Nobody else may list the scratch folder; the sandbox's user writes only into an
        // output folder whose name nobody can guess.
        std::fs::set_permissions(scratch, std::fs::Permissions::from_mode(0o711))
            .map_err(|e| invalid(format!("cannot close {}: {e}", scratch.display())))?;
        let output = if self.wants_output {
            let out = scratch.join(format!("out-{:016x}", rand::random::<u64>()));
            std::fs::create_dir(&out)
                .and_then(|()| {
                    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777))
                })
                .map_err(|e| invalid(format!("cannot prepare {}: {e}", out.display())))?;
            Some(out)
        } else {
            None
        };
        let limits = &self.limits;
        let job = SandboxJob {
            snapshot,
            command: self.command.clone(),
            env: self.env.clone(),
            mounts,
            output,
            deadline: Duration::from_millis(self.deadline_ms),
            limits: Limits {
                memory_bytes: limits.memory_bytes,
                cpu_millis: limits.cpu_millis,
                pids: limits.pids,
                work_bytes: limits.work_bytes,
                tmp_bytes: limits.tmp_bytes,
                output_bytes: limits.output_bytes,
            },
        };
        job.validate()?;
        Ok(job)
    }
}

/// At most `limit` bytes of `text` (cut at a character boundary, and said so).
fn cap(mut text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let mut at = limit;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let cut = text.len() - at;
    text.truncate(at);
    text.push_str(&format!("\n[r2r: {cut} more bytes cut]\n"));
    text
}

impl WireOutcome {
    /// What a worker reports for `job` after running it: the outcome, with `/out`'s files
    /// when the job wanted them; or why it could not run.
    pub fn of(job: &SandboxJob, result: Result<RunOutcome, SandboxError>) -> WireOutcome {
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(error) => {
                return WireOutcome {
                    ran: None,
                    error: Some(error.to_string()),
                }
            }
        };
        let output = match &job.output {
            Some(dir) => match archive(dir, MAX_OUTPUT_BYTES) {
                Ok(bytes) => Some(B64.encode(bytes)),
                Err(reason) => {
                    return WireOutcome {
                        ran: None,
                        error: Some(format!("the build's output could not be sent: {reason}")),
                    }
                }
            },
            None => None,
        };
        WireOutcome {
            ran: Some(WireRun {
                exit_code: outcome.exit_code,
                timed_out: outcome.timed_out,
                oom_killed: outcome.oom_killed,
                duration_ms: outcome.duration_ms,
                backend: outcome.backend.to_owned(),
                stdout: outcome.stdout,
                stderr: outcome.stderr,
                output,
            }),
            error: None,
        }
    }

    /// The outcome as the desk's measurements read it; a build's files land in `job`'s
    /// output folder. The backend keeps its name (`docker`, `bwrap`); anything else reads as
    /// `worker`.
    pub fn into_outcome(self, job: &SandboxJob) -> Result<RunOutcome, SandboxError> {
        let failed = |reason: String| SandboxError::Failed {
            backend: "worker",
            reason,
        };
        let run = match (self.ran, self.error) {
            (Some(run), None) => run,
            (_, Some(error)) => return Err(failed(plain(&error, 2_000))),
            (None, None) => return Err(failed("the worker reported nothing".into())),
        };
        match (&job.output, &run.output) {
            (Some(dir), Some(encoded)) => {
                unarchive(encoded, dir, MAX_OUTPUT_BYTES, Links::Refused).map_err(failed)?
            }
            (Some(_), None) => {}
            (None, Some(_)) => {
                return Err(failed("the worker sent output nobody asked for".into()))
            }
            (None, None) => {}
        }
        let backend = match run.backend.as_str() {
            "docker" => "docker",
            "bwrap" => "bwrap",
            _ => "worker",
        };
        Ok(RunOutcome {
            exit_code: run.exit_code,
            timed_out: run.timed_out,
            oom_killed: run.oom_killed,
            duration_ms: run.duration_ms,
            backend,
            workers: Vec::new(),
            confirmation: None,
            // No more than the job's own limit keeps, whatever the worker sent.
            stdout: cap(run.stdout, job.limits.output_bytes),
            stderr: cap(run.stderr, job.limits.output_bytes),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn toolchains(rust: Option<&Path>) -> Toolchains {
        Toolchains {
            rust_sysroot: rust.map(Path::to_path_buf),
        }
    }

    #[test]
    fn a_job_travels_whole_and_a_worker_mounts_its_own_toolchain() {
        let desk = tempfile::tempdir().unwrap();
        let snapshot = desk.path().join("snapshot");
        std::fs::create_dir_all(snapshot.join("src")).unwrap();
        std::fs::write(snapshot.join("src/lib.rs"), "pub fn f() {}").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", snapshot.join("link")).unwrap();
        let desk_rust = tempfile::tempdir().unwrap();
        let mut job = SandboxJob::new(
            &snapshot,
            vec!["cargo".into(), "test".into()],
            Duration::from_secs(9),
        );
        job.mounts.push(ReadOnlyMount {
            host: desk_rust.path().to_path_buf(),
            target: RUST_TOOLCHAIN_DIR.into(),
        });
        job.env.push(("CARGO_TERM_COLOR".into(), "never".into()));
        let wire = WireJob::pack(&job).unwrap();
        let text = serde_json::to_string(&wire).unwrap();
        assert!(
            !text.contains(&desk_rust.path().display().to_string()),
            "no desk path travels"
        );

        let worker = tempfile::tempdir().unwrap();
        let worker_rust = tempfile::tempdir().unwrap();
        let back: WireJob = serde_json::from_str(&text).unwrap();
        let unpacked = back
            .unpack(worker.path(), &toolchains(Some(worker_rust.path())))
            .unwrap();
        assert_eq!(unpacked.command, job.command);
        assert_eq!(unpacked.env, job.env);
        assert_eq!(unpacked.deadline, job.deadline);
        assert_eq!(unpacked.limits, job.limits);
        assert_eq!(unpacked.mounts[0].host, worker_rust.path());
        assert_eq!(
            std::fs::read_to_string(unpacked.snapshot.join("src/lib.rs")).unwrap(),
            "pub fn f() {}"
        );
        assert!(std::fs::symlink_metadata(unpacked.snapshot.join("link"))
            .unwrap()
            .file_type()
            .is_symlink());
        // A worker without the toolchain says so.
        let bare = tempfile::tempdir().unwrap();
        let refused = back.unpack(bare.path(), &toolchains(None)).unwrap_err();
        assert!(
            refused.to_string().contains("no Rust toolchain"),
            "{refused}"
        );
    }

    #[test]
    fn hostile_jobs_are_refused_on_the_worker() {
        let snapshot = tempfile::tempdir().unwrap();
        let job = SandboxJob::new(snapshot.path(), vec!["true".into()], Duration::from_secs(1));
        let good = WireJob::pack(&job).unwrap();
        let unpack = |wire: &WireJob| {
            let scratch = tempfile::tempdir().unwrap();
            wire.unpack(scratch.path(), &toolchains(None)).map(|_| ())
        };
        let mut mount = good.clone();
        mount.mounts.push("/etc".into());
        assert!(unpack(&mount).is_err());
        let mut forever = good.clone();
        forever.deadline_ms = 10 * 3600 * 1000;
        assert!(unpack(&forever).is_err());
        let mut empty = good.clone();
        empty.command.clear();
        assert!(unpack(&empty).is_err());
        let mut env = good.clone();
        env.env.push(("LD_PRELOAD=x".into(), "y".into()));
        assert!(unpack(&env).is_err());
        let mut greedy = good.clone();
        greedy.limits.memory_bytes = u64::MAX;
        assert!(
            unpack(&greedy).is_err(),
            "limits beyond the worker's are refused"
        );
        let mut disk = good.clone();
        disk.limits.work_bytes = 1 << 40;
        assert!(unpack(&disk).is_err());
        let mut garbage = good.clone();
        garbage.snapshot = "not base64 ✗".into();
        assert!(unpack(&garbage).is_err());
        // An archive entry climbing out of the snapshot does not land outside it.
        let mut climbing = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(1);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        let name = b"../escaped";
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_cksum();
        climbing.append(&header, &b"x"[..]).unwrap();
        let mut escape = good.clone();
        escape.snapshot = B64.encode(climbing.into_inner().unwrap());
        let scratch = tempfile::tempdir().unwrap();
        let _ = escape.unpack(scratch.path(), &toolchains(None));
        assert!(!scratch.path().join("escaped").exists());
        // Unknown fields are refused, not read past.
        let mut value = serde_json::to_value(&good).unwrap();
        value["privileged"] = serde_json::json!(true);
        assert!(serde_json::from_value::<WireJob>(value).is_err());
    }

    #[test]
    fn a_builds_output_is_files_only() {
        let snapshot = tempfile::tempdir().unwrap();
        let desk_out = tempfile::tempdir().unwrap();
        let mut job = SandboxJob::new(snapshot.path(), vec!["true".into()], Duration::from_secs(1));
        job.output = Some(desk_out.path().to_path_buf());
        let outcome_with = |archive: Vec<u8>| WireOutcome {
            ran: Some(WireRun {
                exit_code: Some(0),
                timed_out: false,
                oom_killed: false,
                duration_ms: 1,
                backend: "bwrap".into(),
                stdout: "\u{1b}[2J".repeat(10),
                stderr: String::new(),
                output: Some(B64.encode(archive)),
            }),
            error: None,
        };
        // A link to one of the desk's own files, a sparse file of a terabyte, a hard link.
        for kind in [
            tar::EntryType::Symlink,
            tar::EntryType::GNUSparse,
            tar::EntryType::Link,
        ] {
            let mut builder = tar::Builder::new(Vec::new());
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(kind);
            header.set_size(0);
            header.set_mode(0o755);
            header.set_path("app").unwrap();
            if kind == tar::EntryType::GNUSparse {
                if let Some(gnu) = header.as_gnu_mut() {
                    gnu.set_real_size(1 << 40);
                }
            } else {
                header.set_link_name("/etc/shadow").unwrap();
            }
            header.set_cksum();
            builder.append(&header, &b""[..]).unwrap();
            let refused = outcome_with(builder.into_inner().unwrap())
                .into_outcome(&job)
                .unwrap_err()
                .to_string();
            // (A sparse header without its real size does not even read.)
            assert!(
                refused.contains("neither a file nor a folder")
                    || (kind == tar::EntryType::GNUSparse
                        && refused.contains("cannot read the archive")),
                "{kind:?}: {refused}"
            );
            assert!(!desk_out.path().join("app").exists());
        }
        // A worker's error text cannot forge log lines or carry terminal escapes.
        let error = WireOutcome {
            ran: None,
            error: Some("boom\r\n2026-12-03 INFO owner signed in\u{1b}[31m".into()),
        }
        .into_outcome(&job)
        .unwrap_err()
        .to_string();
        assert!(
            !error.contains('\r') && !error.contains('\n') && !error.contains('\u{1b}'),
            "{error:?}"
        );
    }

    #[test]
    fn a_builds_output_comes_back_and_errors_stay_errors() {
        let snapshot = tempfile::tempdir().unwrap();
        let worker_out = tempfile::tempdir().unwrap();
        std::fs::write(worker_out.path().join("app"), b"\x7fELF").unwrap();
        let mut ran = SandboxJob::new(snapshot.path(), vec!["true".into()], Duration::from_secs(1));
        ran.output = Some(worker_out.path().to_path_buf());
        let outcome = RunOutcome {
            exit_code: Some(0),
            timed_out: false,
            oom_killed: false,
            duration_ms: 5,
            backend: "bwrap",
            workers: Vec::new(),
            confirmation: None,
            stdout: "built".into(),
            stderr: String::new(),
        };
        let wire = WireOutcome::of(&ran, Ok(outcome.clone()));
        let desk_out = tempfile::tempdir().unwrap();
        let mut asked = ran.clone();
        asked.output = Some(desk_out.path().to_path_buf());
        let back: WireOutcome =
            serde_json::from_str(&serde_json::to_string(&wire).unwrap()).unwrap();
        assert_eq!(back.into_outcome(&asked).unwrap(), outcome);
        assert_eq!(
            std::fs::read(desk_out.path().join("app")).unwrap(),
            b"\x7fELF"
        );
        // Output nobody asked for is refused; an error stays an error.
        let mut plain = ran.clone();
        plain.output = None;
        assert!(wire.clone().into_outcome(&plain).is_err());
        let failed = WireOutcome::of(
            &plain,
            Err(SandboxError::Unavailable {
                backend: "docker",
                reason: "no daemon".into(),
            }),
        );
        let error = failed.into_outcome(&plain).unwrap_err().to_string();
        assert!(error.contains("no daemon"), "{error}");
    }
}
