//! The owners' desk's views: the dashboard's and the crew page's content (hydrated on their
//! server functions, in [`super::dashboard`] and [`super::crew`]), and the pages the server
//! renders alone from a [`DeskPage`] context — sign-in, accepting an invitation, a refusal —
//! which take passwords by plain form posts and load no scripts.

use crate::erase::IntoAnySync;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use {
    super::confirm::Ask,
    crate::dto::{BugState, CrewDesk, Dashboard, DeskAction, DeskPage, InvitePage},
    crate::layout::PageTitle,
    crate::net::{format_time, machine_time, relative_time},
    crate::screen::{CrewScreen, DashboardScreen, ServerHtml},
};

/// The pages the server renders alone from a [`DeskPage`] context: sign-in, accepting an
/// invitation, a refusal. They load no scripts, so the browser's build carries only the
/// answer to a client-side navigation here (the desk needs a full page load).
#[component]
pub fn Desk() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(page) = use_context::<DeskPage>() {
        return server_page(page);
    }
    view! {
        <section class="panel">
            <h1>"Desk"</h1>
            <p><a href="/desk" rel="external">"Open the desk"</a></p>
        </section>
    }
    .into_any_sync()
}

#[cfg(feature = "ssr")]
fn server_page(page: DeskPage) -> AnyView {
    match page {
        DeskPage::SignIn { error, next } => view! { <SignIn error next/> }.into_any_sync(),
        DeskPage::Invite(invite) => view! { <InviteView invite=*invite/> }.into_any_sync(),
        DeskPage::Problem {
            owner,
            message,
            back,
        } => view! {
            <PageTitle text="Problem · Desk · Reporter-to-Release"/>
            {owner.map(|owner| view! { <DeskNav owner/> })}
            <section class="panel">
                <h1>"That did not work"</h1>
                <p class="error" role="alert" data-testid="desk-problem">{message}</p>
                <p><a href=back>"Back"</a></p>
            </section>
        }
        .into_any_sync(),
    }
}

#[cfg(feature = "ssr")]
#[component]
pub(crate) fn DeskNav(owner: String) -> impl IntoView {
    view! {
        <nav class="desk-nav" aria-label="Desk">
            <ul>
                <li><a href="/desk" rel="external">"Bugs"</a></li>
                <li><a href="/desk/crew" rel="external">"Crew"</a></li>
                <li><a href="/desk/owners" rel="external">"Owners"</a></li>
            </ul>
            <form method="post" action="/desk/sign-out" class="inline-form">
                <span class="hint">"Signed in as " <strong data-testid="desk-owner">{owner}</strong></span>
                " "
                <button type="submit" class="button secondary">"Sign out"</button>
            </form>
        </nav>
    }
}

#[cfg(feature = "ssr")]
#[component]
fn SignIn(error: Option<String>, next: String) -> impl IntoView {
    view! {
        <PageTitle text="Sign in · Desk · Reporter-to-Release"/>
        <section class="panel narrow">
            <h1>"Owners sign in"</h1>
            <p class="lede">"The desk is where people decide: approve exact commits, merge, reopen."</p>
            {error.map(|e| view! { <p class="error" role="alert" data-testid="sign-in-error">{e}</p> })}
            <form method="post" action="/desk/sign-in" class="cart-form">
                <input type="hidden" name="next" value=next/>
                <div class="field">
                    <label for="email">"Email"</label>
                    <input id="email" name="email" type="email" autocomplete="username" required/>
                </div>
                <div class="field">
                    <label for="password">"Password"</label>
                    <input id="password" name="password" type="password" autocomplete="current-password" required/>
                </div>
                <button type="submit" class="button">"Sign in"</button>
            </form>
        </section>
    }
}

/// A moment as "3 hours ago", with the exact time on hover and for machines.
#[cfg(feature = "ssr")]
#[component]
fn When(at: i64, now: i64) -> impl IntoView {
    view! { <time datetime=machine_time(at) title=format_time(at)>{relative_time(at, now)}</time> }
}

#[cfg(feature = "ssr")]
pub(crate) fn state_words(state: BugState) -> String {
    state.as_str().replace('_', " ")
}

/// A desk server function's refusal: signed out (with the way back in) or the reason.
#[component]
pub(crate) fn DeskRefusal(error: crate::dto::DeskError, back: String) -> impl IntoView {
    let sign_in = error
        .is_signed_out()
        .then(|| format!("/desk/sign-in?next={back}"));
    view! {
        <section class="panel">
            <h1>{if sign_in.is_some() { "Sign in again" } else { "That did not work" }}</h1>
            <p class="error" role="alert" data-testid="desk-problem">{error.message}</p>
            {match sign_in {
                Some(href) => view! { <p><a href=href rel="external">"Sign in"</a></p> }.into_any_sync(),
                None => view! { <p><a href=back rel="external">"Back"</a></p> }.into_any_sync(),
            }}
        </section>
    }
}

/// The dashboard as the server sends it: its parts drawn apart, so a live redraw replaces the
/// list without touching the search form a person may be typing in.
#[cfg(feature = "ssr")]
pub(crate) fn dashboard_screen(dashboard: Dashboard) -> DashboardScreen {
    use leptos::server_fn::ServerFn;
    let filter = dashboard.filter.clone();
    let selected = |current: &Option<BugState>, value: BugState| *current == Some(value);
    let states: Vec<BugState> = dashboard.counts.iter().map(|(s, _)| *s).collect();
    let shown = dashboard.bugs.len();
    let paging = dashboard.paging.clone();
    let csrf = dashboard.csrf.clone();
    let now = dashboard.now;
    let counts_html = ServerHtml::render(view! {
        <DeskNav owner=dashboard.owner.clone()/>
        <section class="panel">
            <h1>"Bugs"</h1>
            {dashboard.notice.clone().map(|n| view! { <p class="notice" role="status" data-testid="desk-notice">{n}</p> })}
            <p class="hint" data-testid="crew-connection">
                {if dashboard.crew_connected { "The crew is connected." } else { "The crew is not connected: see the crew page." }}
            </p>
            <ul class="counts" aria-label="Bugs by state" data-testid="state-counts">
                {dashboard.counts.iter().map(|(state, count)| view! {
                    <li>
                        <a href=format!("/desk?state={}", state.as_str()) rel="external">
                            <span class="count">{*count}</span>" "{state_words(*state)}
                        </a>
                    </li>
                }).collect_view()}
            </ul>
        </section>
    });
    let components = dashboard.components.clone();
    let filters_html = ServerHtml::render(view! {
        <h2 id="filters">"Find bugs"</h2>
            <form method="get" action="/desk" class="filters" aria-labelledby="filters">
                <div class="field">
                    <label for="f-q">"Search"</label>
                    <input id="f-q" name="q" type="search" value=filter.q.clone().unwrap_or_default()/>
                </div>
                <div class="field">
                    <label for="f-state">"State"</label>
                    <select id="f-state" name="state">
                        <option value="">"Any"</option>
                        {states.iter().map(|s| view! {
                            <option value=s.as_str() selected=selected(&filter.state, *s)>{state_words(*s)}</option>
                        }).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="f-component">"Component"</label>
                    <select id="f-component" name="component">
                        <option value="">"Any"</option>
                        {components.iter().map(|c| view! {
                            <option value=c.clone() selected=filter.component.as_deref() == Some(c.as_str())>{c.clone()}</option>
                        }).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="f-tier">"Tier"</label>
                    <select id="f-tier" name="tier">
                        <option value="">"Any"</option>
                        {[0u8, 1, 2].into_iter().map(|t| view! {
                            <option value=t.to_string() selected=filter.tier == Some(t)>{format!("Tier {t}")}</option>
                        }).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="f-age">"At least this many days old"</label>
                    <input id="f-age" name="age" type="number" min="0" max="3650" value=filter.min_age_days.map(|d| d.to_string()).unwrap_or_default()/>
                </div>
                <div class="field">
                    <label for="f-sort">"Sort"</label>
                    <select id="f-sort" name="sort">
                        {[("waiting", "Waiting for a person first"), ("newest", "Newest first"), ("oldest", "Oldest first"), ("state", "By state")].into_iter().map(|(value, words)| view! {
                            <option value=value selected=filter.sort == value>{words}</option>
                        }).collect_view()}
                    </select>
                </div>
                <button type="submit" class="button">"Show"</button>
            </form>
    });
    let bugs = dashboard.bugs.clone();
    let total = dashboard.total;
    let list_html = ServerHtml::render(view! {
        <p class="hint" role="status" data-testid="shown-count">{
                if shown == 0 {
                    format!("0 of {} bugs", total)
                } else if paging.pages > 1 {
                    format!(
                        "{}–{} of {} matching ({} bugs in all) · page {} of {}",
                        paging.first,
                        paging.first + shown - 1,
                        paging.matching,
                        total,
                        paging.page,
                        paging.pages
                    )
                } else {
                    format!("{} of {} bugs", paging.matching.max(shown), total)
                }
            }</p>
            <div class="table-wrap" tabindex="0" role="region" aria-label="Bugs">
                <table class="bugs" data-testid="bug-table">
                    <caption class="visually-hidden">"Bugs, what waits for a person first"</caption>
                    <thead>
                        <tr><th scope="col">"Bug"</th><th scope="col">"State"</th><th scope="col">"Waiting for"</th><th scope="col">"Component"</th><th scope="col">"Reports"</th><th scope="col">"Opened"</th></tr>
                    </thead>
                    <tbody>
                        {bugs.into_iter().map(|bug| view! {
                            <tr data-bug=bug.id.clone()>
                                <td><a href=format!("/desk/bugs/{}", bug.id) rel="external">{bug.title.clone()}</a><br/><code>{bug.id.clone()}</code></td>
                                <td data-label="State"><span class=format!("state state-{}", bug.state.as_str())>{state_words(bug.state)}</span>{bug.tier.map(|t| format!(" · tier {t}"))}</td>
                                <td data-label="Waiting for">{bug.waiting_for.clone().unwrap_or_else(|| "—".into())}</td>
                                <td data-label="Component">{bug.component.clone()}</td>
                                <td data-label="Reports">{bug.reports}</td>
                                <td data-label="Opened"><When at=bug.opened_at now/></td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
            {(paging.previous.is_some() || paging.next.is_some()).then(|| view! {
                <nav class="pager" aria-label="Pages of bugs" data-testid="pager">
                    {paging.previous.clone().map(|href| view! { <a href=href rel="external prev">"← Previous page"</a> })}
                    " "
                    {paging.next.clone().map(|href| view! { <a href=href rel="external next">"Next page →"</a> })}
                </nav>
            })}
    });
    let quarantine = dashboard.quarantine.clone();
    let quarantine_html = ServerHtml::render(view! {
        <section class="panel">
            <h2>"Quarantine"</h2>
            <p class="hint">"Reports the airlock held back. Their text was never stored: only when, where and why. Mark an item handled once you have looked at it (and written to its reporter, if they left a way back)."</p>
            {if quarantine.is_empty() {
                view! { <p data-testid="quarantine-empty">"Nothing in quarantine."</p> }.into_any_sync()
            } else {
                view! {
                    <ul class="plain" data-testid="quarantine">
                        {quarantine.into_iter().map(|q| { let csrf = csrf.clone(); view! {
                            <li>
                                <code>{q.id.clone()}</code>" · "{q.component}" · "<When at=q.at now/>" · "{q.families.join(", ")}
                                " · "{if q.contact { "the reporter left an email address" } else { "no way back to the reporter but their tracking page" }}
                                <Ask bug=String::new() action=DeskAction::Contact label=format!("Write to the reporter of {}…", q.id) report=q.id.clone()/>
                                <form method="post" action=crate::desk_fns::QuarantineHandled::url() data-handled="">
                                    <input type="hidden" name="report" value=q.id.clone()/>
                                    <input type="hidden" name="csrf" value=csrf.clone()/>
                                    <button type="submit" class="button secondary" data-testid="quarantine-handled">
                                        {format!("Mark {} handled", q.id)}
                                    </button>
                                </form>
                            </li>
                        }}).collect_view()}
                    </ul>
                }.into_any_sync()
            }}
        </section>
    });
    DashboardScreen {
        counts_html,
        filters_html,
        list_html,
        quarantine_html,
        data: dashboard,
    }
}

/// The crew page as the server sends it.
#[cfg(feature = "ssr")]
pub(crate) fn crew_screen(crew: CrewDesk) -> CrewScreen {
    CrewScreen {
        html: ServerHtml::render(view! { <CrewView crew=crew.clone()/> }),
        form_csrf: crew.csrf.clone(),
        data: crew,
    }
}

/// The crew page's content.
#[cfg(feature = "ssr")]
#[component]
fn CrewView(crew: CrewDesk) -> impl IntoView {
    let (committed, settled, total) = crew.spend;
    let dollars =
        |micros: u64| format!("${}.{:04}", micros / 1_000_000, (micros % 1_000_000) / 100);
    view! {
        <DeskNav owner=crew.owner.clone()/>
        <section class="panel">
            <h1>"Crew"</h1>
            <p data-testid="crew-status" class=if crew.connected { "ok" } else { "error" }>
                {if crew.connected {
                    "Connected: all four roles sent a heartbeat in the last 90 seconds."
                } else {
                    "Not connected: a role has not sent a heartbeat in the last 90 seconds."
                }}
            </p>
            <div class="table-wrap" tabindex="0" role="region" aria-label="Crew roles">
                <table data-testid="crew-roles">
                    <caption class="visually-hidden">"Each role's last heartbeat"</caption>
                    <thead><tr><th scope="col">"Role"</th><th scope="col">"Last heartbeat"</th><th scope="col">"Connection"</th><th scope="col">"Doing"</th></tr></thead>
                    <tbody>
                        {crew.roles.into_iter().map(|(role, seen, age, fresh, doing)| { let key = role.clone(); view! {
                            <tr data-role=key>
                                <th scope="row">{role}</th>
                                <td>{match (seen, age) { (Some(at), Some(age)) => format!("{} ({} s ago)", format_time(at), age / 1000), _ => "never".to_owned() }}</td>
                                <td>{if fresh { "connected" } else { "not connected" }}</td>
                                <td>{doing}</td>
                            </tr>
                        }}).collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
        <section class="panel">
            <h2>"Spend"</h2>
            <p data-testid="crew-spend">{format!("{} committed ({} settled) of a {} budget; {} of {} calls in the last hour.", dollars(committed), dollars(settled), dollars(total), crew.calls.0, crew.calls.1)}</p>
            <p data-testid="crew-strangers">{crew.strangers.clone()}</p>
            {if crew.bug_spend.is_empty() {
                view! { <p>"No model call has been booked to a bug yet."</p> }.into_any_sync()
            } else {
                let per_bug = crew.per_bug;
                view! {
                    <div class="table-wrap" tabindex="0" role="region" aria-label="Spend by bug">
                        <table data-testid="bug-spend">
                            <caption>{format!("The bugs that cost most (each may cost at most {})", dollars(per_bug))}</caption>
                            <thead><tr><th scope="col">"Bug"</th><th scope="col">"Spent"</th><th scope="col">"Calls"</th></tr></thead>
                            <tbody>
                                {crew.bug_spend.into_iter().map(|(bug, spent, calls)| view! {
                                    <tr><td><a href=format!("/desk/bugs/{bug}")><code>{bug.clone()}</code></a></td><td>{dollars(spent)}</td><td>{calls}</td></tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any_sync()
            }}
        </section>
        <section class="panel">
            <h2>"Projects"</h2>
            <p class="hint">"Each report's component names its project: its repository, how its tests run and the folders a fix may change. Add or change one with the form below the page, or with r2r project add and r2r project edit; the environment configures the default one."</p>
            <div class="table-wrap" tabindex="0" role="region" aria-label="Projects">
                <table data-testid="projects">
                    <thead><tr><th scope="col">"Project"</th><th scope="col">"Components"</th><th scope="col">"Tests"</th><th scope="col">"Repository"</th><th scope="col">"Fixes in"</th><th scope="col">"Crew"</th><th scope="col">"Spent"</th><th scope="col">"Changed"</th></tr></thead>
                    <tbody>
                        {crew.projects.into_iter().map(|p| view! {
                            <tr data-project=p.id.clone()>
                                <th scope="row"><code>{p.id.clone()}</code>" "{p.name.clone()}</th>
                                <td>{p.components.clone()}</td>
                                <td>{p.profile.clone()}<br/><small data-testid="test-paths">{p.test_paths.clone()}</small></td>
                                <td><code>{p.forge.clone()}</code></td>
                                <td>{p.fix_paths.clone()}</td>
                                <td>{if p.crew { "on" } else { "off" }}</td>
                                <td>{format!("{} ({} call{})", dollars(p.spent), p.calls, if p.calls == 1 { "" } else { "s" })}</td>
                                <td>{match &p.changed { Some((by, at)) => format!("{} by {by}", format_time(*at)), None => "by the environment".to_owned() }}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
        <ReleasesView releases=crew.releases.clone() csrf=crew.csrf.clone()/>
        <section class="panel">
            <h2>"Sandbox"</h2>
            <ul data-testid="sandbox">
                {crew.sandbox.into_iter().map(|line| view! { <li>{line}</li> }).collect_view()}
            </ul>
        </section>
        <section class="panel">
            <h2>"Recent tasks"</h2>
            {if crew.tasks.is_empty() {
                view! { <p>"No hand-offs yet."</p> }.into_any_sync()
            } else {
                view! {
                    <div class="table-wrap" tabindex="0" role="region" aria-label="Recent hand-offs">
                        <table data-testid="crew-tasks">
                            <thead><tr><th scope="col">"Task"</th><th scope="col">"Bug"</th><th scope="col">"From → to"</th><th scope="col">"Where it is"</th><th scope="col">"Body hash"</th></tr></thead>
                            <tbody>
                                {crew.tasks.into_iter().map(|(kind, bug, from, to, outcome, hash)| view! {
                                    <tr><td>{kind}</td><td><code>{bug}</code></td><td>{format!("{from} → {to}")}</td><td>{outcome}</td><td><code>{hash}</code></td></tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any_sync()
            }}
        </section>
    }
}

/// The services this desk releases: what is live, where the latest release stands, and the
/// earlier releases an owner may serve again (each a form to `desk_act`'s `rollback`, which
/// asks for the reason that goes into every affected bug's ledger).
#[cfg(feature = "ssr")]
#[component]
fn ReleasesView(releases: Vec<crate::dto::ReleaseRow>, csrf: String) -> impl IntoView {
    use crate::desk_fns::DeskAct;
    use leptos::server_fn::ServerFn;
    if releases.is_empty() {
        return ().into_any_sync();
    }
    let short = |commit: &str| commit.chars().take(12).collect::<String>();
    view! {
        <section class="panel" data-testid="releases">
            <h2 id="releases">"Releases"</h2>
            <p class="hint">"Serving an earlier release again checks its artifact against the hash taken when it was built, starts it and waits for its health to name its commit. Every bug whose fix it lacks goes back to merged with your reason in its ledger, and its reporters are no longer asked about a fix that is not live. The head you roll back from is not released again until another head lands."</p>
            {releases.into_iter().map(|release| {
                let service = release.service.clone();
                let live = release.live.clone();
                view! {
                    <h3 data-service=service.clone()>{format!("/live/{} (project {})", release.service, release.project)}</h3>
                    <p data-testid="release-live">{match &release.live {
                        Some(commit) => format!("Live: {commit}."),
                        None => "Nothing is live yet.".to_owned(),
                    }}</p>
                    {release.latest.clone().map(|(commit, step, detail)| view! {
                        <p data-testid="release-latest">{format!("Latest release: {} — {step}: {detail}", short(&commit))}</p>
                    })}
                    {release.leader_elsewhere.clone().map(|leader| view! {
                        <p class="hint">{format!("The desk server at {leader} leads this service's deployer and holds its releases: roll back from its crew page.")}</p>
                    })}
                    <div class="table-wrap" tabindex="0" role="region" aria-label=format!("Releases of {service}")>
                        <table data-testid="release-list">
                            <thead><tr><th scope="col">"Commit"</th><th scope="col">"Built"</th><th scope="col">"Serve it again"</th></tr></thead>
                            <tbody>
                                {release.built.into_iter().map(|(commit, at)| {
                                    let is_live = live.as_deref() == Some(commit.as_str());
                                    let field = format!("rollback-{}-{}", service, short(&commit));
                                    view! {
                                        <tr data-commit=commit.clone()>
                                            <td><code>{short(&commit)}</code></td>
                                            <td>{format_time(at)}</td>
                                            <td>{if is_live || release.leader_elsewhere.is_some() {
                                                view! { <span>{if is_live { "live now" } else { "on the leading server" }}</span> }.into_any_sync()
                                            } else {
                                                view! {
                                                    <form method="post" action=DeskAct::url() class="inline-form" data-act="">
                                                        <input type="hidden" name="csrf" value=csrf.clone()/>
                                                        <input type="hidden" name="action" value="rollback"/>
                                                        <input type="hidden" name="of" value=service.clone()/>
                                                        <input type="hidden" name="head" value=commit.clone()/>
                                                        <label for=field.clone()>"Why"</label>
                                                        <input id=field name="reason" type="text" required maxlength="2000" autocomplete="off"/>
                                                        <button type="submit" class="button danger" data-testid="roll-back">{format!("Serve {} again", short(&commit))}</button>
                                                    </form>
                                                }.into_any_sync()
                                            }}</td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }
            }).collect_view()}
        </section>
    }
    .into_any_sync()
}

#[cfg(feature = "ssr")]
#[component]
fn InviteView(invite: InvitePage) -> impl IntoView {
    if invite.created && invite.pending {
        return view! {
            <PageTitle text="Almost there · Desk · Reporter-to-Release"/>
            <section class="panel narrow">
                <h1>"Your account waits for a second owner"</h1>
                <p role="status" data-testid="invite-pending">{format!("The account {} exists, but it counts only once an owner other than the one who invited you confirms it on the desk's Owners page. Until then you cannot sign in. Ask them to confirm you.", invite.email)}</p>
            </section>
        }
        .into_any_sync();
    }
    if invite.created {
        return view! {
            <PageTitle text="Welcome · Desk · Reporter-to-Release"/>
            <section class="panel narrow">
                <h1>"You are an owner now"</h1>
                <p role="status" data-testid="invite-created">{format!("The account {} exists. Sign in with it.", invite.email)}</p>
                <p><a class="button" href="/desk/sign-in" rel="external">"Sign in"</a></p>
            </section>
        }
        .into_any_sync();
    }
    view! {
        <PageTitle text="Accept an invitation · Desk · Reporter-to-Release"/>
        <section class="panel narrow">
            <h1>"Become an owner of this desk"</h1>
            <p class="hint">"An owner invited you. Choose the email and password you will sign in with."</p>
            {invite.error.clone().map(|e| view! { <p class="error" role="alert" data-testid="invite-error">{e}" The password was not kept: type it again."</p> })}
            <form method="post" action="/desk/invite" class="report-form">
                <div class="field">
                    <label for="invite-token">"Invitation"</label>
                    <p class="hint" id="invite-token-hint">"The whole link you were sent, or the part after the #. Filled in for you when the page can read it."</p>
                    <input id="invite-token" name="token" type="password" autocomplete="off" required aria-describedby="invite-token-hint" value=invite.token.clone()/>
                </div>
                <div class="field">
                    <label for="invite-email">"Email"</label>
                    <input id="invite-email" name="email" type="email" autocomplete="username" required value=invite.email.clone()/>
                </div>
                <div class="field">
                    <label for="invite-password">"Password (at least 12 characters)"</label>
                    <input id="invite-password" name="password" type="password" autocomplete="new-password" required minlength="12"/>
                </div>
                <button type="submit" class="button">"Create my owner account"</button>
            </form>
        </section>
        <script src="/invite.js" defer></script>
    }
    .into_any_sync()
}
