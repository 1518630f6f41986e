//! Risk tiers from the paths a change touches: docs 0, source 1, sensitive 2.

use serde::{Deserialize, Serialize};

/// Path words that make a change sensitive unless configured otherwise.
pub const DEFAULT_SENSITIVE_WORDS: &[&str] = &[
    "auth",
    "payment",
    "payments",
    "billing",
    "migration",
    "migrations",
    ".github",
    "security",
];

/// How much human scrutiny a change needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Tier {
    /// Documentation only.
    Docs = 0,
    /// Ordinary source.
    Source = 1,
    /// Authentication, payments, billing, migrations, CI, security.
    Sensitive = 2,
}

impl Tier {
    /// Distinct verified people who must approve.
    pub fn required_humans(self) -> usize {
        match self {
            Tier::Docs | Tier::Source => 1,
            Tier::Sensitive => 2,
        }
    }

    /// Whether one approver must be a code owner.
    pub fn requires_code_owner(self) -> bool {
        self == Tier::Sensitive
    }

    /// The number shown to people.
    pub fn number(self) -> u8 {
        self as u8
    }
}

fn is_docs(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.starts_with("docs/")
        || lower.contains("/docs/")
        || [".md", ".markdown", ".rst", ".txt", ".adoc"]
            .iter()
            .any(|ext| lower.ends_with(ext))
        || lower
            .rsplit('/')
            .next()
            .is_some_and(|name| name == "license" || name == "changelog")
}

/// The sensitive word a path hits, if any: any path segment or file stem that is one of the
/// words, or starts with one followed by a separator (`auth_token.rs`, `payments-api/`).
fn sensitive_hit<'a>(path: &str, words: &'a [String]) -> Option<&'a str> {
    let lower = path.to_ascii_lowercase();
    lower.split('/').find_map(|segment| {
        let stem = segment
            .split('.')
            .next()
            .filter(|s| !s.is_empty())
            .unwrap_or(segment);
        words.iter().map(String::as_str).find(|word| {
            segment == *word
                || stem == *word
                || [stem, segment].iter().any(|s| {
                    s.strip_prefix(word)
                        .is_some_and(|rest| rest.starts_with(['_', '-', '.']))
                })
        })
    })
}

/// The tier of a change and a reason for each path that raised it.
pub fn classify(paths: &[String], sensitive_words: &[String]) -> (Tier, Vec<String>) {
    let mut tier = Tier::Docs;
    let mut reasons = Vec::new();
    for path in paths {
        let (path_tier, reason) = match sensitive_hit(path, sensitive_words) {
            Some(word) => (Tier::Sensitive, format!("{path}: sensitive ({word})")),
            None if is_docs(path) => (Tier::Docs, format!("{path}: documentation")),
            None => (Tier::Source, format!("{path}: source")),
        };
        tier = tier.max(path_tier);
        reasons.push(reason);
    }
    if paths.is_empty() {
        reasons.push("no paths: treated as source".to_owned());
        tier = Tier::Source;
    }
    (tier, reasons)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> Vec<String> {
        DEFAULT_SENSITIVE_WORDS
            .iter()
            .map(|w| (*w).to_owned())
            .collect()
    }

    fn tier_of(paths: &[&str]) -> Tier {
        let paths: Vec<String> = paths.iter().map(|p| (*p).to_owned()).collect();
        classify(&paths, &words()).0
    }

    #[test]
    fn documentation_alone_is_tier_0() {
        assert_eq!(
            tier_of(&["README.md", "docs/setup.html", "CHANGELOG"]),
            Tier::Docs
        );
    }

    #[test]
    fn ordinary_source_is_tier_1() {
        assert_eq!(tier_of(&["shoplite/src/lib.rs", "README.md"]), Tier::Source);
        // A word inside a longer name is not a hit.
        assert_eq!(
            tier_of(&["src/author.rs", "src/billingsley.rs"]),
            Tier::Source
        );
    }

    #[test]
    fn sensitive_paths_are_tier_2_with_the_reason() {
        for path in [
            "src/auth/session.rs",
            "server/src/auth.rs",
            "src/auth_token.rs",
            "payments/stripe.rs",
            "billing/invoice.ts",
            "migrations/postgres/0002.sql",
            ".github/workflows/ci.yml",
            "docs/security.md",
        ] {
            assert_eq!(tier_of(&[path]), Tier::Sensitive, "{path}");
        }
        let (_, reasons) = classify(&["src/auth.rs".to_owned()], &words());
        assert_eq!(reasons, ["src/auth.rs: sensitive (auth)"]);
    }

    #[test]
    fn the_sensitive_list_is_configurable() {
        let custom = vec!["pricing".to_owned()];
        let (tier, _) = classify(&["shoplite/src/pricing.rs".to_owned()], &custom);
        assert_eq!(tier, Tier::Sensitive);
        let (tier, _) = classify(&["src/auth.rs".to_owned()], &custom);
        assert_eq!(tier, Tier::Source);
    }

    #[test]
    fn tier_2_needs_two_people_and_a_code_owner() {
        assert_eq!(Tier::Sensitive.required_humans(), 2);
        assert!(Tier::Sensitive.requires_code_owner());
        assert_eq!(Tier::Source.required_humans(), 1);
        assert!(!Tier::Source.requires_code_owner());
    }
}
