//! How long a client may take and how many connections it may hold
//! (`R2R_HEADER_TIMEOUT`, `R2R_BODY_TIMEOUT`, `R2R_MAX_CONNECTIONS`,
//! `R2R_MAX_CONNECTIONS_PER_CLIENT`).

use super::env::{ConfigError, Environment};
use super::whole_in;

/// What the listener allows a client: a client slower than this is answered 408 or
/// disconnected, so stalled connections cannot pile up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Time to send a request's headers, from the connection's start or the previous answer
    /// — so also how long an idle keep-alive connection stays open (`R2R_HEADER_TIMEOUT`,
    /// seconds, 1 to 300, default 10).
    pub header_timeout: std::time::Duration,
    /// Time to send a request's whole body once its headers arrived (`R2R_BODY_TIMEOUT`,
    /// seconds, 1 to 600, default 30); a late body is answered 408.
    pub body_timeout: std::time::Duration,
    /// Connections open at once (`R2R_MAX_CONNECTIONS`, 16 to 100,000, default 8,192); one
    /// more is closed at once.
    pub max_connections: usize,
    /// Connections open at once from one client address (`R2R_MAX_CONNECTIONS_PER_CLIENT`,
    /// 1 to 100,000, default 256); one more from it is closed at once. A trusted proxy
    /// (`R2R_TRUSTED_PROXIES`) is not held to it.
    pub max_connections_per_client: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_timeout: std::time::Duration::from_secs(10),
            body_timeout: std::time::Duration::from_secs(30),
            max_connections: 8_192,
            max_connections_per_client: 256,
        }
    }
}

impl HttpLimits {
    /// Reads the section.
    pub fn from_env(env: &Environment) -> Result<HttpLimits, ConfigError> {
        let defaults = HttpLimits::default();
        let seconds = |d: std::time::Duration| i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
        Ok(HttpLimits {
            header_timeout: std::time::Duration::from_secs(
                whole_in(
                    env,
                    "R2R_HEADER_TIMEOUT",
                    1,
                    300,
                    seconds(defaults.header_timeout),
                    "how many seconds a client may take to send a request's headers",
                )?
                .unsigned_abs(),
            ),
            body_timeout: std::time::Duration::from_secs(
                whole_in(
                    env,
                    "R2R_BODY_TIMEOUT",
                    1,
                    600,
                    seconds(defaults.body_timeout),
                    "how many seconds a client may take to send a request's body",
                )?
                .unsigned_abs(),
            ),
            max_connections: usize::try_from(whole_in(
                env,
                "R2R_MAX_CONNECTIONS",
                16,
                100_000,
                8_192,
                "how many connections may be open at once",
            )?)
            .unwrap_or(8_192),
            max_connections_per_client: usize::try_from(whole_in(
                env,
                "R2R_MAX_CONNECTIONS_PER_CLIENT",
                1,
                100_000,
                256,
                "how many connections one client address may have open at once",
            )?)
            .unwrap_or(256),
        })
    }
}

/// Where the other servers on the same database reach this one (`R2R_SERVER_ADDRESS`, an
/// http(s) base URL with no path, query or user); unset: none.
pub fn server_address(env: &Environment) -> Result<Option<String>, ConfigError> {
    Ok(match env.get("R2R_SERVER_ADDRESS").map(str::trim) {
        None | Some("") => None,
        Some(text) => {
            let parsed = reqwest::Url::parse(text).ok().filter(|url| {
                matches!(url.scheme(), "http" | "https")
                    && url.host_str().is_some()
                    && url.query().is_none()
                    && url.fragment().is_none()
                    && url.username().is_empty()
                    && url.path() == "/"
            });
            if parsed.is_none() {
                return Err(ConfigError::new(
                "R2R_SERVER_ADDRESS",
                format!("expected an http(s) base URL such as http://10.0.0.5:3000, with no path, query or user, got {text:?}"),
            ));
            }
            Some(text.trim_end_matches('/').to_owned())
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn http_limits_have_defaults_and_bad_values_are_named() {
        let http = HttpLimits::from_env(&Environment::default()).unwrap();
        assert_eq!(http, HttpLimits::default());
        assert_eq!(http.header_timeout.as_secs(), 10);
        let set = Environment::from_pairs([
            ("R2R_HEADER_TIMEOUT", "2"),
            ("R2R_BODY_TIMEOUT", "3"),
            ("R2R_MAX_CONNECTIONS", "64"),
            ("R2R_MAX_CONNECTIONS_PER_CLIENT", "8"),
        ]);
        let http = HttpLimits::from_env(&set).unwrap();
        assert_eq!(
            (
                http.header_timeout.as_secs(),
                http.body_timeout.as_secs(),
                http.max_connections,
                http.max_connections_per_client
            ),
            (2, 3, 64, 8)
        );
        for (name, value) in [
            ("R2R_HEADER_TIMEOUT", "0"),
            ("R2R_HEADER_TIMEOUT", "301"),
            ("R2R_BODY_TIMEOUT", "ten"),
            ("R2R_BODY_TIMEOUT", "601"),
            ("R2R_MAX_CONNECTIONS", "15"),
            ("R2R_MAX_CONNECTIONS", "-1"),
            ("R2R_MAX_CONNECTIONS_PER_CLIENT", "0"),
        ] {
            let env = Environment::from_pairs([(name, value)]);
            let error = HttpLimits::from_env(&env).unwrap_err();
            assert_eq!(error.variable, name, "{value:?}");
        }
    }

    #[test]
    fn the_server_address_is_a_base_url_or_unset() {
        assert_eq!(server_address(&Environment::default()).unwrap(), None);
        let set = Environment::from_pairs([("R2R_SERVER_ADDRESS", " http://10.0.0.5:3000/ ")]);
        assert_eq!(
            server_address(&set).unwrap().as_deref(),
            Some("http://10.0.0.5:3000")
        );
        for bad in [
            "ftp://10.0.0.5",
            "http://10.0.0.5:3000/desk",
            "10.0.0.5:3000",
            "http://u@h/",
            "http://h/?q=1",
        ] {
            let set = Environment::from_pairs([("R2R_SERVER_ADDRESS", bad)]);
            assert_eq!(
                server_address(&set).unwrap_err().variable,
                "R2R_SERVER_ADDRESS",
                "{bad:?}"
            );
        }
    }
}
