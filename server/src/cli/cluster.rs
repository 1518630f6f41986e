//! `r2r cluster eval`: precision and recall of the join rule on the shared duplicate pairs.
//!
//! Universe: the reports that appear in a labelled duplicate pair of a project (the labels
//! say nothing about other reports). Every pair of those reports is a prediction: joined when
//! the rule's similarity reaches the threshold. A joined pair is correct when it is labelled.

use super::SharedData;
use crate::cli::airlock::EvalError;
use clap::Subcommand;
use domain::cluster::{overlap, similarity, title_terms, JOIN_THRESHOLD};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::ExitCode;

/// Figures for one project and one measure.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinFigures {
    /// Project.
    pub project: &'static str,
    /// Measure name.
    pub measure: &'static str,
    /// Reports in the universe.
    pub reports: usize,
    /// Labelled duplicate pairs among them.
    pub labelled: usize,
    /// Joined pairs that are labelled.
    pub true_joins: usize,
    /// Joined pairs that are not.
    pub false_joins: usize,
}

impl JoinFigures {
    /// Share of joins that are right.
    pub fn precision(&self) -> f64 {
        self.true_joins as f64 / (self.true_joins + self.false_joins).max(1) as f64
    }
    /// Share of labelled pairs the rule joins.
    pub fn recall(&self) -> f64 {
        self.true_joins as f64 / self.labelled.max(1) as f64
    }
}

/// Titles by report id.
type Titles = BTreeMap<String, String>;
/// Labelled duplicate pairs, smaller id first.
type Pairs = BTreeSet<(String, String)>;

fn load(data: &Path, texts: &str, pairs: &str) -> Result<(Titles, Pairs), EvalError> {
    let error = |path: &Path, reason: String| EvalError::Data {
        path: path.display().to_string(),
        reason,
    };
    let text_path = data.join("bugreports/gitbugs").join(texts);
    let mut titles = BTreeMap::new();
    let mut reader =
        csv::Reader::from_path(&text_path).map_err(|e| error(&text_path, e.to_string()))?;
    let headers = reader
        .headers()
        .map_err(|e| error(&text_path, e.to_string()))?
        .clone();
    let column = |name: &str| headers.iter().position(|h| h.trim() == name);
    let (Some(summary), Some(id)) = (column("Summary"), column("Issue id")) else {
        return Err(error(&text_path, "no Summary/Issue id columns".into()));
    };
    for record in reader.records() {
        let record = record.map_err(|e| error(&text_path, e.to_string()))?;
        titles.insert(
            record.get(id).unwrap_or_default().trim().to_owned(),
            record.get(summary).unwrap_or_default().to_owned(),
        );
    }
    let pair_path = data.join("bugreports/gitbugs").join(pairs);
    let mut labelled = BTreeSet::new();
    let mut reader =
        csv::Reader::from_path(&pair_path).map_err(|e| error(&pair_path, e.to_string()))?;
    for record in reader.records() {
        let record = record.map_err(|e| error(&pair_path, e.to_string()))?;
        let issue = record.get(0).unwrap_or_default().trim().to_owned();
        // The duplicate column may hold a quoted, comma-separated list.
        for duplicate in record
            .get(1)
            .unwrap_or_default()
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
        {
            if duplicate != issue && titles.contains_key(&issue) && titles.contains_key(duplicate) {
                let (a, b) = if issue.as_str() < duplicate {
                    (issue.clone(), duplicate.to_owned())
                } else {
                    (duplicate.to_owned(), issue.clone())
                };
                labelled.insert((a, b));
            }
        }
    }
    Ok((titles, labelled))
}

/// Evaluates the rule (Dice) and the overlap coefficient at the same threshold.
pub fn evaluate(data: &Path) -> Result<Vec<JoinFigures>, EvalError> {
    let mut out = Vec::new();
    for (project, texts, pairs) in [
        ("Hadoop", "hadoop_bugs.csv", "hadoop_bugs-combined.csv"),
        (
            "SeaMonkey",
            "SeaMonkey_bugs.csv",
            "SeaMonkey_bugs-combined.csv",
        ),
    ] {
        let (titles, labelled) = load(data, texts, pairs)?;
        let universe: BTreeSet<&String> = labelled.iter().flat_map(|(a, b)| [a, b]).collect();
        let terms: Vec<(&String, BTreeSet<String>)> = universe
            .iter()
            .map(|id| (*id, title_terms(&titles[*id])))
            .collect();
        type Measure = fn(&BTreeSet<String>, &BTreeSet<String>) -> f64;
        for (measure, function) in [
            ("Dice (the rule)", similarity as Measure),
            ("overlap coefficient", overlap as Measure),
        ] {
            let mut figures = JoinFigures {
                project,
                measure,
                reports: universe.len(),
                labelled: labelled.len(),
                true_joins: 0,
                false_joins: 0,
            };
            for (i, (a, terms_a)) in terms.iter().enumerate() {
                for (b, terms_b) in &terms[i + 1..] {
                    if function(terms_a, terms_b) >= JOIN_THRESHOLD {
                        let key = if a < b {
                            ((*a).clone(), (*b).clone())
                        } else {
                            ((*b).clone(), (*a).clone())
                        };
                        if labelled.contains(&key) {
                            figures.true_joins += 1;
                        } else {
                            figures.false_joins += 1;
                        }
                    }
                }
            }
            out.push(figures);
        }
    }
    Ok(out)
}

/// Prints the figures.
pub fn render(figures: &[JoinFigures]) -> String {
    let mut text = format!(
        "clustering: join when titles' term similarity ≥ {JOIN_THRESHOLD} (same component)\n"
    );
    for f in figures {
        text.push_str(&format!(
            "  {:<10} {:<20} precision {:>5.1} %  recall {:>5.1} %  ({} labelled pairs among {} reports; {} right joins, {} wrong)\n",
            f.project,
            f.measure,
            100.0 * f.precision(),
            100.0 * f.recall(),
            f.labelled,
            f.reports,
            f.true_joins,
            f.false_joins
        ));
    }
    text
}

#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Precision and recall of the join rule on the shared duplicate pairs.
    Eval {
        #[command(flatten)]
        data: SharedData,
    },
}

/// Runs `r2r cluster …`.
pub async fn command(_env_file: &Path, command: ClusterCommand) -> anyhow::Result<ExitCode> {
    match command {
        ClusterCommand::Eval { data } => {
            let figures = crate::cli::cluster::evaluate(&data.data)?;
            print!("{}", crate::cli::cluster::render(&figures));
            Ok(ExitCode::SUCCESS)
        }
    }
}
