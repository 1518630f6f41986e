//! The spend guard's book on both backends: parallel reservations never overshoot the
//! budget, hourly limits hold per client and overall, unanswered calls stay at worst case,
//! a call settles once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use domain::spend::{Budget, SpendRefusal};
use store::spend::{CallEnd, NewCall, Settlement};

async fn parallel_reservations_never_overshoot(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    let budget = Budget {
        per_call: 30_000,
        total: 300_000,
        per_bug: u64::MAX,
        calls_per_hour: 1_000,
        client_calls_per_hour: 1_000,
        unconfirmed_percent: 100,
    };
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..24 {
        let store = store.clone();
        tasks.spawn(async move {
            let id = format!("call-{i}");
            let call = NewCall {
                id: &id,
                client: "reproducer",
                provider: "openai-compatible",
                model: "m",
                worst_case: 30_000,
                bug: "bug-1",
                unconfirmed: false,
            };
            store
                .reserve_model_call(&call, &budget, 1_000)
                .await
                .unwrap()
        });
    }
    let mut admitted = 0;
    let mut refused = 0;
    while let Some(result) = tasks.join_next().await {
        match result.unwrap() {
            Ok(()) => admitted += 1,
            Err(SpendRefusal::OverBudget { .. }) => refused += 1,
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!((admitted, refused), (10, 14), "{backend}");
    let summary = store.spend_summary(1_000).await.unwrap();
    assert_eq!(summary.committed, 300_000);
    assert_eq!(summary.open_calls, 10);
}

async fn limits_and_settlement(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    let budget = Budget::default();
    let call = |id: &'static str, client: &'static str| NewCall {
        id,
        client,
        provider: "openai-compatible",
        model: "m",
        worst_case: 30_000,
        bug: "bug-a",
        unconfirmed: false,
    };
    let ids = [
        "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10",
    ];
    for id in &ids[..10] {
        store
            .reserve_model_call(&call(id, "fixer"), &budget, 10_000)
            .await
            .unwrap()
            .unwrap();
    }
    assert_eq!(
        store
            .reserve_model_call(&call(ids[10], "fixer"), &budget, 10_000)
            .await
            .unwrap(),
        Err(SpendRefusal::ClientHourlyLimit { limit: 10 })
    );
    // Another client may still call; an hour later the fixer may again.
    store
        .reserve_model_call(&call("b0", "reviewer"), &budget, 10_000)
        .await
        .unwrap()
        .unwrap();
    store
        .reserve_model_call(&call("a10", "fixer"), &budget, 10_000 + 3_600_001)
        .await
        .unwrap()
        .unwrap();

    // Answered: booked at its cost; timed out or dropped: at worst case; once only; only by
    // the client that reserved it.
    let settle = |id: &'static str, client: &'static str, end: CallEnd| {
        let store = store.clone();
        async move {
            store
                .settle_model_call(id, client, end, 20_000)
                .await
                .unwrap()
        }
    };
    assert_eq!(
        settle("a0", "reviewer", CallEnd::TimedOut).await,
        Settlement::NotYours
    );
    assert_eq!(
        settle("a0", "fixer", CallEnd::Answered(Some(1_500))).await,
        Settlement::Settled
    );
    assert_eq!(
        settle("a1", "fixer", CallEnd::TimedOut).await,
        Settlement::Settled
    );
    assert_eq!(
        settle("a2", "fixer", CallEnd::ConnectionLost).await,
        Settlement::Settled
    );
    assert_eq!(
        settle("a0", "fixer", CallEnd::Answered(Some(1))).await,
        Settlement::NotOpen
    );
    assert_eq!(
        settle("nope", "fixer", CallEnd::TimedOut).await,
        Settlement::NotOpen
    );
    let summary = store.spend_summary(20_000).await.unwrap();
    assert_eq!(summary.calls, 12);
    assert_eq!(summary.settled, 1_500 + 30_000 + 30_000);
    assert_eq!(summary.committed, 1_500 + 11 * 30_000);
    assert_eq!(summary.open_calls, 9);
    // The per-call cap.
    let big = NewCall {
        worst_case: 30_001,
        ..call("c0", "manager")
    };
    assert!(matches!(
        store
            .reserve_model_call(&big, &budget, 20_000)
            .await
            .unwrap(),
        Err(SpendRefusal::OverPerCall { .. })
    ));
}

async fn one_bug_never_overshoots_its_own_budget(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    let budget = Budget {
        per_bug: 90_000,
        calls_per_hour: 1_000,
        client_calls_per_hour: 1_000,
        ..Budget::default()
    };
    let call = |id: &'static str, bug: &'static str, worst_case: u64| NewCall {
        id,
        client: "reproducer",
        provider: "openai-compatible",
        model: "m",
        worst_case,
        bug,
        unconfirmed: false,
    };
    let ids = ["l0", "l1", "l2", "l3", "l4", "l5", "l6", "l7"];
    let mut tasks = tokio::task::JoinSet::new();
    for id in ids {
        let store = store.clone();
        tasks.spawn(async move {
            let outcome = store
                .reserve_model_call(&call(id, "bug-loop", 30_000), &budget, 1_000)
                .await
                .unwrap();
            (id, outcome)
        });
    }
    let mut admitted = Vec::new();
    while let Some(result) = tasks.join_next().await {
        match result.unwrap() {
            (id, Ok(())) => admitted.push(id),
            (_, Err(SpendRefusal::OverBugBudget { limit: 90_000, .. })) => {}
            (_, other) => panic!("{backend}: unexpected {other:?}"),
        }
    }
    assert_eq!(admitted.len(), 3, "{backend}");
    assert_eq!(store.spend_of_bug("bug-loop").await.unwrap(), (90_000, 3));
    // Another bug has its own budget.
    assert_eq!(
        store
            .reserve_model_call(&call("o0", "bug-other", 30_000), &budget, 1_000)
            .await
            .unwrap(),
        Ok(())
    );
    // A call that answered cheaply gives the rest of its reservation back to its bug.
    assert_eq!(
        store
            .settle_model_call(
                admitted[0],
                "reproducer",
                CallEnd::Answered(Some(1_000)),
                2_000
            )
            .await
            .unwrap(),
        Settlement::Settled
    );
    assert_eq!(store.spend_of_bug("bug-loop").await.unwrap(), (61_000, 3));
    assert!(matches!(
        store
            .reserve_model_call(&call("m0", "bug-loop", 29_001), &budget, 3_000)
            .await
            .unwrap(),
        Err(SpendRefusal::OverBugBudget { left: 29_000, .. })
    ));
    assert_eq!(
        store
            .reserve_model_call(&call("m1", "bug-loop", 29_000), &budget, 3_000)
            .await
            .unwrap(),
        Ok(())
    );
    assert_eq!(store.spend_of_bug("nothing").await.unwrap(), (0, 0));
    assert_eq!(
        store.spend_by_bug(5).await.unwrap(),
        [
            ("bug-loop".to_owned(), 90_000, 4),
            ("bug-other".to_owned(), 30_000, 1)
        ]
    );
    assert_eq!(store.spend_by_bug(1).await.unwrap().len(), 1);
}

async fn strangers_take_their_share_and_confirmed_bugs_keep_the_rest(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    // $0.30 in all, half open to unconfirmed bugs; calls at $0.03 worst case.
    let budget = Budget {
        per_call: 30_000,
        total: 300_000,
        per_bug: u64::MAX,
        calls_per_hour: 1_000,
        client_calls_per_hour: 1_000,
        unconfirmed_percent: 50,
    };
    // Twenty unconfirmed bugs (strangers' reports) reserve at once: five fit in the share.
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..20 {
        let store = store.clone();
        tasks.spawn(async move {
            let id = format!("stranger-{i}");
            let bug = format!("bug-s{i}");
            let call = NewCall {
                id: &id,
                client: "manager",
                provider: "openai-compatible",
                model: "m",
                worst_case: 30_000,
                bug: &bug,
                unconfirmed: true,
            };
            store
                .reserve_model_call(&call, &budget, 1_000)
                .await
                .unwrap()
        });
    }
    let mut admitted = 0;
    while let Some(result) = tasks.join_next().await {
        match result.unwrap() {
            Ok(()) => admitted += 1,
            Err(SpendRefusal::OverUnconfirmedShare { share: 150_000, .. }) => {}
            Err(other) => panic!("{backend}: unexpected {other:?}"),
        }
    }
    assert_eq!(admitted, 5, "{backend}");
    // A confirmed bug still finds the other half: five calls, then the total is spent.
    let mut confirmed = 0;
    for i in 0..7 {
        let id = format!("confirmed-{i}");
        let call = NewCall {
            id: &id,
            client: "fixer",
            provider: "openai-compatible",
            model: "m",
            worst_case: 30_000,
            bug: "bug-confirmed",
            unconfirmed: false,
        };
        match store
            .reserve_model_call(&call, &budget, 2_000)
            .await
            .unwrap()
        {
            Ok(()) => confirmed += 1,
            Err(SpendRefusal::OverBudget { .. }) => {}
            Err(other) => panic!("{backend}: unexpected {other:?}"),
        }
    }
    assert_eq!(confirmed, 5, "{backend}");
    assert_eq!(store.spend_summary(3_000).await.unwrap().committed, 300_000);
}

on_both!(
    strangers_take_their_share_and_confirmed_bugs_keep_the_rest,
    parallel_reservations_never_overshoot,
    limits_and_settlement,
    one_bug_never_overshoots_its_own_budget
);
