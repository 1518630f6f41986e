//! The eight families of instruction-like text, and how a report is scanned for them.
//!
//! The scan runs on normalised text (NFKC, invisible characters removed). Patterns are
//! written for what an attacker must do — address a reader, claim a role, ask for privileged
//! actions, hide or encode text — not for any particular corpus.

use super::classifier::Model;
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
    /// Words that mix Latin letters with Cyrillic, Greek or other look-alikes.
    LookAlikeLetters,
    /// A passage the trained classifier scores as text aimed at a model.
    LearnedPattern,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 10] = [
        Family::InstructionOverride,
        Family::RoleImpersonation,
        Family::PrivilegedAction,
        Family::AddressedToAgent,
        Family::EncodedPayload,
        Family::HiddenMarkup,
        Family::OtherLanguage,
        Family::SeverityManipulation,
        Family::LookAlikeLetters,
        Family::LearnedPattern,
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
            Family::LookAlikeLetters => "look_alike_letters",
            Family::LearnedPattern => "learned_pattern",
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
                // Paraphrases that avoid "ignore … instructions".
                r"\b(?:set aside|put aside|cast aside|throw out|stop following|no longer follow|do not follow|don'?t follow|pay no (?:attention|heed) to|disobey|overrule)\b.{0,40}\b(?:previous|prior|above|earlier|original|initial|preceding|existing|old|all|your|the|any|those|these)\b.{0,25}\b(?:instructions?|guidance|guidelines|directions?|rules|directives|prompts?|orders|commands|programming|training|safeguards)\b",
                r"\b(?:ignore|disregard|forget|override|bypass)\b.{0,40}\b(?:your|the|all|any|its)\b.{0,20}\b(?:guidance|programming|safeguards|safety (?:rules|guidelines|filters)|content filters?|training|ethics|ethical guidelines)\b",
                r"\b(?:you (?:will|shall|must) )?(?:no longer|never again|not anymore) (?:be )?(?:bound|limited|restricted|constrained) by\b",
                r"\b(?:all\s*previous|all\s*prior|previous|prior|above|earlier|preceding|former)\s+(?:instructions|prompts|rules|directions|commands)\s+(?:are|were|is)\s+(?:now\s+)?(?:false|void|invalid|wrong|cancell?ed|obsolete|null|revoked|outdated|fake)\b",
                r"\b(?:ignore|disregard|forget)\s+(?:(?:all|any|the|everything|of)\s+)*(?:previous|prior|above|preceding|earlier|foregoing)\s+(?:text|directions?|messages?|content|input|commands?|conversation|context|prompts?|words)\b",
                r"\b(?:ignore|disregard|forget)\s+(?:(?:all|any|the|of)\s+)*(?:text|directions?|messages?|instructions?|content|commands?|words)\s+(?:above|before this|so far|given (?:to you )?(?:before|earlier))\b",
                r"\bstop (?:processing|following|obeying|executing|reading) (?:all |any |the |your |my )?(?:commands|instructions|orders|rules|prompts)\b",
                r"\b(?:pretend|imagine|assume|act as if|suppose)\b.{0,30}\b(?:previous|prior|earlier|above|original|initial|your|the|all|those)\b.{0,20}\b(?:rules|instructions|guidelines|restrictions|directives|prompts?)\b.{0,20}\b(?:never existed|don'?t exist|do not exist|were never (?:given|written)|are gone|no longer apply|don'?t apply|do not apply|are void)\b",
                r"\b(?:rules|instructions|guidelines|restrictions|directives)\s+(?:you were given\s+)?(?:no longer|don'?t|do not)\s+apply\s+(?:to you|here|anymore|now)\b",
                r"\b(?:ignore|disregard|forget)\s+(?:what|everything|anything|all)\s+(?:(?:that\s+)?you(?:'ve| have)?\s+(?:were\s+|been\s+)?(?:told|given|instructed|taught|asked)|(?:that\s+)?(?:was|were|has been)\s+(?:said|written|told|given))\b",
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
                r"\b(?:begin|end) (?:system|hidden|developer) (?:prompt|instructions?|message)\b",
                // Personas: "you are now X", "act as X", "from now on you will…".
                r"\b(?:stay|remain|staying|remaining) in character\b|\bbreak(?:ing)? character\b",
                r"\bi (?:want|need) you to (?:act|behave|pretend|roleplay|role-play|play the (?:role|part)|take on the role|assume the role|become|respond as|answer as)\b",
                // Jailbreak framing.
                r"\b(?:god|sudo|jailbreak|jailbroken|dan|evil) mode\b",
                r"\b(?:openai|anthropic|meta|google)(?:'s)? (?:content |usage |safety )?(?:polic(?:y|ies)|guidelines|rules)\b",
            ]),
        ),
        (
            Family::PrivilegedAction,
            set(&[
                r"\btreat\b.{0,40}\bas (?:already |having been |if (?:it|they) (?:were|had been) )?(?:reviewed|approved|verified|signed off|vetted|safe to merge)\b",
                r"\b(?:consider|count|regard|deem) (?:this|it|the (?:change|fix|patch|pr|pull request))\b.{0,20}\b(?:approved|reviewed|signed off|vetted)\b",
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
                r"\bas an? (?:ai|language model|assistant)\b",
                r"\bas (?:the|an?|my|our) (?:ai|assistant|bot|agent|model|llm|chatbot|reproducer|fixer|reviewer)(?: (?:handling|reading|working on|assigned to) this (?:ticket|report|bug|issue))?,? you (?:should|must|will|need to|have to|are to)\b",
                // System-prompt extraction.
                r"\b(?:repeat|print|output|reveal|show|display|tell me|give me|share|list|write out|dump|spell out|recite|return|echo|copy|paste|disclose|leak|expose)\b.{0,40}\b(?:your|the|its)\s+(?:(?:initial|original|system|hidden|secret|previous|preceding|first|full|complete|exact|entire|internal|underlying|developer|pre-?prompt|confidential)\s+)+(?:instructions?|prompts?|text|message|words|configuration|config|rules|context|directives|guidelines|settings)\b",
                r"\b(?:repeat|print|output|recite|echo|copy|spell out|write out|reproduce|translate|summari[sz]e)\b.{0,25}\b(?:everything|all(?: of)?(?: the)?|the (?:text|words|content|messages?|lines|instructions))\b.{0,20}\b(?:above|before this|preceding|so far|prior to this|at the (?:start|beginning) of (?:the|this) (?:conversation|chat|prompt))\b",
                r"\byour (?:initial|original|system|hidden|secret|full|exact|first|internal|underlying|confidential) (?:instructions|prompt|configuration|directives|rules)\b",
                r"\b(?:list|explain|show|reveal|print|repeat|tell me|give me|output|describe|share|write down)\s+(?:me\s+)?(?:all\s+)?(?:of\s+)?your\s+(?:\w+\s+)?(?:instructions|commands|rules|prompts?|directives|guidelines)\b",
                r"\b(?:system|initial|hidden|secret|pre) ?prompt\b.{0,40}\b(?:you (?:were|are) given|verbatim|word for word|in full)\b",
                r"\bwhat (?:were|are) (?:your|the) (?:initial|original|system|first|exact|hidden) (?:instructions|prompt|rules)\b",
                // Goal hijacking addressed to an assistant.
                r"\b(?:you are|you're) (?:no longer|not) (?:an? )?(?:assistant|ai|chatbot|model|bound)\b",
                // A blob with a sentence asking to decode it and act on it.
                r"\b(?:decode|decipher|decrypt)\b.{0,60}\b(?:and|then)\b.{0,20}\b(?:follow|execute|obey|carry out|act on|comply with|do what)\b",
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
                r"\bignorier(?:e|en)?\b.{0,30}\b(?:anweisung(?:en)?|anordnung(?:en)?|regeln)\b",
                r"\bvergiss\b.{0,30}\banweisung(?:en)?\b",
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

/// Patterns that ordinary text also matches now and then ("can you write…", "pretend to be",
/// "you are now logged in", "simulate a failover"): weak signals, counted only when the
/// classifier leans the same way.
static WEAK_PATTERNS: LazyLock<Vec<(Family, RegexSet)>> = LazyLock::new(|| {
    vec![
        (
            Family::AddressedToAgent,
            set(&[
                r"(?m)^\s*(?:can|could|would|will) you (?:please )?(?:reply|respond|answer|translate|write|summari[sz]e|rewrite)\b",
                r"\b(?:write|compose|draft|develop|create|generate)\s+(?:me\s+)?(?:a|an)\s+(?:\w+\s+){0,2}(?:story|poem|letter|essay|speech|song|novel|article|blog post|tweet|joke|haiku|limerick|recipe|introduction|sonnet)\b",
                r"\byour (?:new |real |actual |only |true |main |primary |next )?(?:task|job|goal|purpose|objective|mission|role|assignment) (?:is|will be|now is|from now on is)\b",
            ]),
        ),
        (
            Family::RoleImpersonation,
            set(&[
                r"\bpretend (?:to be|you are)\b",
                r"\byou (?:are|will be|shall be|'re) (?:now|henceforth|from now on|going to (?:be|act|pretend|play)|about to (?:be|become|play|act|immerse))\b",
                r"\b(?:you (?:will|must|shall|should|are to|need to)|please|now|i want you to|i need you to|your task is to)\s+(?:act|behave|respond|answer|reply|speak|write|pose)\s+(?:as|like)\s+(?:if\s+you\s+were\s+)?(?:an?|my|the)?\s*\w+",
                r"\b(?:i want you to|i need you to|you (?:will|must|shall|are going to))\s+(?:pretend|imagine|roleplay|role-play|play the role|take on the role|assume the role|become)\b",
                r"\b(?:simulate|emulate|roleplay as|role-play as|play the part of|take on the persona of|adopt the persona of|assume the persona of)\s+(?:an?|the)\b",
                r"\b(?:free (?:of|from)|without|no longer (?:have|has)|not bound by|released from|liberated from|exempt from)\s+(?:any |all |the |your )?(?:\w+ ){0,2}(?:restrictions|filters|censorship|content polic(?:y|ies)|ethical (?:guidelines|constraints|boundaries)|moral (?:constraints|guidelines|boundaries)|safety (?:guidelines|measures|restrictions))\b",
                r"\b(?:developer|dev|admin|debug|maintenance|unrestricted|unfiltered|uncensored|opposite) mode\b",
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
pub(crate) fn scan(text: &str, hidden: bool, depth: u8, model: &Model) -> BTreeSet<Family> {
    let mut families = BTreeSet::new();
    if model.flags(text) {
        families.insert(Family::LearnedPattern);
    }
    for (family, patterns) in FAMILY_PATTERNS.iter() {
        if patterns.is_match(text) {
            families.insert(*family);
        }
    }
    // A request to the reader is strong evidence in hidden text; in visible text it is a weak
    // signal (a reporter may ask a question), counted only when the classifier leans the same
    // way.
    let confirmed = hidden || depth > 0 || model.leans_hostile(text);
    if confirmed {
        if any_request_to_reader(text, hidden) {
            families.insert(Family::AddressedToAgent);
        }
        for (family, patterns) in WEAK_PATTERNS.iter() {
            if patterns.is_match(text) {
                families.insert(*family);
            }
        }
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
            if !scan(inner, true, depth + 1, model).is_empty() {
                families.insert(Family::HiddenMarkup);
            }
        }
        let hidden_elements = markup
            .then(|| HIDDEN_ELEMENT.captures_iter(text))
            .into_iter()
            .flatten();
        for captures in hidden_elements {
            let inner = captures.get(2).map_or("", |m| m.as_str());
            if !scan(inner, true, depth + 1, model).is_empty() {
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
            let inner = scan(&decoded, true, depth + 1, model);
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
