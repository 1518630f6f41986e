//! The spend guard over HTTP: crew roles reserve a model call's worst case before they make
//! it and settle it after (only the role that reserved a call may settle it); owners and the
//! crew read the book.

use crate::auth::Credential;
use crate::error::Kind;
use crate::web::guard;
use crate::web::json_body;
use crate::web::respond;
use crate::web::AppState;
use crate::web::LimitedBody;
use crate::web::Op;
use crate::web::Refused;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;
use store::spend::{CallEnd, NewCall, Settlement};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Reserve {
    provider: String,
    model: String,
    worst_case_micros: u64,
    /// The bug the call works on: its per-bug budget applies.
    bug: String,
}

fn client_of(credential: &Credential) -> String {
    match credential {
        Credential::Role(role) => role.as_str().to_owned(),
        Credential::Owner { account, .. } => format!("owner:{}", account.email),
        _ => "unknown".into(),
    }
}

fn label(text: &str, field: &str) -> Result<String, Refused> {
    let text = text.trim();
    if text.is_empty() || text.len() > 100 || text.chars().any(char::is_control) {
        return Err(Refused::new(
            Kind::Invalid,
            "invalid_field",
            format!("{field}: 1 to 100 characters, no control characters"),
        ));
    }
    Ok(text.to_owned())
}

/// `POST /api/v1/model-calls`: reserve a call's worst case (201) or refuse it (429).
pub async fn reserve(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::ReserveModelCall)?;
        let asked: Reserve = json_body(&body)?;
        let provider = label(&asked.provider, "provider")?;
        let model = label(&asked.model, "model")?;
        // A call is always about a bug the desk holds: the per-bug budget cannot be dodged by
        // naming none, or a made-up one.
        let bug = crate::service::commands::load(&state, asked.bug.trim()).await?;
        // Nor one no crew works on any more: spend booked there would dodge a live bug's
        // budget.
        if matches!(
            bug.state,
            domain::BugState::Verified | domain::BugState::Duplicate
        ) || bug.needs_human == Some(domain::workflow::NeedsHumanReason::TakenOver)
        {
            return Err(Refused::new(
                Kind::Conflict,
                "bug_closed_to_the_crew",
                format!(
                    "bug {} is {}: no model call can be booked to it",
                    bug.id,
                    bug.state.as_str()
                ),
            ));
        }
        crate::service::reporter::crew_may_start(&state, &bug.id).await?;
        let id = format!("call-{}-{:08x}", crate::clock::now_ms(), rand::random::<u32>());
        let client = client_of(&credential);
        let call = NewCall {
            id: &id,
            client: &client,
            provider: &provider,
            model: &model,
            worst_case: asked.worst_case_micros,
            bug: &bug.id,
            unconfirmed: bug.unconfirmed(),
        };
        match state
            .store
            .reserve_model_call(&call, &state.spend, crate::clock::now_ms())
            .await
            ?
        {
            Ok(()) => Ok((
                StatusCode::CREATED,
                Json(json!({"id": id, "reserved_micros": asked.worst_case_micros})),
            )
                .into_response()),
            Err(refusal) => Ok((
                StatusCode::TOO_MANY_REQUESTS,
                Json(json!({"error": "spend_refused", "message": refusal.to_string(), "refusal": refusal})),
            )
                .into_response()),
        }
    }
    .await;
    respond(result)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settle {
    outcome: String,
    #[serde(default)]
    cost_micros: Option<u64>,
}

/// `POST /api/v1/model-calls/{id}/settle`.
pub async fn settle(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
    LimitedBody(body): LimitedBody,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::SettleModelCall)?;
        let settle: Settle = json_body(&body)?;
        let end = match settle.outcome.as_str() {
            "answered" => CallEnd::Answered(settle.cost_micros),
            "timed_out" => CallEnd::TimedOut,
            "connection_lost" => CallEnd::ConnectionLost,
            other => {
                return Err(Refused::new(
                    Kind::Invalid,
                    "invalid_outcome",
                    format!("outcome: answered, timed_out or connection_lost, got {other:?}"),
                ))
            }
        };
        // Only the principal that reserved a call settles it: another role could otherwise
        // book someone else's reservation at a cost of its choosing.
        let client = client_of(&credential);
        match state
            .store
            .settle_model_call(&id, &client, end, crate::clock::now_ms())
            .await
            ?
        {
            Settlement::Settled => Ok(Json(json!({"settled": true})).into_response()),
            Settlement::NotOpen => Err(Refused::new(
                Kind::Conflict,
                "not_open",
                format!("no open model call {id}"),
            )),
            Settlement::NotYours => Err(Refused::new(
                Kind::Forbidden,
                "not_your_call",
                format!("model call {id} was reserved by another principal; only it may settle the call"),
            )),
        }
    }
    .await;
    respond(result)
}

/// `GET /api/v1/spend`: the budget and the book.
pub async fn summary(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::GetSpend)?;
        let summary = state.store.spend_summary(crate::clock::now_ms()).await?;
        Ok::<_, Refused>(Json(json!({"budget": state.spend, "book": summary})))
    }
    .await;
    respond(result)
}
