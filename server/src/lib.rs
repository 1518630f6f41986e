//! The `r2r` binary's library: configuration, the HTTP server and the CLI subcommands.
//!
//! Errors: `thiserror` enums inside modules; `anyhow` only in [`cli`]; HTTP answers carry a
//! stable error code and never an internal message.

pub mod auth;
pub mod build_info;
pub mod changes;
pub mod cli;
pub mod clock;
pub mod config;
pub mod desk;
pub mod error;
pub mod instance;
pub mod projects;
pub mod ratelimit;
pub mod router;
pub mod routes;
pub mod sandbox_queue;
pub mod secret;
pub mod service;
pub mod start;
pub mod web;
pub mod workers;

#[cfg(test)]
mod layering {
    //! Every dependency between the server's top-level modules points one way, down this
    //! list: a module may use only modules of a lower layer (doc comments aside).

    const LAYERS: &[(&str, u8)] = &[
        ("build_info", 0),
        ("changes", 0),
        ("clock", 0),
        ("ratelimit", 0),
        ("secret", 0),
        ("config", 1),
        ("error", 1),
        ("instance", 1),
        ("auth", 2),
        ("projects", 2),
        ("sandbox_queue", 2),
        ("web", 3),
        ("service", 4),
        ("desk", 5),
        ("routes", 5),
        ("workers", 5),
        ("router", 6),
        ("start", 7),
        ("cli", 8),
    ];

    fn layer(module: &str) -> Option<u8> {
        LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
    }

    /// The top-level modules named by `crate::…` paths in `code` (comments skipped).
    fn used(code: &str) -> Vec<String> {
        let mut found = Vec::new();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            let mut rest = line;
            while let Some(at) = rest.find("crate::") {
                rest = &rest[at + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if let Some(braced) = rest.strip_prefix('{') {
                    // `use crate::{a, b::c}`: every name directly inside the braces.
                    let inner = braced.split('}').next().unwrap_or_default();
                    for part in inner.split(',') {
                        let head: String = part
                            .trim()
                            .chars()
                            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                            .collect();
                        found.push(head);
                    }
                } else {
                    found.push(name);
                }
            }
        }
        found
    }

    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn every_module_uses_only_lower_layers() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        assert!(files.len() > 30, "found only {} source files", files.len());
        let mut wrong = Vec::new();
        for file in &files {
            let relative = file.strip_prefix(&src).unwrap_or(file);
            let top = relative
                .components()
                .next()
                .map(|c| {
                    c.as_os_str()
                        .to_string_lossy()
                        .trim_end_matches(".rs")
                        .to_owned()
                })
                .unwrap_or_default();
            if top == "lib" || top == "main" {
                continue;
            }
            let Some(own) = layer(&top) else {
                wrong.push(format!("{top} is in no layer (add it to LAYERS)"));
                continue;
            };
            let code = std::fs::read_to_string(file).unwrap_or_default();
            for target in used(&code) {
                if target == top {
                    continue;
                }
                match layer(&target) {
                    Some(other) if other < own => {}
                    Some(_) => wrong.push(format!("{} uses crate::{target}", relative.display())),
                    None => {}
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn services_name_no_http_status_and_routes_no_operation_by_string() {
        // HTTP statuses are decided in `web::error` alone; the services' refusals carry a kind.
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src.join("service"), &mut files);
        assert!(files.len() > 10, "found only {} service files", files.len());
        let mut wrong = Vec::new();
        for file in &files {
            let code = std::fs::read_to_string(file).unwrap_or_default();
            let shipped = code.split("#[cfg(test)]").next().unwrap_or_default();
            if shipped.contains("StatusCode") || shipped.contains("axum::http") {
                wrong.push(format!("{} names an HTTP status", file.display()));
            }
        }
        // Handlers are guarded by `Op`, never by an operation's name.
        let mut routes = Vec::new();
        sources(&src.join("routes"), &mut routes);
        for file in &routes {
            let code = std::fs::read_to_string(file).unwrap_or_default();
            if code.contains("guard(&state, &credential, &headers, \"") {
                wrong.push(format!("{} guards by a string", file.display()));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn the_check_sees_an_upward_use() {
        assert_eq!(
            used("use crate::{web::AppState, service::x};"),
            ["web", "service"]
        );
        assert_eq!(
            used("// crate::cli in a comment\nlet x = crate::router::router;"),
            ["router"]
        );
    }
}
