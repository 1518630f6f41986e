//! The owners' desk pages: `/desk` (dashboard), `/desk/bugs/{id}` (reports, evidence, review,
//! release, ledger), `/desk/crew`, sign-in and sign-out, and the confirmed actions (approve the
//! exact head, merge, reopen). Rendered on the server for the signed-in owner and served
//! without hydration scripts; actions are form posts carrying the session's CSRF token, and
//! every action goes through the same code — and the same engine guards — as the API.

use crate::auth::{csrf_token, csrf_valid, Credential};
use crate::github::Fetched;
use crate::http::AppState;
use crate::reporter::{no_store, ClientAddr, Refused};
use app::dto::{
    BugDesk, BugRow, CheckView, Confirm, CrewDesk, Dashboard, DeskFilter, DeskPage, DeskReport,
    EvidenceView, LedgerRow, QuarantineRow,
};
use axum::body::Body;
use axum::extract::{Form, Path, Query, State};
use axum::http::{header, HeaderMap, Request, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use domain::workflow::{Actor, Bug, Command, Human, HumanKind};
use domain::BugState;
use serde::Deserialize;
use serde_json::Value;
use store::OwnerAccount;

const DAY_MS: i64 = 86_400_000;

/// Renders the desk page for `path` without hydration scripts.
async fn render(state: &AppState, path: &str, status: StatusCode, page: DeskPage) -> Response {
    let options = state.leptos_options.clone();
    let context_options = options.clone();
    let settings = state.site_settings();
    let handler = leptos_axum::render_app_to_stream_in_order_with_context(
        move || {
            leptos::prelude::provide_context(context_options.clone());
            leptos::prelude::provide_context(settings.clone());
            leptos::prelude::provide_context(page.clone());
        },
        move || app::shell_without_scripts(options.clone()),
    );
    let Ok(request) = Request::builder().uri(path).body(Body::empty()) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let mut response = handler(request).await.into_response();
    *response.status_mut() = status;
    no_store(response)
}

fn owner(credential: &Credential) -> Option<(&OwnerAccount, &str)> {
    match credential {
        Credential::Owner { account, session } => Some((account, session.as_str())),
        _ => None,
    }
}

fn to_sign_in(next: &str) -> Response {
    let next: String = next
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_'))
        .collect();
    Redirect::to(&format!("/desk/sign-in?next={next}")).into_response()
}

fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with("/desk") && !n.contains("//") && !n.contains('\\') => n.to_owned(),
        _ => "/desk".to_owned(),
    }
}

fn csrf(state: &AppState, session: &str) -> String {
    csrf_token(state.auth.session_key.expose().as_bytes(), session)
}

async fn problem(
    state: &AppState,
    owner: Option<String>,
    status: StatusCode,
    message: String,
    back: &str,
) -> Response {
    render(
        state,
        "/desk",
        status,
        DeskPage::Problem {
            owner,
            message,
            back: back.to_owned(),
        },
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// Sign-in and sign-out

#[derive(Debug, Deserialize)]
pub struct NextQuery {
    next: Option<String>,
}

/// `GET /desk/sign-in`.
pub async fn sign_in_page(
    State(state): State<AppState>,
    credential: Credential,
    Query(query): Query<NextQuery>,
) -> Response {
    let next = safe_next(query.next.as_deref());
    if owner(&credential).is_some() {
        return Redirect::to(&next).into_response();
    }
    render(
        &state,
        "/desk/sign-in",
        StatusCode::OK,
        DeskPage::SignIn { error: None, next },
    )
    .await
}

#[derive(Deserialize)]
pub struct SignInForm {
    email: String,
    password: String,
    next: Option<String>,
}

impl std::fmt::Debug for SignInForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInForm")
            .field("email", &self.email)
            .finish_non_exhaustive()
    }
}

/// `POST /desk/sign-in`: the same check as `POST /api/v1/session`, then back to the desk.
pub async fn sign_in(
    State(state): State<AppState>,
    addr: ClientAddr,
    headers: HeaderMap,
    Form(form): Form<SignInForm>,
) -> Response {
    let next = safe_next(form.next.as_deref());
    let client = crate::reporter::client_key_of(&state, addr, &headers);
    match crate::api::sign_in(&state, &client, &form.email, form.password).await {
        Ok((session, _)) => {
            let mut response = Redirect::to(&next).into_response();
            response.headers_mut().insert(
                header::SET_COOKIE,
                crate::api::session_cookie(&state, &session),
            );
            no_store(response)
        }
        Err(refused) => {
            let status = refused.status;
            render(
                &state,
                "/desk/sign-in",
                status,
                DeskPage::SignIn {
                    error: Some(refused.error.message),
                    next,
                },
            )
            .await
        }
    }
}

/// `POST /desk/sign-out`.
pub async fn sign_out(State(state): State<AppState>, credential: Credential) -> Response {
    if let Some((account, session)) = owner(&credential) {
        if let Err(error) = state
            .store
            .delete_session(&crate::auth::hash_secret(session))
            .await
        {
            tracing::warn!(%error, "sign-out: session not deleted");
        }
        tracing::info!(owner = %account.id, "owner signed out");
    }
    let mut response = Redirect::to("/desk/sign-in").into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        crate::api::session_cookie_header(&state, "", 0),
    );
    no_store(response)
}

// ---------------------------------------------------------------------------------------------
// Dashboard

/// What a person has to do for a bug, if anything.
pub fn waiting_for(bug: &Bug) -> Option<String> {
    match bug.state {
        BugState::NeedsHuman => Some(match bug.needs_human {
            Some(reason) => format!("a person ({})", format!("{reason:?}").to_lowercase()),
            None => "a person".to_owned(),
        }),
        BugState::InReview => Some("review: approve the exact head".to_owned()),
        BugState::Approved => Some("merge".to_owned()),
        BugState::AwaitingReporter => Some("the reporter's answer".to_owned()),
        _ => None,
    }
}

fn needs_person(bug: &Bug) -> bool {
    matches!(
        bug.state,
        BugState::NeedsHuman | BugState::InReview | BugState::Approved
    )
}

#[derive(Debug, Deserialize, Default)]
pub struct DashboardQuery {
    state: Option<String>,
    component: Option<String>,
    tier: Option<String>,
    age: Option<String>,
    q: Option<String>,
    sort: Option<String>,
}

fn nonempty(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

async fn rows(state: &AppState) -> Result<Vec<(Bug, BugRow)>, Refused> {
    let mut out = Vec::new();
    for id in state.store.bug_ids().await.map_err(Refused::storage)? {
        let Some(stored) = state.store.load_bug(&id).await.map_err(Refused::storage)? else {
            continue;
        };
        let bug = stored.bug;
        let first = match bug.reports.first() {
            Some(report) => state.store.report(report).await.map_err(Refused::storage)?,
            None => None,
        };
        let title = first
            .as_ref()
            .and_then(|r| r.dossier.as_ref().map(|d| d.title.clone()))
            .unwrap_or_else(|| bug.id.clone());
        let row = BugRow {
            id: bug.id.clone(),
            title,
            component: bug.component.clone(),
            state: bug.state.as_str().to_owned(),
            tier: bug.pull_request.as_ref().map(|pr| pr.tier.number()),
            reports: bug.reports.len(),
            opened_at: first.map(|r| r.created_at).unwrap_or_default(),
            waiting_for: waiting_for(&bug),
        };
        out.push((bug, row));
    }
    Ok(out)
}

/// `GET /desk`.
pub async fn dashboard(
    State(state): State<AppState>,
    credential: Credential,
    Query(query): Query<DashboardQuery>,
) -> Response {
    let Some((account, _)) = owner(&credential) else {
        return to_sign_in("/desk");
    };
    let owner_email = account.email.clone();
    let result = async {
        let all = rows(&state).await?;
        let total = all.len();
        let mut counts: Vec<(String, usize)> = BugState::ALL
            .iter()
            .map(|s| (s.as_str().to_owned(), 0))
            .collect();
        for (bug, _) in &all {
            if let Some(entry) = counts.iter_mut().find(|(s, _)| s == bug.state.as_str()) {
                entry.1 += 1;
            }
        }
        let mut components: Vec<String> = all.iter().map(|(b, _)| b.component.clone()).collect();
        components.sort();
        components.dedup();
        let filter = DeskFilter {
            state: nonempty(query.state).filter(|s| counts.iter().any(|(c, _)| c == s)),
            component: nonempty(query.component),
            tier: nonempty(query.tier).and_then(|t| t.parse().ok()),
            min_age_days: nonempty(query.age).and_then(|a| a.parse().ok()),
            q: nonempty(query.q).map(|q| q.chars().take(200).collect()),
            sort: nonempty(query.sort)
                .filter(|s| matches!(s.as_str(), "waiting" | "newest" | "oldest" | "state"))
                .unwrap_or_else(|| "waiting".into()),
        };
        let now = crate::clock::now_ms();
        let q = filter.q.as_ref().map(|q| q.to_lowercase());
        let mut shown: Vec<(Bug, BugRow)> = all
            .into_iter()
            .filter(|(bug, row)| {
                filter
                    .state
                    .as_deref()
                    .is_none_or(|s| bug.state.as_str() == s)
                    && filter
                        .component
                        .as_deref()
                        .is_none_or(|c| bug.component == c)
                    && filter.tier.is_none_or(|t| row.tier == Some(t))
                    && filter
                        .min_age_days
                        .is_none_or(|d| now - row.opened_at >= i64::from(d) * DAY_MS)
                    && q.as_deref().is_none_or(|q| {
                        row.title.to_lowercase().contains(q) || row.id.to_lowercase().contains(q)
                    })
            })
            .collect();
        match filter.sort.as_str() {
            "newest" => shown.sort_by_key(|(_, row)| std::cmp::Reverse(row.opened_at)),
            "oldest" => shown.sort_by_key(|(_, row)| row.opened_at),
            "state" => shown.sort_by(|a, b| a.1.state.cmp(&b.1.state)),
            _ => shown.sort_by(|a, b| {
                needs_person(&b.0)
                    .cmp(&needs_person(&a.0))
                    .then(a.1.opened_at.cmp(&b.1.opened_at))
            }),
        }
        let quarantine = state
            .store
            .quarantine_queue(50)
            .await
            .map_err(Refused::storage)?
            .into_iter()
            .map(|r| QuarantineRow {
                id: r.id,
                at: r.created_at,
                component: r.component,
                families: r.families,
            })
            .collect();
        let crew = crate::crew_api::status_json(&state).await?;
        Ok::<_, Refused>(DeskPage::Dashboard(Box::new(Dashboard {
            owner: owner_email.clone(),
            counts,
            bugs: shown.into_iter().map(|(_, row)| row).collect(),
            total,
            filter,
            components,
            quarantine,
            crew_connected: crew["connected"] == Value::Bool(true),
        })))
    }
    .await;
    match result {
        Ok(page) => render(&state, "/desk", StatusCode::OK, page).await,
        Err(refused) => {
            problem(
                &state,
                Some(owner_email),
                refused.status,
                refused.error.message,
                "/desk",
            )
            .await
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The bug view

fn text(value: &Value, key: &str) -> Option<String> {
    value[key].as_str().map(str::to_owned)
}

fn evidence_view(record: store::EvidenceRecord) -> EvidenceView {
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
    EvidenceView {
        id: record.id,
        kind: record.kind,
        label: record.label,
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

fn actor_words(kind: &str, id: &str) -> String {
    match kind {
        "owner" => format!("owner {id}"),
        "role" => id.to_owned(),
        "reporter" => "a reporter".to_owned(),
        "" => "the desk".to_owned(),
        other => format!("{other} {id}"),
    }
}

#[derive(Debug, Deserialize, Default)]
pub struct BugQuery {
    done: Option<String>,
}

async fn bug_page(
    state: &AppState,
    account: &OwnerAccount,
    session: &str,
    id: &str,
    notice: Option<String>,
) -> Result<Option<DeskPage>, Refused> {
    let Some(stored) = state.store.load_bug(id).await.map_err(Refused::storage)? else {
        return Ok(None);
    };
    let bug = stored.bug.clone();
    let mut reports = Vec::new();
    let mut opened_at = 0;
    for report_id in &bug.reports {
        let Some(report) = state
            .store
            .report(report_id)
            .await
            .map_err(Refused::storage)?
        else {
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
        });
    }
    let evidence: Vec<EvidenceView> = {
        let mut records = state
            .store
            .evidence_for(id)
            .await
            .map_err(Refused::storage)?;
        records.sort_by_key(|r| r.created_at);
        records.into_iter().map(evidence_view).collect()
    };
    let events = state.store.events_of(id).await.map_err(Refused::storage)?;
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
    let ledger: Vec<LedgerRow> = events
        .iter()
        .map(|e| LedgerRow {
            seq: e.seq,
            kind: e.event.kind.clone(),
            actor: actor_words(&e.event.actor_kind, &e.event.actor_id),
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
    let diff = match (&bug.pull_request, state.local_forge.as_deref()) {
        (Some(pr), Some(forge)) => forge.diff(&pr.head).await.ok(),
        _ => None,
    };
    let me = Human {
        kind: HumanKind::Owner,
        id: account.id.clone(),
    };
    let mut still_required = Vec::new();
    if let Some(pr) = &bug.pull_request {
        let current: Vec<_> = bug.approvals.iter().filter(|a| a.head == pr.head).collect();
        let needed = pr.tier.required_humans();
        if current.len() < needed {
            still_required.push(format!(
                "{} more approval(s) of {} (tier {} needs {needed})",
                needed - current.len(),
                pr.head,
                pr.tier.number()
            ));
        }
        if pr.tier.requires_code_owner() && !current.iter().any(|a| a.code_owner) {
            still_required.push("a code owner's approval (CODEOWNERS at that head)".to_owned());
        }
    }
    let mut actions = Vec::new();
    if bug.state == BugState::InReview
        || (bug.state == BugState::Approved && !bug.approvals.iter().any(|a| a.approver == me))
    {
        actions.push("approve".to_owned());
    }
    if bug.state == BugState::Approved && state.local_forge.is_some() {
        actions.push("merge".to_owned());
    }
    if !matches!(bug.state, BugState::New | BugState::Reopened) {
        actions.push("reopen".to_owned());
    }
    let row = BugRow {
        id: bug.id.clone(),
        title: reports
            .first()
            .map(|r| r.title.clone())
            .unwrap_or_else(|| bug.id.clone()),
        component: bug.component.clone(),
        state: bug.state.as_str().to_owned(),
        tier: bug.pull_request.as_ref().map(|pr| pr.tier.number()),
        reports: bug.reports.len(),
        opened_at,
        waiting_for: waiting_for(&bug),
    };
    Ok(Some(DeskPage::Bug(Box::new(BugDesk {
        owner: account.email.clone(),
        csrf: csrf(state, session),
        bug: row,
        version: bug.version,
        reports,
        evidence,
        diff,
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
                        a.approver.id,
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
        crew_working: state
            .store
            .heartbeats()
            .await
            .map_err(Refused::storage)?
            .into_iter()
            .filter(|(_, _, doing)| doing.contains(id))
            .map(|(role, _, doing)| format!("{role}: {doing}"))
            .collect(),
    }))))
}

/// `GET /desk/bugs/{id}`.
pub async fn bug(
    State(state): State<AppState>,
    credential: Credential,
    Path(id): Path<String>,
    Query(query): Query<BugQuery>,
) -> Response {
    let path = format!("/desk/bugs/{id}");
    let Some((account, session)) = owner(&credential) else {
        return to_sign_in(&path);
    };
    let notice = query.done.as_deref().and_then(|done| match done {
        "approve" => Some("Approved. The approval is for this exact head only: a new push clears it.".to_owned()),
        "merge" => Some("Merged into the default branch. The recorder proves the merge commit is live before reporters are asked.".to_owned()),
        "reopen" => Some("Reopened: the bug goes back to the start of the loop.".to_owned()),
        _ => None,
    });
    match bug_page(&state, account, session, &id, notice).await {
        Ok(Some(page)) => render(&state, &path, StatusCode::OK, page).await,
        Ok(None) => {
            problem(
                &state,
                Some(account.email.clone()),
                StatusCode::NOT_FOUND,
                format!("No bug {id}."),
                "/desk",
            )
            .await
        }
        Err(refused) => {
            problem(
                &state,
                Some(account.email.clone()),
                refused.status,
                refused.error.message,
                "/desk",
            )
            .await
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Actions

#[derive(Debug, Deserialize)]
pub struct ActForm {
    csrf: String,
    action: String,
    step: String,
    #[serde(default)]
    head: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /desk/bugs/{id}/act`: `step=confirm` shows what will happen; `step=do` does it.
pub async fn act(
    State(state): State<AppState>,
    credential: Credential,
    Path(id): Path<String>,
    Form(form): Form<ActForm>,
) -> Response {
    let back = format!("/desk/bugs/{id}");
    let Some((account, session)) = owner(&credential) else {
        return to_sign_in(&back);
    };
    let email = Some(account.email.clone());
    if !csrf_valid(
        state.auth.session_key.expose().as_bytes(),
        session,
        Some(form.csrf.as_str()),
    ) {
        return problem(
            &state,
            email,
            StatusCode::FORBIDDEN,
            "This form is stale or did not come from your desk (CSRF check failed). Nothing was changed; reload the bug and try again.".into(),
            &back,
        )
        .await;
    }
    let Some(stored) = state.store.load_bug(&id).await.ok().flatten() else {
        return problem(
            &state,
            email,
            StatusCode::NOT_FOUND,
            format!("No bug {id}."),
            "/desk",
        )
        .await;
    };
    let bug = stored.bug;
    let head = bug
        .pull_request
        .as_ref()
        .map(|pr| pr.head.as_str().to_owned());
    let action = form.action.as_str();
    if !matches!(action, "approve" | "merge" | "reopen") {
        return problem(
            &state,
            email,
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Unknown action {action:?}."),
            &back,
        )
        .await;
    }
    if form.step == "confirm" {
        let consequences = match action {
            "approve" => vec![
                format!("You approve commit {} of draft pull request #{} — this exact commit, nothing else.", head.clone().unwrap_or_default(), bug.pull_request.as_ref().map(|p| p.number).unwrap_or_default()),
                "A new push to the pull request clears every approval.".to_owned(),
                "Nothing is merged yet: merging is a separate step.".to_owned(),
            ],
            "merge" => vec![
                format!("The desk merges commit {} into the default branch with a real git merge.", head.clone().unwrap_or_default()),
                "The merge happens only if the approvals still hold for this head and it merges cleanly.".to_owned(),
                "The reporters are asked whether it is fixed only after the recorder proves the merge is live.".to_owned(),
            ],
            _ => vec![
                "The bug goes back to the start of the loop: the crew must prove it again.".to_owned(),
                "Approvals and the current fix stop counting.".to_owned(),
                "Reporters see on their tracking page that the bug was reopened.".to_owned(),
            ],
        };
        let page = DeskPage::Confirm(Box::new(Confirm {
            owner: account.email.clone(),
            csrf: form.csrf.clone(),
            bug: id.clone(),
            action: action.to_owned(),
            head: head.clone().filter(|_| action != "reopen"),
            consequences,
        }));
        return render(&state, &format!("{back}/act"), StatusCode::OK, page).await;
    }
    let actor = Actor::Owner {
        id: account.id.clone(),
    };
    let result = match action {
        "approve" | "merge" => {
            let Some(head) = form.head.clone() else {
                return problem(
                    &state,
                    email,
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "The exact head is missing.".into(),
                    &back,
                )
                .await;
            };
            let body = serde_json::json!({"head": head}).to_string();
            if action == "approve" {
                if state.local_forge.is_some() {
                    crate::forge_api::approve(&state, &id, body.as_bytes(), &actor).await
                } else {
                    match domain::workflow::CommitSha::parse(&head) {
                        Ok(head) => {
                            crate::forge_api::record(
                                &state,
                                &id,
                                Command::Approve { head },
                                &actor,
                                &Fetched::default(),
                            )
                            .await
                        }
                        Err(e) => Err(Refused::new(
                            StatusCode::UNPROCESSABLE_ENTITY,
                            "invalid_head",
                            e.to_string(),
                        )),
                    }
                }
            } else {
                crate::forge_api::merge(&state, &id, body.as_bytes(), &actor).await
            }
        }
        _ => {
            let reason = form.reason.clone().unwrap_or_default();
            if reason.trim().is_empty() {
                return problem(
                    &state,
                    email,
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "A reopen needs a reason.".into(),
                    &back,
                )
                .await;
            }
            crate::forge_api::record(
                &state,
                &id,
                Command::OwnerReopen {
                    reason: reason.chars().take(2_000).collect(),
                },
                &actor,
                &Fetched::default(),
            )
            .await
        }
    };
    match result {
        Ok(_) => Redirect::to(&format!("{back}?done={action}")).into_response(),
        Err(refused) => problem(&state, email, refused.status, refused.error.message, &back).await,
    }
}

// ---------------------------------------------------------------------------------------------
// The crew page

/// `GET /desk/crew`.
pub async fn crew(State(state): State<AppState>, credential: Credential) -> Response {
    let Some((account, _)) = owner(&credential) else {
        return to_sign_in("/desk/crew");
    };
    let status = match crate::crew_api::status_json(&state).await {
        Ok(status) => status,
        Err(refused) => {
            return problem(
                &state,
                Some(account.email.clone()),
                refused.status,
                refused.error.message,
                "/desk",
            )
            .await
        }
    };
    let u = |v: &Value| v.as_u64().unwrap_or_default();
    let roles = status["roles"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["role"].as_str().unwrap_or_default().to_owned(),
                r["last_seen"].as_i64(),
                r["age_ms"].as_i64(),
                r["fresh"] == Value::Bool(true),
                r["doing"].as_str().unwrap_or("—").to_owned(),
            )
        })
        .collect();
    let tasks = status["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let place = match (t["outcome"].as_str(), t["accepted_at"].is_i64()) {
                (Some(outcome), _) => outcome.to_owned(),
                (None, true) => "accepted, working".to_owned(),
                (None, false) => "waiting to be accepted".to_owned(),
            };
            (
                t["kind"].as_str().unwrap_or_default().to_owned(),
                t["bug"].as_str().unwrap_or_default().to_owned(),
                t["sender"].as_str().unwrap_or_default().to_owned(),
                t["addressed_to"].as_str().unwrap_or_default().to_owned(),
                place,
                t["body_sha256"]
                    .as_str()
                    .unwrap_or_default()
                    .chars()
                    .take(12)
                    .collect(),
            )
        })
        .collect();
    let page = DeskPage::Crew(Box::new(CrewDesk {
        owner: account.email.clone(),
        connected: status["connected"] == Value::Bool(true),
        roles,
        spend: (
            u(&status["spend"]["book"]["committed"]),
            u(&status["spend"]["book"]["settled"]),
            u(&status["spend"]["budget"]["total"]),
        ),
        calls: (
            u(&status["spend"]["book"]["calls_last_hour"]),
            u(&status["spend"]["budget"]["calls_per_hour"]),
        ),
        tasks,
    }));
    render(&state, "/desk/crew", StatusCode::OK, page).await
}

// ---------------------------------------------------------------------------------------------
// Live updates

/// How long one live connection lasts before the browser reconnects (EventSource does).
const LIVE_FOR: std::time::Duration = std::time::Duration::from_secs(600);

#[derive(Debug, Deserialize)]
pub struct LiveQuery {
    bug: Option<String>,
}

/// What a page shows changes when this changes: a bug's version and what the crew is doing
/// about it, or, for the dashboard, every bug's version and the quarantine queue.
async fn fingerprint(state: &AppState, bug: Option<&str>) -> Option<String> {
    let doing = state.store.heartbeats().await.ok()?;
    match bug {
        Some(id) => {
            let stored = state.store.load_bug(id).await.ok()??;
            let busy: Vec<String> = doing
                .iter()
                .filter(|(_, _, detail)| detail.contains(id))
                .map(|(role, _, detail)| format!("{role}:{detail}"))
                .collect();
            Some(format!("{}|{}", stored.bug.version, busy.join(",")))
        }
        None => {
            let mut versions = 0u64;
            let ids = state.store.bug_ids().await.ok()?;
            for id in &ids {
                versions += state.store.load_bug(id).await.ok()??.bug.version;
            }
            let quarantined = state.store.quarantine_queue(50).await.ok()?.len();
            Some(format!("{}|{versions}|{quarantined}", ids.len()))
        }
    }
}

/// `GET /desk/live[?bug=ID]`: server-sent events. A `changed` event whenever what the page
/// shows changed (checked every second); the page then fetches itself again and swaps its
/// content in place (`/live.js`). Owners only.
pub async fn live(
    State(state): State<AppState>,
    credential: Credential,
    Query(query): Query<LiveQuery>,
) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    if owner(&credential).is_none() {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let deadline = std::time::Instant::now() + LIVE_FOR;
    let first = fingerprint(&state, query.bug.as_deref()).await;
    let stream = futures_util::stream::unfold(
        (state, query.bug, first),
        move |(state, bug, mut last)| async move {
            loop {
                if std::time::Instant::now() >= deadline {
                    return None;
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                let now = fingerprint(&state, bug.as_deref()).await;
                if now.is_some() && now != last {
                    last = now.clone();
                    let event = Event::default()
                        .event("changed")
                        .data(now.unwrap_or_default());
                    return Some((Ok::<_, std::convert::Infallible>(event), (state, bug, last)));
                }
            }
        },
    );
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    response
}
