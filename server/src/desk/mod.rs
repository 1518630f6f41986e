//! The owners' desk pages: `/desk` (dashboard), `/desk/bugs/{id}` (reports, evidence, review,
//! release, ledger), `/desk/crew`, `/desk/owners`, the questions before each action, sign-in
//! and sign-out. The signed-in pages are hydrated on the desk's server functions ([`fns`]),
//! rendered whole on the server first so they work without JavaScript; every action is a
//! server function carrying the session's CSRF token, through the same code — and the same
//! engine guards — as the API. Sign-in and accepting an invitation take passwords by plain
//! form posts, rendered without scripts.
//!
//! Here: the shared helpers, sign-in, the dashboard, the crew page and the bug page's
//! handler; the bug view's data, the actions and the live updates have their own modules.

mod actions;
mod bug;
pub(crate) mod fns;
mod live;
mod owners;

pub use actions::{confirm_bug, confirm_report};
pub use live::{live, LiveQuery};
pub use owners::{invite_accept, invite_page, owners, InviteForm};

use crate::auth::{csrf_token, Credential};
use crate::web::no_store;
use crate::web::AppState;
use crate::web::ClientAddr;
use crate::web::Refused;
use app::dto::{
    BugDesk, BugRow, CheckView, Confirm, CrewDesk, Dashboard, DeskFilter, DeskPage, DeskQuery,
    DeskReport, EvidenceView, LedgerRow, Paging, QuarantineRow,
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

/// The address of desk page `page` saying that `done` (on bug `bug`, or on none) was just
/// done: `?done=ACTION.TAG`, the tag bound to the owner's session, so a notice such as
/// "Approved." shows only after the desk itself did it — never from someone's link.
fn done_address(state: &AppState, session: &str, page: &str, bug: &str, done: &str) -> String {
    let tag = tag(state, "done", session, &format!("{bug}:{done}"));
    format!("{page}?done={done}.{tag}")
}

/// [`crate::auth::session_tag`] under this desk's session key.
fn tag(state: &AppState, purpose: &str, session: &str, data: &str) -> String {
    crate::auth::session_tag(
        state.auth.session_key.expose().as_bytes(),
        purpose,
        session,
        data,
    )
}

/// [`crate::auth::session_tag_valid`] under this desk's session key.
fn tag_valid(state: &AppState, purpose: &str, session: &str, data: &str, presented: &str) -> bool {
    crate::auth::session_tag_valid(
        state.auth.session_key.expose().as_bytes(),
        purpose,
        session,
        data,
        presented,
    )
}

/// The action a `?done=` value names, when [`done_address`] wrote it for this session and bug.
fn done_said<'a>(
    state: &AppState,
    session: &str,
    bug: &str,
    presented: Option<&'a str>,
) -> Option<&'a str> {
    let (done, tag) = presented?.split_once('.')?;
    tag_valid(state, "done", session, &format!("{bug}:{done}"), tag).then_some(done)
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
            refused.status(),
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
            let status = refused.status();
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
            refused.status(),
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

/// What a bug waits for now: a new bug whose crew start a stranger's budget put off says so
/// (and when it starts); otherwise [`waiting_for`].
pub async fn waiting_for_now(state: &AppState, bug: &Bug) -> Result<Option<String>, Refused> {
    if bug.state == BugState::New {
        let now = crate::clock::now_ms();
        if let Some(at) = state.store.crew_start_put_off(&bug.id, now).await? {
            return Ok(Some(format!(
                "crew budget: the address that filed it already had {} new {} bug(s) started on this hour (R2R_STRANGER_BUGS_PER_HOUR); the crew's triage starts in {} min, the report is kept meanwhile (an owner who vouches for it can Promote it to start now)",
                state.reporter.stranger_bugs_per_hour,
                bug.component,
                (at - now).div_euclid(60_000) + 1
            )));
        }
    }
    Ok(waiting_for(
        bug,
        &state.releases_of(&state.projects.scope().target_of(&bug.component).project),
    ))
}

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
            Some(merge) if releases.leader_elsewhere().is_some() => format!(
                "the release of {}, by the desk server at {} (it leads this service's deployer)",
                short(&merge.merge_commit),
                releases.leader_elsewhere().unwrap_or_default()
            ),
            Some(merge) if releases.service.is_some() => {
                let sha = merge.merge_commit.as_str();
                // A head held back after the merge holds the merge back too.
                match releases
                    .progress()
                    .filter(|p| p.commit == sha || p.step == crate::web::ReleaseStep::Held)
                {
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
        BugState::Verified | BugState::Duplicate => None,
    }
}

fn nonempty(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The dashboard's row for a listed bug (its first report's title, what it waits for).
async fn row(state: &AppState, listed: store::ListedBug) -> Result<BugRow, Refused> {
    let bug = listed.bug;
    let first = match bug.reports.first() {
        Some(report) => state.store.report(report).await?,
        None => None,
    };
    let title = first
        .as_ref()
        .and_then(|r| r.dossier.as_ref().map(|d| d.title.clone()))
        .unwrap_or_else(|| bug.id.clone());
    Ok(BugRow {
        id: bug.id.clone(),
        title,
        component: bug.component.clone(),
        state: bug.state,
        tier: bug.pull_request.as_ref().map(|pr| pr.tier.number()),
        reports: bug.reports.len(),
        opened_at: first.map_or(listed.opened_at, |r| r.created_at),
        waiting_for: waiting_for_now(state, &bug).await?,
    })
}

/// Bugs on one page of the dashboard.
pub const PAGE_SIZE: u32 = 50;

/// The dashboard URL for `filter` at `page`.
fn page_href(filter: &DeskFilter, page: u32) -> String {
    let mut pairs: Vec<(&str, String)> = Vec::new();
    if let Some(q) = &filter.q {
        pairs.push(("q", q.clone()));
    }
    if let Some(state) = &filter.state {
        pairs.push(("state", state.as_str().to_owned()));
    }
    if let Some(component) = &filter.component {
        pairs.push(("component", component.clone()));
    }
    if let Some(tier) = filter.tier {
        pairs.push(("tier", tier.to_string()));
    }
    if let Some(age) = filter.min_age_days {
        pairs.push(("age", age.to_string()));
    }
    pairs.push(("sort", filter.sort.clone()));
    pairs.push(("page", page.to_string()));
    format!(
        "/desk?{}",
        serde_urlencoded::to_string(&pairs).unwrap_or_default()
    )
}

/// The dashboard of `account` (signed in with `session`) for `query`: filtered, sorted and
/// paged in the database. The one builder of the dashboard: the `/desk` page's server
/// function ([`fns`]) calls it, during server rendering and from the hydrated page alike.
pub(crate) async fn dashboard_data(
    state: &AppState,
    account: &OwnerAccount,
    session: &str,
    query: DeskQuery,
) -> Result<Dashboard, Refused> {
    let notice = match done_said(state, session, "", query.done.as_deref()) {
        Some("contact") => Some("Message sent: it is on the reporter's tracking page now, and the concierge emails it when they left an address."),
        Some("handled") => Some("Marked handled: the report left the quarantine queue (who and when are kept)."),
        _ => None,
    }
    .map(str::to_owned);
    let filter = DeskFilter {
        state: nonempty(query.state).and_then(|s| BugState::parse(&s)),
        component: nonempty(query.component).map(|c| c.chars().take(100).collect()),
        tier: nonempty(query.tier)
            .and_then(|t| t.parse().ok())
            .filter(|t| *t <= 2),
        min_age_days: nonempty(query.age)
            .and_then(|a| a.parse().ok())
            .filter(|d| *d <= 36_500),
        q: nonempty(query.q).map(|q| q.chars().take(200).collect()),
        sort: nonempty(query.sort)
            .filter(|s| matches!(s.as_str(), "waiting" | "newest" | "oldest" | "state"))
            .unwrap_or_else(|| "waiting".into()),
    };
    let page = nonempty(query.page)
        .and_then(|p| p.parse::<u32>().ok())
        .filter(|p| *p >= 1)
        .unwrap_or(1)
        .min(u32::MAX / PAGE_SIZE);
    let now = crate::clock::now_ms();
    let listing = state
        .store
        .bug_listing(&store::ListingQuery {
            state: filter.state.map(|s| s.as_str().to_owned()),
            component: filter.component.clone(),
            tier: filter.tier.map(|t| {
                match t {
                    0 => "Docs",
                    1 => "Source",
                    _ => "Sensitive",
                }
                .to_owned()
            }),
            opened_before: filter.min_age_days.map(|d| now - i64::from(d) * DAY_MS),
            text: filter.q.clone(),
            sort: match filter.sort.as_str() {
                "newest" => store::ListingSort::Newest,
                "oldest" => store::ListingSort::Oldest,
                "state" => store::ListingSort::State,
                _ => store::ListingSort::Waiting,
            },
            offset: (page - 1) * PAGE_SIZE,
            limit: PAGE_SIZE,
        })
        .await?;
    let total = usize::try_from(listing.total).unwrap_or(usize::MAX);
    let counts: Vec<(BugState, usize)> = BugState::ALL
        .iter()
        .map(|s| {
            let n = listing
                .counts
                .iter()
                .find(|(c, _)| c == s.as_str())
                .map_or(0, |(_, n)| usize::try_from(*n).unwrap_or(usize::MAX));
            (*s, n)
        })
        .collect();
    let components = listing.components.clone();
    let matching = usize::try_from(listing.matching).unwrap_or(usize::MAX);
    let pages = u32::try_from(matching.div_ceil(PAGE_SIZE as usize).max(1)).unwrap_or(u32::MAX);
    let mut shown = Vec::with_capacity(listing.bugs.len());
    for listed in listing.bugs {
        shown.push(row(state, listed).await?);
    }
    let paging = Paging {
        page,
        pages,
        matching,
        first: usize::try_from((page - 1) * PAGE_SIZE).unwrap_or(0) + 1,
        previous: (page > 1).then(|| page_href(&filter, page - 1)),
        next: (page < pages).then(|| page_href(&filter, page + 1)),
    };
    let quarantine = state
        .store
        .quarantine_queue(50)
        .await?
        .into_iter()
        .map(|r| QuarantineRow {
            id: r.id,
            at: r.created_at,
            component: r.component,
            families: r.families,
            contact: r.contact.is_some(),
        })
        .collect();
    let crew = crate::service::crew::status_json(state).await?;
    Ok(Dashboard {
        owner: account.email.clone(),
        counts,
        bugs: shown,
        total,
        paging,
        filter,
        components,
        quarantine,
        crew_connected: crew["connected"] == Value::Bool(true),
        csrf: csrf(state, session),
        notice,
        now,
    })
}

/// `GET /desk`: the hydrated dashboard (its data comes from its server function, run in
/// place while rendering); signed-out visitors go to the sign-in page.
pub async fn dashboard(
    State(state): State<AppState>,
    credential: Credential,
    request: axum::extract::Request,
) -> Response {
    if owner(&credential).is_none() {
        return to_sign_in("/desk");
    }
    page_with_forms(&state, request).await
}

/// A hydrated desk page whose forms post to the desk's server functions: a plain form post
/// (no JavaScript) comes back to it with its answer, so the browser must say where it came
/// from — to this origin only (everything else stays `no-referrer`).
async fn page_with_forms(state: &AppState, request: axum::extract::Request) -> Response {
    let mut response = crate::web::render_hydrated(state, request, fns::desk_server(state)).await;
    response.headers_mut().insert(
        header::REFERRER_POLICY,
        axum::http::HeaderValue::from_static("same-origin"),
    );
    response
}

// ---------------------------------------------------------------------------------------------
// The crew page

/// `GET /desk/crew`.
pub async fn crew(
    State(state): State<AppState>,
    credential: Credential,
    request: axum::extract::Request,
) -> Response {
    if owner(&credential).is_none() {
        return to_sign_in("/desk/crew");
    }
    // Its project form posts to a server function and comes back here.
    page_with_forms(&state, request).await
}

/// The crew page for `account`: each role's heartbeat, spend and recent hand-offs. The one
/// builder of the crew page (its server function calls it).
pub(crate) async fn crew_data(
    state: &AppState,
    account: &OwnerAccount,
    session: &str,
) -> Result<CrewDesk, Refused> {
    let status = crate::service::crew::status_json(state).await?;
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
    Ok(CrewDesk {
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
        bug_spend: state.store.spend_by_bug(10).await?,
        projects: {
            let spend = status["spend"]["by_project"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            state
                .reporter
                .scope()
                .targets
                .iter()
                .map(|t| {
                    let booked = spend.iter().find(|r| r["project"] == t.project.as_str());
                    app::dto::ProjectRow {
                        id: t.project.clone(),
                        name: t.name.clone(),
                        components: t.components.join(", "),
                        profile: t.profile.as_str().to_owned(),
                        forge: format!(
                            "{}{}",
                            t.forge.as_ref().map_or_else(
                                || "no local forge".to_owned(),
                                |f| format!("{} ({})", f.repository().display(), t.branch),
                            ),
                            match (&t.github, &t.follows) {
                                (Some(g), _) => format!("; fixes pushed to GitHub {g}"),
                                (None, Some(g)) => format!("; follows GitHub events of {g}"),
                                (None, None) => String::new(),
                            } + &t
                                .deploy
                                .as_deref()
                                .map_or(String::new(), |d| {
                                    // The variables' names only: a value may be a secret of the
                                    // released program's.
                                    let l = &t.launch;
                                    format!(
                                        "; released at /live/{d} (listens on {port}, arguments {args:?}, environment {env}, assets {assets})",
                                        port = l.port,
                                        args = l.args.join(" "),
                                        env = if l.env.is_empty() {
                                            "none".to_owned()
                                        } else {
                                            l.env.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
                                        },
                                        assets = if l.assets.is_empty() { "none" } else { &l.assets },
                                    )
                                })
                        ),
                        fix_paths: t.fix_allowed_paths.join(", "),
                        test_paths: if t.test_paths.is_empty() {
                            format!(
                                "{} (the {} runner's)",
                                domain::test_paths::defaults(t.profile.as_str()).join(", "),
                                t.profile.as_str()
                            )
                        } else {
                            t.test_paths.join(", ")
                        },
                        crew: t.crew,
                        changed: t.updated.as_ref().map(|(at, by)| (by.clone(), *at)),
                        spent: booked.map_or(0, |r| u(&r["spent"])),
                        calls: booked.map_or(0, |r| u(&r["calls"])),
                    }
                })
                .chain(state.reporter.scope().unserved.iter().map(|(id, at, why)| {
                    app::dto::ProjectRow {
                        id: id.clone(),
                        name: format!("NOT SERVED: {why}; its bugs wait for a person"),
                        changed: Some(("the database".to_owned(), *at)),
                        ..app::dto::ProjectRow::default()
                    }
                }))
                .collect()
        },
        per_bug: state.spend.per_bug,
        strangers: {
            let limit = state.reporter.stranger_bugs_per_hour;
            let waiting = state
                .store
                .crew_starts_waiting(crate::clock::now_ms())
                .await?;
            let book = state.store.spend_summary(crate::clock::now_ms()).await?;
            let money = |micros: u64| {
                format!(
                    "${}.{:02}",
                    micros / 1_000_000,
                    (micros % 1_000_000) / 10_000
                )
            };
            format!(
                "Stranger's budget: the crew starts on at most {limit} new bug(s) an hour from one address for one component (R2R_STRANGER_BUGS_PER_HOUR), at most {} an hour at the per-bug budget; further ones are kept and wait their turn. {waiting} new bug(s) wait for it now. Bugs nobody confirmed or promoted may take {}% of the budget together (R2R_SPEND_UNCONFIRMED_PERCENT): {} of {} used, {} of {} calls this hour; confirmed and promoted bugs keep the rest.",
                money(state.spend.per_bug.saturating_mul(u64::from(limit))),
                state.spend.unconfirmed_percent,
                money(book.unconfirmed_committed),
                money(state.spend.unconfirmed_total()),
                book.unconfirmed_calls_last_hour,
                state.spend.unconfirmed_calls_per_hour(),
            )
        },
        sandbox: sandbox_lines(state).await?,
        releases: state
            .all_releases()
            .into_iter()
            .filter_map(|(project, board)| {
                let service = board.service.clone()?;
                Some(app::dto::ReleaseRow {
                    project,
                    built: board.dir.as_deref().map_or_else(Vec::new, |dir| {
                        crate::service::rollback::built_releases(dir, &service)
                    }),
                    service,
                    live: board.live().map(|l| l.commit),
                    latest: board
                        .progress()
                        .map(|p| (p.commit, p.step.as_str().to_owned(), p.detail)),
                    leader_elsewhere: board.leader_elsewhere(),
                })
            })
            .collect(),
        csrf: csrf_token(state.auth.session_key.expose().as_bytes(), session),
    })
}

/// Where the desk's sandbox runs go, for the crew page: the worker hosts (each one's state,
/// jobs done and last claim) and every job waiting or running, or this process's sandbox.
async fn sandbox_lines(state: &AppState) -> Result<Vec<String>, Refused> {
    let now = crate::clock::now_ms();
    let ago = |at: i64| format!("{} s ago", (now - at).max(0) / 1000);
    let workers = state.store.sandbox_workers().await?;
    let queue = state.store.sandbox_queue().await?;
    let mut lines = Vec::new();
    lines.push(match state.sandbox.runner() {
        sandbox::pool::Runner::Workers => format!(
            "Runs go to worker hosts (R2R_SANDBOX_RUNNER=workers): {} active.",
            workers.iter().filter(|w| w.revoked_at.is_none()).count()
        ),
        sandbox::pool::Runner::Local(backend) => {
            format!("Runs go to this process's own {backend} sandbox (R2R_SANDBOX_RUNNER=local).")
        }
        sandbox::pool::Runner::Nowhere => {
            "This desk has no sandbox (R2R_SANDBOX_BACKEND=none): nothing is measured.".to_owned()
        }
    });
    for worker in &workers {
        lines.push(format!(
            "Worker {}: {}, {} job{} done, last claim {}.",
            worker.name,
            if worker.distrusted_at.is_some() {
                "distrusted (what it measured is measured again)"
            } else if worker.revoked_at.is_some() {
                "revoked"
            } else {
                "active"
            },
            worker.jobs_done,
            if worker.jobs_done == 1 { "" } else { "s" },
            worker.last_seen_at.map_or("never".to_owned(), ago)
        ));
    }
    for (purpose, worker, created) in queue {
        lines.push(match worker {
            Some(worker) => format!(
                "A {purpose} job is running on {worker} (queued {}).",
                ago(created)
            ),
            None => format!(
                "A {purpose} job is waiting for a worker (queued {}).",
                ago(created)
            ),
        });
    }
    Ok(lines)
}

/// `GET /desk/bugs/{id}`: the hydrated bug view (its data comes from its server function,
/// run in place while rendering; an unknown bug is a 404 page); signed-out visitors go to
/// the sign-in page.
pub async fn bug(
    State(state): State<AppState>,
    credential: Credential,
    Path(id): Path<String>,
    request: axum::extract::Request,
) -> Response {
    if owner(&credential).is_none() {
        return to_sign_in(&format!("/desk/bugs/{id}"));
    }
    crate::web::render_hydrated(&state, request, fns::desk_server(&state)).await
}
