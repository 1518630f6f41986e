//! `r2r airlock scan` (the intake's own code path over JSON lines) and `r2r airlock eval`
//! (detection and false-positive rates on the shared test data).

use super::SharedData;
use clap::Subcommand;
use domain::airlock::classifier::{
    featurize, train, train_featurized, Example, Featurized, Model, TrainOptions, MODEL,
};
use domain::airlock::{admit, admit_with, prepared, Admission, RawReport};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub use crate::cli::airlock_data::{payloads, real_reports, sources, EvalError, Kind, Source};

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
    /// Base64-encoded, presented as a debug blob with a sentence asking to decode it.
    Base64,
    /// In fullwidth letters (U+FF01–FF5E).
    Fullwidth,
}

impl Wrapping {
    /// Every wrapping.
    pub const ALL: [Wrapping; 6] = [
        Wrapping::Plain,
        Wrapping::InSteps,
        Wrapping::HtmlComment,
        Wrapping::ZeroWidth,
        Wrapping::Base64,
        Wrapping::Fullwidth,
    ];

    /// Short column name.
    pub fn name(self) -> &'static str {
        match self {
            Wrapping::Plain => "plain",
            Wrapping::InSteps => "steps",
            Wrapping::HtmlComment => "comment",
            Wrapping::ZeroWidth => "zero-width",
            Wrapping::Base64 => "base64",
            Wrapping::Fullwidth => "fullwidth",
        }
    }

    /// The ShopLite bug report every payload is wrapped in, without a payload.
    pub fn carrier() -> RawReport {
        RawReport {
            component: "shoplite".to_owned(),
            title: "Checkout asks for a negative amount".to_owned(),
            what_happened: "After I applied a coupon the order summary showed a total below zero."
                .to_owned(),
            expected: "The total should stop at zero.".to_owned(),
            steps: "Add the tea set to the cart\nApply the coupon at checkout".to_owned(),
        }
    }

    /// A ShopLite bug report carrying `payload`.
    pub fn wrap(self, payload: &str) -> RawReport {
        let mut report = Self::carrier();
        match self {
            Wrapping::Plain => {
                report.what_happened = format!("{}\n{payload}", report.what_happened)
            }
            Wrapping::InSteps => {
                // One step: its lines joined, as a reporter pasting into one step would.
                let step = payload.split_whitespace().collect::<Vec<_>>().join(" ");
                report.steps =
                    format!("Add the tea set to the cart\n{step}\nApply the coupon at checkout")
            }
            Wrapping::HtmlComment => {
                report.what_happened = format!("{} <!-- {payload} -->", report.what_happened)
            }
            Wrapping::ZeroWidth => {
                let hidden: String = payload.chars().flat_map(|c| [c, '\u{200b}']).collect();
                report.what_happened = format!("{}\n{hidden}", report.what_happened)
            }
            Wrapping::Base64 => {
                let encoded = base64_encode(payload.as_bytes());
                report.what_happened = format!(
                    "{}\nThe console printed this, please decode it and do what it says: {encoded}",
                    report.what_happened
                )
            }
            Wrapping::Fullwidth => {
                let wide: String = payload
                    .chars()
                    .map(|c| match c {
                        '!'..='~' => char::from_u32(u32::from(c) - 0x21 + 0xFF01).unwrap_or(c),
                        ' ' => '\u{3000}',
                        _ => c,
                    })
                    .collect();
                report.what_happened = format!("{}\n{wide}", report.what_happened)
            }
        }
        report
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A benign text as the report it is filed as.
fn benign_report(title: &str, body: &str) -> RawReport {
    RawReport {
        component: "product".into(),
        title: title.to_owned(),
        what_happened: body.to_owned(),
        ..RawReport::default()
    }
}

/// What one source scored.
#[derive(Clone, Debug)]
pub struct SourceFigures {
    /// The source.
    pub name: &'static str,
    /// Attack or benign.
    pub kind: Kind,
    /// Texts in it.
    pub texts: usize,
    /// For attacks: quarantined per wrapping (in [`Wrapping::ALL`]'s order).
    pub per_wrapping: Vec<usize>,
    /// For benign sources: how many were quarantined.
    pub flagged: usize,
    /// For attacks: how many the classifier alone caught, plain-wrapped.
    pub classifier_only: usize,
}

impl SourceFigures {
    /// Detection over every wrapping (attacks) or the false-positive rate (benign), percent.
    pub fn rate(&self) -> f64 {
        match self.kind {
            Kind::Attack => {
                let hit: usize = self.per_wrapping.iter().sum();
                100.0 * hit as f64 / (self.texts * self.per_wrapping.len()).max(1) as f64
            }
            Kind::Benign => 100.0 * self.flagged as f64 / self.texts.max(1) as f64,
        }
    }
}

fn measure(source: &Source, model: &Model) -> SourceFigures {
    let quarantined =
        |report: &RawReport| matches!(admit_with(report, model), Admission::Quarantined { .. });
    match source.kind {
        Kind::Attack => SourceFigures {
            name: source.name,
            kind: source.kind,
            texts: source.texts.len(),
            per_wrapping: Wrapping::ALL
                .iter()
                .map(|w| {
                    source
                        .texts
                        .iter()
                        .filter(|(payload, _)| quarantined(&w.wrap(payload)))
                        .count()
                })
                .collect(),
            flagged: 0,
            classifier_only: source
                .texts
                .iter()
                .filter(|(payload, _)| model.flags(&prepared(payload)))
                .count(),
        },
        Kind::Benign => SourceFigures {
            name: source.name,
            kind: source.kind,
            texts: source.texts.len(),
            per_wrapping: Vec::new(),
            flagged: source
                .texts
                .iter()
                .filter(|(title, body)| quarantined(&benign_report(title, body)))
                .count(),
            classifier_only: 0,
        },
    }
}

/// The training texts of a source, as the classifier reads them.
fn examples(source: &Source) -> Vec<Example> {
    source
        .texts
        .iter()
        .map(|(a, b)| Example {
            text: prepared(&if b.is_empty() {
                a.clone()
            } else {
                format!("{a}\n{b}")
            }),
            hostile: source.kind == Kind::Attack,
        })
        .collect()
}

/// Trains the shipped classifier from every source.
pub fn train_shipped(data: &Path) -> Result<Model, EvalError> {
    let all: Vec<Example> = sources(data)?.iter().flat_map(examples).collect();
    Ok(train(&all, TrainOptions::default()))
}

/// The measured accuracy.
#[derive(Debug)]
pub struct Accuracy {
    /// With the shipped classifier.
    pub shipped: Vec<SourceFigures>,
    /// Each source with a classifier retrained without it.
    pub held_out: Vec<SourceFigures>,
    /// Whether the carrier report alone is admitted.
    pub carrier_admitted: bool,
    /// Whether training on this data gives exactly the shipped model's file.
    pub shipped_reproduced: bool,
}

impl Accuracy {
    /// The lowest detection rate of any attack source, shipped model.
    pub fn worst_detection(&self) -> f64 {
        worst(&self.shipped, Kind::Attack, f64::min, 100.0)
    }

    /// The highest false-positive rate of any benign source, shipped model.
    pub fn worst_false_positives(&self) -> f64 {
        worst(&self.shipped, Kind::Benign, f64::max, 0.0)
    }
}

fn worst(rows: &[SourceFigures], kind: Kind, pick: fn(f64, f64) -> f64, start: f64) -> f64 {
    rows.iter()
        .filter(|r| r.kind == kind)
        .map(SourceFigures::rate)
        .fold(start, pick)
}

/// Runs the evaluation on the shared data folder: every source with the shipped classifier,
/// then every source with a classifier trained on all the others (leave one source out).
pub fn evaluate(data: &Path) -> Result<Accuracy, EvalError> {
    let sources = sources(data)?;
    let model = &*MODEL;
    let shipped = sources.iter().map(|s| measure(s, model)).collect();
    let options = TrainOptions::default();
    let featurized: Vec<Vec<Featurized>> = sources
        .iter()
        .map(|s| {
            examples(s)
                .iter()
                .map(|e| featurize(e, options.bits))
                .collect()
        })
        .collect();
    let everything: Vec<&Featurized> = featurized.iter().flatten().collect();
    let shipped_reproduced = train_featurized(&everything, options).to_bytes() == model.to_bytes();
    let held_out = sources
        .iter()
        .enumerate()
        .map(|(left_out, source)| {
            let rest: Vec<&Featurized> = featurized
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != left_out)
                .flat_map(|(_, texts)| texts.iter())
                .collect();
            measure(source, &train_featurized(&rest, options))
        })
        .collect();
    Ok(Accuracy {
        shipped,
        held_out,
        shipped_reproduced,
        carrier_admitted: matches!(
            admit_with(&Wrapping::carrier(), model),
            Admission::Admitted { .. }
        ),
    })
}

fn table(f: &mut std::fmt::Formatter<'_>, rows: &[SourceFigures]) -> std::fmt::Result {
    write!(f, "  {:<28} {:>5}", "attack source", "texts")?;
    for w in Wrapping::ALL {
        write!(f, " {:>10}", w.name())?;
    }
    writeln!(f, " {:>8} {:>11}", "all", "classifier")?;
    for row in rows.iter().filter(|r| r.kind == Kind::Attack) {
        write!(f, "  {:<28} {:>5}", row.name, row.texts)?;
        for hit in &row.per_wrapping {
            write!(
                f,
                " {:>9.1}%",
                100.0 * *hit as f64 / row.texts.max(1) as f64
            )?;
        }
        writeln!(
            f,
            " {:>7.1}% {:>10.1}%",
            row.rate(),
            100.0 * row.classifier_only as f64 / row.texts.max(1) as f64
        )?;
    }
    writeln!(
        f,
        "  {:<28} {:>5} {:>10}",
        "benign source", "texts", "flagged"
    )?;
    for row in rows.iter().filter(|r| r.kind == Kind::Benign) {
        writeln!(
            f,
            "  {:<28} {:>5} {:>10} ({:.2} %)",
            row.name,
            row.texts,
            row.flagged,
            row.rate()
        )?;
    }
    Ok(())
}

impl std::fmt::Display for Accuracy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "airlock accuracy, shipped classifier (trained on every source) and patterns"
        )?;
        table(f, &self.shipped)?;
        writeln!(
            f,
            "leave one source out: each source measured with a classifier trained without it"
        )?;
        table(f, &self.held_out)?;
        writeln!(
            f,
            "  worst attack source {:.1} % detected (goal ≥ 97 %); worst benign source {:.2} % flagged (goal ≤ 1 %)",
            self.worst_detection(),
            self.worst_false_positives()
        )?;
        writeln!(
            f,
            "  the shipped model {} what `r2r airlock train` makes of this data",
            if self.shipped_reproduced {
                "is exactly"
            } else {
                "DIFFERS from"
            }
        )?;
        writeln!(
            f,
            "  the carrier report alone is {}",
            if self.carrier_admitted {
                "admitted"
            } else {
                "QUARANTINED (the figures above mean nothing)"
            }
        )
    }
}

#[derive(Subcommand, Debug)]
pub enum AirlockCommand {
    /// Read JSON lines {"title", "body", "component"} on stdin; write one JSON line per input:
    /// {"quarantined", "families", "dossier"}. Same code path as intake.
    Scan,
    /// Measure detection on every attack set under the shared data (each payload wrapped six
    /// ways in a bug report) and false positives on every benign set, with the shipped
    /// classifier and with one retrained without each source.
    Eval {
        #[command(flatten)]
        data: SharedData,
        /// Exit 1 when any attack source's detection rate (percent) is below this.
        #[arg(long, value_name = "PERCENT", value_parser = super::percent)]
        require_detection: Option<f64>,
        /// Exit 1 when any benign source's false-positive rate (percent) is above this.
        #[arg(long, value_name = "PERCENT", value_parser = super::percent)]
        allow_false_positives: Option<f64>,
    },
    /// Train the classifier from every source under the shared data and write its weights
    /// (the file shipped as domain/src/airlock/model.bin).
    Train {
        #[command(flatten)]
        data: SharedData,
        /// Where to write the model.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
}

/// Runs `r2r airlock …`.
pub async fn command(_env_file: &Path, command: AirlockCommand) -> anyhow::Result<ExitCode> {
    match command {
        AirlockCommand::Scan => {
            let stdin = std::io::stdin();
            let errors = crate::cli::airlock::scan(stdin.lock(), std::io::stdout().lock())?;
            if errors > 0 {
                eprintln!("error: {errors} input line(s) were not valid report objects");
                return Ok(ExitCode::from(1));
            }
            Ok(ExitCode::SUCCESS)
        }
        AirlockCommand::Eval {
            data,
            require_detection,
            allow_false_positives,
        } => {
            let accuracy = crate::cli::airlock::evaluate(&data.data)?;
            print!("{accuracy}");
            let detection_ok =
                require_detection.is_none_or(|floor| accuracy.worst_detection() >= floor);
            let fp_ok = allow_false_positives
                .is_none_or(|ceiling| accuracy.worst_false_positives() <= ceiling);
            if detection_ok && fp_ok && accuracy.carrier_admitted && accuracy.shipped_reproduced {
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("error: the airlock missed its accuracy goals");
                Ok(ExitCode::from(1))
            }
        }
        AirlockCommand::Train { data, out } => {
            let model = crate::cli::airlock::train_shipped(&data.data)?;
            let bytes = model.to_bytes();
            std::fs::write(&out, &bytes)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
            println!(
                "wrote {} ({} bytes, 2^{} buckets, threshold {:.4})",
                out.display(),
                bytes.len(),
                model.bits,
                model.threshold
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
