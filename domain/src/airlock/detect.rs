//! The eight families of instruction-like text, and how a report is scanned for them.
//!
//! The scan runs on normalised text (NFKC, invisible characters removed). Patterns are
//! written for what an attacker must do — address a reader, claim a role, ask for privileged
//! actions, hide or encode text — not for any particular corpus.

use super::decode;
use regex::{Regex, RegexSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::LazyLock;

/// A family of hostile text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// "Ignore the previous instructions", "from now on".
    InstructionOverride,
    /// System/developer/assistant voices, chat-template tokens, fake transcripts.
    RoleImpersonation,
    /// Merge/approve/deploy without review, disable tests, exfiltrate secrets.
    PrivilegedAction,
    /// Text that talks to a model or asks the reader to perform an unrelated task.
    AddressedToAgent,
    /// Base64, hex, URL-encoded blocks that decode to instructions.
    EncodedPayload,
    /// Invisible characters, HTML comments or hidden markup carrying instructions.
    HiddenMarkup,
    /// Overrides written in other languages.
    OtherLanguage,
    /// "Mark this as critical", "priority: P0".
    SeverityManipulation,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 8] = [
        Family::InstructionOverride,
        Family::RoleImpersonation,
        Family::PrivilegedAction,
        Family::AddressedToAgent,
        Family::EncodedPayload,
        Family::HiddenMarkup,
        Family::OtherLanguage,
        Family::SeverityManipulation,
    ];

    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::InstructionOverride => "instruction_override",
            Family::RoleImpersonation => "role_impersonation",
            Family::PrivilegedAction => "privileged_action",
            Family::AddressedToAgent => "addressed_to_agent",
            Family::EncodedPayload => "encoded_payload",
            Family::HiddenMarkup => "hidden_markup",
            Family::OtherLanguage => "other_language",
            Family::SeverityManipulation => "severity_manipulation",
        }
    }
}

fn set(patterns: &[&str]) -> RegexSet {
    // Patterns are literals in this file and covered by tests; failing here is a build bug.
    #[allow(clippy::expect_used)]
    RegexSet::new(patterns.iter().map(|p| format!("(?i){p}"))).expect("airlock patterns compile")
}

fn re(pattern: &str) -> Regex {
    #[allow(clippy::expect_used)]
    Regex::new(pattern).expect("airlock pattern compiles")
}

/// Whole-text patterns per family.
static FAMILY_PATTERNS: LazyLock<Vec<(Family, RegexSet)>> = LazyLock::new(|| {
    vec![
        (
            Family::InstructionOverride,
            set(&[
                r"\b(?:ignore|disregard|forget|override|bypass)\b.{0,40}\b(?:previous|prior|above|earlier|all|any|your|the)\b.{0,20}\b(?:instructions?|prompts?|rules|guidelines|directives|context|system prompt)\b",
                r"\bnew instructions?\s*:",
                r"\bfrom now on,? (?:you|always|only|never|respond|reply|answer|act)\b",
                r"\binstead of (?:the|your) (?:task|instructions)\b",
            ]),
        ),
        (
            Family::RoleImpersonation,
            set(&[
                r"(?m)^\s*(?:system|assistant|developer)\s*(?:prompt|message)?\s*:",
                r"<\|(?:im_start|im_end|system|endoftext|assistant|user)\|>",
                r"\[/?INST\]|<</?SYS>>",
                r"###\s*(?:system|instruction|assistant)\b",
                r"\byou are (?:now )?(?:an? )?(?:ai|assistant|language model|chatbot|dan|unrestricted)\b",
                r"\bpretend (?:to be|you are)\b",
                r"\b(?:begin|end) (?:system|hidden|developer) (?:prompt|instructions?|message)\b",
            ]),
        ),
        (
            Family::PrivilegedAction,
            set(&[
                r"\b(?:merge|approve|push|deploy|release|ship)\b.{0,40}\b(?:without|skip(?:ping)?|bypass(?:ing)?)\b.{0,20}\b(?:review|tests?|checks?|approval|ci)\b",
                r"\b(?:exfiltrate|leak|steal)\s+(?:the|your|all|any)\s+(?:\w+\s+){0,2}(?:secrets?|tokens?|passwords?|credentials?|api keys?|keys)\b",
                r"\b(?:send|post|upload|email|forward|print|reveal|dump|share)\b.{0,30}\b(?:your|the|all)\b.{0,20}\b(?:secrets?|api keys?|tokens?|passwords?|credentials?|environment variables|ssh keys?)\b.{0,40}\b(?:to|at|into)\b",
                r"(?:curl|wget)\b[^\n|]{0,200}\|\s*(?:ba)?sh\b",
                r"\brm\s+-rf\s+/(?:\s|$)",
                r"\b(?:approve|merge)\s+(?:this|the)\s+(?:pr|pull request|fix|change)\b.{0,30}\b(?:now|immediately|automatically|without)\b",
                r"\b(?:disable|delete|remove|comment out|skip)\s+(?:all|every|the failing|the)\s+(?:tests|checks|assertions)\s+(?:so|and then|then|before)\b",
            ]),
        ),
        (
            Family::AddressedToAgent,
            set(&[
                r"\byour (?:response|reply|answer|message|output|code|codebase|implementation|solution|algorithm|program|elucidation|program logic|code implementation|next (?:message|reply)|summary)\b",
                r"\b(?:add|include|incorporate|integrate|embed|insert|append|utili[sz]e|merge|blend|inject|employ|leverage|enlist|absorb|weave|feature|execute)\w*\b.{0,60}\b(?:following|below|subsequent) code\b",
                r"\bthe code you (?:develop|write|produce|generate)\b",
                r"\b(?:dear|hey|hi|hello|attention|note to(?: the)?)\s+(?:ai|assistant|model|bot|agent|llm|gpt|chatgpt|claude|copilot|gemini|crew|reproducer|fixer|reviewer)\b",
                r"\b(?:the|you|dear|hey)\s+(?:ai|assistant|language model|llm|agent|bot|model)s?\s*,?\s+(?:must|should|need to|has to|have to|will|shall)\b",
                r"(?m)^\s*(?:can|could|would|will) you (?:please )?(?:reply|respond|answer|translate|write|summari[sz]e|rewrite)\b",
                r"\b(?:write|compose|draft|develop|create|generate)\s+(?:me\s+)?(?:a|an)\s+(?:\w+\s+){0,2}(?:story|poem|letter|essay|speech|song|novel|article|blog post|tweet|joke|haiku|limerick|recipe|introduction|sonnet)\b",
                r"\bas an? (?:ai|language model|assistant)\b",
            ]),
        ),
        (
            Family::SeverityManipulation,
            set(&[
                r"\b(?:mark|set|label|classify|flag|treat|rate|prioriti[sz]e|escalate)\s+(?:this|it|the (?:bug|issue|report|ticket))\b.{0,20}\b(?:as|to)\b.{0,12}\b(?:critical|urgent|blocker|p0|sev(?:erity)?[ -]?[01]|highest|top priority|security)\b",
                r"\b(?:severity|priority)\s*[:=]\s*(?:critical|p0|urgent|blocker|highest)\b",
                r"\b(?:fix|handle|treat|process) this (?:first|immediately|before (?:all|any) other)",
            ]),
        ),
        (
            Family::OtherLanguage,
            set(&[
                // Spanish, French, German, Portuguese, Italian.
                r"\bignor[ae]\b.{0,30}\binstrucciones\b",
                r"\b(?:olvida|omite)\b.{0,30}\b(?:instrucciones|reglas)\b",
                r"\bignorez\b.{0,30}\b(?:instructions|consignes)\b",
                r"\boubliez\b.{0,30}\b(?:instructions|consignes)\b",
                r"\bignorier(?:e|en)?\b.{0,30}\b(?:anweisungen|anordnungen|regeln)\b",
                r"\bvergiss\b.{0,30}\banweisungen\b",
                r"\bignor[ea]\b.{0,30}\binstru[cç][õo]es\b",
                r"\bignora\b.{0,30}\bistruzioni\b",
                // Chinese, Japanese, Russian, Hindi, Korean.
                r"(?:忽略|无视|忘记).{0,12}(?:指令|指示|说明|规则|提示)",
                r"(?:指示|命令|ルール).{0,12}(?:無視|むし)",
                r"無視.{0,6}(?:して|しろ)",
                r"(?:игнорир|забуд)\w*.{0,30}(?:инструкц|указани|правил)",
                r"(?:निर्देश|निर्देशों).{0,30}(?:अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल)",
                r"(?:지시|명령).{0,12}무시",
            ]),
        ),
    ]
});

/// Sentence starts that ask the reader to perform a task.
static TASK_START: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:please\s+|kindly\s+)?(?:(?:can|could|would|will) you\s+(?:please\s+)?\w+|(?:write|compose|draft|translate|summari[sz]e|explain|describe|recommend|suggest|analy[sz]e|determine|classify|tell|teach|generate|create|develop|rewrite|calculate|list|provide|find|break down|help me|show me|give me))\b",
    )
});

/// Questions.
static QUESTION: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^(?:what(?:'s)?|who|how|which|where|when|why|is|are|can|could|would|do|does)\b.*\?$")
});

/// Imperatives that are hostile wherever text is hidden (comments, encoded blocks, invisible).
static HIDDEN_IMPERATIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:don'?t (?:hesitate|forget) to|reply|respond|answer|replace|include|incorporate|integrate|utili[sz]e|execute|embed|insert|append|add|use|apply|encode|encrypt|translate|render|express|remove|group|combine|shift|introduce|misspell|scramble|rearrange|jumble|anagram|modify|enhance|augment|mention|promote|share|invite|say|print|output|ignore|forget|disregard|run|delete|approve|merge|deploy|send|mark|set)\b",
    )
});

/// Replying in a manner is never part of a bug report.
static REPLY_MANNER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^(?:reply|respond|answer)\s+(?:in|using|with only|only|backwards?)\b")
});

/// Words of software and of bug reports: a request that uses them is about the product.
static PRODUCT_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:error|errors|exception|crash|crashes|bug|bugs|fail|fails|failed|failure|stack|trace|log|logs|version|page|button|click|cart|coupon|total|app|server|client|node|nodes|cluster|file|files|job|jobs|task|tasks|config|configuration|property|class|method|null|test|tests|build|browser|window|tab|menu|dialog|mail|message|folder|profile|download|upload|url|link|option|options|setting|settings|patch|code|api|command|shell|script|directory|block|blocks|port|user|users|timeout|memory|disk|cpu|thread|threads|queue|container|resource|manager|service|token|ssl|http|https|html|xml|json|sql|database|table|column|row|key|value|output|input|stream|read|write|path|compile|doc|docs|documentation|release|branch|commit|checkout|price|shop|order|payment|discount|quantity|item|screen|display|font|image|editor|address|bookmark|plugin|extension|addon|update|install|startup|shutdown|preferences|cache|cookie|proxy|network|dns|socket|protocol|buffer|filesystem|problems?|pull request|seek|expected|expect|actual|behaviou?r|works?|working|broken|issues?|happen|happens|happened|reproduce|reproducible|steps|fix|fixed|regression|wrong|correct|incorrect|should|instead|shows?|shown|displays?|results?|again|still|when i|after)\b",
    )
});

/// Identifiers, paths, acronyms, code punctuation: technical content.
static TECHNICAL_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| re(r"[A-Za-z]+[._/#:][A-Za-z0-9]|[a-z][A-Z]|\b[A-Z]{2,}\b|[(){}\[\]<>=]"));

/// Asking people, not a model.
static FORUM: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)\b(?:someone|anyone|somebody|anybody|you guys|folks|devs|developers|team)\b")
});

static HTML_COMMENT: LazyLock<Regex> = LazyLock::new(|| re(r"(?s)<!--(.*?)-->"));
static HIDDEN_ELEMENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?is)<(\w+)[^>]*(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0|\bhidden\b)[^>]*>(.*?)</\w+>"#,
    )
});
static LIST_MARKER: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(?:\d+[.)]|[-*•])\s*"));

const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "by", "with", "and", "or", "is", "are", "be",
    "was", "were", "this", "that", "these", "those", "it", "its", "my", "me", "i", "you", "your",
    "we", "our", "they", "their", "his", "her", "at", "from", "as", "into", "over", "about",
    "what", "who", "how", "which", "where", "when", "why", "can", "could", "would", "do", "does",
    "did", "will", "shall", "should", "may", "might", "must", "not", "no", "yes", "so", "than",
    "then", "there", "here", "please", "kindly", "some", "any", "all", "each", "more", "most",
    "such", "only", "also", "just", "very",
];

fn content_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphabetic())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() > 2 && !STOP_WORDS.contains(&w.as_str()))
        .collect()
}

/// Splits text into sentences: by line, list markers removed, then after `.`, `!` or `?`.
pub(crate) fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = LIST_MARKER.replace(line, "");
        let mut current = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            current.push(c);
            if matches!(c, '.' | '!' | '?') && chars.peek().is_some_and(|n| n.is_whitespace()) {
                let sentence = current.trim();
                if !sentence.is_empty() {
                    out.push(sentence.to_owned());
                }
                current.clear();
            }
        }
        let sentence = current.trim();
        if !sentence.is_empty() {
            out.push(sentence.to_owned());
        }
    }
    out
}

/// What the cheap checks say about a sentence: a request, not one, or "depends on whether it
/// shares a subject with the rest of the report".
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Request,
    NotRequest,
    NeedsContext,
}

/// Whether a sentence asks the reader to do something unrelated to the product. In hidden
/// text any imperative or question counts.
fn request_to_reader(sentence: &str, hidden: bool) -> Verdict {
    if hidden && HIDDEN_IMPERATIVE.is_match(sentence) {
        return Verdict::Request;
    }
    if REPLY_MANNER.is_match(sentence) {
        return Verdict::Request;
    }
    if !(TASK_START.is_match(sentence) || QUESTION.is_match(sentence)) {
        return Verdict::NotRequest;
    }
    if hidden {
        return Verdict::Request;
    }
    if FORUM.is_match(sentence)
        || PRODUCT_WORDS.is_match(sentence)
        || TECHNICAL_TOKEN.is_match(sentence)
    {
        return Verdict::NotRequest;
    }
    Verdict::NeedsContext
}

/// Whether any sentence is a request to the reader. A task for an assistant shares no
/// subject with the rest of the report: its content words (three or more) appear in no other
/// sentence. Word counts over the whole text are built once, only if a sentence needs them.
fn any_request_to_reader(text: &str, hidden: bool) -> bool {
    let sentences = sentences(text);
    let mut totals: Option<std::collections::HashMap<String, usize>> = None;
    for sentence in &sentences {
        match request_to_reader(sentence, hidden) {
            Verdict::Request => return true,
            Verdict::NotRequest => continue,
            Verdict::NeedsContext => {}
        }
        let totals = totals.get_or_insert_with(|| {
            let mut counts = std::collections::HashMap::new();
            for s in &sentences {
                for word in content_words(s) {
                    *counts.entry(word).or_insert(0usize) += 1;
                }
            }
            counts
        });
        let words = content_words(sentence);
        let mut own: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for word in &words {
            *own.entry(word.as_str()).or_insert(0) += 1;
        }
        let shared = words.iter().any(|w| {
            totals.get(w).copied().unwrap_or(0) > own.get(w.as_str()).copied().unwrap_or(0)
        });
        if words.len() >= 3 && !shared {
            return true;
        }
    }
    false
}

/// Scans normalised text. `hidden` marks text a human reader would not see.
pub(crate) fn scan(text: &str, hidden: bool, depth: u8) -> BTreeSet<Family> {
    let mut families = BTreeSet::new();
    for (family, patterns) in FAMILY_PATTERNS.iter() {
        if patterns.is_match(text) {
            families.insert(*family);
        }
    }
    if any_request_to_reader(text, hidden) {
        families.insert(Family::AddressedToAgent);
    }
    if depth < 2 {
        // Markup needs a `<`: skip the capture-group searches (the regex crate's slowest
        // engine) for the many texts without one.
        let markup = text.contains('<');
        let comments = markup
            .then(|| HTML_COMMENT.captures_iter(text))
            .into_iter()
            .flatten();
        for captures in comments {
            let inner = captures.get(1).map_or("", |m| m.as_str());
            if !scan(inner, true, depth + 1).is_empty() {
                families.insert(Family::HiddenMarkup);
            }
        }
        let hidden_elements = markup
            .then(|| HIDDEN_ELEMENT.captures_iter(text))
            .into_iter()
            .flatten();
        for captures in hidden_elements {
            let inner = captures.get(2).map_or("", |m| m.as_str());
            if !scan(inner, true, depth + 1).is_empty() {
                families.insert(Family::HiddenMarkup);
            }
        }
        if depth == 0 {
            // ROT13 needs no marker to be read by a model: check the whole text rotated.
            let rotated = decode::rot13(text);
            for (family, patterns) in FAMILY_PATTERNS.iter() {
                if patterns.is_match(&rotated) {
                    families.insert(Family::EncodedPayload);
                    families.insert(*family);
                }
            }
        }
        for decoded in decode::decoded_blocks(text) {
            let inner = scan(&decoded, true, depth + 1);
            if !inner.is_empty() {
                families.insert(Family::EncodedPayload);
                families.extend(inner);
            }
        }
    }
    families
}

/// The baseline the airlock's speed is measured against: one bare pass of the family
/// `RegexSet`s over `text` (no normalisation, decoding, hidden-text or redaction work).
/// Returns how many families' sets matched.
pub fn bare_regexset_pass(text: &str) -> usize {
    FAMILY_PATTERNS
        .iter()
        .filter(|(_, patterns)| patterns.is_match(text))
        .count()
}
