//! The desk's bug list, filtered, sorted and cut into pages by the database: a page costs
//! the same at 20 bugs and at 15,000 (only the page's bugs are read whole).

use crate::{Pool, Store, StoreError};
use domain::workflow::{Bug, Millis};

/// How the list is sorted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListingSort {
    /// What waits for a person (needs a person, in review, approved) first, then oldest.
    #[default]
    Waiting,
    /// Newest first.
    Newest,
    /// Oldest first.
    Oldest,
    /// By state name.
    State,
}

/// Which bugs, and which page of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListingQuery {
    /// Only this state.
    pub state: Option<String>,
    /// Only this component.
    pub component: Option<String>,
    /// Only this review tier (`Docs`, `Source`, `Sensitive`, as the engine names them).
    pub tier: Option<String>,
    /// Only bugs opened at or before this time.
    pub opened_before: Option<Millis>,
    /// Only bugs whose id or first title contains this (matched case-insensitively for
    /// ASCII letters).
    pub text: Option<String>,
    /// The order.
    pub sort: ListingSort,
    /// Bugs to skip.
    pub offset: u32,
    /// Bugs on the page.
    pub limit: u32,
}

/// One bug of a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedBug {
    /// The engine's document.
    pub bug: Bug,
    /// When it was opened.
    pub opened_at: Millis,
}

/// A page of the list, and what the whole desk holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// The page.
    pub bugs: Vec<ListedBug>,
    /// Bugs matching the query (all pages).
    pub matching: u64,
    /// Bugs in all.
    pub total: u64,
    /// Bugs per state (states with none are left out).
    pub counts: Vec<(String, u64)>,
    /// Every component a bug has.
    pub components: Vec<String>,
}

/// The `WHERE` clause shared by the page and its count, for one backend's SQL dialect.
fn filter_sql(postgres: bool) -> String {
    // Search reads every report of the bug, all of its redacted dossier: title, what
    // happened, what was expected and the steps (never the raw text: there is none).
    let (tier, contains_id, text_contains) = if postgres {
        (
            "(b.document::jsonb #>> '{pull_request,tier}')",
            "strpos(lower(b.id), $5) > 0",
            "strpos(lower(concat_ws(' ', r.dossier::jsonb ->> 'title', \
             r.dossier::jsonb ->> 'what_happened', r.dossier::jsonb ->> 'expected', \
             r.dossier::jsonb ->> 'steps')), $5) > 0",
        )
    } else {
        (
            "json_extract(b.document, '$.pull_request.tier')",
            "instr(lower(b.id), $5) > 0",
            "instr(lower(coalesce(json_extract(r.dossier, '$.title'), '') || ' ' || \
             coalesce(json_extract(r.dossier, '$.what_happened'), '') || ' ' || \
             coalesce(json_extract(r.dossier, '$.expected'), '') || ' ' || \
             coalesce(json_extract(r.dossier, '$.steps'), '')), $5) > 0",
        )
    };
    format!(
        "WHERE ($1 = '' OR b.state = $1) AND ($2 = '' OR b.component = $2) \
         AND ($3 = '' OR {tier} = $3) AND ($4 = 0 OR b.created_at <= $4) \
         AND ($5 = '' OR {contains_id} OR EXISTS (SELECT 1 FROM reports r \
              WHERE r.bug_id = b.id AND r.dossier IS NOT NULL AND {text_contains}))"
    )
}

fn order_sql(sort: ListingSort) -> &'static str {
    match sort {
        ListingSort::Waiting => {
            "ORDER BY CASE WHEN b.state IN ('needs_human', 'in_review', 'approved') THEN 0 ELSE 1 END, \
             b.created_at, b.id"
        }
        ListingSort::Newest => "ORDER BY b.created_at DESC, b.id DESC",
        ListingSort::Oldest => "ORDER BY b.created_at, b.id",
        ListingSort::State => "ORDER BY b.state, b.created_at, b.id",
    }
}

impl Store {
    /// One page of the bug list for `query`.
    pub async fn bug_listing(&self, query: &ListingQuery) -> Result<Listing, StoreError> {
        let postgres = self.backend() == crate::Backend::Postgres;
        let filter = filter_sql(postgres);
        let page_sql = format!(
            "SELECT b.id, b.created_at FROM bugs b {filter} {} LIMIT $6 OFFSET $7",
            order_sql(query.sort)
        );
        let count_sql = format!("SELECT COUNT(*) FROM bugs b {filter}");
        let text = query
            .text
            .as_deref()
            .map(|t| t.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let state = query.state.clone().unwrap_or_default();
        let component = query.component.clone().unwrap_or_default();
        let tier = query.tier.clone().unwrap_or_default();
        let before = query.opened_before.unwrap_or(0);
        macro_rules! listing_on {
            ($pool:expr) => {{
                let page: Vec<(String, i64)> = sqlx::query_as(&page_sql)
                    .bind(&state)
                    .bind(&component)
                    .bind(&tier)
                    .bind(before)
                    .bind(&text)
                    .bind(i64::from(query.limit))
                    .bind(i64::from(query.offset))
                    .fetch_all($pool)
                    .await?;
                let matching: i64 = sqlx::query_scalar(&count_sql)
                    .bind(&state)
                    .bind(&component)
                    .bind(&tier)
                    .bind(before)
                    .bind(&text)
                    .fetch_one($pool)
                    .await?;
                let counts: Vec<(String, i64)> =
                    sqlx::query_as("SELECT state, COUNT(*) FROM bugs GROUP BY state")
                        .fetch_all($pool)
                        .await?;
                let components: Vec<String> =
                    sqlx::query_scalar("SELECT DISTINCT component FROM bugs ORDER BY component")
                        .fetch_all($pool)
                        .await?;
                (page, matching, counts, components)
            }};
        }
        let (page, matching, counts, components) = match &self.pool {
            Pool::Sqlite(pool) => listing_on!(pool),
            Pool::Postgres(pool) => listing_on!(pool),
        };
        let mut bugs = Vec::with_capacity(page.len());
        for (id, created_at) in page {
            if let Some(stored) = self.load_bug(&id).await? {
                bugs.push(ListedBug {
                    bug: stored.bug,
                    opened_at: created_at,
                });
            }
        }
        let to_u64 = |n: i64| u64::try_from(n).unwrap_or_default();
        Ok(Listing {
            bugs,
            matching: to_u64(matching),
            total: counts.iter().map(|(_, n)| to_u64(*n)).sum(),
            counts: counts.into_iter().map(|(s, n)| (s, to_u64(n))).collect(),
            components,
        })
    }
}
