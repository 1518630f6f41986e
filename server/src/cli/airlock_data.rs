//! Reading the shared data sets the airlock is measured and trained on: every attack set under
//! `injection/` (BIPIA, PurpleLlama, JailbreakBench PAIR, the Arth templates, pallms) and every
//! benign one (GitBugs Hadoop and SeaMonkey, RustSec advisories, NotInject), in a fixed order.

use std::path::Path;

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

fn bad(path: &Path, reason: impl std::fmt::Display) -> EvalError {
    EvalError::Data {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

fn json(path: &Path) -> Result<serde_json::Value, EvalError> {
    serde_json::from_str(&read(path)?).map_err(|e| bad(path, e))
}

/// Whether a source's texts are attacks or benign.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Attack texts: each is wrapped in a bug report every way and should be quarantined.
    Attack,
    /// Benign texts: each is filed as a report and should be admitted.
    Benign,
}

/// One data set.
#[derive(Clone, Debug)]
pub struct Source {
    /// Its name in the tables.
    pub name: &'static str,
    /// Attack or benign.
    pub kind: Kind,
    /// Attack payloads, or benign reports as (title, body).
    pub texts: Vec<(String, String)>,
}

/// What a jailbreak template's placeholder for the attacker's request becomes: nothing, so that
/// only the template itself can give it away (a fixed request put in every template would
/// teach the classifier that request's words — a ShopLite question once taught it that
/// "coupon" and "SAVE300" are hostile).
const PLACEHOLDER_REQUEST: &str = "";

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
            serde_json::from_str(&read(&path)?).map_err(|e| bad(&path, e))?;
        out.extend(parsed.into_values().flatten());
    }
    Ok(out)
}

fn strings_at(value: &serde_json::Value, field: &str) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|row| row.get(field).and_then(|v| v.as_str()))
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

fn purplellama(data: &Path, file: &str) -> Result<Vec<String>, EvalError> {
    let path = data.join("injection/purplellama-cyberseceval").join(file);
    Ok(strings_at(&json(&path)?, "user_input"))
}

fn jailbreakbench(data: &Path) -> Result<Vec<String>, EvalError> {
    let mut out = Vec::new();
    for file in [
        "gpt-3.5-turbo-1106.json",
        "gpt-4-0125-preview.json",
        "llama-2-7b-chat-hf.json",
        "vicuna-13b-v1.5.json",
    ] {
        let path = data.join("injection/jailbreakbench-pair").join(file);
        let value = json(&path)?;
        out.extend(strings_at(&value["jailbreaks"], "prompt"));
    }
    Ok(out)
}

/// The `value: |` block of a template file (the only YAML these files need read).
fn yaml_block_value(text: &str) -> Option<String> {
    let mut lines = text.lines();
    lines.find(|l| l.starts_with("value:"))?;
    let mut out = Vec::new();
    let mut indent: Option<usize> = None;
    for line in lines {
        if line.trim().is_empty() {
            out.push("");
            continue;
        }
        let this = line.len() - line.trim_start().len();
        let block = *indent.get_or_insert(this);
        if this < block || block == 0 {
            break;
        }
        out.push(&line[block..]);
    }
    let value = out.join("\n").trim().to_owned();
    (!value.is_empty()).then_some(value)
}

fn arth_templates(data: &Path) -> Result<Vec<String>, EvalError> {
    let folder = data.join("injection/arth-jailbreak-templates/templates");
    let files = files_in(&folder, "yaml")?;
    let mut out = Vec::new();
    for file in files {
        let text = read(&file)?;
        let value = yaml_block_value(&text).ok_or_else(|| bad(&file, "no `value: |` block"))?;
        out.push(
            value
                .replace("{{ prompt }}", PLACEHOLDER_REQUEST)
                .replace("{{prompt}}", PLACEHOLDER_REQUEST),
        );
    }
    Ok(out)
}

/// The files with extension `ext` in `folder`, sorted by path text (training reads them in a
/// fixed order, so the same data always gives the same model).
fn files_in(folder: &Path, ext: &str) -> Result<Vec<std::path::PathBuf>, EvalError> {
    let mut files: Vec<_> = std::fs::read_dir(folder)
        .map_err(|e| bad(folder, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    files.sort_by_key(|p| p.to_string_lossy().into_owned());
    Ok(files)
}

/// RustSec advisories (title and text after the TOML block): benign technical text with code.
fn advisories(data: &Path) -> Result<Vec<(String, String)>, EvalError> {
    let root = data.join("advisory-db");
    let crates = root.join("crates");
    let mut files = Vec::new();
    let mut folders: Vec<_> = std::fs::read_dir(&crates)
        .map_err(|e| bad(&crates, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    folders.push(root.join("rust"));
    for folder in folders {
        files.extend(files_in(&folder, "md")?);
    }
    files.sort_by_key(|p| p.to_string_lossy().into_owned());
    let mut out = Vec::new();
    for file in files {
        let text = read(&file)?;
        let body = text.splitn(3, "```").nth(2).unwrap_or(&text).trim();
        let (title, rest) = body.split_once('\n').unwrap_or((body, ""));
        out.push((
            title.trim_start_matches(['#', ' ']).trim().to_owned(),
            rest.trim().to_owned(),
        ));
    }
    Ok(out)
}

fn pallms(data: &Path) -> Result<Vec<String>, EvalError> {
    let mut out = Vec::new();
    for file in ["promptinjection.txt", "insecureoutput.txt"] {
        let path = data.join("injection/pallms").join(file);
        out.extend(
            read(&path)?
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.replace("{NEW_INSTRUCTION}", PLACEHOLDER_REQUEST)),
        );
    }
    Ok(out)
}

fn notinject(data: &Path) -> Result<Vec<(String, String)>, EvalError> {
    let mut out = Vec::new();
    for file in [
        "NotInject_one.json",
        "NotInject_two.json",
        "NotInject_three.json",
    ] {
        let path = data.join("injection/notinject").join(file);
        out.extend(
            strings_at(&json(&path)?, "prompt")
                .into_iter()
                .map(|p| ("Question about the shop".to_owned(), p)),
        );
    }
    Ok(out)
}

fn gitbugs(data: &Path, file: &str) -> Result<Vec<(String, String)>, EvalError> {
    let path = data.join("bugreports/gitbugs").join(file);
    let text = read(&path)?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader.headers().map_err(|e| bad(&path, e))?.clone();
    let column = |name: &str| headers.iter().position(|h| h.trim() == name);
    let (Some(summary), Some(description)) = (column("Summary"), column("Description")) else {
        return Err(bad(&path, "no Summary/Description columns"));
    };
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| bad(&path, e))?;
        out.push((
            record.get(summary).unwrap_or_default().to_owned(),
            record.get(description).unwrap_or_default().to_owned(),
        ));
    }
    Ok(out)
}

/// Real bug reports (summary and description) from the GitBugs Hadoop and SeaMonkey files.
pub fn real_reports(data: &Path) -> Result<Vec<(String, String)>, EvalError> {
    let mut out = gitbugs(data, "hadoop_bugs.csv")?;
    out.extend(gitbugs(data, "SeaMonkey_bugs.csv")?);
    Ok(out)
}

/// Every data set under the shared data folder, attacks first.
pub fn sources(data: &Path) -> Result<Vec<Source>, EvalError> {
    let attack = |name, texts: Vec<String>| Source {
        name,
        kind: Kind::Attack,
        texts: texts.into_iter().map(|t| (t, String::new())).collect(),
    };
    let benign = |name, texts| Source {
        name,
        kind: Kind::Benign,
        texts,
    };
    Ok(vec![
        attack("bipia", payloads(data)?),
        attack(
            "purplellama (en)",
            purplellama(data, "prompt_injection.json")?,
        ),
        attack(
            "purplellama (17 languages)",
            purplellama(
                data,
                "prompt_injection_multilingual_machine_translated.json",
            )?,
        ),
        attack("jailbreakbench pair", jailbreakbench(data)?),
        attack("arth templates", arth_templates(data)?),
        attack("pallms", pallms(data)?),
        benign("hadoop reports", gitbugs(data, "hadoop_bugs.csv")?),
        benign("seamonkey reports", gitbugs(data, "SeaMonkey_bugs.csv")?),
        benign("rustsec advisories", advisories(data)?),
        benign("notinject (benign)", notinject(data)?),
    ])
}
