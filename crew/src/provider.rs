//! What a model provider is asked and answers.

use async_trait::async_trait;
use serde::Serialize;

/// Which crew task a prompt serves (the scripted provider answers by task).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// An advisory read of a clean dossier.
    Triage,
    /// One regression test from the dossier.
    Reproduce,
    /// Whole-file contents of at most two files.
    Fix,
    /// An advisory review.
    Review,
}

/// One request: a system message and a user message (the dossier, headed as untrusted).
#[derive(Clone, Debug)]
pub struct Prompt {
    /// The task.
    pub task: Task,
    /// Instructions.
    pub system: String,
    /// The material (dossier, files).
    pub user: String,
}

/// A provider's answer, labelled with where it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Completion {
    /// The raw text the model returned (parse it with [`crate::schema`]).
    pub content: String,
    /// `openai-compatible` or `scripted`.
    pub provider: &'static str,
    /// The model name the provider reported (or was configured with).
    pub model: String,
    /// True for the scripted provider: evidence built on it is labelled `simulated demo`.
    pub scripted: bool,
    /// Tokens in, when reported.
    pub prompt_tokens: Option<u64>,
    /// Tokens out, when reported.
    pub completion_tokens: Option<u64>,
}

/// Why a call produced nothing usable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ModelError {
    /// No answer within the deadline (booked at worst case by the spend guard).
    #[error("the model did not answer within {0} ms")]
    Timeout(u64),
    /// The connection failed or dropped (booked at worst case).
    #[error("cannot reach the model: {0}")]
    Connection(String),
    /// The provider asked us to slow down.
    #[error("the provider is rate limiting (retry after {retry_after:?} s)")]
    RateLimited {
        /// Seconds, when the provider said.
        retry_after: Option<u64>,
    },
    /// Another HTTP error.
    #[error("the provider answered HTTP {status}: {message}")]
    Status {
        /// HTTP status.
        status: u16,
        /// The provider's message (shortened).
        message: String,
    },
    /// The answer is not a chat completion we can read.
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// The provider has no answer for this prompt (scripted provider outside its script).
    #[error("no scripted answer: {0}")]
    Unscripted(String),
}

/// A configured model provider.
#[async_trait]
pub trait ModelProvider: Send + Sync + std::fmt::Debug {
    /// `openai-compatible` or `scripted`.
    fn name(&self) -> &'static str;

    /// The configured model.
    fn model(&self) -> &str;

    /// One completion.
    async fn complete(&self, prompt: &Prompt) -> Result<Completion, ModelError>;
}
