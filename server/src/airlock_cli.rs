//! `r2r airlock scan` (the intake's own code path over JSON lines) and `r2r airlock eval`
//! (detection and false-positive rates on the shared test data).

use domain::airlock::{admit, Admission, RawReport};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::Path;

/// One input line of `r2r airlock scan`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScanInput {
    title: String,
    body: String,
    #[serde(default)]
    component: String,
}

/// One output line.
#[derive(Debug, Serialize)]
struct ScanOutput {
    quarantined: bool,
    families: Vec<&'static str>,
    dossier: Option<domain::airlock::Dossier>,
    raw_sha256: String,
}

/// Reads JSON lines from `input`, writes one JSON line per input to `output`. A line that is
/// not a valid object gets `{"line": n, "error": …}` and the scan goes on; returns the number
/// of such lines.
pub fn scan(input: impl BufRead, mut output: impl Write) -> std::io::Result<usize> {
    let mut errors = 0;
    for (index, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Result<ScanInput, _> = serde_json::from_str(&line);
        let text = match parsed {
            Ok(input) => {
                let report = RawReport {
                    component: input.component,
                    title: input.title,
                    what_happened: input.body,
                    ..RawReport::default()
                };
                let out = match admit(&report) {
                    Admission::Quarantined {
                        families,
                        raw_sha256,
                    } => ScanOutput {
                        quarantined: true,
                        families: families.iter().map(|f| f.as_str()).collect(),
                        dossier: None,
                        raw_sha256,
                    },
                    Admission::Admitted {
                        dossier,
                        raw_sha256,
                    } => ScanOutput {
                        quarantined: false,
                        families: Vec::new(),
                        dossier: Some(dossier),
                        raw_sha256,
                    },
                };
                serde_json::to_string(&out)
            }
            Err(error) => {
                errors += 1;
                serde_json::to_string(&serde_json::json!({
                    "line": index + 1,
                    "error": format!("expected {{\"title\": …, \"body\": …, \"component\": …}}: {error}"),
                }))
            }
        };
        writeln!(output, "{}", text.map_err(std::io::Error::other)?)?;
    }
    Ok(errors)
}

/// How the evaluation hides a payload inside an otherwise ordinary bug report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrapping {
    /// As a paragraph of the report.
    Plain,
    /// As one of the steps to reproduce.
    InSteps,
    /// Inside an HTML comment.
    HtmlComment,
    /// With zero-width spaces between its words.
    ZeroWidth,
    /// Base64-encoded, presented as a debug blob.
    Base64,
}

impl Wrapping {
    /// Every wrapping.
    pub const ALL: [Wrapping; 5] = [
        Wrapping::Plain,
        Wrapping::InSteps,
        Wrapping::HtmlComment,
        Wrapping::ZeroWidth,
        Wrapping::Base64,
    ];

    fn name(self) -> &'static str {
        match self {
            Wrapping::Plain => "plain paragraph",
            Wrapping::InSteps => "inside the steps",
            Wrapping::HtmlComment => "HTML comment",
            Wrapping::ZeroWidth => "zero-width characters",
            Wrapping::Base64 => "base64 blob",
        }
    }

    /// A ShopLite bug report carrying `payload`.
    pub fn wrap(self, payload: &str) -> RawReport {
        let mut report = RawReport {
            component: "shoplite".to_owned(),
            title: "Checkout asks for a negative amount".to_owned(),
            what_happened: "After I applied a coupon the order summary showed a total below zero."
                .to_owned(),
            expected: "The total should stop at zero.".to_owned(),
            steps: "Add the tea set to the cart\nApply the coupon at checkout".to_owned(),
        };
        match self {
            Wrapping::Plain => {
                report.what_happened = format!("{}\n{payload}", report.what_happened)
            }
            Wrapping::InSteps => {
                report.steps =
                    format!("Add the tea set to the cart\n{payload}\nApply the coupon at checkout")
            }
            Wrapping::HtmlComment => {
                report.what_happened = format!("{} <!-- {payload} -->", report.what_happened)
            }
            Wrapping::ZeroWidth => {
                report.what_happened = format!(
                    "{}\n{}",
                    report.what_happened,
                    payload.split(' ').collect::<Vec<_>>().join("\u{200b} ")
                )
            }
            Wrapping::Base64 => {
                let encoded = base64_encode(payload.as_bytes());
                report.what_happened =
                    format!("{}\nConsole output: {encoded}", report.what_happened)
            }
        }
        report
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
        for _ in chunk.len()..3 {
            out.push('=');
        }
    }
    out
}

/// Why the evaluation could not run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A data file is missing or unreadable.
    #[error("cannot read {path}: {reason} (pass --data with the shared data folder)")]
    Data {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

fn read(path: &Path) -> Result<String, EvalError> {
    std::fs::read_to_string(path).map_err(|e| EvalError::Data {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// The injection payloads: every string in every category of the BIPIA attack files.
pub fn payloads(data: &Path) -> Result<Vec<String>, EvalError> {
    let mut out = Vec::new();
    for file in [
        "text_attack_test.json",
        "text_attack_train.json",
        "code_attack_test.json",
        "code_attack_train.json",
    ] {
        let path = data.join("injection/bipia").join(file);
        let parsed: std::collections::BTreeMap<String, Vec<String>> =
            serde_json::from_str(&read(&path)?).map_err(|e| EvalError::Data {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
        out.extend(parsed.into_values().flatten());
    }
    Ok(out)
}

/// Real bug reports (summary and description) from the GitBugs Hadoop and SeaMonkey files.
pub fn real_reports(data: &Path) -> Result<Vec<(String, String)>, EvalError> {
    let mut out = Vec::new();
    for file in ["hadoop_bugs.csv", "SeaMonkey_bugs.csv"] {
        let path = data.join("bugreports/gitbugs").join(file);
        let text = read(&path)?;
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let headers = reader
            .headers()
            .map_err(|e| EvalError::Data {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?
            .clone();
        let column = |name: &str| headers.iter().position(|h| h.trim() == name);
        let (Some(summary), Some(description)) = (column("Summary"), column("Description")) else {
            return Err(EvalError::Data {
                path: path.display().to_string(),
                reason: "no Summary/Description columns".into(),
            });
        };
        for record in reader.records() {
            let record = record.map_err(|e| EvalError::Data {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            out.push((
                record.get(summary).unwrap_or_default().to_owned(),
                record.get(description).unwrap_or_default().to_owned(),
            ));
        }
    }
    Ok(out)
}

/// The measured accuracy.
#[derive(Debug)]
pub struct Accuracy {
    /// (wrapping, detected, total) for each wrapping.
    pub per_wrapping: Vec<(Wrapping, usize, usize)>,
    /// Real reports quarantined (false positives).
    pub false_positives: usize,
    /// Real reports scanned.
    pub real_reports: usize,
}

impl Accuracy {
    /// Detection rate over every wrapped payload, in percent.
    pub fn detection_rate(&self) -> f64 {
        let (hit, total) = self
            .per_wrapping
            .iter()
            .fold((0, 0), |(h, t), (_, hit, total)| (h + hit, t + total));
        100.0 * hit as f64 / total.max(1) as f64
    }

    /// False-positive rate on real reports, in percent.
    pub fn false_positive_rate(&self) -> f64 {
        100.0 * self.false_positives as f64 / self.real_reports.max(1) as f64
    }
}

/// Runs the evaluation on the shared data folder.
pub fn evaluate(data: &Path) -> Result<Accuracy, EvalError> {
    let payloads = payloads(data)?;
    let per_wrapping = Wrapping::ALL
        .iter()
        .map(|&wrapping| {
            let hit = payloads
                .iter()
                .filter(|p| matches!(admit(&wrapping.wrap(p)), Admission::Quarantined { .. }))
                .count();
            (wrapping, hit, payloads.len())
        })
        .collect();
    let reports = real_reports(data)?;
    let false_positives = reports
        .iter()
        .filter(|(title, body)| {
            let report = RawReport {
                component: "product".into(),
                title: title.clone(),
                what_happened: body.clone(),
                ..RawReport::default()
            };
            matches!(admit(&report), Admission::Quarantined { .. })
        })
        .count();
    Ok(Accuracy {
        per_wrapping,
        false_positives,
        real_reports: reports.len(),
    })
}

impl std::fmt::Display for Accuracy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "airlock accuracy")?;
        for (wrapping, hit, total) in &self.per_wrapping {
            writeln!(
                f,
                "  {:<24} {hit:>4}/{total:<4} detected ({:.1} %)",
                wrapping.name(),
                100.0 * *hit as f64 / (*total).max(1) as f64
            )?;
        }
        writeln!(
            f,
            "  detection rate           {:.1} %  (goal ≥ 97 %)",
            self.detection_rate()
        )?;
        writeln!(
            f,
            "  false positives          {}/{} real reports ({:.2} %, goal ≤ 1 %)",
            self.false_positives,
            self.real_reports,
            self.false_positive_rate()
        )
    }
}
