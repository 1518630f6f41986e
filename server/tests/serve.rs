//! The real server on a random port, against SQLite and against PostgreSQL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use app::dto::Health;
use common::{r2r, start_server};

fn git_head() -> Option<String> {
    let output = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(common::repo_root())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

async fn the_desk_serves_health_and_pages(database_url: &str, storage: &str) {
    let server = start_server(database_url);
    let client = reqwest::Client::new();

    let response = client
        .get(format!("{}/api/health", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let health: Health = response.json().await.unwrap();
    assert_eq!(health.service, "reporter-to-release");
    assert_eq!(health.storage, storage);
    assert_eq!(health.status, "ok");
    assert_eq!(health.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(health.schema_version, Some(store::SCHEMA_VERSION));
    if let Some(head) = git_head() {
        assert_eq!(
            health.commit, head,
            "health names the commit the binary was built from"
        );
        assert_eq!(health.commit.len(), 40);
    }

    let home = client.get(&server.base).send().await.unwrap();
    assert_eq!(home.status(), 200);
    assert_eq!(home.headers()["referrer-policy"], "no-referrer");
    let html = home.text().await.unwrap();
    assert!(
        html.contains("From a stranger&#x27;s bug report")
            || html.contains("From a stranger's bug report"),
        "{html}"
    );
    assert!(
        html.contains("/pkg/r2r.js"),
        "the page loads the hydration bundle"
    );

    // Without JavaScript the server computes the ShopLite total from the form's query.
    let shop = client
        .get(format!(
            "{}/shoplite?price=200&qty=1&coupon=SAVE300",
            server.base
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        shop.contains("−₹100.00"),
        "SAVE300 on ₹200 shows −₹100 server-side"
    );
    assert!(shop.contains("Computed on the server"));

    let missing = client
        .get(format!("{}/no-such-page", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn the_desk_serves_from_a_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    // The folder does not exist yet: serve creates it.
    let path = dir.path().join("data/desk.db");
    the_desk_serves_health_and_pages(&format!("sqlite://{}", path.display()), "sqlite").await;
    assert!(path.exists(), "the SQLite file was created");
}

#[tokio::test]
async fn the_desk_serves_from_postgres() {
    let url = match store::testing::fresh_postgres().await {
        store::DatabaseUrl::Postgres { url } => url,
        other => panic!("expected a postgres url, got {other:?}"),
    };
    the_desk_serves_health_and_pages(&url, "postgres").await;
}

#[test]
fn a_malformed_database_url_stops_start_up_naming_the_variable() {
    let scratch = tempfile::tempdir().unwrap();
    let output = r2r(scratch.path())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("DATABASE_URL", "mysql://localhost/desk")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("DATABASE_URL is invalid"), "{stderr}");
    assert!(stderr.contains("postgres://"), "{stderr}");
}

#[test]
fn a_malformed_addr_stops_start_up_naming_the_flag() {
    let scratch = tempfile::tempdir().unwrap();
    let output = r2r(scratch.path())
        .args(["serve", "--addr", "localhost"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--addr is invalid"), "{stderr}");
}

#[test]
fn migrate_applies_the_schema_and_exits() {
    let scratch = tempfile::tempdir().unwrap();
    let db = scratch.path().join("m.db");
    for _ in 0..2 {
        let output = r2r(scratch.path())
            .arg("migrate")
            .env("DATABASE_URL", format!("sqlite://{}", db.display()))
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        assert!(String::from_utf8_lossy(&output.stdout).contains(&format!(
            "sqlite schema at version {}",
            store::SCHEMA_VERSION
        )));
    }
}

#[test]
fn every_subcommand_has_help() {
    let scratch = tempfile::tempdir().unwrap();
    for args in [
        &["--help"][..],
        &["setup", "--help"],
        &["serve", "--help"],
        &["migrate", "--help"],
        &["demo", "--help"],
        &["demo", "reproduce", "--help"],
        &["ledger", "verify", "--help"],
        &["bench", "ledger", "--help"],
        &["airlock", "scan", "--help"],
        &["airlock", "eval", "--help"],
        &["cluster", "eval", "--help"],
    ] {
        let output = r2r(scratch.path()).args(args).output().unwrap();
        assert!(output.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("Usage: r2r"),
            "{args:?}"
        );
    }
}

#[test]
fn an_unknown_flag_is_refused_with_usage() {
    let scratch = tempfile::tempdir().unwrap();
    let output = r2r(scratch.path())
        .args(["serve", "--port", "3"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--port"));
}

/// `r2r setup` prepares the demo target: ShopLite in a local forge beside the env file, the
/// scripted model; a second run keeps both.
#[test]
fn setup_puts_shoplite_in_a_local_forge_and_picks_the_scripted_model() {
    let scratch = tempfile::tempdir().unwrap();
    let env_file = scratch.path().join(".env.local");
    let output = common::r2r_with_env_file(&env_file)
        .arg("setup")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&env_file).unwrap();
    assert!(text.contains("R2R_MODEL_PROVIDER='scripted'"), "{text}");
    assert!(text.contains("R2R_DEPLOY='on'"), "{text}");
    let bare = scratch
        .path()
        .canonicalize()
        .unwrap()
        .join("data/shoplite.git");
    assert!(
        text.contains(&format!("R2R_LOCAL_FORGE='{}'", bare.display())),
        "{text}"
    );
    let listing = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(&bare)
        .args(["ls-tree", "-r", "--name-only", "main"])
        .output()
        .unwrap();
    let files = String::from_utf8_lossy(&listing.stdout);
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        [
            ".gitattributes",
            "COMMIT",
            "Cargo.lock",
            "Cargo.toml",
            "src/lib.rs",
            "src/main.rs"
        ],
        "ShopLite and its service, without the test the crew has to write"
    );
    let again = common::r2r_with_env_file(&env_file)
        .arg("setup")
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(std::fs::read_to_string(&env_file).unwrap(), text);
}
