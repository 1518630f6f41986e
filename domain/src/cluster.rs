//! Joining a new report to an open bug.
//!
//! Rule: same component, and the titles' *terms* have a Sørensen–Dice coefficient of at least
//! [`JOIN_THRESHOLD`]: `2·|A ∩ B| / (|A| + |B|)`. Terms are the title's words, lower-cased,
//! with filler words dropped, a small synonym table applied and a plural `s` removed. Dice
//! was chosen over the overlap coefficient (`|A ∩ B| / min(|A|, |B|)`) because a wrong join
//! hands one reporter another's bug: on the shared duplicate pairs it is far more precise at
//! the same threshold (`r2r cluster eval` prints both figures).

use std::collections::BTreeSet;

/// The lowest similarity at which a report joins an open bug.
pub const JOIN_THRESHOLD: f64 = 0.55;

const FILLER: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "by", "with", "and", "or", "is", "are", "be",
    "was", "were", "this", "that", "these", "those", "it", "its", "not", "no", "when", "while",
    "after", "before", "from", "as", "at", "into", "via", "using", "use", "used", "does", "do",
    "doesnt", "isnt", "cant", "cannot", "should", "shouldnt", "fails", "failed", "failing", "fail",
    "error", "errors", "issue", "bug", "problem", "add", "support", "allow", "make", "my", "i",
    "me", "we", "our", "you", "your", "please", "get", "gets", "got",
];

const SYNONYMS: &[(&str, &str)] = &[
    ("crashes", "crash"),
    ("crashed", "crash"),
    ("crashing", "crash"),
    ("hangs", "hang"),
    ("hung", "hang"),
    ("freeze", "hang"),
    ("freezes", "hang"),
    ("frozen", "hang"),
    ("npe", "nullpointerexception"),
    ("nullpointer", "nullpointerexception"),
    ("dont", "not"),
    ("wont", "not"),
    ("missing", "absent"),
    ("negative", "below_zero"),
    ("minus", "below_zero"),
    ("discount", "coupon"),
    ("voucher", "coupon"),
    ("promo", "coupon"),
    ("checkout", "cart"),
    ("basket", "cart"),
    ("amount", "total"),
    ("sum", "total"),
    ("price", "total"),
    ("infinite", "infinity"),
    ("inf", "infinity"),
];

/// The terms of a title.
pub fn title_terms(title: &str) -> BTreeSet<String> {
    title
        .to_lowercase()
        .replace(['\'', '’'], "")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(|w| {
            SYNONYMS
                .iter()
                .find(|(from, _)| *from == w)
                .map_or(w, |(_, to)| *to)
        })
        .filter(|w| !FILLER.contains(w))
        .map(|w| {
            let chars = w.chars().count();
            if chars > 4 && w.ends_with('s') && !w.ends_with("ss") {
                w[..w.len() - 1].to_owned()
            } else {
                w.to_owned()
            }
        })
        .collect()
}

/// Sørensen–Dice coefficient of two term sets (0 when either is empty).
pub fn similarity(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let shared = a.intersection(b).count();
    2.0 * shared as f64 / (a.len() + b.len()) as f64
}

/// A title's terms in their stored form: sorted, separated by single spaces (terms never
/// contain whitespace), so candidates can be compared without rebuilding sets.
pub fn stored_terms(title: &str) -> String {
    title_terms(title).into_iter().collect::<Vec<_>>().join(" ")
}

/// Sørensen–Dice coefficient of a term set and stored terms ([`stored_terms`]), by one merge
/// of the two sorted lists, without allocating.
pub fn similarity_to_stored(terms: &BTreeSet<String>, stored: &str) -> f64 {
    let mut theirs = stored.split(' ').filter(|t| !t.is_empty()).peekable();
    let mut ours = terms.iter().map(String::as_str).peekable();
    let (mut shared, mut their_count) = (0usize, 0usize);
    while let Some(their) = theirs.peek().copied() {
        match ours.peek().copied() {
            Some(our) if our < their => {
                ours.next();
            }
            Some(our) if our == their => {
                shared += 1;
                ours.next();
                theirs.next();
                their_count += 1;
            }
            _ => {
                theirs.next();
                their_count += 1;
            }
        }
    }
    if terms.is_empty() || their_count == 0 {
        return 0.0;
    }
    2.0 * shared as f64 / (terms.len() + their_count) as f64
}

/// The overlap coefficient, for comparison in the evaluation.
pub fn overlap(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    a.intersection(b).count() as f64 / a.len().min(b.len()) as f64
}

/// An open bug a report could join.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The bug.
    pub bug_id: String,
    /// Its component.
    pub component: String,
    /// The terms of its first report's title.
    pub terms: BTreeSet<String>,
}

/// The open bug a new report joins (the most similar at or above the threshold, same
/// component), or `None` to open a new bug.
pub fn choose<'a>(
    component: &str,
    title: &str,
    open: &'a [Candidate],
) -> Option<(&'a Candidate, f64)> {
    let terms = title_terms(title);
    open.iter()
        .filter(|c| c.component == component)
        .map(|c| (c, similarity(&terms, &c.terms)))
        .filter(|(_, score)| *score >= JOIN_THRESHOLD)
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, component: &str, title: &str) -> Candidate {
        Candidate {
            bug_id: id.into(),
            component: component.into(),
            terms: title_terms(title),
        }
    }

    #[test]
    fn terms_drop_filler_and_fold_synonyms_and_plurals() {
        let terms: Vec<String> = title_terms("The checkout crashes when the coupons are applied")
            .into_iter()
            .collect();
        assert_eq!(terms, ["applied", "cart", "coupon", "crash"]);
    }

    #[test]
    fn the_same_bug_in_other_words_joins_and_a_different_one_does_not() {
        let open = [
            candidate("bug-1", "shoplite", "SAVE300 coupon gives a negative total"),
            candidate(
                "bug-2",
                "shoplite",
                "Price of 1e308 shows an infinite total",
            ),
            candidate("bug-3", "desk", "Coupon SAVE300 makes the total negative"),
        ];
        let (joined, score) =
            choose("shoplite", "Negative total with coupon SAVE300", &open).unwrap();
        assert_eq!(joined.bug_id, "bug-1");
        assert!(score >= JOIN_THRESHOLD);
        assert!(choose("shoplite", "Images do not load on the product page", &open).is_none());
        // Another component never joins, however similar.
        assert_eq!(
            choose("desk", "SAVE300 coupon gives a negative total", &open)
                .unwrap()
                .0
                .bug_id,
            "bug-3"
        );
    }

    #[test]
    fn stored_terms_give_the_same_similarity_as_sets() {
        let titles = [
            "SAVE300 coupon gives a negative total",
            "Negative total with coupon SAVE300",
            "Images do not load on the product page",
            "",
            "checkout checkout basket",
        ];
        for a in titles {
            for b in titles {
                let direct = similarity(&title_terms(a), &title_terms(b));
                let stored = similarity_to_stored(&title_terms(a), &stored_terms(b));
                assert!(
                    (direct - stored).abs() < 1e-12,
                    "{a:?} vs {b:?}: {direct} {stored}"
                );
            }
        }
    }

    #[test]
    fn similarity_is_dice() {
        let a = title_terms("alpha beta gamma");
        let b = title_terms("alpha beta delta epsilon");
        assert!((similarity(&a, &b) - 4.0 / 7.0).abs() < 1e-9);
        assert!((overlap(&a, &b) - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(similarity(&a, &BTreeSet::new()), 0.0);
    }
}
