//! Arbitrary bytes as a report: the airlock must never panic, and what it admits must hold
//! no invisible characters and carry the untrusted-data header; what it quarantines keeps no
//! text at all.
#![no_main]

use domain::airlock::unicode::is_default_ignorable as invisible;
use domain::airlock::{admit, normalize, prepared, screen, Admission, RawReport, UNTRUSTED_HEADER};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut fields = text.splitn(4, '\u{1}');
    let report = RawReport {
        component: "shoplite".to_owned(),
        title: fields.next().unwrap_or_default().to_owned(),
        what_happened: fields.next().unwrap_or_default().to_owned(),
        expected: fields.next().unwrap_or_default().to_owned(),
        steps: fields.next().unwrap_or_default().to_owned(),
    };
    match admit(&report) {
        Admission::Quarantined { families, raw_sha256 } => {
            assert!(!families.is_empty());
            assert_eq!(raw_sha256.len(), 64);
        }
        Admission::Admitted { dossier, raw_sha256 } => {
            assert_eq!(raw_sha256.len(), 64);
            assert_eq!(dossier.header, UNTRUSTED_HEADER);
            for field in [&dossier.title, &dossier.what_happened, &dossier.expected]
                .into_iter()
                .chain(dossier.steps.iter())
            {
                assert!(!field.chars().any(invisible), "invisible character admitted");
            }
        }
    }
    let _ = screen(&text);
    let (normalized, _) = normalize(&text);
    assert!(!normalized.chars().any(invisible));
    assert!(!prepared(&text).chars().any(invisible));
    let score = domain::airlock::classifier::MODEL.score(&normalized);
    assert!((0.0..=1.0).contains(&score));
});
