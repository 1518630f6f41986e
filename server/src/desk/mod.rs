//! The owners' desk pages: `/desk` (dashboard), `/desk/bugs/{id}` (reports, evidence, review,
//! release, ledger), `/desk/crew`, sign-in and sign-out, and the confirmed actions (approve the
//! exact head, merge, reopen). Rendered on the server for the signed-in owner and served
//! without hydration scripts; actions are form posts carrying the session's CSRF token, and
//! every action goes through the same code — and the same engine guards — as the API.
//!
//! Here: the shared helpers, sign-in, the dashboard and the crew page; the bug view, the
//! actions and the live updates have their own modules.

mod actions;
mod bug;
mod live;
mod owners;

pub use actions::{act, act_on_report, ActForm};
pub use bug::{bug, BugQuery};
pub use live::{live, LiveQuery};
pub use owners::{invite_accept, invite_page, owners, owners_act, InviteForm};

use crate::auth::{csrf_token, csrf_valid, Credential};
use crate::web::no_store;
use crate::web::AppState;
use crate::web::ClientAddr;
use crate::web::Refused;
use app::dto::{
    BugDesk, BugRow, CheckView, Confirm, CrewDesk, Dashboard, DeskFilter, DeskPage, DeskReport,
    EvidenceView, LedgerRow, QuarantineRow,
};
use axum::extract::{Form, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use domain::workflow::{Bug, Command};
use domain::BugState;
use serde::Deserialize;
use serde_json::Value;
use store::OwnerAccount;

const DAY_MS: i64 = 86_400_000;

/// Renders the desk page for `path` without hydration scripts.
async fn render(state: &AppState, path: &str, status: StatusCode, page: DeskPage) -> Response {
    crate::web::render_script_free(state, path, status, page).await
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
    if let Err(refused) = crate::web::session::refuse_cross_site(&headers) {
        return render(
            &state,
            "/desk/sign-in",
            refused.status,
            DeskPage::SignIn {
                error: Some(refused.error.message),
                next,
            },
        )
        .await;
    }
    let client = crate::web::client_key_of(&state, addr, &headers);
    match crate::service::owners::sign_in(&state, &client, &form.email, form.password).await {
        Ok((session, _)) => {
            let mut response = Redirect::to(&next).into_response();
            response.headers_mut().insert(
                header::SET_COOKIE,
                crate::web::session::session_cookie(&state, &session),
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

/// `POST /desk/sign-out`: only from the desk's own pages (another site must not be able to
/// end an owner's session).
pub async fn sign_out(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = crate::web::session::refuse_cross_site(&headers) {
        return problem(
            &state,
            owner(&credential).map(|(account, _)| account.email.clone()),
            refused.status,
            refused.error.message,
            "/desk",
        )
        .await;
    }
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
        crate::web::session::session_cookie_header(&state, "", 0),
    );
    no_store(response)
}

// ---------------------------------------------------------------------------------------------
// Dashboard

/// What a person has to do for a bug, if anything.
pub fn waiting_for(bug: &Bug, releases: &crate::web::Releases) -> Option<String> {
    let short =
        |sha: &domain::workflow::CommitSha| sha.as_str().chars().take(12).collect::<String>();
    match bug.state {
        BugState::NeedsHuman => Some(match bug.needs_human {
            Some(domain::workflow::NeedsHumanReason::TakenOver) => {
                "the owner who took it over (Try again gives it back to the crew)".to_owned()
            }
            Some(reason) => format!(
                "a person: {} (Try again gives it back to the crew; Take it over keeps it with you)",
                reason.plain()
            ),
            None => "a person".to_owned(),
        }),
        BugState::New => Some("the crew's triage".to_owned()),
        BugState::Triaged | BugState::Reopened | BugState::Reproducing => {
            Some("the crew's failing test, re-run by the desk in its sandbox".to_owned())
        }
        BugState::AwaitingReporter => Some("the reporter's answer: is this the bug you saw?".to_owned()),
        BugState::Confirmed | BugState::Fixing => Some(format!(
            "the crew's fix (attempt {}), measured by the desk",
            bug.fix_attempts.saturating_add(1)
        )),
        BugState::InReview => Some("review: approve the exact head".to_owned()),
        BugState::Approved => Some("merge".to_owned()),
        BugState::Merged => Some(match &bug.merge {
            Some(merge) if releases.service.is_some() => {
                let sha = merge.merge_commit.as_str();
                match releases.progress().filter(|p| p.commit == sha) {
                    Some(progress) => format!(
                        "the release of {}: {} — {}",
                        short(&merge.merge_commit),
                        progress.step.as_str(),
                        progress.detail
                    ),
                    None => format!(
                        "the release of {}: the deployer picks up the new head within seconds",
                        short(&merge.merge_commit)
                    ),
                }
            }
            // No deployer on this desk: say what proves the release.
            Some(merge) => format!(
                "the release of {}: a deployment the recorder proves live (r2r recorder verify --sha {} --url <instance> --public-url <public>); no deployer runs on this desk yet",
                short(&merge.merge_commit),
                merge.merge_commit.as_str()
            ),
            None => "the release of the merge".to_owned(),
        }),
        BugState::Deployed => Some("the reporter's answer: does the live fix work for you?".to_owned()),
        BugState::Verified => None,
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
    done: Option<String>,
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
            waiting_for: waiting_for(&bug, &state.releases),
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
    let Some((account, session)) = owner(&credential) else {
        return to_sign_in("/desk");
    };
    let owner_email = account.email.clone();
    let notice = (query.done.as_deref() == Some("contact"))
        .then(|| "Message sent: it is on the reporter's tracking page now, and the concierge emails it when they left an address.".to_owned());
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
        let crew = crate::service::crew::status_json(&state).await?;
        Ok::<_, Refused>(DeskPage::Dashboard(Box::new(Dashboard {
            owner: owner_email.clone(),
            counts,
            bugs: shown.into_iter().map(|(_, row)| row).collect(),
            total,
            filter,
            components,
            quarantine,
            crew_connected: crew["connected"] == Value::Bool(true),
            csrf: csrf(&state, session),
            notice,
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
// The crew page

/// `GET /desk/crew`.
pub async fn crew(State(state): State<AppState>, credential: Credential) -> Response {
    let Some((account, _)) = owner(&credential) else {
        return to_sign_in("/desk/crew");
    };
    let status = match crate::service::crew::status_json(&state).await {
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
        .chain(std::iter::once(&status["recorder"]))
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
