//! An OpenAI-compatible chat-completions client (`POST {base}/chat/completions`), as served
//! by hosted APIs and by local servers such as Ollama, vLLM and llama.cpp.

use crate::provider::{Completion, ModelError, ModelProvider, Prompt};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::time::Duration;

/// Settings of the client.
#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    /// API base including the version, e.g. `https://api.example.com/v1` or
    /// `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    /// Bearer key, when the server wants one.
    pub api_key: Option<String>,
    /// Model name.
    pub model: String,
    /// Whole-request deadline.
    pub timeout: Duration,
    /// Most tokens the answer may use (bounds the worst-case cost).
    pub max_tokens: u32,
}

/// The client.
#[derive(Clone)]
pub struct OpenAiCompatible {
    config: OpenAiConfig,
    client: reqwest::Client,
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("OpenAiCompatible")
            .field("base_url", &self.config.base_url)
            .field("model", &self.config.model)
            .finish_non_exhaustive()
    }
}

impl OpenAiCompatible {
    /// A client; fails on a base URL that is not http(s).
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        if !(config.base_url.starts_with("http://") || config.base_url.starts_with("https://")) {
            return Err(ModelError::Connection(format!(
                "the base URL must be http(s), got {:?}",
                config.base_url
            )));
        }
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .user_agent(concat!(
                "reporter-to-release-crew/",
                env!("CARGO_PKG_VERSION")
            ))
            .build()
            .map_err(|e| ModelError::Connection(e.to_string()))?;
        Ok(OpenAiCompatible { config, client })
    }
}

fn shorten(text: &str) -> String {
    text.chars().take(300).collect()
}

#[async_trait]
impl ModelProvider for OpenAiCompatible {
    fn name(&self) -> &'static str {
        "openai-compatible"
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    async fn complete(&self, prompt: &Prompt) -> Result<Completion, ModelError> {
        let url = format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let body = json!({
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user},
            ],
            "temperature": 0,
            "max_tokens": self.config.max_tokens,
            "response_format": {"type": "json_object"},
        });
        let mut request = self.client.post(url).json(&body);
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let timeout_ms = u64::try_from(self.config.timeout.as_millis()).unwrap_or(u64::MAX);
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                ModelError::Timeout(timeout_ms)
            } else {
                ModelError::Connection(e.to_string())
            }
        })?;
        let status = response.status();
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse().ok());
            return Err(ModelError::RateLimited { retry_after });
        }
        let text = response.text().await.map_err(|e| {
            if e.is_timeout() {
                ModelError::Timeout(timeout_ms)
            } else {
                ModelError::Connection(e.to_string())
            }
        })?;
        if !status.is_success() {
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| shorten(&text));
            return Err(ModelError::Status {
                status: status.as_u16(),
                message: shorten(&message),
            });
        }
        let answer: Value = serde_json::from_str(&text)
            .map_err(|e| ModelError::Malformed(format!("not JSON ({e}): {}", shorten(&text))))?;
        let choice = &answer["choices"][0];
        if choice["finish_reason"].as_str() == Some("length") {
            return Err(ModelError::Malformed(
                "the answer was cut off at max_tokens".into(),
            ));
        }
        let content = choice["message"]["content"]
            .as_str()
            .ok_or_else(|| ModelError::Malformed("no choices[0].message.content".into()))?;
        Ok(Completion {
            content: content.to_owned(),
            provider: self.name(),
            model: answer["model"]
                .as_str()
                .unwrap_or(&self.config.model)
                .to_owned(),
            scripted: false,
            prompt_tokens: answer["usage"]["prompt_tokens"].as_u64(),
            completion_tokens: answer["usage"]["completion_tokens"].as_u64(),
        })
    }
}
