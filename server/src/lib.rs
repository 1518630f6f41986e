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

    /// The module path of source file `relative` (to its crate's `src`): `a/b.rs` and
    /// `a/b/mod.rs` are `[a, b]`; `lib.rs` and `main.rs` are the root.
    fn module_of(relative: &std::path::Path) -> Vec<String> {
        let mut parts: Vec<String> = relative
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            parts.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            parts.pop();
        }
        parts
    }

    /// The files of `src` that `code` (the source of module `me`) names by `crate::…` or
    /// `super::…` paths written out, each resolved to the longest module path that has a file;
    /// comments and the tests module are skipped.
    fn named_files(
        src: &std::path::Path,
        me: &[String],
        code: &str,
    ) -> std::collections::BTreeSet<std::path::PathBuf> {
        let shipped = code.split("#[cfg(test)]").next().unwrap_or_default();
        let mut found = std::collections::BTreeSet::new();
        for line in shipped.lines() {
            let line = line.split("//").next().unwrap_or_default();
            let mut rest = line;
            while let Some(at) = rest.find(['c', 's']) {
                rest = &rest[at..];
                let boundary = line.len() - rest.len();
                let fresh = boundary == 0
                    || !line[..boundary]
                        .ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':');
                let (mut base, path) =
                    match (rest.strip_prefix("crate::"), rest.strip_prefix("super::")) {
                        (Some(path), _) if fresh => (Vec::new(), path),
                        (_, Some(path)) if fresh => {
                            (me[..me.len().saturating_sub(1)].to_vec(), path)
                        }
                        _ => {
                            rest = &rest[1..];
                            continue;
                        }
                    };
                // `a::b::{X, Y}`, `a::b::f(…)`: the names up to the first that is not followed
                // by `::`.
                let mut parts: Vec<&str> = Vec::new();
                for part in path.split("::") {
                    let end = part
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(part.len());
                    let name = &part[..end];
                    if !name.is_empty() {
                        parts.push(name);
                    }
                    if name.is_empty() || end < part.len() {
                        break;
                    }
                }
                while parts.first() == Some(&"super") {
                    parts.remove(0);
                    base.pop();
                }
                base.extend(parts.iter().map(|p| (*p).to_owned()));
                for take in (1..=base.len()).rev() {
                    let stem = base[..take].iter().collect::<std::path::PathBuf>();
                    let file = src.join(&stem).with_extension("rs");
                    let folder = src.join(&stem).join("mod.rs");
                    if file.is_file() {
                        found.insert(file);
                        break;
                    }
                    if folder.is_file() {
                        found.insert(folder);
                        break;
                    }
                }
                rest = &rest[1..];
            }
        }
        found
    }

    /// Files of one strongly connected part of `graph` larger than two (Tarjan's algorithm).
    fn circles(
        graph: &std::collections::BTreeMap<
            std::path::PathBuf,
            std::collections::BTreeSet<std::path::PathBuf>,
        >,
    ) -> Vec<Vec<std::path::PathBuf>> {
        use std::collections::BTreeMap;
        struct Walk<'a> {
            graph: &'a BTreeMap<std::path::PathBuf, std::collections::BTreeSet<std::path::PathBuf>>,
            index: BTreeMap<&'a std::path::PathBuf, (usize, usize)>,
            stack: Vec<&'a std::path::PathBuf>,
            next: usize,
            found: Vec<Vec<std::path::PathBuf>>,
        }
        impl<'a> Walk<'a> {
            fn visit(&mut self, v: &'a std::path::PathBuf) {
                self.index.insert(v, (self.next, self.next));
                self.next += 1;
                self.stack.push(v);
                for w in self.graph.get(v).into_iter().flatten() {
                    let Some((w, _)) = self.graph.get_key_value(w) else {
                        continue;
                    };
                    match self.index.get(w).copied() {
                        None => {
                            self.visit(w);
                            let low = self.index[w].1.min(self.index[v].1);
                            self.index.entry(v).and_modify(|e| e.1 = low);
                        }
                        Some((index, _)) if self.stack.contains(&w) => {
                            let low = index.min(self.index[v].1);
                            self.index.entry(v).and_modify(|e| e.1 = low);
                        }
                        Some(_) => {}
                    }
                }
                let (index, low) = self.index[v];
                if index == low {
                    let mut part = Vec::new();
                    while let Some(w) = self.stack.pop() {
                        part.push(w.clone());
                        if w == v {
                            break;
                        }
                    }
                    if part.len() > 2 {
                        part.sort();
                        self.found.push(part);
                    }
                }
            }
        }
        let mut walk = Walk {
            graph,
            index: BTreeMap::new(),
            stack: Vec::new(),
            next: 0,
            found: Vec::new(),
        };
        for v in graph.keys() {
            if !walk.index.contains_key(v) {
                walk.visit(v);
            }
        }
        walk.found
    }

    #[test]
    fn no_import_circle_spans_more_than_two_files() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let crates = [
            "server",
            "crew",
            "domain",
            "store",
            "sandbox",
            "app",
            "forge",
            "shoplite",
            "frontend",
            "api-types",
        ];
        let mut found = Vec::new();
        let mut checked = 0;
        for name in crates {
            let src = root.join(name).join("src");
            let mut files = Vec::new();
            sources(&src, &mut files);
            let mut graph = std::collections::BTreeMap::new();
            for file in &files {
                let me = module_of(file.strip_prefix(&src).unwrap_or(file));
                let code = std::fs::read_to_string(file).unwrap_or_default();
                let mut named = named_files(&src, &me, &code);
                named.remove(file);
                graph.insert(file.clone(), named);
            }
            checked += graph.len();
            for part in circles(&graph) {
                let names: Vec<String> = part
                    .iter()
                    .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
                    .collect();
                found.push(names.join(", "));
            }
        }
        assert!(checked > 150, "read only {checked} files");
        assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
    }

    #[test]
    fn the_circle_check_sees_a_circle_of_three() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path();
        std::fs::create_dir_all(src.join("a")).unwrap();
        std::fs::write(src.join("a/mod.rs"), "use super::b::X;").unwrap();
        std::fs::write(src.join("b.rs"), "fn f() { crate::c::y(); }").unwrap();
        std::fs::write(
            src.join("c.rs"),
            "use crate::a::{Z};\n// crate::b::in_a_comment",
        )
        .unwrap();
        std::fs::write(src.join("d.rs"), "use crate::a::Z;").unwrap();
        let mut graph = std::collections::BTreeMap::new();
        for name in ["a/mod.rs", "b.rs", "c.rs", "d.rs"] {
            let file = src.join(name);
            let me = module_of(std::path::Path::new(name));
            let code = std::fs::read_to_string(&file).unwrap();
            graph.insert(file, named_files(src, &me, &code));
        }
        assert_eq!(
            circles(&graph),
            vec![vec![
                src.join("a/mod.rs"),
                src.join("b.rs"),
                src.join("c.rs")
            ]]
        );
        // Without the edge from c, nothing circles.
        graph.insert(src.join("c.rs"), Default::default());
        assert!(circles(&graph).is_empty());
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
