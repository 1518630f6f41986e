//! `r2r demo drive`: moves a ShopLite bug through the steps that belong to the crew and to
//! people, so the reporter's side can be tried (and browser-tested) end to end before the
//! crew and the forge exist as services.
//!
//! Honest about what it is: the reproduction is *measured* — ShopLite's real regression test
//! runs and its failure is the evidence — while the fix, the review, the merge and the
//! deployment are scripted by this command (named actors `scripted-owner`, recorder role) with
//! deterministic commit ids. Everything still goes through the engine's guards and the ledger.

use crate::clock::now_ms;
use domain::workflow::{
    decide, Actor, Ancestry, AncestryOracle, Command, CommitSha, Evidence, Policy, Reproduction,
    Rerun,
};
use domain::{BugState, Role};
use sandbox::Verdict;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Duration;
use store::Store;

/// How far to drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Stage {
    /// A measured failing test is proposed: reporters are asked "is this the bug you saw?".
    Question,
    /// A hand-made change pushed as a branch of the local forge is opened as the bug's draft
    /// pull request (scripted: the desk did not measure it; for trying the review pages). The
    /// API opens drafts only for changes the desk measured itself.
    Review,
    /// A scripted fix is merged and recorded live: reporters are asked "does it work?".
    Release,
}

/// Why the drive stopped.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// No such bug.
    #[error("no bug {0}")]
    NoBug(String),
    /// The bug is not where this stage starts.
    #[error("bug {bug} is {state}; {stage} needs it in {needs}")]
    WrongState {
        /// Bug.
        bug: String,
        /// Its state.
        state: String,
        /// Requested stage.
        stage: &'static str,
        /// Where it must be.
        needs: &'static str,
    },
    /// The regression run did not reproduce the bug.
    #[error("the regression test did not reproduce the bug: {0}")]
    NotReproduced(String),
    /// The engine refused a step.
    #[error("step {step} refused: {reason}")]
    Refused {
        /// Step.
        step: &'static str,
        /// Why.
        reason: String,
    },
    /// The demo could not run.
    #[error(transparent)]
    Demo(#[from] crate::cli::demo::DemoError),
    /// The local forge refused the draft.
    #[error("the local forge refused the draft: {0}")]
    Forge(String),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] store::StoreError),
}

/// An ancestry oracle that knows only that a commit contains itself (everything else is
/// unknown, which fails closed): enough when the deployed commit is the merge commit.
#[derive(Debug)]
pub struct SelfOnly;
impl AncestryOracle for SelfOnly {
    fn relation(&self, base: &CommitSha, candidate: &CommitSha) -> Ancestry {
        if base == candidate {
            Ancestry::Identical
        } else {
            Ancestry::Unknown
        }
    }
}

fn scripted_sha(label: &str, bug: &str) -> Result<CommitSha, DriveError> {
    let digest = Sha256::digest(format!("r2r demo {label} {bug}").as_bytes());
    CommitSha::parse(&hex::encode(&digest[..20])).map_err(|e| DriveError::Refused {
        step: "commit id",
        reason: e.to_string(),
    })
}

async fn step(
    store: &Store,
    bug: &str,
    name: &'static str,
    command: Command,
    actor: Actor,
    rerun: Option<Rerun>,
    policy: &Policy,
) -> Result<BugState, DriveError> {
    let oracle = SelfOnly;
    let now = now_ms();
    let applied = store
        .apply(bug, now, |b| {
            let evidence = Evidence {
                rerun,
                ancestry: Some(&oracle),
                code_owners: None,
            };
            decide(b, &command, &actor, &evidence, policy, now)
        })
        .await;
    match applied {
        Ok(applied) => {
            println!("{name}: {}", applied.bug.state.as_str());
            Ok(applied.bug.state)
        }
        Err(store::ApplyError::Store(error)) => Err(error.into()),
        Err(error) => Err(DriveError::Refused {
            step: name,
            reason: error.to_string(),
        }),
    }
}

/// Drives `bug` to `stage`; `review` opens `branch` of the local forge `forge`.
pub async fn drive(
    store: &Store,
    bug: &str,
    stage: Stage,
    shoplite: &Path,
    policy: &Policy,
    sandbox: (Option<sandbox::Backend>, &str),
    review: Option<(&forge::LocalForge, &str)>,
) -> Result<(), DriveError> {
    let current = store
        .load_bug(bug)
        .await?
        .ok_or_else(|| DriveError::NoBug(bug.to_owned()))?
        .bug;
    let reproducer = Actor::Role {
        role: Role::Reproducer,
    };
    let fixer = Actor::Role { role: Role::Fixer };
    match stage {
        Stage::Question => {
            if !matches!(
                current.state,
                BugState::New | BugState::Triaged | BugState::Reopened | BugState::Reproducing
            ) {
                return Err(DriveError::WrongState {
                    bug: bug.to_owned(),
                    state: current.state.as_str().to_owned(),
                    stage: "question",
                    needs: "new, triaged, reopened or reproducing",
                });
            }
            if current.state != BugState::Reproducing {
                step(
                    store,
                    bug,
                    "start reproduction",
                    Command::StartReproduction,
                    reproducer.clone(),
                    None,
                    policy,
                )
                .await?;
            }
            let (backend, image) = sandbox;
            let backend = backend.ok_or_else(|| {
                crate::cli::demo::DemoError::Sandbox(sandbox::SandboxError::Unavailable {
                    backend: "none",
                    reason:
                        "R2R_SANDBOX_BACKEND=none; the demo's reproduction needs docker or bwrap"
                            .into(),
                })
            })?;
            let runner =
                crate::cli::demo::Runner::connect(crate::cli::demo::Place::Sandbox(backend), image)
                    .await?;
            let run =
                crate::cli::demo::reproduce(shoplite, false, Duration::from_secs(300), &runner)
                    .await?;
            let (test, assertion) = match run.verdict {
                Verdict::Reproduced { test, assertion } => (test, assertion),
                other => return Err(DriveError::NotReproduced(format!("{other:?}"))),
            };
            let test_file = std::fs::read(shoplite.join(crate::cli::demo::REGRESSION_TEST_FILE))
                .map_err(|source| crate::cli::demo::DemoError::Read {
                    path: crate::cli::demo::REGRESSION_TEST_FILE.to_owned(),
                    source,
                })?;
            let reproduction = Reproduction {
                id: format!("run-{}", now_ms()),
                test_path: format!(
                    "shoplite/{}::{test}",
                    crate::cli::demo::REGRESSION_TEST_FILE
                ),
                test_sha256: hex::encode(Sha256::digest(&test_file)),
                assertion,
                summary: Some(shoplite::seeded::BUG1_SUMMARY.to_owned()),
            };
            step(
                store,
                bug,
                "propose measured reproduction",
                Command::ProposeReproduction { reproduction },
                reproducer,
                Some(Rerun::Reproduced),
                policy,
            )
            .await?;
        }
        Stage::Review => {
            if current.state != BugState::Fixing {
                return Err(DriveError::WrongState {
                    bug: bug.to_owned(),
                    state: current.state.as_str().to_owned(),
                    stage: "review",
                    needs: "fixing (POST /api/v1/bugs/{id}/fix/start)",
                });
            }
            let Some((forge, branch)) = review else {
                return Err(DriveError::Forge(
                    "review needs --branch and a local forge (R2R_LOCAL_FORGE)".to_owned(),
                ));
            };
            use forge::Forge;
            let draft = forge
                .open_draft(&forge::DraftRequest {
                    branch: branch.to_owned(),
                    title: format!("Fix {bug}"),
                    body: "A hand-made change opened by r2r demo drive (scripted: the desk did not measure it).".to_owned(),
                })
                .await
                .map_err(|e| DriveError::Forge(e.to_string()))?;
            let changed_paths = forge
                .changed_paths(&draft.head)
                .await
                .map_err(|e| DriveError::Forge(e.to_string()))?;
            step(
                store,
                bug,
                "open the scripted draft",
                Command::SubmitFix {
                    number: draft.number,
                    head: draft.head,
                    changed_paths,
                },
                fixer,
                None,
                policy,
            )
            .await?;
        }
        Stage::Release => {
            if current.state != BugState::Confirmed {
                return Err(DriveError::WrongState {
                    bug: bug.to_owned(),
                    state: current.state.as_str().to_owned(),
                    stage: "release",
                    needs: "confirmed (a reporter said yes to the failing test)",
                });
            }
            let head = scripted_sha("fix head", bug)?;
            let merge_commit = scripted_sha("merge", bug)?;
            let owner = Actor::Owner {
                id: "scripted-owner".to_owned(),
            };
            step(
                store,
                bug,
                "start fix",
                Command::StartFix,
                fixer.clone(),
                None,
                policy,
            )
            .await?;
            step(
                store,
                bug,
                "submit scripted fix",
                Command::SubmitFix {
                    number: 1,
                    head: head.clone(),
                    changed_paths: vec!["shoplite/src/lib.rs".to_owned()],
                },
                fixer,
                None,
                policy,
            )
            .await?;
            step(
                store,
                bug,
                "approve head",
                Command::Approve { head: head.clone() },
                owner.clone(),
                None,
                policy,
            )
            .await?;
            step(
                store,
                bug,
                "merge",
                Command::Merge {
                    head,
                    merge_commit: merge_commit.clone(),
                },
                owner,
                None,
                policy,
            )
            .await?;
            step(
                store,
                bug,
                "record deployment",
                Command::RecordDeployment {
                    deployment: format!("demo-deploy-{bug}"),
                    commit: merge_commit,
                },
                Actor::Role {
                    role: Role::Recorder,
                },
                None,
                policy,
            )
            .await?;
        }
    }
    Ok(())
}
