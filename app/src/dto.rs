//! Data shapes that cross the wire between the server and the browser.

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
