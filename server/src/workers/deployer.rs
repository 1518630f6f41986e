//! The deployer: watches the local forge's default branch, and for every new head measures
//! and builds it in the desk's own sandbox ([`crate::service::release::build`]: the project's
//! suite must pass on that exact commit, or the head is held back), then starts the artifact
//! — after checking its SHA-256 against the one taken when it was built — as a new instance
//! held in the sandbox like any generated code: its own unprivileged user, a read-only root
//! and release folder, a private scratch, limits, an empty environment and a network namespace
//! of its own, where it listens on its private loopback
//! (the address its launch names, `127.0.0.1:8080` by default). The desk alone reaches it, by opening
//! connections inside that namespace; it reaches neither the desk nor anything else. Once its
//! health names that exact commit, `/live/<service>` moves to it and the previous instance
//! stops. A held or failed release leaves the previous one live and is said on the desk (and,
//! held, in the ledger of every merged bug it contains) with the runner's words. The recorder
//! then checks both addresses twice and records the deployment with the desk (its own token,
//! over HTTP, like any recorder).
//!
//! The live commit is written to `<dir>/live`; after a restart its artifact is started again.

use crate::config::DeployConfig;
use crate::service::recorder::{verify_and_record, Expected, Publish, VerifyError};
use crate::service::release;
use crate::web::{AppState, LiveInstance, ReleaseStep, Releases};
use domain::project::ENVIRONMENT_PROJECT;
use domain::workflow::CommitSha;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How often the default branch is looked at.
const POLL: Duration = Duration::from_secs(2);
/// How long a new instance may take to print its address and answer its health.
const START_DEADLINE: Duration = Duration::from_secs(20);

/// A running instance and the sandbox run that holds it.
struct Running {
    live: LiveInstance,
    service: sandbox::Service,
}

/// Where the recorder reaches the desk, and with which token.
#[derive(Clone, Debug)]
pub struct RecorderSeat {
    /// The desk's base URL (loopback).
    pub desk: String,
    /// The recorder role's token.
    pub token: String,
}

/// The environment's project's deployer (`R2R_DEPLOY=on`), with the in-process recorder's
/// heartbeat; runs until aborted.
pub async fn run(state: AppState, deploy: DeployConfig, recorder: Option<RecorderSeat>) {
    if let Some(seat) = recorder.clone() {
        tokio::spawn(beat(state.clone(), seat));
    }
    let board = state.releases.clone();
    // The environment's launch does not change while the desk runs: nothing to fall back on.
    serve(
        state,
        ENVIRONMENT_PROJECT.to_owned(),
        board,
        deploy,
        recorder,
        None,
    )
    .await;
}

/// The stored projects' deployers: one per project whose definition names a service,
/// started when it does, stopped (its instance with it) when it no longer does or names
/// another; each releases under `<root>/projects/<id>/`. Runs until aborted.
pub async fn supervise(state: AppState, root: PathBuf, recorder: Option<RecorderSeat>) {
    // The environment's deployer beats for every project; without it, the first project
    // that deploys starts the heartbeat (a desk that deploys nothing has no recorder here).
    let mut beating = state.releases.service.is_some();
    // Each project's lane, by the service and launch it was started for: a change of either
    // starts the lane again.
    let mut lanes = Lanes(HashMap::new());
    // A lane stopped for a new launch of the same service: the launch it ran with, for the
    // new lane to fall back on when the new one does not start the live release.
    let mut replaced: HashMap<String, domain::launch::Launch> = HashMap::new();
    loop {
        let scope = state.projects.scope();
        let wanted: Vec<(String, String, domain::launch::Launch)> = scope
            .targets
            .iter()
            .filter(|t| t.project != ENVIRONMENT_PROJECT)
            .filter_map(|t| {
                t.deploy
                    .clone()
                    .map(|service| (t.project.clone(), service, t.launch.clone()))
            })
            .collect();
        lanes.0.retain(|project, (service, lane)| {
            let keep = wanted
                .iter()
                .any(|(p, s, launch)| p == project && *s == service.0 && *launch == service.1);
            if !keep {
                tracing::info!(project, service = %service.0, "the project no longer deploys this service (or starts it otherwise); its deployer stops");
                if wanted.iter().any(|(p, s, _)| p == project && *s == service.0) {
                    replaced.insert(project.clone(), service.1.clone());
                }
                lane.abort();
                if let Ok(mut boards) = state.project_releases.write() {
                    boards.remove(project);
                }
            }
            keep
        });
        for (project, service, launch) in wanted {
            if lanes.0.contains_key(&project) {
                continue;
            }
            if !beating {
                if let Some(seat) = recorder.clone() {
                    tokio::spawn(beat(state.clone(), seat));
                }
                beating = true;
            }
            let deploy = DeployConfig {
                dir: root.join("projects").join(&project),
                service: service.clone(),
                launch: launch.clone(),
            };
            let board = Arc::new(Releases::serving(&service, &deploy.dir));
            if let Ok(mut boards) = state.project_releases.write() {
                boards.insert(project.clone(), board.clone());
            }
            tracing::info!(project, service = %service, "the deployer releases what lands on the project's branch");
            let lane = tokio::spawn(serve(
                state.clone(),
                project.clone(),
                board,
                deploy,
                recorder.clone(),
                replaced.remove(&project),
            ));
            lanes.0.insert(project, ((service, launch), lane));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The stored projects' lanes, by project; stopped with the supervisor (a lane's task is
/// not stopped by dropping its handle, and its instance stops only with its task).
struct Lanes(
    HashMap<
        String,
        (
            (String, domain::launch::Launch),
            tokio::task::JoinHandle<()>,
        ),
    >,
);

impl Drop for Lanes {
    fn drop(&mut self) {
        for (_, (_, lane)) in self.0.drain() {
            lane.abort();
        }
    }
}

/// How long a deployer's leadership lasts unless renewed (it is renewed every [`POLL`]).
const LEADERSHIP_MS: i64 = 10_000;

/// The leadership of a service's deployer (and its recorder) among the servers on one
/// database.
fn leadership(board: &Releases, project: &str) -> String {
    format!("deployer:{}", board.service.as_deref().unwrap_or(project))
}

/// Asks for the leadership of this service's deployer; `Some(address)` when another server
/// holds it, `None` when this one does.
async fn ask_to_lead(state: &AppState, name: &str) -> Result<Option<String>, store::StoreError> {
    let leader = crate::service::leadership::ask(
        state,
        name,
        &state.server.id,
        crate::clock::now_ms() + LEADERSHIP_MS,
    )
    .await?;
    Ok((leader.holder != state.server.id).then_some(leader.address))
}

/// Renews the leadership every [`POLL`]; returns when it is lost (another server took it, or
/// the database could not be reached before it ran out).
async fn keep_leading(state: &AppState, name: &str) {
    let mut held_until = crate::clock::now_ms() + LEADERSHIP_MS;
    loop {
        tokio::time::sleep(POLL).await;
        match ask_to_lead(state, name).await {
            Ok(None) => held_until = crate::clock::now_ms() + LEADERSHIP_MS,
            Ok(Some(other)) => {
                tracing::warn!(
                    leadership = name,
                    other,
                    "another server leads this deployer now"
                );
                return;
            }
            Err(error) => {
                tracing::warn!(leadership = name, %error, "cannot renew the deployer's leadership");
                if crate::clock::now_ms() >= held_until - POLL_MS {
                    return;
                }
            }
        }
    }
}

const POLL_MS: i64 = 2_000;

/// One deployer per service among every server on the database: this server releases
/// `project`'s heads only while it holds the service's leadership (renewed every [`POLL`],
/// lost within [`LEADERSHIP_MS`] of its holder stopping). Meanwhile `/live/<service>` here is
/// answered by the leader, and the board says which server that is.
async fn serve(
    state: AppState,
    project: String,
    board: Arc<Releases>,
    deploy: DeployConfig,
    recorder: Option<RecorderSeat>,
    fallback: Option<domain::launch::Launch>,
) {
    let name = leadership(&board, &project);
    loop {
        match ask_to_lead(&state, &name).await {
            Ok(None) => {
                board.set_leader_elsewhere(None);
                tracing::info!(leadership = %name, server = %state.server.id, "this server leads the deployer");
                tokio::select! {
                    () = lead(state.clone(), project.clone(), board.clone(), deploy.clone(), recorder.clone(), fallback.clone()) => {}
                    () = keep_leading(&state, &name) => {
                        // The instance stops with the dropped lane; the leader serves it now.
                        board.clear_live();
                    }
                }
            }
            Ok(Some(address)) => board.set_leader_elsewhere(Some(address)),
            Err(error) => {
                tracing::warn!(leadership = %name, %error, "cannot ask for the deployer's leadership");
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Releases every new head of `project`'s default branch onto `board`, until aborted (its
/// live instance stops with it). `fallback`: the launch the lane before this one ran with
/// (an owner changed it), tried when the live release does not start with the new one.
async fn lead(
    state: AppState,
    project: String,
    board: Arc<Releases>,
    deploy: DeployConfig,
    recorder: Option<RecorderSeat>,
    fallback: Option<domain::launch::Launch>,
) {
    if let Err(error) = release::private_root(&deploy) {
        tracing::warn!(%error, dir = %deploy.dir.display(), "cannot create the release folder");
    }
    let lane = Lane {
        state: &state,
        project: &project,
        board: &board,
        deploy: &deploy,
        recorder: recorder.as_ref(),
    };
    let mut running: Option<Running> = None;
    let mut tried: Option<String> = None;
    // After an owner's rollback, the head it rolled back from is not released again (a
    // later head is).
    let pinned = std::fs::read_to_string(deploy.dir.join(PINNED))
        .ok()
        .map(|text| text.trim().to_owned());
    if let Some(commit) = recorded_live(&deploy) {
        match start(&state, &deploy, &commit).await {
            Ok(instance) => {
                tracing::info!(project, commit = %commit.as_str(), "restarted the live release");
                board.set_live(instance.live.clone());
                // A desk killed after the release went live but before the recorder recorded
                // it would leave its bugs `merged` for good: the recorder checks it again
                // (recording a deployment twice moves nothing the first did not).
                record(&lane, &commit, "restarted after the desk restarted", false).await;
                tried = Some(pinned.unwrap_or_else(|| commit.as_str().to_owned()));
                running = Some(instance);
            }
            Err(error) => {
                tracing::warn!(project, %error, "the recorded live release did not start again");
                // A launch an owner just changed that does not start the program: it is
                // served as it was started before, and the board says why.
                let before = fallback.map(|launch| DeployConfig {
                    launch,
                    ..deploy.clone()
                });
                if let Some(before) = before {
                    if let Ok(instance) = start(&state, &before, &commit).await {
                        tracing::warn!(project, commit = %commit.as_str(), "served with the launch before the change");
                        board.set_live(instance.live.clone());
                        board.report(
                            commit.as_str(),
                            ReleaseStep::Failed,
                            format!("the project's new launch does not start it ({error}); it is served as it was started before until the launch is corrected, and new heads wait for a launch that starts"),
                        );
                        tried = Some(pinned.unwrap_or_else(|| commit.as_str().to_owned()));
                        running = Some(instance);
                    }
                }
            }
        }
    }
    // A head the sandbox could not take is tried again after a pause that doubles (10 s to
    // 5 min) while it keeps failing that way.
    let mut later: Option<(std::time::Instant, Duration)> = None;
    let mut reconciled = std::time::Instant::now();
    loop {
        if let Some(request) = board.take_rollback() {
            let answer = roll_back(&lane, &mut running, &request).await;
            match &answer {
                Ok(bugs) => {
                    tracing::info!(project, commit = %request.commit.as_str(), ?bugs, "rolled back by an owner")
                }
                Err(error) => {
                    tracing::warn!(project, commit = %request.commit.as_str(), %error, "the rollback did not go live")
                }
            }
            // The owner may have stopped waiting; the board says it either way.
            let _ = request.reply.send(answer);
        }
        let due = later.is_none_or(|(at, _)| std::time::Instant::now() >= at);
        if let Some(head) = default_head(&state, &project).await.filter(|_| due) {
            // A merged bug whose merge the head no longer contains (a force-push) is said,
            // re-bound or given to a person: at each new head, before anything is released,
            // and again now and then (a merge younger than the grace is looked at later).
            let new_head = tried.as_deref() != Some(head.as_str());
            if new_head || reconciled.elapsed() >= RECONCILE_EVERY {
                reconciled = std::time::Instant::now();
                if let Err(refused) =
                    crate::service::forge::reconcile_history(&state, &project, &head).await
                {
                    tracing::warn!(project, error = %refused.error.message, "cannot check the branch's history against its merged bugs");
                }
            }
            if new_head {
                tried = Some(head.as_str().to_owned());
                // A new head ends an owner's rollback: it is released as any other.
                let _ = std::fs::remove_file(deploy.dir.join(PINNED));
                match release(&lane, &head).await {
                    Released::Live(next) => {
                        later = None;
                        if let Some(previous) = running.replace(*next) {
                            previous.service.stop().await;
                        }
                    }
                    Released::Failed => later = None,
                    Released::Later => {
                        tried = None;
                        let pause = later.map_or(RETRY_FIRST, |(_, p)| (p * 2).min(RETRY_MOST));
                        board.report(
                            head.as_str(),
                            ReleaseStep::Building,
                            format!(
                                "waiting for the sandbox: {}; tried again in {} s",
                                board.progress().map(|p| p.detail).unwrap_or_default(),
                                pause.as_secs()
                            ),
                        );
                        later = Some((std::time::Instant::now() + pause, pause));
                    }
                }
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// One project's deployer: the project, its board, where its releases live, its recorder.
struct Lane<'a> {
    state: &'a AppState,
    project: &'a str,
    board: &'a Releases,
    deploy: &'a DeployConfig,
    recorder: Option<&'a RecorderSeat>,
}

/// The in-process recorder's heartbeat, so the crew page shows it beside the crew: what
/// every deploying project's deployer is doing.
async fn beat(state: AppState, seat: RecorderSeat) {
    let client = reqwest::Client::new();
    loop {
        let lines: Vec<String> = state
            .all_releases()
            .into_iter()
            .map(|(_, board)| {
                let service = board.service.clone().unwrap_or_default();
                match (board.progress(), board.live()) {
                    _ if board.leader_elsewhere().is_some() => format!(
                        "{service}: released by the desk server at {}, which leads its deployer",
                        board.leader_elsewhere().unwrap_or_default()
                    ),
                    (Some(p), _) => format!(
                        "{service}: {} {} — {}",
                        p.step.as_str(),
                        p.commit.chars().take(12).collect::<String>(),
                        p.detail
                    ),
                    (None, Some(live)) => format!("{service}: {} live", live.commit),
                    (None, None) => format!("{service}: waiting for the first release"),
                }
            })
            .collect();
        let detail = if lines.is_empty() {
            "no project deploys yet".to_owned()
        } else {
            lines.join("; ")
        };
        if let Err(error) =
            crate::service::recorder::heartbeat(&client, &seat.desk, &seat.token, &detail).await
        {
            tracing::debug!(%error, "the recorder's heartbeat did not reach the desk");
        }
        tokio::time::sleep(crate::service::recorder::HEARTBEAT_EVERY).await;
    }
}

async fn default_head(state: &AppState, project: &str) -> Option<CommitSha> {
    let target = state.projects.scope().project(project)?;
    let forge = target.forge.as_deref()?;
    forge
        .branch_head(forge.default_branch())
        .await
        .ok()
        .flatten()
}

/// The file naming the head an owner rolled back from (it is not released again).
const PINNED: &str = "pinned";

/// Serves `request.commit`, an earlier release built here, again: its artifact's hash is
/// checked, it starts and must answer its health with that commit, the old instance stops,
/// the bugs whose fix it lacks go back to `merged` with the owner's reason, and the recorder
/// records it. The head it replaces is not released again until another head lands.
async fn roll_back(
    lane: &Lane<'_>,
    running: &mut Option<Running>,
    request: &crate::web::Rollback,
) -> Result<Vec<String>, String> {
    let (state, deploy, board) = (lane.state, lane.deploy, lane.board);
    let commit = &request.commit;
    let sha = commit.as_str();
    if board.live().is_some_and(|live| live.commit == sha) {
        return Err("it is the live release already".to_owned());
    }
    release::verified_artifact(deploy, commit)
        .map_err(|e| format!("no release of it built here can be served: {e}"))?;
    board.report(
        sha,
        ReleaseStep::Starting,
        format!("rolling back (an owner asked: {})", request.reason),
    );
    let instance = match start(state, deploy, commit).await {
        Ok(instance) => instance,
        Err(error) => {
            board.report(
                sha,
                ReleaseStep::Failed,
                format!("the rollback did not start; the live release stays: {error}"),
            );
            return Err(error);
        }
    };
    let head = default_head(state, lane.project).await;
    let previous = board.live();
    board.set_live(instance.live.clone());
    if let Err(error) = std::fs::write(deploy.dir.join("live"), sha) {
        tracing::warn!(%error, "cannot record the live release; a restart will not start it again");
    }
    // Checked before anything else changes: a deployment of its own, since a release served
    // again after a newer one was live is news to the bugs it carries (recorded once already
    // under the release's first id).
    if let Recorded::Refused(why) = record(lane, commit, "rolled back by an owner", true).await {
        give_way(lane, sha, previous).await;
        instance.service.stop().await;
        release::refuse_release(deploy, commit, &why);
        let reason = format!("the recorder found it serving something else than it was built as ({why}); the live release stays");
        board.report(sha, ReleaseStep::Failed, reason.clone());
        return Err(reason);
    }
    if let Some(head) = &head {
        if let Err(error) = std::fs::write(deploy.dir.join(PINNED), head.as_str()) {
            tracing::warn!(%error, "cannot record the head rolled back from; a restart releases it again");
        }
    }
    if let Some(previous) = running.replace(instance) {
        previous.service.stop().await;
    }
    let bugs = crate::service::forge::roll_back_bugs(
        state,
        lane.project,
        commit,
        &request.reason,
        &request.owner,
    )
    .await
    .map_err(|refused| {
        format!(
            "{sha} is live again, but its bugs could not be moved back: {}",
            refused.error.message
        )
    })?;
    Ok(bugs)
}

/// How often the branch's history is checked against the merged bugs besides each new head.
const RECONCILE_EVERY: Duration = Duration::from_secs(5);

/// The first pause before a head the sandbox could not take is tried again.
const RETRY_FIRST: Duration = Duration::from_secs(10);
/// The longest pause.
const RETRY_MOST: Duration = Duration::from_secs(300);

/// What became of one release.
enum Released {
    /// Live: the new instance.
    Live(Box<Running>),
    /// The build or the start failed (said on the board and to the owners); the old one stays.
    Failed,
    /// The sandbox could not take the build now; the head is tried again.
    Later,
}

/// Measures, builds, starts and switches to `commit`.
async fn release(lane: &Lane<'_>, commit: &CommitSha) -> Released {
    let (state, deploy) = (lane.state, lane.deploy);
    let sha = commit.as_str();
    let releases = lane.board;
    let started = std::time::Instant::now();
    match release::build(state, lane.project, deploy, commit, releases).await {
        Ok(_) => {}
        Err(release::BuildError::Later(reason)) => {
            tracing::warn!(project = lane.project, commit = sha, %reason, "the sandbox could not take the release; it is tried again");
            releases.report(sha, ReleaseStep::Building, reason);
            return Released::Later;
        }
        Err(release::BuildError::Failed(error)) => {
            tracing::warn!(project = lane.project, commit = sha, %error, "release build failed; the previous instance stays live");
            tell_owners(state, deploy, sha, &error).await;
            releases.report(sha, ReleaseStep::Failed, error);
            return Released::Failed;
        }
        Err(release::BuildError::Held(reason)) => {
            tracing::warn!(project = lane.project, commit = sha, %reason, "the suite failed on the head; it is not released");
            releases.report(sha, ReleaseStep::Held, reason.clone());
            match crate::service::forge::hold_release(state, lane.project, commit, &reason).await {
                Ok(bugs) => tracing::info!(
                    commit = sha,
                    ?bugs,
                    "the held release is in these bugs' ledgers"
                ),
                Err(refused) => {
                    tracing::warn!(commit = sha, error = %refused.error.message, "the held release could not be recorded on its bugs")
                }
            }
            tell_owners(state, deploy, sha, &reason).await;
            return Released::Failed;
        }
    }
    let built_ms = started.elapsed().as_millis();
    releases.report(
        sha,
        ReleaseStep::Starting,
        "starting the new instance in the sandbox",
    );
    let instance = match start(state, deploy, commit).await {
        Ok(instance) => instance,
        Err(error) => {
            tracing::warn!(project = lane.project, commit = sha, %error, "the new instance is not healthy; the previous one stays live");
            tell_owners(state, deploy, sha, &error).await;
            releases.report(sha, ReleaseStep::Failed, error);
            return Released::Failed;
        }
    };
    let previous = releases.live();
    releases.set_live(instance.live.clone());
    if let Err(error) = std::fs::write(deploy.dir.join("live"), sha) {
        tracing::warn!(%error, "cannot record the live release; a restart will not start it again");
    }
    let started_ms = started.elapsed().as_millis() - built_ms;
    let timings = format!(
        "tested and built in {built_ms} ms, started in {started_ms} ms, artifact SHA-256 {}",
        instance.live.artifact_sha256
    );
    if let Recorded::Refused(why) = record(lane, commit, &timings, false).await {
        // It serves something else than it was built as: it gives way to the release before
        // it at once, and is never offered again.
        give_way(lane, sha, previous).await;
        instance.service.stop().await;
        crate::service::release::refuse_release(deploy, commit, &why);
        let reason = format!("not released: the recorder found it serving something else than it was built as ({why}); the previous release stays live");
        tell_owners(state, deploy, sha, &reason).await;
        releases.report(sha, ReleaseStep::Failed, reason);
        return Released::Failed;
    }
    Released::Live(Box::new(instance))
}

/// Has the recorder check both addresses of the live instance of `commit` twice and record it with the
/// desk, and says how it went on the crew page (`how` says how it came to be live). `again`:
/// it is served again after another release (a rollback), recorded under an id of its own.
/// Whether the checks found it serving something else than it was built as (a refusal, not
/// an unreachable desk).
async fn record(lane: &Lane<'_>, commit: &CommitSha, how: &str, again: bool) -> Recorded {
    let deploy = lane.deploy;
    let sha = commit.as_str();
    let releases = lane.board;
    let Some(recorder) = lane.recorder else {
        releases.report(
            sha,
            ReleaseStep::Live,
            format!("live ({how}); no recorder token here, so nothing recorded it (r2r recorder verify)"),
        );
        return Recorded::Yes;
    };
    releases.report(
        sha,
        ReleaseStep::Checking,
        "the recorder checks both addresses",
    );
    let started = std::time::Instant::now();
    // The immutable address: the desk's proxy to exactly this commit's instance.
    let immutable = format!("{}/release/{}/{sha}", recorder.desk, deploy.service);
    let public = format!("{}/live/{}", recorder.desk, deploy.service);
    let deployment = if again {
        format!(
            "{}-{}-again-{}",
            deploy.service,
            &sha[..12],
            crate::clock::now_ms()
        )
    } else {
        format!("{}-{}", deploy.service, &sha[..12])
    };
    let assets = match crate::service::release::asset_manifest(deploy, commit) {
        Ok(assets) => assets,
        Err(error) => {
            releases.report(
                sha,
                ReleaseStep::Failed,
                format!("live but not recorded: {error}"),
            );
            return Recorded::Refused(error);
        }
    };
    let asset_count = assets.len();
    let expected = Expected {
        sha: commit.clone(),
        service: deploy.service.clone(),
        assets,
    };
    let publish = Publish::Desk {
        url: &recorder.desk,
        token: &recorder.token,
        deployment: &deployment,
        project: (lane.project != ENVIRONMENT_PROJECT).then_some(lane.project),
    };
    match verify_and_record(&immutable, &public, &expected, publish).await {
        Ok(id) => {
            let checked_ms = started.elapsed().as_millis();
            tracing::info!(commit = sha, deployment = %id, how, checked_ms, "released and recorded");
            releases.report(
                sha,
                ReleaseStep::Live,
                format!(
                    "live and recorded as {id} ({how}, {asset_count} asset(s) served as built, checked and recorded in {checked_ms} ms)"
                ),
            );
            Recorded::Yes
        }
        Err(error) => {
            tracing::warn!(commit = sha, %error, "the recorder did not record the release");
            releases.report(
                sha,
                ReleaseStep::Failed,
                format!("live but not recorded: {error}"),
            );
            match error {
                VerifyError::Mismatch { .. } | VerifyError::NotAliased { .. } => {
                    Recorded::Refused(error.to_string())
                }
                VerifyError::Unreachable { .. } | VerifyError::Record(_) => Recorded::Not,
            }
        }
    }
}

/// The longest reason (the log's tail) an owners' notice carries.
const REASON_CHARS: usize = 1_500;

/// Queues the owners' notice of a release that did not go live (once per commit: the key is
/// the commit, so a restart that retries the same head does not repeat it).
async fn tell_owners(state: &AppState, deploy: &DeployConfig, sha: &str, error: &str) {
    let skip = error.chars().count().saturating_sub(REASON_CHARS);
    let reason: String = error.chars().skip(skip).collect();
    let job = domain::workflow::JobDraft {
        idempotency_key: format!("release_failed:{sha}"),
        kind: "notify_owners_release_failed".to_owned(),
        consumer: domain::workflow::Consumer::Concierge,
        available_at: crate::clock::now_ms(),
        payload: [
            ("commit".to_owned(), sha.to_owned()),
            ("service".to_owned(), deploy.service.clone()),
            ("reason".to_owned(), reason),
        ]
        .into(),
    };
    if let Err(error) = state.store.enqueue_job(&job, None, job.available_at).await {
        tracing::warn!(%error, commit = sha, "cannot queue the owners' notice of a failed release");
    }
}

/// The commit `<dir>/live` names, if its artifact is still there.
fn recorded_live(deploy: &DeployConfig) -> Option<CommitSha> {
    let text = std::fs::read_to_string(deploy.dir.join("live")).ok()?;
    let commit = CommitSha::parse(text.trim()).ok()?;
    release::artifact_path(deploy, &commit)
        .is_file()
        .then_some(commit)
}

/// Starts `commit`'s artifact, once its hash matches the one taken when it was built, as a
/// service in the desk's own sandbox, and waits until its health names exactly that commit.
async fn start(
    state: &AppState,
    deploy: &DeployConfig,
    commit: &CommitSha,
) -> Result<Running, String> {
    let artifact_sha256 = release::verified_artifact(deploy, commit)?;
    let folder = release::artifact_path(deploy, commit)
        .parent()
        .map(std::path::Path::to_path_buf)
        .ok_or_else(|| "the release folder has no parent".to_owned())?;
    let sandbox = state
        .sandbox
        .local()
        .await
        .map_err(|reason| format!("the desk's own sandbox is not reachable: {reason}"))?;
    // The release folder, read-only, is all it sees of the host; its environment is the
    // sandbox's bare one (none of the desk's database URL, tokens or keys).
    let job = sandbox::SandboxJob::new(
        folder,
        std::iter::once(format!(
            "{}/{}",
            sandbox::isolated::SNAPSHOT_DIR,
            deploy.service
        ))
        .chain(deploy.launch.filled_args())
        .collect(),
        Duration::from_secs(3600),
    );
    // Beyond the sandbox's bare environment, only what the project's launch names.
    let mut job = job;
    job.env.extend(deploy.launch.env.iter().cloned());
    let service = sandbox::Service::start(sandbox, job, START_DEADLINE)
        .await
        .map_err(|e| format!("the new instance did not start: {e}"))?;
    let dialer = sandbox::NetnsDialer::open(service.netns_pid())
        .map_err(|e| format!("cannot reach the new instance's network: {e}"))?;
    let dialer = Arc::new(dialer);
    let addr = deploy.launch.addr();
    match tokio::time::timeout(START_DEADLINE, healthy(&dialer, addr, commit)).await {
        Ok(Ok(())) => Ok(Running {
            live: LiveInstance {
                commit: commit.as_str().to_owned(),
                artifact_sha256,
                dialer,
                addr,
            },
            service,
        }),
        Ok(Err(error)) => {
            let said = said(service.stop().await);
            Err(format!("{error}{said}"))
        }
        Err(_) => {
            let said = said(service.stop().await);
            Err(format!(
                "the new instance did not answer its health within {} s{said}",
                START_DEADLINE.as_secs()
            ))
        }
    }
}

/// What a stopped instance printed, as a clause for the owners.
fn said(outcome: Option<sandbox::RunOutcome>) -> String {
    let Some(outcome) = outcome else {
        return String::new();
    };
    let text = format!("{}{}", outcome.stdout, outcome.stderr);
    let text: Vec<char> = text.trim().chars().collect();
    if text.is_empty() {
        return String::new();
    }
    let tail: String = text[text.len().saturating_sub(REASON_CHARS)..]
        .iter()
        .collect();
    format!("; it said: {tail}")
}

/// Waits until the instance's health answers `ok` with exactly `commit`.
async fn healthy(
    dialer: &sandbox::NetnsDialer,
    addr: std::net::SocketAddr,
    commit: &CommitSha,
) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..40 {
        match crate::instance::get(dialer, addr, "/api/health").await {
            Ok(answer) => {
                let health: serde_json::Value =
                    serde_json::from_slice(&answer.body).unwrap_or_default();
                if health["commit"] == commit.as_str() && health["status"] == "ok" {
                    return Ok(());
                }
                last = format!("its health says {health}");
            }
            Err(error) => last = error,
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Err(format!(
        "the new instance is not healthy for {}: {last}",
        commit.as_str()
    ))
}

/// Makes `previous` (the release live before `sha`) the live one again, on the board and in
/// the file a restart reads; none: nothing is live.
async fn give_way(lane: &Lane<'_>, sha: &str, previous: Option<crate::web::LiveInstance>) {
    let live_file = lane.deploy.dir.join("live");
    match previous {
        Some(previous) => {
            tracing::warn!(commit = sha, previous = %previous.commit, "the recorder refused the release; the previous one is live again");
            if let Err(error) = std::fs::write(&live_file, &previous.commit) {
                tracing::warn!(%error, "cannot record the live release; a restart will not start it again");
            }
            lane.board.set_live(previous);
        }
        None => {
            tracing::warn!(
                commit = sha,
                "the recorder refused the first release; nothing is live"
            );
            let _ = std::fs::remove_file(&live_file);
            lane.board.clear_live();
        }
    }
}

/// What the recorder made of a live release.
#[derive(Debug, PartialEq, Eq)]
enum Recorded {
    /// Recorded, or nothing to record it with (no recorder token).
    Yes,
    /// Not recorded: it serves something else than was built (a health answer or an asset
    /// that differs), in these words.
    Refused(String),
    /// Not recorded for another reason (the desk or the address could not be reached).
    Not,
}
