//! What the desk's hydrated pages receive from their server functions: the read-only parts of
//! a page as HTML, rendered on the server by the desk's own Leptos components (which escape
//! every text and attribute value), and the few values the browser acts on. The browser
//! inserts that HTML and hydrates only what is interactive — tabs, dialogs, the actions'
//! forms (by their `data-` attributes, see [`crate::pages`]'s delegates) — so its
//! WebAssembly carries no code to draw a diff, a ledger or a table of bugs.
//!
//! On the server each screen also carries its data, flattened into the JSON answer (what
//! scripts and tests read); the browser's build has no such field and skips it.

#[cfg(feature = "ssr")]
use crate::dto::{BugDesk, Confirm, CrewDesk, Dashboard, OwnersDesk};
use serde::{Deserialize, Serialize};

/// Markup the server rendered from a Leptos view. Made only on the server, from a view;
/// the browser receives it from the desk's own server functions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ServerHtml(String);

impl ServerHtml {
    /// `view` rendered to HTML.
    #[cfg(feature = "ssr")]
    pub fn render(view: impl leptos::tachys::view::RenderHtml) -> Self {
        ServerHtml(view.to_html())
    }

    /// The markup.
    pub fn into_inner(self) -> String {
        self.0
    }

    /// The markup.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `/desk`: the dashboard.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashboardScreen {
    /// The data the page was drawn from (the server's answer only).
    #[cfg(feature = "ssr")]
    #[serde(flatten)]
    pub data: Dashboard,
    /// The navigation and the bugs by state.
    pub counts_html: ServerHtml,
    /// The search form (drawn apart: a redraw must not clear what a person types in it).
    pub filters_html: ServerHtml,
    /// How many bugs match, the list and its pages.
    pub list_html: ServerHtml,
    /// The quarantine queue.
    pub quarantine_html: ServerHtml,
}

/// `/desk/bugs/{id}`: the bug view.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BugScreen {
    /// The data the page was drawn from (the server's answer only).
    #[cfg(feature = "ssr")]
    #[serde(flatten)]
    pub data: BugDesk,
    /// The document's title.
    pub page_title: String,
    /// The desk's navigation.
    pub nav_html: ServerHtml,
    /// The head: title, state, what it waits for, what the crew is doing.
    pub head_html: ServerHtml,
    /// The owner's actions (a part of its own: a redraw of the head leaves the buttons be).
    pub actions_html: ServerHtml,
    /// The proof at a glance.
    pub summary_html: ServerHtml,
    /// Each section's content, in the tabs' order (reports, evidence, review, release,
    /// ledger).
    pub sections_html: Vec<ServerHtml>,
}

/// `/desk/crew`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrewScreen {
    /// The data the page was drawn from (the server's answer only).
    #[cfg(feature = "ssr")]
    #[serde(flatten)]
    pub data: CrewDesk,
    /// The whole page.
    pub html: ServerHtml,
    /// The session's CSRF token, for the project form (drawn by the page itself, not in
    /// `html`). Not named `csrf`: the flattened data has a field of that name, and a key
    /// twice in one answer is refused when the browser reads it.
    #[serde(default)]
    pub form_csrf: String,
}

/// `/desk/owners`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnersScreen {
    /// The data the page was drawn from (the server's answer only).
    #[cfg(feature = "ssr")]
    #[serde(flatten)]
    pub data: OwnersDesk,
    /// The whole page.
    pub html: ServerHtml,
}

/// The question before an owner's action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionScreen {
    /// The data the question was drawn from (the server's answer only).
    #[cfg(feature = "ssr")]
    #[serde(flatten)]
    pub data: Confirm,
    /// The question's heading.
    pub heading: String,
    /// The desk's navigation (for the question as a page).
    pub nav_html: ServerHtml,
    /// What will happen and the form: the field a person fills in, "Yes, …" and Cancel.
    pub form_html: ServerHtml,
}
