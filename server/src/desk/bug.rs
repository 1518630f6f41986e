//! `/desk/bugs/{id}`: reports, evidence, review, release and the ledger of one bug.

use super::*;
// ---------------------------------------------------------------------------------------------
// The bug view

fn text(value: &Value, key: &str) -> Option<String> {
    value[key].as_str().map(str::to_owned)
}

fn evidence_view(record: store::EvidenceRecord, distrusted: &[String]) -> EvidenceView {
    let body = &record.body;
    let output = [text(body, "stdout"), text(body, "stderr")]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let model = match (text(body, "provider"), text(body, "model")) {
        (Some(provider), Some(model)) => Some(format!("{provider} / {model}")),
        (Some(provider), None) => Some(provider),
        _ => None,
    };
    let checks: Vec<CheckView> = body["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| CheckView {
            name: text(c, "check").unwrap_or_default(),
            passed: c["passed"] == Value::Bool(true),
            duration_ms: c["duration_ms"].as_i64().unwrap_or_default(),
            detail: text(c, "detail").unwrap_or_default(),
        })
        .collect();
    let outcome = match record.kind.as_str() {
        "reproduction_rerun" => match body["verdict"]["verdict"]
            .as_str()
            .or(body["verdict"].as_str())
        {
            Some(v) => format!("The desk's run: {v}"),
            None => format!("The desk's run: {}", body["verdict"]),
        },
        "baseline_run" => {
            if body["exit_code"] == 0 {
                "The target's own suite passed before any new test".to_owned()
            } else {
                "The target's own suite FAILED before any new test".to_owned()
            }
        }
        "fix_attempt" => {
            if body["passed"] == Value::Bool(true) {
                format!(
                    "Attempt {} passed every check; draft pull request #{}",
                    body["attempt"], body["pull_request"]
                )
            } else {
                format!("Attempt {} failed the desk's checks", body["attempt"])
            }
        }
        other => other.replace('_', " "),
    };
    // A fix attempt's output lives in its checks; show the failing ones.
    let output = if checks.is_empty() {
        output
    } else {
        body["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["passed"] != Value::Bool(true))
            .map(|c| {
                format!(
                    "[{}]\n{}{}",
                    c["check"].as_str().unwrap_or_default(),
                    c["stdout"].as_str().unwrap_or_default(),
                    c["stderr"].as_str().unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let backend =
        text(body, "backend").or_else(|| body["checks"][0]["backend"].as_str().map(str::to_owned));
    // Two questions an owner asks of proof, answered apart: who wrote what ran, and what kind
    // of run measured it (a scripted model's test run in the sandbox is still a real run).
    let written_by = match text(body, "provider").as_deref().map(str::trim) {
        Some("scripted") => {
            Some("the scripted demo model (canned answers, not a real model)".to_owned())
        }
        _ => model.clone(),
    };
    let runner =
        text(body, "runner").or_else(|| body["checks"][0]["runner"].as_str().map(str::to_owned));
    let measured_by = match (record.label.as_str(), backend.as_deref()) {
        ("simulated demo" | "isolated test", Some(backend)) => match runner {
            Some(runner) => format!("isolated test · {backend} sandbox · {runner}"),
            None => format!("isolated test · {backend} sandbox"),
        },
        ("simulated demo" | "isolated test", None) => "isolated test".to_owned(),
        (other, _) => other.to_owned(),
    };
    let untrusted: Vec<&str> = store::sandbox_jobs::measured_by(body)
        .filter(|name| distrusted.iter().any(|d| d == name))
        .collect();
    let measured_by = if untrusted.is_empty() {
        measured_by
    } else {
        format!(
            "DISTRUSTED: measured by worker {} whom an owner no longer trusts (the bug is measured again) · {measured_by}",
            untrusted.join(", ")
        )
    };
    EvidenceView {
        id: record.id,
        kind: record.kind,
        label: record.label,
        written_by,
        measured_by,
        at: record.created_at,
        backend,
        model,
        test_path: text(body, "test_path"),
        test_source: text(body, "test_source"),
        exit_code: body["exit_code"].as_i64(),
        duration_ms: body["duration_ms"].as_i64(),
        outcome,
        output,
        checks,
        commit: text(body, "commit").or_else(|| text(body, "base")),
    }
}

/// Owners by id → their email, to show people by name (an id alone tells an owner nothing).
type Names = std::collections::HashMap<String, String>;

fn owner_name(names: &Names, id: &str) -> String {
    names
        .get(id)
        .map_or_else(|| format!("owner {id}"), |email| email.clone())
}

fn actor_words(names: &Names, kind: &str, id: &str) -> String {
    match kind {
        "owner" => owner_name(names, id),
        "role" => id.to_owned(),
        "reporter" => "a reporter".to_owned(),
        "" => "the desk".to_owned(),
        other => format!("{other} {id}"),
    }
}

/// What the bug view says after an owner's action (`?done=…`).
fn notice(done: Option<&str>) -> Option<String> {
    let words = match done? {
        "approve" => "Approved. The approval is for this exact head only: a new push clears it.",
        "merge" => "Merged into the default branch. The recorder proves the merge commit is live before reporters are asked.",
        "reopen" => "Reopened: the bug goes back to the start of the loop.",
        "retry" => "Given back to the crew: it picks the bug up at the stage it reached.",
        "take_over" => "Taken over: the crew does nothing more with this bug until an owner gives it back.",
        "promote" => "Promoted: its crew work is paid from the confirmed bugs' share, and starts now.",
        "contact" => "Message sent: it is on the reporter's tracking page now, and the concierge emails it when they left an address.",
        "merged" => "Merged: the duplicate's reports joined this bug, and their reporters' links follow it.",
        _ => return None,
    };
    Some(words.to_owned())
}

/// The bug view of bug `id` for `account` (signed in with `session`), with the notice for
/// `done`; `None` when there is no such bug. The one builder of the bug view: its server
/// function ([`super::fns`]) calls it while rendering and from the hydrated page.
pub(crate) async fn bug_data(
    state: &AppState,
    account: &OwnerAccount,
    session: &str,
    id: &str,
    done: Option<&str>,
) -> Result<Option<BugDesk>, Refused> {
    let notice = notice(super::done_said(state, session, id, done));
    let Some(stored) = state.store.load_bug(id).await? else {
        return Ok(None);
    };
    let bug = stored.bug.clone();
    let mut reports = Vec::new();
    let mut opened_at = 0;
    for report_id in &bug.reports {
        let Some(report) = state.store.report(report_id).await? else {
            continue;
        };
        if opened_at == 0 {
            opened_at = report.created_at;
        }
        let answers = bug
            .confirmations
            .iter()
            .filter(|c| &c.report == report_id)
            .map(|c| format!("yes to the {:?} question", c.kind).to_lowercase())
            .collect();
        let Some(dossier) = report.dossier else {
            continue;
        };
        reports.push(DeskReport {
            id: report.id,
            filed_at: report.created_at,
            title: dossier.title,
            what_happened: dossier.what_happened,
            expected: dossier.expected,
            steps: dossier.steps,
            answers,
            has_contact: report.contact.is_some(),
        });
    }
    let evidence: Vec<EvidenceView> = {
        let mut records = state.store.evidence_for(id).await?;
        let distrusted = state.store.distrusted_sandbox_workers().await?;
        records.sort_by_key(|r| r.created_at);
        records
            .into_iter()
            .map(|record| evidence_view(record, &distrusted))
            .collect()
    };
    let events = state.store.events_of(id).await?;
    let ledger_status =
        match domain::ledger::verify(id, &events, &stored.head_hash, stored.event_count) {
            Ok(()) => format!("intact ({} events)", events.len()),
            Err(broken) => format!("BROKEN at event {}: {}", broken.seq, broken.reason),
        };
    let notes: Vec<String> = events
        .iter()
        .filter(|e| e.event.kind == "advisory_note" || e.event.kind == "triaged")
        .flat_map(|e| e.event.evidence.clone())
        .collect();
    let names: Names = state
        .store
        .owner_listing()
        .await?
        .into_iter()
        .map(|o| (o.id, o.email))
        .collect();
    let ledger: Vec<LedgerRow> = events
        .iter()
        .map(|e| LedgerRow {
            seq: e.seq,
            kind: e.event.kind.clone(),
            actor: actor_words(&names, &e.event.actor_kind, &e.event.actor_id),
            at: e.event.at,
            evidence: e.event.evidence.clone(),
            detail: e
                .event
                .detail
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            hash: e.hash.clone(),
        })
        .collect();
    let target = state.target_of(&bug.component).await;
    let diff = match (&bug.pull_request, target.forge.as_deref()) {
        (Some(pr), Some(forge)) => forge
            .change_diff(&pr.head, bug.merge.as_ref().map(|m| &m.merge_commit))
            .await
            .ok(),
        _ => None,
    };
    let me = crate::auth::owner_actor(account).human();
    // The engine's own count of distinct people: the page never counts approvals itself.
    let still_required = if bug.pull_request.is_some() {
        bug.missing_approvals()
    } else {
        Vec::new()
    };
    let actions = owner_actions(state, &bug, me.as_ref());
    let row = BugRow {
        id: bug.id.clone(),
        title: reports
            .first()
            .map(|r| r.title.clone())
            .unwrap_or_else(|| bug.id.clone()),
        component: bug.component.clone(),
        state: bug.state,
        tier: bug.pull_request.as_ref().map(|pr| pr.tier.number()),
        reports: bug.reports.len(),
        opened_at,
        waiting_for: waiting_for_now(state, &bug).await?,
    };
    let crew_budget = {
        let (spent, calls) = state.store.spend_of_bug(id).await?;
        let scope = state.reporter.scope();
        let policy = &scope.policy;
        format!(
            "model spend {} of {} for this bug ({calls} call{}); reproduction attempts {} of {} used, fix attempts {} of {} used (this round)",
            dollars(spent),
            dollars(state.spend.per_bug),
            if calls == 1 { "" } else { "s" },
            bug.reproduction_attempts,
            policy.max_reproduction_attempts,
            bug.fix_attempts,
            policy.max_fix_attempts,
        )
    };
    let project = {
        let target = state.target_of(&bug.component).await;
        format!(
            "{} ({} tests; fixes in {}; crew {})",
            target.project,
            target.profile.as_str(),
            target.fix_allowed_paths.join(", "),
            if target.crew { "on" } else { "off" }
        )
    };
    Ok(Some(BugDesk {
        crew_budget,
        project,
        owner: account.email.clone(),
        csrf: csrf(state, session),
        duplicate_of: bug.duplicate_of.clone(),
        bug: row,
        version: bug.version,
        reports,
        evidence,
        diff,
        confirmed_test: bug.reproduction.as_ref().map(|r| r.test_path.clone()),
        pull_request: bug.pull_request.as_ref().map(|pr| {
            (
                pr.number,
                pr.head.as_str().to_owned(),
                pr.tier_reasons.clone(),
                pr.changed_paths.clone(),
            )
        }),
        approvals: bug
            .approvals
            .iter()
            .map(|a| {
                (
                    format!(
                        "{}{}",
                        match a.approver.kind {
                            domain::workflow::HumanKind::Owner =>
                                owner_name(&names, &a.approver.id),
                            domain::workflow::HumanKind::GitHub =>
                                format!("GitHub @{}", a.approver.id),
                        },
                        if a.code_owner { " (code owner)" } else { "" }
                    ),
                    a.head.as_str().to_owned(),
                )
            })
            .collect(),
        still_required,
        deployments: bug
            .deployments
            .iter()
            .map(|d| {
                (
                    d.id.clone(),
                    d.commit.as_str().to_owned(),
                    format!("{:?}", d.status),
                )
            })
            .collect(),
        notes,
        ledger,
        ledger_status,
        notice,
        actions,
        crew_working: {
            let mut working: Vec<String> = state
                .store
                .heartbeats()
                .await?
                .into_iter()
                .filter(|(_, _, doing)| doing.contains(id))
                .map(|(role, _, doing)| format!("{role}: {doing}"))
                .collect();
            if let Some(step) = crate::service::crew::crew_step(state, id).await? {
                working.extend(crate::service::crew::step_words(&step));
            }
            working
        },
    }))
}

/// What an owner (`me`) can do on `bug` now: the bug view's buttons, and the only actions its
/// questions are asked for.
pub(super) fn owner_actions(
    state: &AppState,
    bug: &domain::workflow::Bug,
    me: Option<&domain::workflow::Human>,
) -> Vec<domain::DeskAction> {
    use domain::DeskAction;
    let mut actions = Vec::new();
    if bug.state == BugState::InReview
        || (bug.state == BugState::Approved
            && !bug.approvals.iter().any(|a| Some(&a.approver) == me))
    {
        actions.push(DeskAction::Approve);
    }
    let target = state.reporter.scope().target_of(&bug.component);
    // A project whose pull requests live on GitHub is merged there.
    if bug.state == BugState::Approved
        && target.forge.is_some()
        && crate::service::forge::github_remote(state, &target).is_none()
    {
        actions.push(DeskAction::Merge);
    }
    if bug.state == BugState::NeedsHuman {
        actions.push(DeskAction::Retry);
    }
    if bug.crew_holds() {
        actions.push(DeskAction::TakeOver);
    }
    if bug.promotable() {
        actions.push(DeskAction::Promote);
    }
    if !matches!(
        bug.state,
        BugState::New | BugState::Reopened | BugState::Duplicate
    ) {
        actions.push(DeskAction::Reopen);
    }
    if !matches!(bug.state, BugState::Verified | BugState::Duplicate) {
        actions.push(DeskAction::Duplicate);
    }
    actions
}
/// Micro-dollars as dollars to a hundredth of a cent (`$0.0036`).
fn dollars(micros: u64) -> String {
    format!("${}.{:04}", micros / 1_000_000, (micros % 1_000_000) / 100)
}
