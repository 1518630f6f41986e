//! `GET /api/v1/bugs/{id}/fix/context` and `POST /api/v1/bugs/{id}/fix/candidate`: what the
//! fixer may read, and its candidate measured by the desk ([`crate::service::fix`]); and
//! `GET /api/v1/bugs/{id}/reproduction/context`, what the reproducer may read.

use crate::auth::Credential;
use crate::service::fix::{self, Candidate, Measured};
use crate::web::Op;
use crate::web::{guard, json_body, respond, AppState};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

/// Largest candidate body: two files of 24,000 characters of up to four bytes each, and room.
pub const CANDIDATE_BYTES: usize = 256 * 1024;

/// `GET /api/v1/bugs/{id}/fix/context`.
pub async fn get_context(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::GetFixContext)?;
        fix::context(&state, &id).await.map(Json)
    }
    .await;
    respond(result)
}

/// `GET /api/v1/bugs/{id}/reproduction/context`.
pub async fn get_reproduction_context(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::GetReproductionContext)?;
        crate::service::repro_context::context(&state, &id)
            .await
            .map(Json)
    }
    .await;
    respond(result)
}

/// `POST /api/v1/bugs/{id}/fix/candidate`.
pub async fn post_candidate(
    State(state): State<AppState>,
    credential: Credential,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let result = async {
        guard(&state, &credential, &headers, Op::SubmitFixCandidate)?;
        let candidate: Candidate = json_body(&body)?;
        let (state, id) = (state.clone(), id.clone());
        let measured = crate::service::reproduction::to_the_end(async move {
            fix::candidate(&state, &id, candidate).await
        })
        .await?;
        Ok(match measured {
            Measured::Accepted(answer) => (StatusCode::OK, Json(answer)).into_response(),
            Measured::Failed(answer) => {
                (StatusCode::UNPROCESSABLE_ENTITY, Json(answer)).into_response()
            }
        })
    }
    .await;
    respond(result)
}
