//! The model provider, chosen explicitly by configuration — there is no default and no
//! fallback from one provider to another.

use crate::guard::TokenPrices;
use crate::openai::{OpenAiCompatible, OpenAiConfig};
use crate::provider::ModelProvider;
use crate::scripted::Scripted;
use std::time::Duration;

/// Builds the configured provider and its prices from variables (`R2R_MODEL_PROVIDER`:
/// `scripted` or `openai-compatible`; for the latter `R2R_MODEL_BASE_URL`,
/// `R2R_MODEL_NAME`, optional `R2R_MODEL_API_KEY`, `R2R_MODEL_TIMEOUT_SECS` (60),
/// `R2R_MODEL_MAX_TOKENS` (2000), and prices in dollars per million tokens
/// `R2R_MODEL_PRICE_INPUT` / `R2R_MODEL_PRICE_OUTPUT`). Errors name the variable.
pub fn provider_from(
    get: impl Fn(&str) -> Option<String>,
) -> Result<(Box<dyn ModelProvider>, TokenPrices), String> {
    let required = |name: &str| {
        get(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("{name} is not set"))
    };
    let number = |name: &str, default: u64| -> Result<u64, String> {
        match get(name) {
            None => Ok(default),
            Some(text) => text
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{name}: expected a positive whole number, got {text:?}")),
        }
    };
    // Dollars per million tokens = micro-dollars per token; stored per thousand tokens.
    let price = |name: &str| -> Result<u64, String> {
        match get(name) {
            None => Ok(0),
            Some(text) => domain::spend::parse_dollars(&text)
                .map(|micros_per_token_millionth| micros_per_token_millionth / 1_000)
                .ok_or_else(|| {
                    format!(
                        "{name}: expected dollars per million tokens such as 0.60, got {text:?}"
                    )
                }),
        }
    };
    let provider = required("R2R_MODEL_PROVIDER").map_err(|_| {
        "R2R_MODEL_PROVIDER is not set: choose `scripted` (the demo's deterministic crew) or `openai-compatible` (a hosted API or a local Ollama/vLLM/llama.cpp server)".to_owned()
    })?;
    match provider.as_str() {
        "scripted" => Ok((
            Box::new(Scripted),
            TokenPrices {
                input_per_k: 0,
                output_per_k: 0,
                max_output_tokens: 0,
            },
        )),
        "openai-compatible" => {
            let max_tokens = number("R2R_MODEL_MAX_TOKENS", 2_000)?;
            let client = OpenAiCompatible::new(OpenAiConfig {
                base_url: required("R2R_MODEL_BASE_URL")?,
                api_key: get("R2R_MODEL_API_KEY").map(|k| k.trim().to_owned()),
                model: required("R2R_MODEL_NAME")?,
                timeout: Duration::from_secs(number("R2R_MODEL_TIMEOUT_SECS", 60)?),
                max_tokens: u32::try_from(max_tokens)
                    .map_err(|_| "R2R_MODEL_MAX_TOKENS is too large".to_owned())?,
            })
            .map_err(|e| format!("R2R_MODEL_BASE_URL: {e}"))?;
            Ok((
                Box::new(client),
                TokenPrices {
                    input_per_k: price("R2R_MODEL_PRICE_INPUT")?,
                    output_per_k: price("R2R_MODEL_PRICE_OUTPUT")?,
                    max_output_tokens: max_tokens,
                },
            ))
        }
        other => Err(format!(
            "R2R_MODEL_PROVIDER: expected scripted or openai-compatible, got {other:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::WorstCase;

    fn from(pairs: &[(&str, &str)]) -> Result<(Box<dyn ModelProvider>, TokenPrices), String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        provider_from(|name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn the_provider_is_explicit_and_errors_name_the_variable() {
        assert!(from(&[])
            .unwrap_err()
            .contains("R2R_MODEL_PROVIDER is not set"));
        assert!(from(&[("R2R_MODEL_PROVIDER", "gpt")])
            .unwrap_err()
            .contains("expected scripted"));
        assert!(from(&[("R2R_MODEL_PROVIDER", "openai-compatible")])
            .unwrap_err()
            .contains("R2R_MODEL_BASE_URL"));
        assert_eq!(
            from(&[("R2R_MODEL_PROVIDER", "scripted")])
                .unwrap()
                .0
                .name(),
            "scripted"
        );
        let (model, prices) = from(&[
            ("R2R_MODEL_PROVIDER", "openai-compatible"),
            ("R2R_MODEL_BASE_URL", "http://127.0.0.1:11434/v1"),
            ("R2R_MODEL_NAME", "qwen2.5-coder"),
            ("R2R_MODEL_PRICE_INPUT", "0.60"),
            ("R2R_MODEL_PRICE_OUTPUT", "2.40"),
            ("R2R_MODEL_MAX_TOKENS", "2000"),
        ])
        .unwrap();
        assert_eq!(model.model(), "qwen2.5-coder");
        // 0.60 $/M tokens = 600 µ$ per 1k; 2,000 output tokens at 2.40 $/M = 4,800 µ$.
        let prompt = crate::Prompt {
            task: crate::Task::Reproduce,
            system: String::new(),
            user: "x".repeat(3_000),
        };
        assert_eq!(prices.worst_case(&prompt), 600 + 4_800);
        assert!(from(&[
            ("R2R_MODEL_PROVIDER", "openai-compatible"),
            ("R2R_MODEL_BASE_URL", "http://x/v1"),
            ("R2R_MODEL_NAME", "m"),
            ("R2R_MODEL_TIMEOUT_SECS", "soon"),
        ])
        .unwrap_err()
        .contains("R2R_MODEL_TIMEOUT_SECS"));
    }
}
