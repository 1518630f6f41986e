//! The server side of the desk's server functions ([`app::desk_fns`]): who is asking (the
//! same credential check as every route), whether they may (owners only; mutations carry the
//! session's CSRF token), and then the same code as the desk's other paths.

use crate::auth::{credential_of, csrf_valid, Credential};
use crate::web::{AppState, Refused};
use app::desk_fns::{DeskBackend, DeskServer, WithCookie};
use app::dto::{
    ActInput, BugDesk, Confirm, CrewDesk, Dashboard, DeskError, DeskQuery, OwnersDesk, ProjectInput,
};
use axum::http::HeaderMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use store::OwnerAccount;

/// The desk's server functions' backend over `state`, for the request context.
pub fn desk_server(state: &AppState) -> DeskServer {
    DeskServer(Arc::new(Backend(state.clone())))
}

struct Backend(AppState);

fn refusal(refused: Refused) -> DeskError {
    let status = refused.status().as_u16();
    let mut error = DeskError::new(refused.error.error, refused.error.message);
    error.status = Some(status);
    error
}

/// The owner the headers sign in, with their session; `signed_out` otherwise (a crew or
/// concierge token is not an owner, whatever it may do on the API).
async fn signed_in(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<(OwnerAccount, String), DeskError> {
    match credential_of(&state.store, headers).await {
        Ok(Credential::Owner { account, session }) => Ok((account, session)),
        Ok(Credential::Role(_)) => Err(DeskError::new(
            "forbidden",
            "the desk's pages are for owners; a crew or concierge token cannot open them",
        )),
        Ok(_) => Err(DeskError::new(
            "signed_out",
            "You are not signed in (or your session ended): sign in again.",
        )),
        Err(error) => Err(refusal(Refused::storage(error))),
    }
}

/// The form's CSRF token is this session's, or the form is refused.
fn same_session(state: &AppState, session: &str, csrf: &str) -> Result<(), DeskError> {
    if csrf_valid(
        state.auth.session_key.expose().as_bytes(),
        session,
        Some(csrf),
    ) {
        Ok(())
    } else {
        Err(DeskError::new(
            "invalid_csrf",
            "This form is out of date (or came from another site): reload the desk and try again.",
        ))
    }
}

/// An id as a form may carry it: short, no control characters (a bug or report id).
fn plain_id(field: &str, text: &str) -> Result<String, DeskError> {
    let text = text.trim();
    if text.len() > 100 || text.chars().any(char::is_control) {
        return Err(DeskError::new(
            format!("invalid_{field}"),
            format!("{field}: an id of this desk"),
        ));
    }
    Ok(text.to_owned())
}

impl DeskBackend for Backend {
    fn dashboard(
        &self,
        headers: HeaderMap,
        query: DeskQuery,
    ) -> Pin<Box<dyn Future<Output = Result<Dashboard, DeskError>> + Send>> {
        let state = self.0.clone();
        Box::pin(async move {
            let (account, session) = signed_in(&state, &headers).await?;
            super::dashboard_data(&state, &account, &session, query)
                .await
                .map_err(refusal)
        })
    }

    fn bug(
        &self,
        headers: HeaderMap,
        id: String,
        done: Option<String>,
    ) -> Pin<Box<dyn Future<Output = Result<BugDesk, DeskError>> + Send>> {
        let state = self.0.clone();
        Box::pin(async move {
            let (account, session) = signed_in(&state, &headers).await?;
            match super::bug::bug_data(&state, &account, &session, &id, done.as_deref()).await {
                Ok(Some(bug)) => Ok(bug),
                Ok(None) => Err(DeskError::new("not_found", "There is no bug with that id.")),
                Err(refused) => Err(refusal(refused)),
            }
        })
    }

    fn crew(
        &self,
        headers: HeaderMap,
    ) -> Pin<Box<dyn Future<Output = Result<CrewDesk, DeskError>> + Send>> {
        let state = self.0.clone();
        Box::pin(async move {
            let (account, session) = signed_in(&state, &headers).await?;
            super::crew_data(&state, &account, &session)
                .await
                .map_err(refusal)
        })
    }

    fn owners(
        &self,
        headers: HeaderMap,
    ) -> Pin<Box<dyn Future<Output = Result<WithCookie<OwnersDesk>, DeskError>> + Send>> {
        let state = self.0.clone();
        Box::pin(async move {
            let (account, session) = signed_in(&state, &headers).await?;
            let (value, set_cookie) =
                super::owners::owners_data(&state, &account, &session, &headers)
                    .await
                    .map_err(refusal)?;
            Ok(WithCookie { value, set_cookie })
        })
    }

    fn quarantine_handled(
        &self,
        headers: HeaderMap,
        report: String,
        csrf: String,
    ) -> Pin<Box<dyn Future<Output = Result<String, DeskError>> + Send>> {
        let state = self.0.clone();
        Box::pin(async move {
            let (account, session) = signed_in(&state, &headers).await?;
            same_session(&state, &session, &csrf)?;
            let report = report.trim();
            if report.is_empty() || report.len() > 100 || report.chars().any(char::is_control) {
                return Err(DeskError::new(
                    "invalid_report",
                    "report: the id of a quarantined report",
                ));
            }
            let at = crate::clock::now_ms();
            match state
                .store
                .mark_quarantine_handled(report, &account.id, at)
                .await
            {
                Ok(Some(_)) => {
                    tracing::info!(report, owner = %account.id, "quarantined report marked handled");
                    Ok(super::done_address(&state, &session, "/desk", "", "handled"))
                }
                Ok(None) => Err(DeskError::new(
                    "not_found",
                    "There is no quarantined report with that id (it may have been filed under another desk).",
                )),
                Err(error) => Err(refusal(Refused::storage(error))),
            }
        })
    }

    fn question(
        &self,
        headers: HeaderMap,
        bug: String,
        report: Option<String>,
        action: String,
        person: Option<String>,
    ) -> Pin<Box<dyn Future<Output = Result<Confirm, DeskError>> + Send>> {
        let state = self.0.clone();
        Box::pin(async move {
            let (account, session) = signed_in(&state, &headers).await?;
            let bug = plain_id("bug", &bug)?;
            let report = report.map(|r| plain_id("report", &r)).transpose()?;
            let person = person.map(|p| plain_id("person", &p)).transpose()?;
            super::actions::question(
                &state,
                &account,
                &session,
                &bug,
                report.as_deref(),
                &action,
                person.as_deref(),
            )
            .await
            .map_err(refusal)
        })
    }

    fn project(
        &self,
        headers: HeaderMap,
        input: ProjectInput,
    ) -> Pin<Box<dyn Future<Output = Result<String, DeskError>> + Send>> {
        let state = self.0.clone();
        Box::pin(async move {
            let (account, session) = signed_in(&state, &headers).await?;
            same_session(&state, &session, &input.csrf)?;
            let invalid = |reason: String| DeskError::new("invalid_project", reason);
            let given = |text: &str| {
                let text = text.trim();
                (!text.is_empty()).then(|| text.to_owned())
            };
            for (field, text) in [
                ("id", &input.id),
                ("name", &input.name),
                ("components", &input.components),
                ("forge", &input.forge),
                ("branch", &input.branch),
                ("profile", &input.profile),
                ("fix_paths", &input.fix_paths),
                ("github", &input.github),
                ("deploy", &input.deploy),
                ("test_paths", &input.test_paths),
                ("launch_port", &input.launch_port),
                ("launch_args", &input.launch_args),
                ("launch_env", &input.launch_env),
                ("launch_assets", &input.launch_assets),
            ] {
                // A program's environment may be longer than any other field.
                let most = if field == "launch_env" { 8_000 } else { 1_000 };
                if text.len() > most || text.chars().any(char::is_control) {
                    return Err(invalid(format!(
                        "{field}: at most {most} characters, none of them control characters"
                    )));
                }
            }
            // Empty keeps a launch setting; `none` takes the arguments or the environment away
            // (and is the assets folder's own word for none).
            let cleared = |text: &str| match text.trim() {
                "" => None,
                "none" => Some(String::new()),
                other => Some(other.to_owned()),
            };
            let forge = given(&input.forge);
            if forge
                .as_deref()
                .is_some_and(|f| !std::path::Path::new(f).is_absolute())
            {
                return Err(invalid(
                    "forge: the bare repository's absolute path on the desk's host".to_owned(),
                ));
            }
            let crew = match input.crew.trim() {
                "" => None,
                "on" => Some(true),
                "off" => Some(false),
                other => return Err(invalid(format!("crew: on or off, not {other:?}"))),
            };
            let mut change = crate::projects::ProjectChange {
                name: given(&input.name),
                components: given(&input.components),
                forge,
                branch: given(&input.branch),
                profile: given(&input.profile),
                fix_paths: given(&input.fix_paths),
                crew,
                github: given(&input.github),
                deploy: given(&input.deploy),
                test_paths: given(&input.test_paths),
                launch_port: given(&input.launch_port),
                launch_args: cleared(&input.launch_args),
                launch_env: cleared(&input.launch_env),
                launch_assets: given(&input.launch_assets),
            };
            let now = crate::clock::now_ms();
            let by = account.email.as_str();
            let defined = match input.mode.trim() {
                "add" => {
                    // What the owner left empty is read from the repository's tree (shown on
                    // the crew page once added, and changed there like any other field).
                    if let Some(forge) = change.forge.clone() {
                        if change.profile.is_none() || change.fix_paths.is_none() {
                            crate::service::detect::fill_from_tree(
                                &mut change,
                                &input.id,
                                std::path::Path::new(&forge),
                                None,
                            )
                            .await
                            .map_err(|(field, reason)| invalid(format!("{field}: {reason}")))?;
                        }
                    }
                    state
                        .projects
                        .add(&state.store, &input.id, change, by, now)
                        .await
                }
                "edit" => {
                    state
                        .projects
                        .edit(&state.store, &input.id, change, by, now)
                        .await
                }
                other => return Err(invalid(format!("mode: add or edit, not {other:?}"))),
            };
            match defined {
                Ok(spec) => {
                    tracing::info!(project = %spec.id, owner = %account.id, mode = %input.mode.trim(), "project defined from the desk");
                    Ok("/desk/crew".to_owned())
                }
                Err(crate::projects::DefineError::Invalid(error)) => {
                    Err(invalid(error.to_string()))
                }
                Err(crate::projects::DefineError::Conflict(reason)) => {
                    let mut error = DeskError::new("conflict", reason);
                    error.status = Some(409);
                    Err(error)
                }
                Err(crate::projects::DefineError::Store(error)) => {
                    Err(refusal(Refused::storage(error)))
                }
            }
        })
    }

    fn act(
        &self,
        headers: HeaderMap,
        mut input: ActInput,
    ) -> Pin<Box<dyn Future<Output = Result<WithCookie<String>, DeskError>> + Send>> {
        let state = self.0.clone();
        Box::pin(async move {
            let (account, session) = signed_in(&state, &headers).await?;
            same_session(&state, &session, &input.csrf)?;
            input.bug = plain_id("bug", &input.bug)?;
            input.report = input.report.map(|r| plain_id("report", &r)).transpose()?;
            input.of = input.of.map(|r| plain_id("of", &r)).transpose()?;
            input.person = input.person.map(|p| plain_id("person", &p)).transpose()?;
            let (value, set_cookie) = super::actions::perform(&state, &account, &session, &input)
                .await
                .map_err(refusal)?;
            tracing::info!(bug = %input.bug, action = %input.action, owner = %account.id, "owner action from the desk");
            Ok(WithCookie { value, set_cookie })
        })
    }
}
