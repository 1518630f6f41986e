//! Data shapes that cross the wire between the server and the browser.

pub use domain::{BugState, DeskAction, ReportStatus};
use serde::{Deserialize, Serialize};

/// The service name every health answer carries; the recorder checks it.
pub const SERVICE_NAME: &str = "reporter-to-release";

/// `GET /api/health`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// Always [`SERVICE_NAME`].
    pub service: String,
    /// The crate version.
    pub version: String,
    /// The full git commit the binary was built from.
    pub commit: String,
    /// `sqlite` or `postgres`.
    pub storage: String,
    /// `ok`, or why not.
    pub status: String,
    /// Whether the database answered.
    pub database_reachable: bool,
    /// Newest applied migration, when the database answered.
    pub schema_version: Option<i64>,
    /// This installation's id, fixed when its database was created.
    pub instance: Option<String>,
}

impl Health {
    /// Whether the answer says the desk can serve.
    pub fn is_ok(&self) -> bool {
        self.status == "ok"
    }
}

/// The header a tracking page sends its capability in (never a path or query string).
pub const CAPABILITY_HEADER: &str = "x-r2r-capability";

/// Limits on report fields, in characters (the server enforces them; the form shows them).
pub mod limits {
    /// Title.
    pub const TITLE: usize = 200;
    /// What happened.
    pub const WHAT_HAPPENED: usize = 8_000;
    /// What the reporter expected.
    pub const EXPECTED: usize = 4_000;
    /// Steps to reproduce.
    pub const STEPS: usize = 8_000;
    /// Contact address.
    pub const CONTACT: usize = 254;
    /// A "no" answer's reason.
    pub const REASON: usize = 2_000;
    /// A request body, in bytes.
    pub const BODY_BYTES: usize = 64 * 1024;
}

/// Every refusal: a stable code, plain words, and per-field reasons when fields were at fault.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// Stable machine-readable code.
    pub error: String,
    /// Plain words.
    pub message: String,
    /// Field name → what is wrong with it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub fields: std::collections::BTreeMap<String, String>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

mod desk;
mod reporter;
pub use desk::*;
pub use reporter::*;

/// Server-side settings the pages need (provided as context when rendering).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteSettings {
    /// Components a report may name.
    pub components: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_serialises_with_the_field_names_the_recorder_reads() {
        let health = Health {
            service: SERVICE_NAME.into(),
            version: "0.1.0".into(),
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            storage: "sqlite".into(),
            status: "ok".into(),
            database_reachable: true,
            schema_version: Some(1),
            instance: Some("desk-1".into()),
        };
        let json: serde_json::Value = serde_json::to_value(&health).unwrap();
        assert_eq!(json["service"], "reporter-to-release");
        assert_eq!(json["commit"], "0123456789abcdef0123456789abcdef01234567");
        assert_eq!(json["storage"], "sqlite");
        assert_eq!(json["status"], "ok");
        assert_eq!(json["database_reachable"], true);
        let back: Health = serde_json::from_value(json).unwrap();
        assert_eq!(back, health);
        assert!(back.is_ok());
    }
}
