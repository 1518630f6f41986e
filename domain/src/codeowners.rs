//! CODEOWNERS: who owns which paths (GitHub's format; the last matching rule wins).

use serde::{Deserialize, Serialize};

/// One rule: a pattern and its owners.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Rule {
    pattern: String,
    owners: Vec<String>,
}

/// A parsed CODEOWNERS file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeOwners {
    rules: Vec<Rule>,
}

impl CodeOwners {
    /// Parses the file; comments, blank lines and rules without owners are skipped.
    pub fn parse(text: &str) -> CodeOwners {
        let rules = text
            .lines()
            .map(|line| line.split('#').next().unwrap_or_default().trim())
            .filter(|line| !line.is_empty())
            .filter_map(|line| {
                let mut parts = line.split_whitespace();
                let pattern = parts.next()?.to_owned();
                let owners: Vec<String> = parts
                    .map(|owner| owner.trim_start_matches('@').to_ascii_lowercase())
                    .collect();
                (!owners.is_empty()).then_some(Rule { pattern, owners })
            })
            .collect();
        CodeOwners { rules }
    }

    /// The owners of one path (lower-case logins or emails, without `@`).
    pub fn owners_of(&self, path: &str) -> &[String] {
        self.rules
            .iter()
            .rev()
            .find(|rule| matches(&rule.pattern, path))
            .map_or(&[], |rule| rule.owners.as_slice())
    }

    /// Whether `who` owns every changed path that has owners, and at least one does.
    /// Team handles (`org/team`) cannot be resolved offline, so they never match: fail closed.
    pub fn owns_change(&self, who: &str, paths: &[String]) -> bool {
        let who = who.trim_start_matches('@').to_ascii_lowercase();
        let owned: Vec<&[String]> = paths
            .iter()
            .map(|path| self.owners_of(path))
            .filter(|owners| !owners.is_empty())
            .collect();
        !owned.is_empty() && owned.iter().all(|owners| owners.contains(&who))
    }
}

/// GitHub's CODEOWNERS matching, for the patterns people write: `*`, `*.ext`, `/dir/`,
/// `dir/`, `/path/file`, `docs/*`, `**/name`.
fn matches(pattern: &str, path: &str) -> bool {
    let path = path.trim_start_matches('/');
    let anchored = pattern.starts_with('/') || pattern.trim_end_matches('/').contains('/');
    let pattern = pattern.trim_start_matches('/');
    let directory = pattern.ends_with('/');
    let pattern = pattern.trim_end_matches('/');
    if pattern.is_empty() || pattern == "*" || pattern == "**" {
        return true;
    }
    let segments: Vec<&str> = path.split('/').collect();
    if anchored {
        let parts: Vec<&str> = pattern.split('/').collect();
        return match_from(&parts, &segments, directory);
    }
    // Unanchored: the pattern may match at any depth.
    (0..segments.len()).any(|start| match_from(&[pattern], &segments[start..], directory))
}

fn match_from(parts: &[&str], segments: &[&str], directory: bool) -> bool {
    match parts.split_first() {
        // Pattern used up: a directory pattern needs something beneath it; a plain name
        // matches the path itself or, when it names a directory, everything inside.
        None => !directory || !segments.is_empty(),
        Some((&"**", rest)) => {
            (0..=segments.len()).any(|skip| match_from(rest, &segments[skip..], directory))
        }
        Some((part, rest)) => match segments.split_first() {
            None => false,
            // A trailing wildcard segment (`docs/*`) matches only direct children.
            Some((segment, tail)) if rest.is_empty() && part.contains('*') => {
                glob(part, segment) && tail.is_empty()
            }
            Some((segment, tail)) => glob(part, segment) && match_from(rest, tail, directory),
        },
    }
}

/// `*` matches any run of characters within one segment.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((prefix, rest)) => {
            text.starts_with(prefix)
                && (0..=text.len() - prefix.len())
                    .filter(|&i| text.is_char_boundary(prefix.len() + i))
                    .any(|i| glob(rest, &text[prefix.len() + i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
# Default owners
*                 @lead
*.md              @writer
/shoplite/        @shop-owner @lead
auth/             @security-team-lead
/migrations/**    dba@example.org
docs/*            @writer
";

    #[test]
    fn the_last_matching_rule_wins() {
        let owners = CodeOwners::parse(FILE);
        assert_eq!(owners.owners_of("server/src/main.rs"), ["lead"]);
        assert_eq!(owners.owners_of("README.md"), ["writer"]);
        assert_eq!(
            owners.owners_of("shoplite/src/lib.rs"),
            ["shop-owner", "lead"]
        );
        assert_eq!(
            owners.owners_of("crates/x/src/auth/mod.rs"),
            ["security-team-lead"]
        );
        assert_eq!(
            owners.owners_of("migrations/postgres/0001.sql"),
            ["dba@example.org"]
        );
        assert_eq!(owners.owners_of("docs/guide.html"), ["writer"]);
    }

    #[test]
    fn a_code_owner_must_own_every_owned_path_of_the_change() {
        let owners = CodeOwners::parse(FILE);
        let change = vec![
            "shoplite/src/lib.rs".to_owned(),
            "shoplite/tests/a.rs".to_owned(),
        ];
        assert!(owners.owns_change("@shop-owner", &change));
        assert!(owners.owns_change("Lead", &change));
        assert!(!owners.owns_change("writer", &change));
        let mixed = vec![
            "shoplite/src/lib.rs".to_owned(),
            "migrations/p/1.sql".to_owned(),
        ];
        assert!(!owners.owns_change("shop-owner", &mixed));
    }

    #[test]
    fn nobody_owns_a_change_when_the_file_is_empty() {
        let owners = CodeOwners::parse("# nothing\n");
        assert!(!owners.owns_change("lead", &["src/lib.rs".to_owned()]));
    }

    #[test]
    fn globs_stay_within_a_segment() {
        assert!(glob("*.rs", "lib.rs"));
        assert!(!glob("*.rs", "lib.ts"));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(matches("docs/*", "docs/a.md"));
        assert!(!matches("/docs/*", "docs/deep/a.md"));
    }
}
