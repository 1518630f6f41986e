//! Open desk pages under load (an outside run found each open `/desk/live` stream scanning
//! the database every second: five of them used more than a core at 15,000 bugs with nothing
//! changing). A waiting page must cost nothing, and a change — made through this server,
//! or through another one on the same PostgreSQL — must still reach every open page.

use super::support::Target;
use crate::common;
use serde_json::json;
use std::time::Duration;

/// Logs each time a stream looks at its page.
const DEBUG_LIVE: &str = "info,sqlx=warn,server::desk::live=debug";

/// Opens `/desk/live` (for bug `bug`, or the dashboard's) at `base` with the session `cookie`.
async fn open(base: &str, cookie: &str, bug: Option<&str>) -> reqwest::Response {
    let path = match bug {
        Some(bug) => format!("{base}/desk/live?bug={bug}"),
        None => format!("{base}/desk/live"),
    };
    let response = reqwest::Client::new()
        .get(path)
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response
}

/// Whether `stream` says `changed` within `within`.
async fn says_changed(stream: &mut reqwest::Response, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    let mut seen = String::new();
    loop {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Ok(Ok(Some(bytes))) => {
                seen.push_str(&String::from_utf8_lossy(&bytes));
                if seen.contains("event: changed") {
                    return true;
                }
            }
            _ => return false,
        }
    }
}

/// How many times the server's streams have looked at their pages.
fn looks(server: &common::RunningServer) -> usize {
    server
        .logs
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.contains("a live stream looks at its page"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_live_pages_cost_nothing_and_a_change_wakes_every_one() {
    let target = Target::start(&[("RUST_LOG", DEBUG_LIVE)]);
    let owner = target.owner().await;
    let filed = target
        .file(
            "Coupon SAVE300 makes the total negative",
            "It asks for −₹100.",
        )
        .await;
    let bug = filed["bug_id"].as_str().unwrap().to_owned();
    let mut streams = Vec::new();
    for i in 0..12 {
        let page = (i % 2 == 1).then_some(bug.as_str());
        streams.push(open(target.base(), &owner.cookie, page).await);
    }
    // Settled: every page has looked twice at most (when it opened, and at the first
    // comparison after that).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let settled = looks(&target.desk.server);
    assert!(
        settled <= 2 * streams.len(),
        "{settled} looks while settling"
    );
    // Waiting: nothing changes, nothing is read.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        looks(&target.desk.server),
        settled,
        "twelve pages that wait for four seconds read the database"
    );
    // Another reporter's words for the same bug join it: every page, the dashboard's and the
    // bug's, hears.
    let joined = target
        .file(
            "Coupon SAVE300 makes the total negative",
            "The cart total went below zero, −₹100, with SAVE300.",
        )
        .await;
    assert_eq!(joined["bug_id"].as_str(), Some(bug.as_str()), "{joined}");
    for (i, stream) in streams.iter_mut().enumerate() {
        assert!(
            says_changed(stream, Duration::from_secs(10)).await,
            "page {i} was not told"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_a_change_through_another_server_wakes_a_page_that_never_polled() {
    let url = match store::testing::fresh_postgres().await {
        store::DatabaseUrl::Postgres { url } => url,
        other => panic!("expected a postgres url, got {other:?}"),
    };
    let first = Target::start(&[("DATABASE_URL", url.as_str()), ("RUST_LOG", DEBUG_LIVE)]);
    let second = common::start_server_with(&url, &[("R2R_SESSION_KEY", &"s".repeat(64))]);
    let owner = first.owner().await;
    let mut dashboard = open(first.base(), &owner.cookie, None).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let opened = looks(&first.desk.server);
    assert_eq!(opened, 1, "the page looked once, when it opened");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        looks(&first.desk.server),
        opened,
        "on PostgreSQL a waiting page reads nothing"
    );
    assert!(first
        .desk
        .server
        .logs
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.contains("woken by the database's change notices")));
    let (bug, _) = common::file_report(
        &second.base,
        json!({
            "component": "shoplite", "title": "Checkout shows a negative total",
            "what_happened": "With SAVE300 on a ₹200 cart the total is −₹100.",
            "expected": "₹0", "steps": "Add a ₹200 item, apply SAVE300",
        }),
    )
    .await;
    assert!(!bug.is_empty());
    assert!(
        says_changed(&mut dashboard, Duration::from_secs(10)).await,
        "a report filed through the other server did not reach the page"
    );
}
