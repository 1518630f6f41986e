//! The engineering crew's access to models.
//!
//! One provider is configured explicitly — an OpenAI-compatible chat-completions API
//! ([`openai::OpenAiCompatible`]: hosted APIs, Ollama, vLLM, llama.cpp) or the deterministic
//! [`scripted::Scripted`] provider for the demo and tests — and there is no fallback from
//! one to the other. Every completion carries the provider's name, the model and whether it
//! was scripted, so evidence always says where it came from. Model output is only ever
//! accepted through the strict schemas in [`schema`].

pub mod advisor;
pub mod config;
pub mod context;
pub mod desk;
pub mod fixer;
pub mod guard;
pub mod openai;
pub mod provider;
pub mod reproducer;
pub mod schema;
pub mod scripted;
pub mod service;

pub use provider::{Completion, ModelError, ModelProvider, Prompt, Task};
