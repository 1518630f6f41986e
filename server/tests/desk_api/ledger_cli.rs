//! `r2r ledger verify` and `r2r bench ledger` as an operator runs them.

use crate::common;

use domain::workflow::{decide, Actor, Bug, Command, Evidence, Policy};
use domain::Role;
use sqlx::Connection;

const NOW: i64 = 1_700_000_000_000;

#[tokio::test]
async fn ledger_verify_passes_an_intact_chain_and_names_the_first_edited_event() {
    let scratch = tempfile::tempdir().unwrap();
    let path = scratch.path().join("ledger.db");
    let url = store::DatabaseUrl::Sqlite {
        path: path.display().to_string(),
    };
    let store = store::Store::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    store
        .create_bug(&Bug::open("bug-1", "shoplite", "report-1"), &[], &[], NOW)
        .await
        .unwrap();
    for n in 0..3 {
        store
            .apply("bug-1", NOW, |bug| {
                decide(
                    bug,
                    &Command::AddNote {
                        note: format!("n{n}"),
                    },
                    &Actor::Role {
                        role: Role::Reviewer,
                    },
                    &Evidence::default(),
                    &Policy::default(),
                    NOW,
                )
            })
            .await
            .unwrap();
    }
    store.close().await;

    let verify = || {
        common::r2r(scratch.path())
            .args(["ledger", "verify"])
            .env("DATABASE_URL", format!("sqlite://{}", path.display()))
            .output()
            .unwrap()
    };
    let intact = verify();
    assert_eq!(intact.status.code(), Some(0), "{intact:?}");
    assert!(String::from_utf8_lossy(&intact.stdout).contains("ledger intact: 1 bugs, 3 events"));

    let mut raw = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query("DROP TRIGGER audit_events_no_update")
        .execute(&mut raw)
        .await
        .unwrap();
    sqlx::query("UPDATE audit_events SET body = REPLACE(body, '\"at\":1700000000000', '\"at\":1700000000001') WHERE seq = 2")
        .execute(&mut raw)
        .await
        .unwrap();
    raw.close().await.unwrap();

    let broken = verify();
    assert_eq!(broken.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&broken.stdout);
    assert!(
        stdout.contains("LEDGER BROKEN: bug bug-1: event 2"),
        "{stdout}"
    );
}

#[test]
fn the_ledger_benchmark_prints_both_designs_and_their_ratio() {
    let scratch = tempfile::tempdir().unwrap();
    let output = common::r2r(scratch.path())
        .args(["bench", "ledger", "--writers", "2", "--commands", "3"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("per-bug rows (this design)"), "{stdout}");
    assert!(
        stdout.contains("one JSON document (seed design)"),
        "{stdout}"
    );
    assert!(stdout.contains("ratio"), "{stdout}");
    assert!(stdout.contains("6 commands in"), "{stdout}");
}

#[test]
fn the_benchmark_refuses_bad_numbers() {
    let scratch = tempfile::tempdir().unwrap();
    let output = common::r2r(scratch.path())
        .args(["bench", "ledger", "--writers", "0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--writers"));
}
