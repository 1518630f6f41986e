//! Redaction of personal data, secrets, links and mentions from clean reports.

use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// What was removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RedactionKind {
    /// Private keys, API keys, tokens, `password=…`.
    Secret,
    /// Email addresses.
    Email,
    /// Links.
    Link,
    /// `@someone`.
    Mention,
    /// Payment card numbers (Luhn-checked).
    Card,
    /// US SSN, UK NI number, Indian Aadhaar and PAN.
    GovernmentId,
    /// Phone numbers.
    Phone,
    /// IPv4 and IPv6 addresses.
    IpAddress,
    /// Street addresses.
    StreetAddress,
}

impl RedactionKind {
    /// The placeholder left in the text, also the count's key.
    pub fn placeholder(self) -> &'static str {
        match self {
            RedactionKind::Secret => "[secret]",
            RedactionKind::Email => "[email]",
            RedactionKind::Link => "[link]",
            RedactionKind::Mention => "[mention]",
            RedactionKind::Card => "[card number]",
            RedactionKind::GovernmentId => "[government id]",
            RedactionKind::Phone => "[phone]",
            RedactionKind::IpAddress => "[ip address]",
            RedactionKind::StreetAddress => "[street address]",
        }
    }
}

fn re(pattern: &str) -> Regex {
    #[allow(clippy::expect_used)]
    Regex::new(pattern).expect("redaction pattern compiles")
}

fn luhn(digits: &str) -> bool {
    let digits: Vec<u32> = digits.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 1 {
                if d * 2 > 9 {
                    d * 2 - 9
                } else {
                    d * 2
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Aadhaar numbers carry a Verhoeff check digit.
fn verhoeff(digits: &str) -> bool {
    const D: [[u8; 10]; 10] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
        [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
        [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
        [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
        [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
        [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
        [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
        [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
        [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
    ];
    const P: [[u8; 10]; 8] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
        [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
        [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
        [9, 4, 5, 3, 1, 2, 6, 8, 7, 0],
        [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
        [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
        [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
    ];
    let digits: Vec<usize> = digits
        .chars()
        .filter_map(|c| c.to_digit(10))
        .map(|d| d as usize)
        .collect();
    let check = digits.iter().rev().enumerate().fold(0usize, |c, (i, &d)| {
        usize::from(D[c][usize::from(P[i % 8][d])])
    });
    digits.len() == 12 && check == 0
}

type Check = fn(&str) -> bool;

/// In order: secrets before anything that could split them, emails before mentions.
static RULES: LazyLock<Vec<(RedactionKind, Regex, Option<Check>)>> = LazyLock::new(|| {
    use RedactionKind as K;
    vec![
        (
            K::Secret,
            re(r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----"),
            None,
        ),
        (
            K::Secret,
            re(
                r"\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{10,}\b|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bxox[abpr]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{35}\b|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}",
            ),
            None,
        ),
        (
            K::Secret,
            re(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*"),
            None,
        ),
        (
            K::Secret,
            re(
                r#"(?i)\b(?:password|passwd|pwd|pass|secret|token|api[_-]?key|access[_-]?key|client[_-]?secret|auth)\s*[:=]\s*["']?[^\s"',;]+"#,
            ),
            None,
        ),
        (
            K::Email,
            re(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
            None,
        ),
        (
            K::Link,
            re(r"(?i)\b(?:https?|ftp|file)://[^\s<>\x22']+|\bwww\.[^\s<>\x22']+"),
            None,
        ),
        (
            K::Mention,
            re(r"(?:^|[\s(])@[A-Za-z0-9][A-Za-z0-9_-]{0,38}\b"),
            None,
        ),
        (
            K::Card,
            re(r"\b(?:\d[ -]?){12,18}\d\b"),
            Some(luhn as Check),
        ),
        (K::GovernmentId, re(r"\b\d{3}-\d{2}-\d{4}\b"), None),
        (
            K::GovernmentId,
            re(r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b"),
            None,
        ),
        (K::GovernmentId, re(r"\b[A-Z]{5}\d{4}[A-Z]\b"), None),
        (
            K::GovernmentId,
            re(r"\b[2-9]\d{3} ?\d{4} ?\d{4}\b"),
            Some(verhoeff as Check),
        ),
        (
            K::Phone,
            re(r"\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)[\s.-]?)?\d{2,5}(?:[\s.-]?\d{2,5}){1,4}\b"),
            None,
        ),
        (
            K::Phone,
            re(r"\(\d{2,4}\)\s?\d{3,4}[\s.-]?\d{3,4}\b|\b\d{3}[.-]\d{3}[.-]\d{4}\b|\b[6-9]\d{9}\b"),
            None,
        ),
        (
            K::IpAddress,
            re(
                r"(?i)\b(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}\b|\b(?:[0-9a-f]{1,4}:){1,6}:(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,5})?\b|::1\b",
            ),
            None,
        ),
        (
            K::IpAddress,
            re(
                r"\b(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\b",
            ),
            None,
        ),
        (
            K::StreetAddress,
            re(
                r"\b\d{1,5}(?:[A-Za-z])?,?\s+(?:[A-Z][a-z]+\.?\s+){1,4}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|Close|Crescent|Marg|Nagar|Straße|Strasse|Rue)\b\.?",
            ),
            None,
        ),
    ]
});

/// Replaces every match with its placeholder, counting per kind. Matches are found with
/// `find_iter` (the regex crate's fast engines; no capture groups needed) and the text is
/// rebuilt only for the rules that hit.
pub fn redact(text: &str, counts: &mut BTreeMap<String, u32>) -> String {
    let mut text = text.to_owned();
    for (kind, pattern, check) in RULES.iter() {
        let mut hits = 0u32;
        let mut out = String::new();
        let mut last = 0;
        for found in pattern.find_iter(&text) {
            let matched = found.as_str();
            if check.is_some_and(|check| !check(matched)) {
                continue;
            }
            hits += 1;
            out.push_str(&text[last..found.start()]);
            if *kind == RedactionKind::Mention {
                // Keep the whitespace or bracket the pattern consumed before the `@`.
                out.extend(matched.chars().take_while(|c| *c != '@'));
            }
            out.push_str(kind.placeholder());
            last = found.end();
        }
        if hits > 0 {
            out.push_str(&text[last..]);
            text = out;
            *counts
                .entry(kind.placeholder().trim_matches(['[', ']']).to_owned())
                .or_default() += hits;
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(text: &str) -> (String, BTreeMap<String, u32>) {
        let mut counts = BTreeMap::new();
        (redact(text, &mut counts), counts)
    }

    #[test]
    fn each_kind_is_redacted_and_counted() {
        for (input, expected, kind) in [
            (
                "mail me at asha.rao@example.co.in please",
                "mail me at [email] please",
                "email",
            ),
            (
                "call +91 98765 43210 after six",
                "call [phone] after six",
                "phone",
            ),
            ("call +44 20 7946 0958", "call [phone]", "phone"),
            ("US office (415) 555-0132", "US office [phone]", "phone"),
            (
                "card 4111 1111 1111 1111 was charged",
                "card [card number] was charged",
                "card number",
            ),
            (
                "SSN 078-05-1120 on file",
                "SSN [government id] on file",
                "government id",
            ),
            (
                "NI number AB 12 34 56 C",
                "NI number [government id]",
                "government id",
            ),
            (
                "PAN ABCPE1234F attached",
                "PAN [government id] attached",
                "government id",
            ),
            (
                "Aadhaar 2345 6789 0124",
                "Aadhaar [government id]",
                "government id",
            ),
            (
                "from 203.0.113.42 it fails",
                "from [ip address] it fails",
                "ip address",
            ),
            (
                "from 2001:db8:85a3::8a2e:370:7334 too",
                "from [ip address] too",
                "ip address",
            ),
            (
                "I live at 221 Baker Street, London",
                "I live at [street address], London",
                "street address",
            ),
            (
                "key sk_live_4eC39HqLyjWDarjtT1zdp7dc leaked",
                "key [secret] leaked",
                "secret",
            ),
            (
                "password=hunter2 in the config",
                "[secret] in the config",
                "secret",
            ),
            (
                "Authorization: Bearer abcdefghijklmnopqrstuvwx",
                "Authorization: [secret]",
                "secret",
            ),
            (
                "see https://evil.example/x?y=1 now",
                "see [link] now",
                "link",
            ),
            (
                "thanks @octocat for the tip",
                "thanks [mention] for the tip",
                "mention",
            ),
        ] {
            let (out, counts) = clean(input);
            assert_eq!(out, expected, "{input}");
            assert_eq!(counts.get(kind), Some(&1), "{input}: {counts:?}");
        }
    }

    #[test]
    fn a_private_key_block_is_removed_whole() {
        let (out, _) = clean(
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nafter",
        );
        assert_eq!(out, "[secret]\nafter");
    }

    #[test]
    fn numbers_that_are_not_personal_data_survive() {
        for text in [
            "cart total 200 with quantity 2",
            "order 1234 5678 9012 3456 is not a card (fails Luhn)",
            "released 2020-01-02 at 17:14",
            "SeaMonkey crashed with error 54",
        ] {
            assert_eq!(clean(text).0, text);
        }
    }
}
