//! What the desk does for a member of the public: check and file a report (through the
//! airlock, clustered with open bugs), build their tracking view in plain words, and record
//! their answers to the two questions. The capability is only ever held as its hash here;
//! logs name report ids only.

use crate::clock::now_ms;
use crate::error::Kind;
use crate::ratelimit::Limiter;
use crate::web::AppState;
use crate::web::Refused;
use app::dto::{
    limits, Answer, AnswerOutcome, ApiError, BugView, MessageView, NoticeView, QuestionView,
    ReleaseView, ReportForm, ReportReceipt, ReportView, ReproductionView, TimelineEntry, Tracking,
};
use domain::airlock::{admit, screen, RawReport};
use domain::workflow::{
    decide, open_bug_at, Actor, Bug, Command, DeploymentStatus, Evidence, QuestionKind,
};
use domain::{BugState, Capability, CapabilityHash};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use store::{
    choose_cluster, ApplyError, IntakeLimits, NewReport, OpenCluster, ReportContent, StoredReport,
    StrangerBudget,
};

// ---------------------------------------------------------------------------------------------
// Validation

/// Reads and checks a report's fields from a JSON object (or form fields, as strings).
/// Every problem is reported against its field, all at once.
pub fn validate_report(
    object: &Map<String, Value>,
    components: &[String],
) -> Result<ReportForm, ApiError> {
    const KNOWN: [&str; 6] = [
        "component",
        "title",
        "what_happened",
        "expected",
        "steps",
        "contact",
    ];
    let mut fields = BTreeMap::new();
    for key in object.keys() {
        if !KNOWN.contains(&key.as_str()) {
            fields.insert(
                key.clone(),
                format!("unknown field; a report has {}", KNOWN.join(", ")),
            );
        }
    }
    let mut text = |name: &str, required: bool, max: usize| -> String {
        match object.get(name) {
            None | Some(Value::Null) if required => {
                fields.insert(name.to_owned(), "required".to_owned());
                String::new()
            }
            None | Some(Value::Null) => String::new(),
            Some(Value::String(value)) => {
                let trimmed = value.trim();
                if required && trimmed.is_empty() {
                    fields.insert(name.to_owned(), "required; it cannot be blank".to_owned());
                } else if trimmed.chars().count() > max {
                    fields.insert(
                        name.to_owned(),
                        format!(
                            "too long: {} characters, the limit is {max}",
                            trimmed.chars().count()
                        ),
                    );
                } else if trimmed.contains('\0') {
                    fields.insert(name.to_owned(), "contains a NUL character".to_owned());
                }
                trimmed.to_owned()
            }
            Some(_) => {
                fields.insert(name.to_owned(), "must be a string".to_owned());
                String::new()
            }
        }
    };
    let component = text("component", true, 40);
    let title = text("title", true, limits::TITLE);
    let what_happened = text("what_happened", true, limits::WHAT_HAPPENED);
    let expected = text("expected", false, limits::EXPECTED);
    let steps = text("steps", false, limits::STEPS);
    let contact = text("contact", false, limits::CONTACT);
    if !component.is_empty() && !components.contains(&component) {
        fields.insert(
            "component".to_owned(),
            format!(
                "unknown component; choose one of: {}",
                components.join(", ")
            ),
        );
    }
    if !contact.is_empty()
        && !fields.contains_key("contact")
        && (!crate::config::looks_like_email(&contact) || contact.chars().any(char::is_control))
    {
        fields.insert(
            "contact".to_owned(),
            "expected an email address such as you@example.org, or leave it empty".to_owned(),
        );
    }
    let form = ReportForm {
        component,
        title,
        what_happened,
        expected,
        steps,
        contact: (!contact.is_empty()).then_some(contact),
    };
    if fields.is_empty() {
        Ok(form)
    } else {
        Err(ApiError {
            error: "invalid_report".to_owned(),
            message: format!(
                "The report was not filed: {} field(s) need attention. Nothing was stored.",
                fields.len()
            ),
            fields,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Filing

pub fn random_hex(bytes: usize) -> String {
    use rand::RngCore;
    let mut buffer = vec![0u8; bytes];
    rand::rngs::OsRng.fill_bytes(&mut buffer);
    hex::encode(buffer)
}

pub fn new_capability() -> Capability {
    use rand::RngCore;
    let mut bytes = [0u8; domain::capability::CAPABILITY_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    Capability::from_random(bytes)
}

/// The window of a stranger's budget.
pub const STRANGER_WINDOW_MS: i64 = 60 * 60 * 1000;

/// Refuses the crew's paid work on bug `bug` (its model calls, its triage, the start of its
/// reproduction) while a stranger's budget puts its start off: 429 with `Retry-After` and
/// when it starts. An owner's promotion lifts it at once.
pub async fn crew_may_start(state: &AppState, bug: &str) -> Result<(), Refused> {
    let now = now_ms();
    match state
        .store
        .crew_start_put_off(bug, now)
        .await
        ?
    {
        None => Ok(()),
        Some(at) => Err(Refused::new(
            Kind::RateLimited,
            "crew_budget_waiting",
            format!(
                "bug {bug} waits for its stranger's budget (R2R_STRANGER_BUGS_PER_HOUR): the crew may start on it in {} min, or when an owner promotes it",
                (at - now).div_euclid(60_000) + 1
            ),
        )
        .with_retry_after(u64::try_from((at - now).div_euclid(1_000) + 1).unwrap_or(1))),
    }
}

/// The stranger's-budget key of a client (its rate-limit key, hashed: no address is stored).
fn stranger_key(client: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(
        format!("stranger:{client}").as_bytes(),
    ))
}

/// Runs a validated report from `client` (its rate-limit key) through the airlock,
/// clustering and the ledger; answers once it is durable. A report that opens a new bug
/// while its address's budget for the component is used up is kept all the same; only the
/// crew's triage waits its turn.
pub async fn file_report(
    state: &AppState,
    form: ReportForm,
    client: &str,
) -> Result<ReportReceipt, Refused> {
    // The client's intake token: shared buckets (PostgreSQL) are taken in the intake's own
    // transaction below, one durable write per report; buckets kept in memory, here.
    let rate = state.reporter.intake.shared_bucket(client);
    if rate.is_none() {
        take_token(&state.reporter.intake, client).await?;
    }
    let raw = RawReport {
        component: form.component.clone(),
        title: form.title,
        what_happened: form.what_happened,
        expected: form.expected,
        steps: form.steps,
    };
    let (content, raw_sha256) = ReportContent::from_admission(admit(&raw));
    drop(raw);
    let capability = new_capability();
    let report = NewReport {
        id: format!("r-{}", random_hex(8)),
        capability_hash: capability.hash().to_hex(),
        component: form.component.clone(),
        raw_sha256,
        contact: form.contact,
        content,
    };
    let title = report.content.title().to_owned();
    let bug_id = format!("bug-{}", random_hex(5));
    let now = now_ms();
    let scope = state.reporter.scope();
    // When the crew starts on a bug this report opens, and whether it brings forward the
    // start of a bug it joins, decided in the intake's own serialised transaction: reports
    // filed at the same moment, through any server, are counted one after another.
    let limits = IntakeLimits {
        rate,
        budget: Some(StrangerBudget {
            client_hash: stranger_key(client),
            limit: state.reporter.stranger_bugs_per_hour,
            window: STRANGER_WINDOW_MS,
        }),
    };
    let (component, report_id) = (report.component.clone(), report.id.clone());
    let attach_policy = Arc::clone(&scope);
    let filed = state
        .store
        .file_report(
            &report,
            now,
            &limits,
            {
                let component = component.clone();
                move |open: &[OpenCluster]| choose_cluster(&component, &title, open)
            },
            {
                let report_id = report_id.clone();
                move |bug: &Bug| {
                    decide(
                        bug,
                        &Command::AttachReport {
                            report: report_id.clone(),
                        },
                        &Actor::Desk,
                        &Evidence::default(),
                        &attach_policy.policy,
                        now,
                    )
                }
            },
            move |crew_at| open_bug_at(&bug_id, &component, &report_id, now, crew_at),
        )
        .await?
        .map_err(|limited| Refused::rate_limited(Duration::from_millis(limited.retry_ms)))?;
    let quarantined = filed.bug_id.is_none();
    tracing::info!(
        report = %report.id,
        bug = filed.bug_id.as_deref().unwrap_or("-"),
        quarantined,
        joined = !filed.opened && !quarantined,
        repeat = filed.repeat_of.is_some(),
        "report filed"
    );
    let message = if quarantined {
        "Your report was received, but its words were not kept: parts of it read like \
         instructions to an automated system, so the desk stored only when, where and why, and \
         no person or automation will read it. The owners see that it arrived; an owner may \
         write to you on your private link (and by email, if you left an address). If you saw \
         a real bug, please report it again in your own words."
            .to_owned()
    } else if !filed.opened {
        "Thank you. Others reported the same bug; your report joined theirs. Keep your private \
         link: you will be asked to confirm the failing test and, later, the fix."
            .to_owned()
    } else {
        "Thank you. Your report opened a new bug. Keep your private link: you will be asked to \
         confirm the failing test and, later, the fix."
            .to_owned()
    };
    Ok(ReportReceipt {
        report_id: report.id,
        bug_id: filed.bug_id,
        status: domain::ReportStatus::of(quarantined),
        joined_existing: !filed.opened && !quarantined,
        repeat: filed.repeat_of.is_some(),
        tracking_link: format!("/track#{}", capability.expose_for_link()),
        message,
    })
}

/// Validates a report's fields and files it; a field problem is a 422.
pub async fn validate_and_file(
    state: &AppState,
    object: &Map<String, Value>,
    client: &str,
) -> Result<ReportReceipt, Refused> {
    let scope = state.reporter.fresh(&state.store).await;
    let form = validate_report(object, &scope.components).map_err(|error| Refused {
        kind: Kind::Invalid,
        error,
        retry_after: None,
    })?;
    file_report(state, form, client).await
}

pub async fn take_token(limiter: &Limiter, client: &str) -> Result<(), Refused> {
    limiter
        .take(client, crate::clock::now_ms())
        .await?
        .map_err(Refused::rate_limited)
}

// ---------------------------------------------------------------------------------------------
// Tracking

/// Finds the report a presented capability belongs to. Malformed, unknown and missing all
/// come back as `None`; the stored hash is re-checked in constant time.
pub async fn find_report(
    state: &AppState,
    presented: Option<&str>,
) -> Result<Option<StoredReport>, Refused> {
    let Some(capability) = presented.and_then(|text| Capability::parse(text.trim()).ok()) else {
        return Ok(None);
    };
    let hash = capability.hash().to_hex();
    let Some(report) = state.store.report_by_capability_hash(&hash).await? else {
        return Ok(None);
    };
    let stored = CapabilityHash::try_from(report.capability_hash.clone()).ok();
    Ok(stored
        .filter(|stored| stored.matches(&capability))
        .map(|_| report))
}

pub fn state_label(state: BugState) -> &'static str {
    match state {
        BugState::New => "Received; waiting for triage",
        BugState::Triaged => "Triaged; a failing test is next",
        BugState::Reproducing => "The crew is writing a test that fails because of this bug",
        BugState::AwaitingReporter => "A failing test is ready: is it the bug you saw?",
        BugState::Confirmed => "Confirmed by a reporter; a fix is next",
        BugState::Fixing => "The crew is drafting a fix",
        BugState::InReview => "A fix is waiting for people to review it",
        BugState::Approved => "People approved the fix; waiting for a person to merge it",
        BugState::Merged => "Merged; waiting for it to go live",
        BugState::Deployed => "The fix is live: does it work for you?",
        BugState::Verified => "A reporter confirmed the fix works",
        BugState::Reopened => "Reopened; the loop starts again",
        BugState::NeedsHuman => "A person is looking at it",
        BugState::Duplicate => "The same bug as another report: this page follows that bug now",
    }
}

/// For a merged bug whose merge the desk's deployer is releasing: where that release is, in
/// words a reporter can read (never the build's log).
fn release_step(state: &AppState, bug: &domain::workflow::Bug) -> Option<String> {
    use crate::web::ReleaseStep;
    let merge = bug
        .merge
        .as_ref()
        .filter(|_| bug.state == BugState::Merged)?;
    let progress = state
        .releases_of(&state.projects.scope().target_of(&bug.component).project)
        .progress()
        .filter(|p| p.commit == merge.merge_commit.as_str() || p.step == ReleaseStep::Held)?;
    let short: String = progress.commit.chars().take(12).collect();
    let doing = match progress.step {
        ReleaseStep::Testing => "is being tested: the project's whole suite runs on it",
        ReleaseStep::Building => "is being built",
        ReleaseStep::Starting => "is starting",
        ReleaseStep::Checking => {
            "is being checked: is this exact commit what the live site serves?"
        }
        ReleaseStep::Live => "is live and being recorded",
        ReleaseStep::Failed => {
            "did not go live (the people who run this desk were told, and the previous version \
             stays up); you will be asked once a release with the fix is live"
        }
        ReleaseStep::Held => {
            "was held back: the project's own tests failed on it, so it was not released (the \
             people who run this desk were told, and the previous version stays up); you will be \
             asked once a release with the fix is live"
        }
    };
    Some(format!(
        "The fix is merged. The release that carries it ({short}) {doing}. Once it is proven \
         live, you are asked here whether it works for you."
    ))
}

/// What happens next for a bug in `state`, told to its reporters.
pub fn next_step(state: BugState) -> &'static str {
    match state {
        BugState::New | BugState::Triaged | BugState::Reproducing => {
            "The crew writes a test that fails because of this bug and runs it in a locked-down \
             sandbox. When it fails the way you described, you are asked here whether it is your \
             bug. You need not do anything until then."
        }
        BugState::AwaitingReporter => {
            "Answer the question below. Nothing is fixed until a reporter says the failing test \
             is the bug they saw."
        }
        BugState::Confirmed | BugState::Fixing => {
            "The crew drafts a fix (two attempts at most), and the desk checks that every test \
             passes with it. Then people review it: the crew cannot merge anything."
        }
        BugState::InReview | BugState::Approved => {
            "People review the exact fix and merge it. Then the desk checks that the release \
             people use really contains it."
        }
        BugState::Merged => {
            "The fix is merged but not yet proven live. Once it is, you are asked here whether \
             it works for you."
        }
        BugState::Deployed => {
            "Try what went wrong again and answer below. If it still goes wrong, say how: the \
             bug is reopened."
        }
        BugState::Verified => "Nothing more to do. If the problem comes back, file a new report.",
        BugState::Reopened => {
            "The loop starts again: the crew must prove the bug again before anyone fixes it."
        }
        BugState::NeedsHuman => {
            "A person from the team takes it from here and can write to you on this page."
        }
        BugState::Duplicate => {
            "Nothing to do: your report joined the bug it is the same as, and this page shows that bug."
        }
    }
}

/// The public words for an audit event, or `None` for events reporters do not see.
pub fn timeline_label(kind: &str, evidence: &[String], own_report: &str) -> Option<String> {
    let own = evidence.first().is_some_and(|e| e == own_report);
    let label = match kind {
        "bug_opened" if own => "Your report opened this bug",
        "bug_opened" => "Bug opened by an earlier report",
        "report_attached" if own => "Your report joined this bug",
        "marked_duplicate" => {
            "A person found it is the same bug as another: the reports were merged"
        }
        "report_attached" => "Another report of the same bug joined",
        "triaged" => "Triaged",
        "reproduction_started" => "The crew started writing a failing test",
        "needs_human" => "Handed to a person",
        "taken_over" => "A person took it over from the crew",
        "retried_by_owner" => "A person gave it back to the crew to try again",
        "reproduction_proposed" => "A failing test reproduces the bug; reporters were asked",
        "reproduction_confirmed" => "A reporter confirmed the failing test is their bug",
        "reproduction_rejected" => {
            "A reporter said the test is not their bug; the crew tries again"
        }
        "reproduction_attempt_failed" => {
            "A test the crew wrote did not fail for this bug when the desk ran it"
        }
        "fix_started" => "The crew started a fix",
        "fix_attempt_failed" => "A fix attempt failed its checks",
        "fix_submitted" => "A fix is waiting for review",
        "head_changed" => "The fix changed; earlier approvals were cleared",
        "approval_recorded" => "A person approved the fix",
        "merged" => "A person merged the fix",
        "deployment_contains_fix" | "deployment_reconciled" => "The fix is live",
        "rolled_back" => "The release was rolled back: the fix is not live any more",
        "questions_reasked" => "Questions were asked again after expiring",
        "fix_confirmed" => "A reporter confirmed the live fix works",
        "reopened_by_reporter" => "A reporter said the fix does not work; reopened",
        "reopened_by_owner" => "An owner reopened the bug",
        _ => return None,
    };
    Some(label.to_owned())
}

/// The allowlisted projection of a report and its bug for its own reporter.
pub async fn tracking_view(state: &AppState, report: &StoredReport) -> Result<Tracking, Refused> {
    let dossier = report.dossier.as_ref();
    let report_view = ReportView {
        id: report.id.clone(),
        component: report.component.clone(),
        status: domain::ReportStatus::of(report.quarantined),
        title: dossier.map(|d| d.title.clone()),
        what_happened: dossier.map(|d| d.what_happened.clone()),
        expected: dossier.map(|d| d.expected.clone()),
        steps: dossier.map(|d| d.steps.clone()).unwrap_or_default(),
        redactions: dossier.map(|d| d.redactions.clone()).unwrap_or_default(),
        submitted_at: report.created_at,
    };
    let now = now_ms();
    let mut bug_view = None;
    let mut question = None;
    if let Some(bug_id) = &report.bug_id {
        let stored = state.store.load_bug(bug_id).await?.ok_or_else(|| {
            Refused::storage(format!("bug {bug_id} of report {} is missing", report.id))
        })?;
        let events = state.store.events_of(bug_id).await?;
        let bug = stored.bug;
        let timeline = events
            .iter()
            .filter_map(|e| {
                timeline_label(&e.event.kind, &e.event.evidence, &report.id).map(|label| {
                    TimelineEntry {
                        at: e.event.at,
                        label,
                    }
                })
            })
            .collect();
        question = bug
            .questions
            .iter()
            .filter(|q| q.report == report.id && now < q.expires_at)
            .min_by_key(|q| q.asked_at)
            .map(|q| QuestionView {
                request_id: q.request_id.clone(),
                kind: q.kind,
                prompt: match q.kind {
                    QuestionKind::Reproduction => "Is this the bug you saw?",
                    QuestionKind::Fix => "Does the live fix work for you?",
                }
                .to_owned(),
                expires_at: q.expires_at,
            });
        // Only while the fix is live (a rollback takes it away: the bug is merged again).
        let live = matches!(
            bug.state,
            BugState::Deployed | BugState::Verified | BugState::Reopened
        );
        let release = bug
            .deployments
            .iter()
            .filter(|_| live)
            .find(|d| d.status == DeploymentStatus::ContainsFix)
            .map(|d| ReleaseView {
                commit: d.commit.to_string(),
                deployment: d.id.clone(),
                at: d.at,
                // The desk's own deployer serves this component: the reporter tries the real
                // thing, at the address the recorder checked.
                try_at: {
                    let releases = state
                        .releases_of(&state.projects.scope().target_of(&bug.component).project);
                    releases
                        .service
                        .as_deref()
                        .filter(|service| *service == report.component)
                        .filter(|_| releases.live().is_some())
                        .map(|service| format!("/live/{service}"))
                },
            });
        bug_view = Some(BugView {
            id: bug.id.clone(),
            state: bug.state,
            state_label: state_label(bug.state).to_owned(),
            next: release_step(state, &bug).unwrap_or_else(|| next_step(bug.state).to_owned()),
            reports: bug.reports.len(),
            timeline,
            // Model-written text: screened where the desk accepts it, and again here for
            // ledgers written before that rule.
            reproduction: bug.reproduction.as_ref().map(|r| ReproductionView {
                test_path: r.test_path.clone(),
                failure: crate::service::reproduction::screened_assertion(&r.assertion),
                summary: r.summary.clone(),
            }),
            release,
        });
    }
    let messages = state
        .store
        .report_messages(&report.id)
        .await?
        .into_iter()
        .map(|m| MessageView {
            at: m.at,
            body: m.body,
        })
        .collect();
    // An owner's message already shows among the messages; the inbox holds the rest.
    let inbox = state
        .store
        .inbox_of(&report.id)
        .await?
        .into_iter()
        .filter(|n| n.kind != "owner_message")
        // A question's notice is for a reporter who is not here: on this page it only points
        // at the question above, and once answered (or expired) it is gone.
        .filter_map(|n| {
            let asks = match n.kind.as_str() {
                "ask_reproduction" => Some(QuestionKind::Reproduction),
                "ask_fix" => Some(QuestionKind::Fix),
                _ => None,
            };
            match asks {
                Some(kind) if question.as_ref().map(|q| q.kind) != Some(kind) => None,
                Some(_) => Some(NoticeView {
                    at: n.delivered_at,
                    subject: n.subject,
                    body: "The question is on this page, above: answer it there.".to_owned(),
                }),
                None => Some(NoticeView {
                    at: n.delivered_at,
                    subject: n.subject,
                    body: n.body,
                }),
            }
        })
        .collect();
    Ok(Tracking {
        report: report_view,
        bug: bug_view,
        question,
        messages,
        inbox,
    })
}

/// Records a reporter's answer through the engine. A "no" reason goes through the airlock:
/// clean text is redacted; hostile text is withheld (the "no" still counts).
pub async fn record_answer(
    state: &AppState,
    report: &StoredReport,
    answer: &Answer,
) -> Result<AnswerOutcome, Refused> {
    let invalid = |field: &str, reason: &str| {
        let mut refused = Refused::new(
            Kind::Invalid,
            "invalid_answer",
            format!("The answer was not recorded: {field} {reason}."),
        );
        refused
            .error
            .fields
            .insert(field.to_owned(), reason.to_owned());
        refused
    };
    let Some(bug_id) = &report.bug_id else {
        return Err(Refused::new(
            Kind::Conflict,
            "no_question",
            "There is no question for this report.",
        ));
    };
    let reason = match answer.reason.as_deref().map(str::trim) {
        Some(text) if text.chars().count() > limits::REASON => {
            return Err(invalid(
                "reason",
                &format!("is too long (the limit is {} characters)", limits::REASON),
            ))
        }
        Some(text) if !text.is_empty() => Some(match screen(text) {
            Ok((redacted, _)) => redacted,
            Err(families) => {
                let names: Vec<&str> = families.iter().map(|f| f.as_str()).collect();
                tracing::info!(report = %report.id, families = %names.join(","), "answer reason withheld by the airlock");
                format!("[reason withheld by the airlock: {}]", names.join(", "))
            }
        }),
        _ => None,
    };
    if !answer.yes && reason.is_none() {
        return Err(invalid(
            "reason",
            "is required with a no: say what is different",
        ));
    }
    let command = match answer.kind.as_str() {
        "reproduction" => Command::AnswerReproduction {
            request_id: answer.request_id.clone(),
            confirmed: answer.yes,
            reason: if answer.yes { None } else { reason },
        },
        "fix" => Command::AnswerFix {
            request_id: answer.request_id.clone(),
            works: answer.yes,
            reason: if answer.yes { None } else { reason },
        },
        _ => return Err(invalid("kind", "must be reproduction or fix")),
    };
    let actor = Actor::Reporter {
        report: report.id.clone(),
    };
    let now = now_ms();
    let scope = state.reporter.scope();
    let policy = &scope.policy;
    let applied = state
        .store
        .apply(bug_id, now, |bug| {
            decide(bug, &command, &actor, &Evidence::default(), policy, now)
        })
        .await;
    match applied {
        Ok(applied) => {
            tracing::info!(report = %report.id, bug = %bug_id, recorded = applied.changed, kind = %answer.kind, yes = answer.yes, "answer");
            let message = match (applied.changed, answer.yes, answer.kind.as_str()) {
                (false, _, _) => "This question is no longer open (the bug has moved on), so nothing changed. Thank you all the same.",
                (true, true, "reproduction") => "Thank you: the crew will now draft a fix for this exact failure.",
                (true, false, "reproduction") => "Thank you: that test was set aside and the crew will try again.",
                (true, true, _) => "Thank you: the bug is closed as fixed.",
                (true, false, _) => "Thank you: the bug is reopened and the loop starts again.",
            };
            Ok(AnswerOutcome {
                recorded: applied.changed,
                state: applied.bug.state,
                message: message.to_owned(),
            })
        }
        Err(ApplyError::Refused(refusal)) => Err(refusal.into()),
        Err(ApplyError::Contended { .. }) => {
            let mut refused = Refused::new(
                Kind::Unavailable,
                "busy",
                "The bug is changing right now; nothing was recorded. Please try again.",
            );
            refused.retry_after = Some(1);
            Err(refused)
        }
        Err(ApplyError::NotFound(id)) => Err(Refused::storage(format!("bug {id} missing"))),
        Err(ApplyError::Store(error)) => Err(Refused::storage(error)),
    }
}

// ---------------------------------------------------------------------------------------------
// Script-free page rendering

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn components() -> Vec<String> {
        vec!["shoplite".into(), "desk".into()]
    }

    #[test]
    fn a_complete_report_passes_trimmed() {
        let form = validate_report(
            &object(serde_json::json!({
                "component": "shoplite", "title": "  Total wrong ", "what_happened": "x",
                "expected": "", "steps": "", "contact": "me@example.org"
            })),
            &components(),
        )
        .unwrap();
        assert_eq!(form.title, "Total wrong");
        assert_eq!(form.contact.as_deref(), Some("me@example.org"));
    }

    #[test]
    fn every_problem_is_named_against_its_field() {
        let long = "x".repeat(limits::TITLE + 1);
        let error = validate_report(
            &object(serde_json::json!({
                "component": "billing", "title": long, "what_happened": "   ",
                "expected": 5, "contact": "not an address", "colour": "red"
            })),
            &components(),
        )
        .unwrap_err();
        assert_eq!(error.error, "invalid_report");
        assert!(error.fields["component"].contains("shoplite, desk"));
        assert!(error.fields["title"].contains("too long: 201 characters, the limit is 200"));
        assert!(error.fields["what_happened"].contains("blank"));
        assert_eq!(error.fields["expected"], "must be a string");
        assert!(error.fields["contact"].contains("email"));
        assert!(error.fields["colour"].contains("unknown field"));
        assert!(!error.fields.contains_key("steps"), "steps may be left out");
        let missing = validate_report(&Map::new(), &components()).unwrap_err();
        for field in ["component", "title", "what_happened"] {
            assert_eq!(missing.fields[field], "required", "{field}");
        }
    }

    #[test]
    fn internal_events_never_reach_the_timeline() {
        for kind in [
            "advisory_note",
            "deployment_without_fix",
            "deployment_kept_before_merge",
            "something_new",
        ] {
            assert_eq!(timeline_label(kind, &[], "r-1"), None, "{kind}");
        }
        assert_eq!(
            timeline_label("report_attached", &["r-1".into()], "r-1").as_deref(),
            Some("Your report joined this bug")
        );
        assert_eq!(
            timeline_label("report_attached", &["r-2".into()], "r-1").as_deref(),
            Some("Another report of the same bug joined")
        );
        // A rollback is said, never with the owner's reason.
        assert_eq!(
            timeline_label(
                "rolled_back",
                &["the coupon fix broke checkout".into()],
                "r-1"
            )
            .as_deref(),
            Some("The release was rolled back: the fix is not live any more")
        );
    }
}
