//! How a released program is started in its sandbox: the port it listens on inside its own
//! network namespace (the desk reaches it there, and nothing else can), its arguments and
//! the environment the project names (nothing of the desk's own environment is passed), and
//! the folder of its static assets, which the build hashes into a manifest and the recorder
//! checks the live address against.

use serde::{Deserialize, Serialize};

/// The default port.
pub const DEFAULT_PORT: u16 = 8080;
/// Most arguments.
const MOST_ARGS: usize = 32;
/// Most characters in one argument.
const MOST_ARG_CHARS: usize = 256;
/// Most variables.
const MOST_VARS: usize = 64;
/// Most characters in one value.
const MOST_VALUE_CHARS: usize = 4096;

/// A released program's start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// Where it listens: `127.0.0.1:<port>` inside its own network namespace.
    pub port: u16,
    /// Its arguments after its binary; `{addr}` and `{port}` are filled in.
    pub args: Vec<String>,
    /// Its environment beyond the sandbox's bare one (`PATH`, `HOME`, `TMPDIR`, `LANG`).
    pub env: Vec<(String, String)>,
    /// The folder of the tree whose files it serves as they are, each at its own path
    /// (`static/app.css` at `/static/app.css`); empty: none. Missing in a commit: none.
    #[serde(default = "default_assets")]
    pub assets: String,
}

fn default_assets() -> String {
    DEFAULT_ASSETS.to_owned()
}

/// The default assets folder.
pub const DEFAULT_ASSETS: &str = "static";

impl Default for Launch {
    /// `--addr 127.0.0.1:8080`, no environment.
    fn default() -> Self {
        Launch {
            port: DEFAULT_PORT,
            args: vec!["--addr".to_owned(), "{addr}".to_owned()],
            env: Vec::new(),
            assets: default_assets(),
        }
    }
}

/// A launch setting that cannot be used: which one (`port`, `args`, `env`) and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct LaunchError {
    /// `port`, `args`, `env` or `assets`.
    pub field: &'static str,
    /// Why.
    pub message: String,
}

fn refuse(field: &'static str, message: impl Into<String>) -> LaunchError {
    LaunchError {
        field,
        message: message.into(),
    }
}

impl Launch {
    /// Whether it is the default (not stored with a project).
    pub fn is_default(&self) -> bool {
        *self == Launch::default()
    }

    /// Reads the three settings as an owner writes them: a port (`3000`), arguments separated
    /// by spaces (empty: none) and `NAME=VALUE` pairs separated by `;`. Each absent one keeps
    /// `base`'s.
    pub fn parse(
        base: &Launch,
        port: Option<&str>,
        args: Option<&str>,
        env: Option<&str>,
    ) -> Result<Launch, LaunchError> {
        Launch::parse_with_assets(base, port, args, env, None)
    }

    /// [`Launch::parse`] with the assets folder too (`none` or empty: none).
    pub fn parse_with_assets(
        base: &Launch,
        port: Option<&str>,
        args: Option<&str>,
        env: Option<&str>,
        assets: Option<&str>,
    ) -> Result<Launch, LaunchError> {
        let assets = match assets.map(str::trim) {
            None => base.assets.clone(),
            Some("none") => String::new(),
            Some(folder) => folder.trim_end_matches('/').to_owned(),
        };
        let port = match port.map(str::trim) {
            None => base.port,
            Some("") => DEFAULT_PORT,
            Some(text) => text
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| refuse("port", format!("expected 1 to 65535, got {text:?}")))?,
        };
        let args = match args {
            None => base.args.clone(),
            Some(text) => text.split_whitespace().map(str::to_owned).collect(),
        };
        let env = match env {
            None => base.env.clone(),
            Some(text) => {
                let mut pairs = Vec::new();
                for pair in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
                    let (name, value) = pair.split_once('=').ok_or_else(|| {
                        refuse("env", format!("expected NAME=VALUE, got {pair:?}"))
                    })?;
                    pairs.push((name.trim().to_owned(), value.to_owned()));
                }
                pairs
            }
        };
        let launch = Launch {
            port,
            args,
            env,
            assets,
        };
        launch.check()?;
        Ok(launch)
    }

    /// Checks a launch however it was made (a stored project's is read from JSON).
    pub fn check(&self) -> Result<(), LaunchError> {
        if self.port == 0 {
            return Err(refuse("port", "expected 1 to 65535, got 0"));
        }
        if self.args.len() > MOST_ARGS
            || self
                .args
                .iter()
                .any(|a| a.chars().count() > MOST_ARG_CHARS || a.chars().any(char::is_control))
        {
            return Err(refuse(
                "args",
                format!("at most {MOST_ARGS} arguments of at most {MOST_ARG_CHARS} characters, none of them control characters"),
            ));
        }
        let plain_folder = self.assets.is_empty()
            || (self.assets.len() <= 200
                && !self.assets.starts_with('/')
                && self.assets.split('/').all(|part| {
                    !part.is_empty()
                        && !part.starts_with('.')
                        && part
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
                }));
        if !plain_folder {
            return Err(refuse(
                "assets",
                format!(
                    "a folder of the tree (letters, digits, - _ . and /, no hidden part, .. or leading /), got {:?}",
                    self.assets
                ),
            ));
        }
        if self.env.len() > MOST_VARS {
            return Err(refuse("env", format!("at most {MOST_VARS} variables")));
        }
        for (n, (name, value)) in self.env.iter().enumerate() {
            let plain = !name.is_empty()
                && name.len() <= 64
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
            if !plain {
                return Err(refuse(
                    "env",
                    format!("{name:?}: a name is upper-case letters, digits and underscores"),
                ));
            }
            if let Some(why) = refused_name(name) {
                return Err(refuse("env", format!("{name}: {why}")));
            }
            if value.chars().count() > MOST_VALUE_CHARS || value.chars().any(char::is_control) {
                return Err(refuse(
                    "env",
                    format!("{name}: a value is at most {MOST_VALUE_CHARS} characters, none of them control characters"),
                ));
            }
            if self.env[..n].iter().any(|(seen, _)| seen == name) {
                return Err(refuse("env", format!("{name} is given twice")));
            }
        }
        Ok(())
    }

    /// The address it listens on, inside its namespace.
    pub fn addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Its arguments with `{addr}` and `{port}` filled in.
    pub fn filled_args(&self) -> Vec<String> {
        let (addr, port) = (self.addr().to_string(), self.port.to_string());
        self.args
            .iter()
            .map(|arg| arg.replace("{addr}", &addr).replace("{port}", &port))
            .collect()
    }

    /// The settings as an owner writes them: port, arguments, environment.
    pub fn as_text(&self) -> (String, String, String) {
        (
            self.port.to_string(),
            self.args.join(" "),
            self.env
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join("; "),
        )
    }
}

/// Names a released program's environment may not carry: the desk's own settings and secrets
/// (`R2R_*`, `DATABASE_URL`) would only be there by a copy-and-paste mistake, the dynamic
/// loader's variables change what runs, and the sandbox sets its own `PATH`, `HOME`, `TMPDIR`.
fn refused_name(name: &str) -> Option<&'static str> {
    if name.starts_with("R2R_") || name == "DATABASE_URL" {
        Some("the desk's own settings and secrets are never passed to a released program")
    } else if name.starts_with("LD_") {
        Some("the dynamic loader's variables are not passed")
    } else if matches!(name, "PATH" | "HOME" | "TMPDIR") {
        Some("the sandbox sets it")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_default_takes_an_address_and_nothing_else() {
        let launch = Launch::default();
        assert_eq!(launch.filled_args(), ["--addr", "127.0.0.1:8080"]);
        assert!(launch.env.is_empty() && launch.is_default());
        assert_eq!(Launch::parse(&launch, None, None, None), Ok(launch));
    }

    #[test]
    fn a_program_without_an_address_flag_gets_its_port_arguments_and_environment() {
        let own = Launch::parse(
            &Launch::default(),
            Some("3000"),
            Some("serve --listen={addr}  --port {port}"),
            Some("TZ=Europe/Paris; SHOP_MODE=demo=1;"),
        )
        .unwrap();
        assert_eq!(own.addr().to_string(), "127.0.0.1:3000");
        assert_eq!(
            own.filled_args(),
            ["serve", "--listen=127.0.0.1:3000", "--port", "3000"]
        );
        assert_eq!(
            own.env,
            [
                ("TZ".to_owned(), "Europe/Paris".to_owned()),
                ("SHOP_MODE".to_owned(), "demo=1".to_owned())
            ]
        );
        let (port, args, env) = own.as_text();
        assert_eq!(
            Launch::parse(&Launch::default(), Some(&port), Some(&args), Some(&env)),
            Ok(own.clone())
        );
        // Empty arguments: none; an absent setting keeps the base's.
        let bare = Launch::parse(&own, None, Some(""), None).unwrap();
        assert!(bare.filled_args().is_empty());
        assert_eq!((bare.port, bare.env), (3000, own.env));
    }

    #[test]
    fn settings_that_would_leak_the_desk_or_break_the_start_are_refused_by_name() {
        let base = Launch::default();
        for (port, args, env, field) in [
            (Some("0"), None, None, "port"),
            (Some("80x"), None, None, "port"),
            (Some("65536"), None, None, "port"),
            (None, Some("a\u{7}b"), None, "args"),
            (None, None, Some("R2R_OWNER_SESSION_KEY=x"), "env"),
            (None, None, Some("DATABASE_URL=sqlite://x"), "env"),
            (None, None, Some("LD_PRELOAD=/x.so"), "env"),
            (None, None, Some("PATH=/tmp"), "env"),
            (None, None, Some("TZ"), "env"),
            (None, None, Some("tz=UTC"), "env"),
            (None, None, Some("1TZ=UTC"), "env"),
            (None, None, Some("TZ=UTC;TZ=CET"), "env"),
            (None, None, Some("TZ=a\u{1b}[2J"), "env"),
        ] {
            let refused = Launch::parse(&base, port, args, env).unwrap_err();
            assert_eq!(refused.field, field, "{port:?} {args:?} {env:?}: {refused}");
        }
        let many = (0..40)
            .map(|n| format!("a{n}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            Launch::parse(&base, None, Some(&many), None)
                .unwrap_err()
                .field,
            "args"
        );
        for folder in [
            "../etc",
            "/srv/static",
            "static/../..",
            "a b",
            ".git",
            "web/.env",
        ] {
            assert_eq!(
                Launch::parse_with_assets(&base, None, None, None, Some(folder))
                    .unwrap_err()
                    .field,
                "assets",
                "{folder}"
            );
        }
        assert_eq!(
            Launch::parse_with_assets(&base, None, None, None, Some("web/public/"))
                .unwrap()
                .assets,
            "web/public"
        );
        assert_eq!(
            Launch::parse_with_assets(&base, None, None, None, Some("none"))
                .unwrap()
                .assets,
            ""
        );
        // A stored launch is checked the same way, however it was made.
        let stored = Launch {
            env: vec![("R2R_CREW_TOKEN".into(), "x".into())],
            ..Launch::default()
        };
        assert_eq!(stored.check().unwrap_err().field, "env");
    }
}
