//! The server side of the reporter's server functions ([`app::reporter_fns`]): the same rate
//! limits, capability check and service code as `POST /api/v1/reports`, `GET /api/v1/track`
//! and `POST /api/v1/track/answer` — a server function is one more way in, never a way
//! around. Capabilities are never logged (report ids only, by the service).

use crate::service::reporter::{
    find_report, record_answer, take_token, tracking_view, validate_and_file,
};
use crate::web::{client_of, AppState, ClientAddr, Refused};
use app::dto::{Answer, AnswerOutcome, ReportForm, ReportReceipt, Tracking};
use app::reporter_fns::{Refusal, Reply, ReporterBackend, ReporterServer};
use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use std::net::SocketAddr;
use std::sync::Arc;
use store::StoredReport;

/// The reporter's server functions' backend over `state`, for the request context.
pub fn reporter_server(state: &AppState) -> ReporterServer {
    ReporterServer(Arc::new(Backend(state.clone())))
}

struct Backend(AppState);

fn refusal(refused: Refused) -> Refusal {
    Refusal {
        status: refused.status().as_u16(),
        retry_after: refused.retry_after,
        error: refused.error,
    }
}

/// Who is calling, as the rate limits know them (the same key as the REST routes').
fn client(state: &AppState, request: &Parts) -> String {
    let addr = ClientAddr(
        request
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0),
    );
    client_of(&state.reporter, addr, &request.headers)
}

/// The report `capability` opens, after the reporter's rate limit (the same bucket as
/// `GET /api/v1/track`); `not_found` for any capability that opens nothing.
async fn own_report(
    state: &AppState,
    request: &Parts,
    capability: &str,
) -> Result<StoredReport, Refusal> {
    take_token(&state.reporter.answers, &client(state, request))
        .await
        .map_err(refusal)?;
    find_report(state, Some(capability))
        .await
        .map_err(refusal)?
        .ok_or_else(|| refusal(Refused::not_found()))
}

impl ReporterBackend for Backend {
    fn components(&self) -> Vec<String> {
        self.0.reporter.scope().components.clone()
    }

    fn file(&self, request: Parts, form: ReportForm) -> Reply<ReportReceipt> {
        let state = self.0.clone();
        Box::pin(async move {
            let client = client(&state, &request);
            // The REST API's validation, on the same shape it reads.
            let object = match serde_json::to_value(&form) {
                Ok(serde_json::Value::Object(object)) => object,
                _ => return Err(refusal(Refused::storage("a report form did not serialise"))),
            };
            validate_and_file(&state, &object, &client)
                .await
                .map_err(refusal)
        })
    }

    fn track(&self, request: Parts, capability: String) -> Reply<Tracking> {
        let state = self.0.clone();
        Box::pin(async move {
            let report = own_report(&state, &request, &capability).await?;
            tracking_view(&state, &report).await.map_err(refusal)
        })
    }

    fn answer(&self, request: Parts, capability: String, answer: Answer) -> Reply<AnswerOutcome> {
        let state = self.0.clone();
        Box::pin(async move {
            let report = own_report(&state, &request, &capability).await?;
            record_answer(&state, &report, &answer)
                .await
                .map_err(refusal)
        })
    }
}
