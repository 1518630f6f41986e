//! Shared rate-limit buckets on both backends: a burst, then refusals with the wait until a
//! token refills; parallel takes (as from several servers) never spend more than the bucket
//! holds; keys are independent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use store::rate::Refill;

const THREE_A_MINUTE: Refill = Refill {
    capacity: 3.0,
    per_ms: 3.0 / 60_000.0,
};

async fn a_burst_then_the_wait_until_a_token_refills(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    for _ in 0..3 {
        assert_eq!(
            store
                .rate_take("intake:a", THREE_A_MINUTE, 1_000)
                .await
                .unwrap(),
            Ok(())
        );
    }
    assert_eq!(
        store
            .rate_take("intake:a", THREE_A_MINUTE, 1_000)
            .await
            .unwrap(),
        Err(20_000)
    );
    assert_eq!(
        store
            .rate_take("intake:b", THREE_A_MINUTE, 1_000)
            .await
            .unwrap(),
        Ok(())
    );
    // Twenty seconds later one token is back, and only one.
    assert_eq!(
        store
            .rate_take("intake:a", THREE_A_MINUTE, 21_000)
            .await
            .unwrap(),
        Ok(())
    );
    assert!(store
        .rate_take("intake:a", THREE_A_MINUTE, 21_000)
        .await
        .unwrap()
        .is_err());
}

async fn parallel_takes_never_spend_more_than_the_bucket_holds(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    let refill = Refill {
        capacity: 5.0,
        per_ms: 1e-9,
    };
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..200 {
        let store = store.clone();
        tasks.spawn(async move { store.rate_take("login:x", refill, 5_000).await });
    }
    let mut taken = 0;
    while let Some(result) = tasks.join_next().await {
        match result.unwrap() {
            Ok(Ok(())) => taken += 1,
            Ok(Err(_)) => {}
            Err(other) => panic!("{backend}: a take failed: {other}"),
        }
    }
    // Takers queue on the bucket (PostgreSQL: its row; SQLite: the write lock): none is
    // turned away as contended (a burst from one address once answered 503), and the bucket
    // is spent exactly.
    assert_eq!(
        taken, 5,
        "{backend}: {taken} tokens taken from a bucket of 5"
    );
}

on_both!(
    a_burst_then_the_wait_until_a_token_refills,
    parallel_takes_never_spend_more_than_the_bucket_holds
);
