//! The crew's only way to the desk: its HTTP API, with one role's bearer token.

use serde_json::{json, Value};
use std::time::Duration;

/// Why a desk call failed.
#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    /// The request did not complete.
    #[error("cannot reach the desk: {0}")]
    Http(#[from] reqwest::Error),
    /// The desk refused, with its error code and message.
    #[error("the desk answered {status} {code}: {message}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// The desk's error code.
        code: String,
        /// Its message.
        message: String,
    },
    /// The desk answered something that is not the type its API promises.
    #[error("the desk's answer to {path} is not what its API promises: {reason}")]
    Unexpected {
        /// The path asked.
        path: String,
        /// What did not fit.
        reason: String,
    },
}

/// A desk client acting as one role.
#[derive(Clone)]
pub struct Desk {
    base: String,
    token: String,
    client: reqwest::Client,
}

impl std::fmt::Debug for Desk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desk")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Desk {
    /// A client for the desk at `base` with `token`.
    pub fn new(base: &str, token: &str) -> Result<Self, DeskError> {
        Ok(Desk {
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            // Long enough for the desk's own sandbox re-run of a proposed test.
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(420))
                .build()?,
        })
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<(u16, Value), DeskError> {
        let response = request.bearer_auth(&self.token).send().await?;
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        Ok((status, body))
    }

    fn refused(status: u16, body: &Value) -> DeskError {
        DeskError::Refused {
            status,
            code: body["error"].as_str().unwrap_or("unknown").to_owned(),
            message: body["message"].as_str().unwrap_or_default().to_owned(),
        }
    }

    /// `GET path`, expecting success.
    pub async fn get(&self, path: &str) -> Result<Value, DeskError> {
        let (status, body) = self
            .send(self.client.get(format!("{}{path}", self.base)))
            .await?;
        if (200..300).contains(&status) {
            Ok(body)
        } else {
            Err(Self::refused(status, &body))
        }
    }

    /// `GET path` as the API's type `T`: a missing or renamed field is an error, never an
    /// empty value.
    pub async fn get_as<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, DeskError> {
        let body = self.get(path).await?;
        Self::parse(path, body)
    }

    /// `POST path` as the API's type `T`, expecting success.
    pub async fn post_as<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<T, DeskError> {
        let answer = self.post(path, body).await?;
        Self::parse(path, answer)
    }

    fn parse<T: serde::de::DeserializeOwned>(path: &str, body: Value) -> Result<T, DeskError> {
        serde_json::from_value(body).map_err(|error| DeskError::Unexpected {
            path: path.to_owned(),
            reason: error.to_string(),
        })
    }

    /// `GET /api/v1/bugs`.
    pub async fn bugs(&self) -> Result<api_types::BugList, DeskError> {
        self.get_as("/api/v1/bugs").await
    }

    /// `GET /api/v1/bugs?after=…&wait_ms=…`: the bug list once it differs from the one named
    /// `after` (its fingerprint), or after `wait` with none changed.
    pub async fn bugs_after(
        &self,
        after: &str,
        wait: Duration,
    ) -> Result<api_types::BugList, DeskError> {
        let after: String = after.chars().filter(char::is_ascii_alphanumeric).collect();
        self.get_as(&format!(
            "/api/v1/bugs?after={after}&wait_ms={}",
            wait.as_millis()
        ))
        .await
    }

    /// `GET /api/v1/bugs/{id}`.
    pub async fn bug(&self, id: &str) -> Result<api_types::BugDetail, DeskError> {
        self.get_as(&format!("/api/v1/bugs/{id}")).await
    }

    /// A bug command without a body (`fix/start`, `reproduction/start`).
    pub async fn command(&self, id: &str, command: &str) -> Result<api_types::Recorded, DeskError> {
        self.post_as(&format!("/api/v1/bugs/{id}/{command}"), &json!({}))
            .await
    }

    /// `GET /api/v1/crew/tasks`: the open tasks addressed to this role.
    pub async fn open_tasks(&self) -> Result<api_types::TaskList, DeskError> {
        self.get_as("/api/v1/crew/tasks").await
    }

    /// `GET /api/v1/crew/tasks?wait_ms=…`: as [`Desk::open_tasks`], answered as soon as a
    /// task is sent (or after `wait` with none).
    pub async fn open_tasks_waiting(
        &self,
        wait: Duration,
    ) -> Result<api_types::TaskList, DeskError> {
        self.get_as(&format!("/api/v1/crew/tasks?wait_ms={}", wait.as_millis()))
            .await
    }

    /// `GET /api/v1/bugs/{id}/crew-step`: the crew's step for the bug and what to do about it.
    pub async fn crew_step(&self, id: &str) -> Result<api_types::BugCrewStep, DeskError> {
        self.get_as(&format!("/api/v1/bugs/{id}/crew-step")).await
    }

    /// `GET /api/v1/bugs/{id}/fix/context`.
    pub async fn fix_context(&self, id: &str) -> Result<api_types::FixContext, DeskError> {
        self.get_as(&format!("/api/v1/bugs/{id}/fix/context")).await
    }

    /// `GET /api/v1/bugs/{id}/diff`.
    pub async fn diff(&self, id: &str) -> Result<api_types::FixDiff, DeskError> {
        self.get_as(&format!("/api/v1/bugs/{id}/diff")).await
    }

    /// `POST path` with a JSON body; the status and answer, whatever they are.
    pub async fn post_raw(&self, path: &str, body: &Value) -> Result<(u16, Value), DeskError> {
        self.send(self.client.post(format!("{}{path}", self.base)).json(body))
            .await
    }

    /// `POST path`, expecting success.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, DeskError> {
        let (status, answer) = self.post_raw(path, body).await?;
        if (200..300).contains(&status) {
            Ok(answer)
        } else {
            Err(Self::refused(status, &answer))
        }
    }

    /// Reserves a model call's worst case: its id, or the guard's reason when the budget says
    /// no (429).
    pub async fn reserve(
        &self,
        bug: &str,
        provider: &str,
        model: &str,
        worst_case_micros: u64,
    ) -> Result<Result<String, String>, DeskError> {
        let (status, body) = self
            .post_raw(
                "/api/v1/model-calls",
                &json!({"provider": provider, "model": model, "worst_case_micros": worst_case_micros, "bug": bug}),
            )
            .await?;
        match status {
            201 => Ok(Ok(body["id"].as_str().unwrap_or_default().to_owned())),
            429 => Ok(Err(body["message"]
                .as_str()
                .unwrap_or("refused")
                .to_owned())),
            _ => Err(Self::refused(status, &body)),
        }
    }

    /// Settles a reserved call.
    pub async fn settle(
        &self,
        id: &str,
        outcome: &str,
        cost_micros: Option<u64>,
    ) -> Result<(), DeskError> {
        self.post(
            &format!("/api/v1/model-calls/{id}/settle"),
            &json!({"outcome": outcome, "cost_micros": cost_micros}),
        )
        .await
        .map(|_| ())
    }
}
