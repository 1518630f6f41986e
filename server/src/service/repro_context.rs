//! `GET /api/v1/bugs/{id}/reproduction/context` (reproducer): what a reproduction may be
//! written from — the project's map, the files closest to the reports' words within a budget
//! ([`crew::context`]), the package the tests import, and the round's attempts. The crew
//! reads the project only through this; the dossiers' redacted fields are the query.

use super::snapshot::Snapshot;
use crate::error::Kind;
use crate::web::{AppState, Refused};
use api_types::ReproductionContext;
use crew::context::{self, SourceFile};

/// Largest file read for ranking (characters); larger ones are left out of the context.
const MAX_READ_CHARS: usize = 200_000;
/// Manifests read for the package's name, besides source files.
const MANIFESTS: &[&str] = &["Cargo.toml", "package.json", "pyproject.toml", "go.mod"];

/// The reports' words the files are ranked for: every clean dossier's component, title,
/// what happened, expected and steps (the airlock's redacted text, never the raw report).
pub(crate) async fn query_of(state: &AppState, id: &str) -> Result<String, Refused> {
    let reports = state.store.reports_of_bug(id).await?;
    let mut query = String::new();
    for dossier in reports.iter().filter_map(|r| r.dossier.as_ref()) {
        for field in [
            &dossier.component,
            &dossier.title,
            &dossier.what_happened,
            &dossier.expected,
        ] {
            query.push_str(field);
            query.push('\n');
        }
        for step in &dossier.steps {
            query.push_str(step);
            query.push('\n');
        }
    }
    Ok(query)
}

/// The project's files under `root` that ranking reads: source files and manifests outside
/// build and vendored folders, regular files that pass through no symlink, within the read
/// bounds. `paths` are the tree's regular files (from the forge, or `git ls-files`).
pub fn read_files(root: &std::path::Path, paths: Vec<String>) -> Vec<SourceFile> {
    paths
        .into_iter()
        .filter(|p| {
            crew::schema::safe_path(p)
                && !context::ignored(p)
                && (context::language(p).is_some() || MANIFESTS.contains(&p.as_str()))
        })
        .take(context::MAX_FILES_READ)
        .filter(|p| !super::snapshot::through_symlink(root, p))
        .filter_map(|path| {
            let text = std::fs::read_to_string(root.join(&path)).ok()?;
            (text.chars().count() <= MAX_READ_CHARS).then_some(SourceFile { path, text })
        })
        .collect()
}

/// Builds the context for bug `id`, which must be `reproducing`.
pub async fn context(state: &AppState, id: &str) -> Result<ReproductionContext, Refused> {
    let bug = crate::service::commands::load(state, id).await?;
    if bug.state != domain::BugState::Reproducing {
        return Err(Refused::new(
            Kind::Conflict,
            "not_reproducing",
            format!(
                "bug {id} is {}: a reproduction context is given only while the crew reproduces it",
                bug.state.as_str()
            ),
        ));
    }
    let query = query_of(state, id).await?;
    let target = state.target_of(&bug.component).await;
    let forge = super::forge::forge_of(&target)?;
    let head = super::forge::current_head(state, &target).await?;
    let paths = forge
        .regular_files(&head, &[])
        .await
        .map_err(Refused::forge)?;
    let snapshot = Snapshot::new()?;
    snapshot.export(forge, &head).await?;
    let profile = target.profile.as_str();
    // Reading and ranking up to 2,000 files is blocking work: off the async workers.
    let assembled = tokio::task::spawn_blocking(move || {
        let files = read_files(snapshot.root(), paths);
        context::assemble(files, &query, profile)
    })
    .await
    .map_err(|e| Refused::internal(format!("building the reproduction context failed: {e}")))?;
    Ok(ReproductionContext {
        bug: bug.id,
        state: bug.state,
        attempts: bug.reproduction_attempts,
        max_attempts: state.reporter.scope().policy.max_reproduction_attempts,
        base: head.as_str().to_owned(),
        profile: profile.to_owned(),
        package: assembled.package,
        how_to_test: format!(
            "{}\nThe desk accepts a new test only at a path matching one of: {}; and never under {} (where a fix may write).",
            assembled.how_to_test,
            if target.test_paths.is_empty() {
                domain::test_paths::defaults(profile).join(", ")
            } else {
                target.test_paths.join(", ")
            },
            target.fix_allowed_paths.join(", "),
        ),
        map: assembled.map,
        map_omitted: assembled.map_omitted,
        files: assembled.files,
        budget_chars: context::BUDGET_CHARS,
    })
}
