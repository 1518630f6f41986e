//! Where notifications go (`R2R_SMTP_*`, `R2R_NOTIFY_WEBHOOK_URL`, `R2R_CONCIERGE`).

use super::{ConfigError, Environment};
use crate::secret::Secret;
use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, Tokio1Executor};

/// Where notifications go besides the tracking page (`R2R_SMTP_*`, `R2R_NOTIFY_WEBHOOK_URL`)
/// and whether `r2r serve` runs the concierge (`R2R_CONCIERGE`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct NotifyConfig {
    /// `smtp://host:port` (plain, for a local relay), `smtp://…?tls=required` (STARTTLS) or
    /// `smtps://…` (TLS); user and password may sit in the URL.
    pub smtp_url: Option<Secret>,
    /// The sender address (`R2R_SMTP_FROM`, required with an SMTP URL).
    pub smtp_from: Option<String>,
    /// A Slack-compatible incoming webhook for the owners (`R2R_NOTIFY_WEBHOOK_URL`).
    pub webhook_url: Option<Secret>,
    /// Run the concierge inside `r2r serve` (default: when `R2R_CONCIERGE_TOKEN` is set).
    pub in_process: bool,
}

impl NotifyConfig {
    /// Reads and checks the notification variables.
    pub fn from_env(env: &Environment) -> Result<NotifyConfig, ConfigError> {
        let smtp_url = env.get("R2R_SMTP_URL").map(str::trim);
        if let Some(url) = smtp_url {
            let scheme_ok = url.starts_with("smtp://") || url.starts_with("smtps://");
            if !scheme_ok || AsyncSmtpTransport::<Tokio1Executor>::from_url(url).is_err() {
                return Err(ConfigError::new(
                    "R2R_SMTP_URL",
                    "expected smtp://host:port, smtp://host:port?tls=required or smtps://host:port (user:password@ allowed)",
                ));
            }
        }
        let smtp_from = env.get("R2R_SMTP_FROM").map(|f| f.trim().to_owned());
        match (&smtp_url, &smtp_from) {
            (Some(_), None) => {
                return Err(ConfigError::new(
                    "R2R_SMTP_FROM",
                    "required with R2R_SMTP_URL: the address notifications come from",
                ))
            }
            (_, Some(from)) if from.parse::<Mailbox>().is_err() => {
                return Err(ConfigError::new(
                    "R2R_SMTP_FROM",
                    format!("expected an email address, got {from:?}"),
                ))
            }
            _ => {}
        }
        let webhook_url = env.get("R2R_NOTIFY_WEBHOOK_URL").map(str::trim);
        if let Some(url) = webhook_url {
            let parsed = reqwest::Url::parse(url).ok();
            if !parsed.is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host()) {
                return Err(ConfigError::new(
                    "R2R_NOTIFY_WEBHOOK_URL",
                    "expected an http:// or https:// URL",
                ));
            }
        }
        let token_set = env.get(domain::Role::Concierge.token_variable()).is_some();
        let in_process = match env.get("R2R_CONCIERGE").map(str::trim) {
            None => token_set,
            Some("off") => false,
            Some("in-process") if token_set => true,
            Some("in-process") => {
                return Err(ConfigError::new(
                    "R2R_CONCIERGE",
                    "in-process needs R2R_CONCIERGE_TOKEN (r2r setup writes it)",
                ))
            }
            Some(other) => {
                return Err(ConfigError::new(
                    "R2R_CONCIERGE",
                    format!("expected in-process or off, got {other:?}"),
                ))
            }
        };
        Ok(NotifyConfig {
            smtp_url: smtp_url.map(Secret::new),
            smtp_from,
            webhook_url: webhook_url.map(Secret::new),
            in_process,
        })
    }
}
