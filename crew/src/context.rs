//! What the reproducer is shown of the project: a map of its files and their public symbols,
//! and the files most related to the reports' words, within a budget.
//!
//! Pure functions; the desk reads the repository at the default branch's head and calls
//! them (`GET /api/v1/bugs/{id}/reproduction/context`). Ranking is BM25 over each file's
//! identifiers split into words (`applyCoupon`, `apply_coupon` → `apply`, `coupon`), with
//! matches in the path and the public symbols counted again: reports name what they see
//! ("coupon", "total", "price"), code names it in identifiers.

use std::collections::{BTreeSet, HashMap};

/// Characters of file text a reproduction context carries at most (about 8,000 tokens).
pub const BUDGET_CHARS: usize = 24_000;
/// Characters of the repository map at most.
pub const MAP_CHARS: usize = 6_000;
/// Files read for ranking at most, and the largest one considered (characters).
pub const MAX_FILES_READ: usize = 2_000;
/// A file larger than this is mapped but never shown whole.
pub const MAX_SHOWN_FILE_CHARS: usize = 16_000;
/// Files shown at most.
pub const MAX_SHOWN_FILES: usize = 8;
/// Characters of a source file too large to show whole that are shown of it at most: the
/// run of lines richest in the reports' words.
pub const EXCERPT_CHARS: usize = 6_000;
/// The least room an excerpt is worth taking.
pub const MIN_EXCERPT_CHARS: usize = 1_500;

/// The languages a file is read as, by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// `.rs`
    Rust,
    /// `.js`, `.mjs`, `.cjs`, `.ts`, `.tsx`, `.jsx`
    JavaScript,
    /// `.py`
    Python,
    /// `.go`
    Go,
}

/// The language of `path`, or `None` for files that are not source code.
pub fn language(path: &str) -> Option<Language> {
    let ext = path.rsplit_once('.').map(|(_, e)| e)?;
    Some(match ext {
        "rs" => Language::Rust,
        "js" | "mjs" | "cjs" | "ts" | "tsx" | "jsx" | "mts" | "cts" => Language::JavaScript,
        "py" => Language::Python,
        "go" => Language::Go,
        _ => return None,
    })
}

/// Folders that hold build output or vendored code, never the project's own.
pub fn ignored(path: &str) -> bool {
    path.split('/').any(|part| {
        matches!(
            part,
            "target" | "node_modules" | "vendor" | ".git" | "dist" | "build" | "__pycache__"
        )
    })
}

/// Whether `path` looks like a test file (an example of how the project tests itself).
pub fn is_test(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    path.split('/')
        .any(|part| matches!(part, "tests" | "test" | "__tests__" | "spec"))
        || file.starts_with("test_")
        || file.contains("_test.")
        || file.contains(".test.")
        || file.contains(".spec.")
}

fn ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn leading_ident(text: &str) -> Option<&str> {
    let text = text.trim_start();
    let end = text
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
        .map_or(text.len(), |(i, _)| i);
    let ident = &text[..end];
    ident.chars().next().filter(|c| ident_start(*c))?;
    Some(ident)
}

/// Strips the first of `prefixes` that `text` starts with (followed by a space).
fn after_any<'a>(text: &'a str, prefixes: &[&str]) -> Option<&'a str> {
    prefixes.iter().find_map(|p| {
        text.strip_prefix(p)
            .filter(|rest| rest.starts_with(char::is_whitespace))
            .map(str::trim_start)
    })
}

/// The public symbols `text` declares at the start of a line: Rust `pub` items, JavaScript
/// exports, Python top-level `def`/`class` not starting with `_`, Go exported `func`/`type`.
pub fn symbols(path: &str, text: &str) -> Vec<String> {
    let Some(language) = language(path) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for line in text.lines() {
        let name = match language {
            Language::Rust => rust_symbol(line),
            Language::JavaScript => js_symbol(line),
            Language::Python => python_symbol(line),
            Language::Go => go_symbol(line),
        };
        if let Some(name) = name {
            if !found.iter().any(|f: &String| f == name) {
                found.push(name.to_owned());
            }
        }
    }
    found
}

fn rust_symbol(line: &str) -> Option<&str> {
    let mut rest = line.trim_start().strip_prefix("pub")?;
    if rest.starts_with('(') {
        rest = &rest[rest.find(')')? + 1..];
    }
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let mut rest = rest.trim_start();
    // Qualifiers of a function: `async`, `unsafe`, `extern "C"`, and `const` before `fn`.
    loop {
        if let Some(next) = after_any(rest, &["async", "unsafe", "extern \"C\""]) {
            rest = next;
            continue;
        }
        match after_any(rest, &["const"]) {
            Some(next)
                if ["fn", "unsafe", "async"]
                    .iter()
                    .any(|q| after_any(next, &[q]).is_some()) =>
            {
                rest = next;
            }
            _ => break,
        }
    }
    let rest = after_any(
        rest,
        &[
            "fn", "struct", "enum", "trait", "type", "const", "static", "mod", "union",
        ],
    )?;
    let rest = after_any(rest, &["mut"]).unwrap_or(rest);
    leading_ident(rest)
}

fn js_symbol(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    if let Some(rest) = trimmed
        .strip_prefix("module.exports.")
        .or_else(|| trimmed.strip_prefix("exports."))
    {
        return leading_ident(rest);
    }
    let mut rest = after_any(trimmed, &["export"])?;
    for word in ["default", "async", "abstract", "declare"] {
        if let Some(next) = after_any(rest, &[word]) {
            rest = next;
        }
    }
    let rest = after_any(
        rest,
        &[
            "function*",
            "function",
            "class",
            "const",
            "let",
            "var",
            "interface",
            "type",
            "enum",
        ],
    )?;
    leading_ident(rest)
}

fn python_symbol(line: &str) -> Option<&str> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = after_any(line, &["def", "class", "async def"])?;
    leading_ident(rest).filter(|name| !name.starts_with('_'))
}

fn go_symbol(line: &str) -> Option<&str> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let mut rest = after_any(line, &["func", "type"])?;
    if rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    leading_ident(rest).filter(|name| name.starts_with(|c: char| c.is_ascii_uppercase()))
}

const STOPWORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "that",
    "this",
    "was",
    "were",
    "are",
    "but",
    "not",
    "you",
    "your",
    "have",
    "has",
    "had",
    "from",
    "when",
    "then",
    "than",
    "into",
    "what",
    "which",
    "there",
    "their",
    "they",
    "them",
    "its",
    "all",
    "any",
    "can",
    "could",
    "would",
    "should",
    "will",
    "just",
    "also",
    "only",
    "some",
    "more",
    "most",
    "very",
    "does",
    "did",
    "doing",
    "been",
    "being",
    "after",
    "before",
    "while",
    "about",
    "our",
    "out",
    "get",
    "got",
    "let",
    "use",
    "new",
    "one",
    "two",
    "see",
    "saw",
    "instead",
    "expected",
    "happened",
    "steps",
    "title",
    "component",
    "fn",
    "pub",
    "mut",
    "self",
    "impl",
    "return",
    "def",
    "function",
    "const",
    "var",
    "import",
    "from",
    "export",
    "class",
    "struct",
    "enum",
    "use",
    "crate",
    "true",
    "false",
    "none",
    "null",
    "undefined",
    "str",
    "string",
    "int",
    "i64",
    "u64",
    "f64",
    "vec",
    "assert",
    "assert_eq",
    "test",
    "tests",
    "cfg",
    "derive",
    "debug",
    "clone",
];

/// The words of `text` as ranking sees them: identifiers whole and split at `_` and case
/// changes, lower-cased, at least three characters (or containing a digit), without the most
/// common English and keyword words.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |word: &str| {
        let lower = word.to_lowercase();
        let keep = (lower.chars().count() >= 3 || lower.chars().any(|c| c.is_ascii_digit()))
            && lower.chars().any(|c| c.is_alphabetic())
            && !STOPWORDS.contains(&lower.as_str());
        if keep {
            out.push(lower);
        }
    };
    for ident in text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
    {
        let parts = split_ident(ident);
        if parts.len() > 1 {
            push(ident.trim_matches('_'));
        }
        for part in parts {
            push(part);
        }
    }
    out
}

/// `applyCoupon` → `apply`, `Coupon`; `apply_coupon` → `apply`, `coupon`; `HTTPServer` →
/// `HTTP`, `Server`; `save300` stays whole.
fn split_ident(ident: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    for piece in ident.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<(usize, char)> = piece.char_indices().collect();
        let mut start = 0;
        for window in 1..chars.len() {
            let (i, c) = chars[window];
            let prev = chars[window - 1].1;
            let next_lower = chars.get(window + 1).is_some_and(|(_, n)| n.is_lowercase());
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase() && c.is_uppercase() && next_lower);
            if boundary {
                parts.push(&piece[start..i]);
                start = i;
            }
        }
        parts.push(&piece[start..]);
    }
    parts
}

/// A file of the project, as read at the head.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// Path from the repository root.
    pub path: String,
    /// Its text.
    pub text: String,
}

/// A file's rank for a query.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    /// Index into the files ranked.
    pub index: usize,
    /// BM25 score (higher is closer).
    pub score: f64,
    /// The query words the file contains, best first.
    pub matched: Vec<String>,
}

/// Ranks `files` for the words of `query` (BM25, k1 = 1.2, b = 0.75, with path and symbol
/// words counted three times). Files without a shared word are left out.
pub fn rank(files: &[SourceFile], query: &str) -> Vec<Ranked> {
    let query: BTreeSet<String> = terms(query).into_iter().collect();
    if query.is_empty() || files.is_empty() {
        return Vec::new();
    }
    let docs: Vec<HashMap<String, f64>> = files
        .iter()
        .map(|file| {
            let mut counts: HashMap<String, f64> = HashMap::new();
            for term in terms(&file.text) {
                *counts.entry(term).or_default() += 1.0;
            }
            let mut names = file.path.clone();
            for symbol in symbols(&file.path, &file.text) {
                names.push(' ');
                names.push_str(&symbol);
            }
            for term in terms(&names) {
                *counts.entry(term).or_default() += 3.0;
            }
            counts
        })
        .collect();
    let lengths: Vec<f64> = docs.iter().map(|d| d.values().sum::<f64>()).collect();
    let average = (lengths.iter().sum::<f64>() / lengths.len() as f64).max(1.0);
    let n = docs.len() as f64;
    let idf: HashMap<&String, f64> = query
        .iter()
        .map(|term| {
            let with = docs.iter().filter(|d| d.contains_key(term)).count() as f64;
            (term, ((n - with + 0.5) / (with + 0.5) + 1.0).ln())
        })
        .collect();
    let (k1, b) = (1.2, 0.75);
    let mut ranked: Vec<Ranked> = docs
        .iter()
        .enumerate()
        .filter_map(|(index, doc)| {
            let mut parts: Vec<(f64, &String)> = query
                .iter()
                .filter_map(|term| {
                    let tf = *doc.get(term)?;
                    let norm =
                        tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * lengths[index] / average));
                    Some((idf[term] * norm, term))
                })
                .collect();
            if parts.is_empty() {
                return None;
            }
            parts.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
            Some(Ranked {
                index,
                score: parts.iter().map(|(s, _)| s).sum(),
                matched: parts.iter().map(|(_, t)| (*t).clone()).collect(),
            })
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| files[a.index].path.cmp(&files[b.index].path))
    });
    ranked
}

/// How much of a file is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Portion {
    /// All of it.
    Whole,
    /// Lines `first` to `last` (1-based, inclusive) of a source file too large to show whole
    /// or for the room left.
    Lines {
        /// The first line shown.
        first: usize,
        /// The last line shown.
        last: usize,
    },
}

/// The run of whole lines of `text`, at most `cap` characters, holding the most occurrences
/// of `words` (a line's words as [`terms`] reads them); `None` when no line holds one.
pub fn richest_lines(text: &str, words: &BTreeSet<String>, cap: usize) -> Option<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let hits: Vec<usize> = lines
        .iter()
        .map(|line| terms(line).iter().filter(|t| words.contains(*t)).count())
        .collect();
    let sizes: Vec<usize> = lines.iter().map(|l| l.chars().count() + 1).collect();
    let (mut start, mut chars, mut score) = (0, 0, 0);
    let mut best: Option<(usize, usize, usize)> = None;
    for end in 0..lines.len() {
        chars += sizes[end];
        score += hits[end];
        while chars > cap && start <= end {
            chars -= sizes[start];
            score -= hits[start];
            start += 1;
        }
        if start <= end && score > 0 && best.is_none_or(|(_, _, s)| score > s) {
            best = Some((start, end, score));
        }
    }
    best.map(|(first, last, _)| (first + 1, last + 1))
}

/// The files to show, in rank order, within `budget` characters and [`MAX_SHOWN_FILES`]: the
/// best-ranked source files, and the best-ranked existing test (or, when no test shares a
/// word, the smallest) so the model sees how this project writes and imports its tests. A
/// source file too large to show whole (or for the room left) is shown as its
/// [`richest_lines`] for the reports' `words`, when at least [`MIN_EXCERPT_CHARS`] are left.
pub fn select(
    files: &[SourceFile],
    ranked: &[Ranked],
    budget: usize,
    words: &BTreeSet<String>,
) -> Vec<(usize, Portion)> {
    let size = |i: usize| files[i].text.chars().count();
    let fits = |i: usize| size(i) <= MAX_SHOWN_FILE_CHARS;
    let mut chosen: Vec<(usize, Portion)> = Vec::new();
    let mut used = 0;
    let example_test = ranked
        .iter()
        .map(|r| r.index)
        .find(|&i| is_test(&files[i].path) && fits(i))
        .or_else(|| {
            (0..files.len())
                .filter(|&i| is_test(&files[i].path) && language(&files[i].path).is_some())
                .filter(|&i| fits(i))
                .min_by_key(|&i| size(i))
        });
    let mut take = |i: usize, chosen: &mut Vec<(usize, Portion)>| {
        if chosen.len() >= MAX_SHOWN_FILES || chosen.iter().any(|(c, _)| *c == i) {
            return;
        }
        if fits(i) && used + size(i) <= budget {
            used += size(i);
            chosen.push((i, Portion::Whole));
            return;
        }
        let room = budget.saturating_sub(used).min(EXCERPT_CHARS);
        if is_test(&files[i].path) || room < MIN_EXCERPT_CHARS {
            return;
        }
        if let Some((first, last)) = richest_lines(&files[i].text, words, room) {
            used += files[i]
                .text
                .lines()
                .skip(first - 1)
                .take(last + 1 - first)
                .map(|l| l.chars().count() + 1)
                .sum::<usize>();
            chosen.push((i, Portion::Lines { first, last }));
        }
    };
    // The best source file first, then the example test, then the rest by rank.
    if let Some(best) = ranked.iter().find(|r| !is_test(&files[r.index].path)) {
        take(best.index, &mut chosen);
    }
    if let Some(test) = example_test {
        take(test, &mut chosen);
    }
    for r in ranked {
        take(r.index, &mut chosen);
    }
    chosen
}

/// The repository map: each source file with its public symbols, within [`MAP_CHARS`]; the
/// files that do not fit are counted in the last line.
pub fn map(files: &[SourceFile]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut used = 0;
    for file in files.iter().filter(|f| language(&f.path).is_some()) {
        let symbols = symbols(&file.path, &file.text);
        let cost = file.path.len() + symbols.iter().map(|s| s.len() + 2).sum::<usize>() + 3;
        if used + cost > MAP_CHARS {
            break;
        }
        used += cost;
        out.push((file.path.clone(), symbols));
    }
    out
}

/// The package the tests import, from the project's manifest: Rust `[package] name` (as
/// code names it, `-` → `_`), npm `name`, Python's top package folder or `[project] name`,
/// Go `module`.
pub fn package_name(files: &[SourceFile]) -> Option<String> {
    let text_of = |name: &str| files.iter().find(|f| f.path == name).map(|f| &f.text);
    if let Some(cargo) = text_of("Cargo.toml") {
        let mut in_package = false;
        for line in cargo.lines().map(str::trim) {
            if line.starts_with('[') {
                in_package = line == "[package]";
            } else if in_package {
                if let Some(value) = toml_string(line, "name") {
                    return Some(value.replace('-', "_"));
                }
            }
        }
    }
    if let Some(package) = text_of("package.json") {
        if let Ok(json) = serde_json::from_str::<serde_json::Value>(package) {
            if let Some(name) = json["name"].as_str() {
                return Some(name.to_owned());
            }
        }
    }
    // Python: the folder tests import (`shop/__init__.py` or `src/shop/__init__.py`) names
    // the package better than the distribution's name in pyproject.toml.
    let mut python_packages: Vec<&str> = files
        .iter()
        .filter_map(|f| {
            let path = f.path.strip_prefix("src/").unwrap_or(&f.path);
            let (folder, rest) = path.split_once('/')?;
            (rest == "__init__.py" && !matches!(folder, "tests" | "test")).then_some(folder)
        })
        .collect();
    python_packages.sort_unstable();
    if let Some(folder) = python_packages.first() {
        return Some((*folder).to_owned());
    }
    if let Some(pyproject) = text_of("pyproject.toml") {
        if let Some(value) = pyproject
            .lines()
            .find_map(|l| toml_string(l.trim(), "name"))
        {
            return Some(value.replace('-', "_"));
        }
    }
    if let Some(gomod) = text_of("go.mod") {
        if let Some(module) = gomod.lines().find_map(|l| l.trim().strip_prefix("module ")) {
            return Some(module.trim().to_owned());
        }
    }
    None
}

fn toml_string(line: &str, key: &str) -> Option<String> {
    let rest = line
        .strip_prefix(key)?
        .trim_start()
        .strip_prefix('=')?
        .trim();
    let value = rest.strip_prefix('"')?;
    Some(value[..value.find('"')?].to_owned())
}

/// How a test of this profile reaches the code, naming the package.
pub fn how_to_test(profile: &str, package: Option<&str>) -> String {
    let name = package.unwrap_or("the project");
    match profile {
        "rust" => format!(
            "The target is the Rust crate `{name}`. Put the test in a new file under tests/ (an integration test): it reaches the code only through the crate's public API, `use {name}::…;`, and runs with `cargo test --test <file name>`. Name the test function as `test_name`."
        ),
        "node" | "node_test" => format!(
            "The target is the Node.js package `{name}`, tested with `node --test`. Put the test in a new file under test/ that imports the code by relative path from the files shown (e.g. `require('../src/…')` or `import … from '../src/…'`) and uses `node:test` and `node:assert`. Name the test as `test_name`."
        ),
        "vitest" => format!(
            "The target is the JavaScript/TypeScript package `{name}`, tested with Vitest. Put the test in a new *.test file that imports the code by relative path from the files shown. Name the test as `test_name`."
        ),
        "python" => format!(
            "The target is the Python package `{name}`, tested with pytest run as `python3 -m pytest` from the repository root, so a test imports it by name (`from {name} import …`, or the module path of the files shown). Put the test in a new tests/test_*.py file as a `def test_…():` function that checks with plain `assert`. Name the test as `test_name` (the function's name)."
        ),
        "go" => format!(
            "The target is the Go module `{name}`, tested offline with `go test -json` (standard library and vendored modules only). Put the test in a new *_test.go file in the folder of the package it tests, in that package (same `package` clause), as `func TestXxx(t *testing.T)` reporting the failure with `t.Errorf` or `t.Fatalf`. Name the test as `test_name` (`TestXxx`)."
        ),
        "junit" => format!(
            "The target `{name}` runs its tests through its `.r2r/junit` script, which writes JUnit XML. Put the test beside the project's existing tests, in their framework and style, and give `test_name` exactly as the report lists the test case."
        ),
        other => format!("The target `{name}` is tested with the `{other}` profile."),
    }
}

/// A reproduction context's parts that depend only on the project's files and the reports'
/// words (the desk adds the bug, its state and attempts).
#[derive(Clone, Debug, PartialEq)]
pub struct Assembled {
    /// The package tests import.
    pub package: Option<String>,
    /// Where a new test goes and how it reaches the code.
    pub how_to_test: String,
    /// Source files and their public symbols.
    pub map: Vec<api_types::MapEntry>,
    /// Source files the map leaves out.
    pub map_omitted: usize,
    /// The files shown whole, best first.
    pub files: Vec<api_types::RankedFile>,
}

/// Builds the context of `files` (sources and manifests) for the words of `query`, under the
/// test `profile`: the one way the desk and `r2r crew eval` choose what the model reads.
pub fn assemble(files: Vec<SourceFile>, query: &str, profile: &str) -> Assembled {
    let package = package_name(&files);
    let sources: Vec<SourceFile> = files
        .into_iter()
        .filter(|f| language(&f.path).is_some() && !ignored(&f.path))
        .collect();
    let ranked = rank(&sources, query);
    let words: BTreeSet<String> = terms(query).into_iter().collect();
    let shown = select(&sources, &ranked, BUDGET_CHARS, &words)
        .into_iter()
        .map(|(index, portion)| {
            let rank = ranked.iter().find(|r| r.index == index);
            let file = &sources[index];
            let content = match portion {
                Portion::Whole => file.text.clone(),
                Portion::Lines { first, last } => {
                    let total = file.text.lines().count();
                    let comment = match language(&file.path) {
                        Some(Language::Python) => "#",
                        _ => "//",
                    };
                    let mut shown = format!(
                        "{comment} r2r: lines {first} to {last} of {total} of this file, the part richest in the reports' words; the rest is left out\n"
                    );
                    for line in file.text.lines().skip(first - 1).take(last + 1 - first) {
                        shown.push_str(line);
                        shown.push('\n');
                    }
                    shown
                }
            };
            api_types::RankedFile {
                path: file.path.clone(),
                content,
                score: rank.map_or(0.0, |r| (r.score * 1000.0).round() / 1000.0),
                matched: rank.map(|r| r.matched.clone()).unwrap_or_default(),
            }
        })
        .collect();
    let map: Vec<api_types::MapEntry> = map(&sources)
        .into_iter()
        .map(|(path, symbols)| api_types::MapEntry { path, symbols })
        .collect();
    Assembled {
        how_to_test: how_to_test(profile, package.as_deref()),
        package,
        map_omitted: sources.len() - map.len(),
        map,
        files: shown,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn file(path: &str, text: &str) -> SourceFile {
        SourceFile {
            path: path.into(),
            text: text.into(),
        }
    }

    #[test]
    fn public_symbols_per_language() {
        let rust = "pub fn quote(cart: &Cart) -> Money {}\nfn private() {}\npub(crate) struct Cart;\n    pub async fn load() {}\npub enum Coupon { A }\nimpl Cart { pub fn total(&self) {} }\n";
        assert_eq!(
            symbols("src/lib.rs", rust),
            ["quote", "Cart", "load", "Coupon"]
        );
        let js = "export function applyCoupon(c) {}\nexport default class Cart {}\nexport const TAX = 1;\nfunction hidden() {}\nmodule.exports.total = total;\nexport async function save() {}\n";
        assert_eq!(
            symbols("src/cart.js", js),
            ["applyCoupon", "Cart", "TAX", "total", "save"]
        );
        let py = "def apply_coupon(cart):\n    def inner(): pass\nclass Cart:\n    def total(self): pass\ndef _private(): pass\nasync def fetch(): pass\n";
        assert_eq!(
            symbols("shop/cart.py", py),
            ["apply_coupon", "Cart", "fetch"]
        );
        let go = "func Quote(c Cart) Money {}\nfunc (c *Cart) Total() Money {}\nfunc helper() {}\ntype Cart struct {}\n";
        assert_eq!(symbols("cart.go", go), ["Quote", "Total", "Cart"]);
        assert!(symbols("README.md", "pub fn nothing()").is_empty());
    }

    #[test]
    fn identifiers_split_into_the_words_reports_use() {
        let words = terms("applyCoupon(cart) apply_coupon HTTPServer SAVE300 the a of ₹200");
        for expected in [
            "applycoupon",
            "apply",
            "coupon",
            "cart",
            "http",
            "server",
            "save300",
        ] {
            assert!(
                words.contains(&expected.to_owned()),
                "{expected} in {words:?}"
            );
        }
        // Bare numbers match too much code to rank by.
        for dropped in ["the", "a", "of", "200"] {
            assert!(
                !words.contains(&dropped.to_owned()),
                "{dropped} in {words:?}"
            );
        }
    }

    fn shop() -> Vec<SourceFile> {
        vec![
            file("Cargo.toml", "[package]\nname = \"tea-shop\"\nversion = \"0.1.0\"\n"),
            file("src/lib.rs", "pub mod cart;\npub mod coupon;\npub mod catalog;\npub mod money;\n"),
            file("src/money.rs", "pub struct Rupees(pub f64);\npub fn format_rupees(r: &Rupees) -> String { String::new() }\n"),
            file("src/catalog.rs", "pub struct Product { pub name: String, pub price: f64 }\npub fn parse_price(text: &str) -> Option<f64> { text.parse().ok() }\npub fn products() -> Vec<Product> { vec![] }\n"),
            file("src/coupon.rs", "pub enum Coupon { Save300, Tenoff }\npub fn coupon_discount(code: &str, subtotal: f64) -> f64 {\n    match code { \"SAVE300\" => 300.0, \"TENOFF\" => subtotal * 0.1, _ => 0.0 }\n}\n"),
            file("src/cart.rs", "use crate::coupon::coupon_discount;\npub struct Cart { pub lines: Vec<(String, f64, u32)> }\npub fn payable_total(cart: &Cart, code: &str) -> f64 {\n    let subtotal: f64 = cart.lines.iter().map(|l| l.1 * l.2 as f64).sum();\n    subtotal - coupon_discount(code, subtotal)\n}\n"),
            file("tests/catalog_prices.rs", "use tea_shop::catalog::parse_price;\n#[test]\nfn parses_a_price() { assert_eq!(parse_price(\"12\"), Some(12.0)); }\n"),
            file("README.md", "A tea shop. Coupons: SAVE300, TENOFF. The cart shows the total."),
        ]
    }

    #[test]
    fn a_coupon_report_ranks_the_coupon_and_cart_code_first() {
        let files = shop();
        let report = "Coupon makes the total negative. I put a ₹200 tea set in the cart, applied SAVE300 and the total to pay was -₹100. Expected ₹0.";
        let ranked = rank(&files, report);
        let top: Vec<&str> = ranked
            .iter()
            .take(3)
            .map(|r| files[r.index].path.as_str())
            .collect();
        assert!(top.contains(&"src/coupon.rs"), "{top:?}");
        assert!(top.contains(&"src/cart.rs"), "{top:?}");
        assert!(ranked[0]
            .matched
            .iter()
            .any(|m| m == "coupon" || m == "save300" || m == "total"));
        let words = terms("SAVE300 coupon makes the cart total negative");
        let shown = select(&files, &ranked, BUDGET_CHARS, &words.into_iter().collect());
        let shown: Vec<&str> = shown.iter().map(|(i, _)| files[*i].path.as_str()).collect();
        assert!(shown.contains(&"src/coupon.rs"), "{shown:?}");
        // An existing test is shown as the example of how this project imports its code.
        assert!(shown.contains(&"tests/catalog_prices.rs"), "{shown:?}");
        // A price report finds the catalog instead.
        let ranked = rank(
            &files,
            "A product with a huge price like 1e308 shows inf in the catalog",
        );
        assert_eq!(files[ranked[0].index].path, "src/catalog.rs");
    }

    #[test]
    fn the_budget_and_the_file_cap_hold() {
        let mut files = shop();
        files.push(file(
            "src/huge.rs",
            &format!(
                "pub fn coupon_total() {{}}\n{}",
                "// coupon total\n".repeat(5_000)
            ),
        ));
        let ranked = rank(&files, "coupon total cart");
        let words: BTreeSet<String> = terms("coupon total cart").into_iter().collect();
        let shown = select(&files, &ranked, 400, &words);
        let used: usize = shown
            .iter()
            .map(|(i, _)| files[*i].text.chars().count())
            .sum();
        assert!(used <= 400, "{used}");
        assert!(!shown.iter().any(|(i, _)| files[*i].path == "src/huge.rs"));
        // With room, the huge file is shown as an excerpt within its cap, never whole.
        let shown = select(&files, &ranked, usize::MAX, &words);
        assert!(shown.len() <= MAX_SHOWN_FILES);
        let (_, portion) = shown
            .iter()
            .find(|(i, _)| files[*i].path == "src/huge.rs")
            .expect("an excerpt of the huge file");
        let Portion::Lines { first, last } = *portion else {
            panic!("{portion:?}");
        };
        assert!((last + 1 - first) * "// coupon total\n".len() <= EXCERPT_CHARS);
        assert!(rank(&files, "the and of").is_empty());
    }

    #[test]
    fn an_excerpt_is_the_run_of_lines_richest_in_the_reports_words() {
        let mut text = String::new();
        for n in 0..400 {
            text.push_str(&format!("fn filler_{n}() {{ let unrelated = {n}; }}\n"));
        }
        for n in 0..5 {
            text.push_str(&format!(
                "fn refresh_pending_click_{n}() {{ /* click refresh */ }}\n"
            ));
        }
        for n in 0..400 {
            text.push_str(&format!("fn more_{n}() {{}}\n"));
        }
        let words: BTreeSet<String> = terms("the click was lost while the page refreshed")
            .into_iter()
            .collect();
        let (first, last) = richest_lines(&text, &words, 600).unwrap();
        assert!(first <= 401 && last >= 405, "{first}..{last}");
        let shown: usize = text
            .lines()
            .skip(first - 1)
            .take(last + 1 - first)
            .map(|l| l.len() + 1)
            .sum();
        assert!(shown <= 600, "{shown}");
        assert_eq!(richest_lines("fn nothing() {}\n", &words, 600), None);
        // Through assemble: the header says which lines of how many.
        let files = vec![file("src/big.rs", &text.repeat(3))];
        let assembled = assemble(files, "the click was lost while the page refreshed", "rust");
        let big = &assembled.files[0];
        assert!(
            big.content.starts_with("// r2r: lines "),
            "{}",
            &big.content[..80]
        );
        assert!(
            big.content.contains(" of 2415 of this file"),
            "{}",
            &big.content[..80]
        );
        assert!(big.content.chars().count() <= EXCERPT_CHARS + 200);
    }

    #[test]
    fn the_package_and_how_tests_reach_it() {
        let files = shop();
        assert_eq!(package_name(&files).as_deref(), Some("tea_shop"));
        let hint = how_to_test("rust", Some("tea_shop"));
        assert!(hint.contains("use tea_shop::"), "{hint}");
        // The sandbox names the Node profile `node_test`.
        for profile in ["node", "node_test"] {
            let hint = how_to_test(profile, Some("shop-js"));
            assert!(
                hint.contains("node:test") && hint.contains("`shop-js`"),
                "{hint}"
            );
        }
        assert!(how_to_test("vitest", None).contains("Vitest"));
        let node = vec![file(
            "package.json",
            "{\"name\": \"shop-js\", \"version\": \"1.0.0\"}",
        )];
        assert_eq!(package_name(&node).as_deref(), Some("shop-js"));
        let go = vec![file("go.mod", "module example.com/shop\n\ngo 1.22\n")];
        assert_eq!(package_name(&go).as_deref(), Some("example.com/shop"));
        assert_eq!(package_name(&[]), None);
        let python = vec![
            file("pyproject.toml", "[project]\nname = \"tally-books\"\n"),
            file("tests/__init__.py", ""),
            file("src/tally/__init__.py", ""),
        ];
        assert_eq!(package_name(&python).as_deref(), Some("tally"));
        assert_eq!(package_name(&python[..2]).as_deref(), Some("tally_books"));
        let hint = how_to_test("python", Some("tally"));
        assert!(
            hint.contains("from tally import") && hint.contains("pytest"),
            "{hint}"
        );
        let hint = how_to_test("go", Some("example.com/shop"));
        assert!(
            hint.contains("t.Errorf") && hint.contains("_test.go"),
            "{hint}"
        );
        assert!(how_to_test("junit", None).contains(".r2r/junit"));
        let map = map(&files);
        assert!(map
            .iter()
            .any(|(p, s)| p == "src/coupon.rs" && s.contains(&"coupon_discount".to_owned())));
        assert!(!map.iter().any(|(p, _)| p == "README.md"));
        assert!(ignored("target/debug/build.rs") && ignored("web/node_modules/x/index.js"));
        assert!(!ignored("src/targets.rs"));
    }
}
