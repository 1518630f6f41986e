//! Leaderships and instances on both backends: one holder at a time however many ask at
//! once, renewed only by its holder, taken over once it runs out, handed on at a clean stop;
//! instances beat and the silent ones are forgotten.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use store::leaders::Instance;

async fn one_holder_at_a_time_until_it_runs_out(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    let name = "deployer:shoplite";
    // Eight instances ask at the same moment: one leads, and every one is told which.
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8 {
        let store = store.clone();
        tasks.spawn(async move {
            let me = format!("i{i}");
            let leader = store
                .hold_leadership(
                    name,
                    &me,
                    &format!("http://127.0.0.1:{}", 4000 + i),
                    1_000,
                    11_000,
                )
                .await
                .unwrap();
            (me, leader)
        });
    }
    let mut answers = Vec::new();
    while let Some(done) = tasks.join_next().await {
        answers.push(done.unwrap());
    }
    let leader = answers[0].1.clone();
    assert!(
        answers.iter().all(|(_, l)| *l == leader),
        "{backend}: {answers:?}"
    );
    assert_eq!(answers.iter().filter(|(me, l)| *me == l.holder).count(), 1);
    // Another instance cannot take it while it holds; its holder renews it.
    let other = if leader.holder == "i0" { "i1" } else { "i0" };
    let denied = store
        .hold_leadership(name, other, "x", 5_000, 15_000)
        .await
        .unwrap();
    assert_eq!(denied.holder, leader.holder);
    assert_eq!(denied.until, 11_000);
    let renewed = store
        .hold_leadership(name, &leader.holder, &leader.address, 9_000, 19_000)
        .await
        .unwrap();
    assert_eq!(
        (renewed.holder.as_str(), renewed.until),
        (leader.holder.as_str(), 19_000)
    );
    assert_eq!(
        store.leader_of(name, 19_000).await.unwrap(),
        Some(renewed.clone())
    );
    // Its holder stopped beating: once the time ran out, the next to ask takes it.
    assert_eq!(store.leader_of(name, 19_001).await.unwrap(), None);
    let taken = store
        .hold_leadership(name, other, "http://b", 19_001, 29_001)
        .await
        .unwrap();
    assert_eq!(
        (taken.holder.as_str(), taken.address.as_str()),
        (other, "http://b")
    );
    // A clean stop hands it on at once; the former holder's give-up changes nothing now.
    store
        .give_up_leadership(name, &leader.holder)
        .await
        .unwrap();
    assert_eq!(
        store.leader_of(name, 20_000).await.unwrap().unwrap().holder,
        other
    );
    store.give_up_leadership(name, other).await.unwrap();
    assert_eq!(store.leader_of(name, 20_000).await.unwrap(), None);
    // Leaderships are by name: another service's is another matter.
    let elsewhere = store
        .hold_leadership("deployer:tally", "i7", "c", 20_000, 30_000)
        .await
        .unwrap();
    assert_eq!(elsewhere.holder, "i7");
}

async fn instances_beat_and_the_silent_are_forgotten(backend: &str) {
    let (store, _url, _dir) = support::fresh(backend).await;
    let instance = |id: &str, started_at: i64| Instance {
        id: id.into(),
        host: "desk-1".into(),
        pid: 42,
        address: format!("http://127.0.0.1:3000/{id}"),
        started_at,
        beat_at: 0,
    };
    store
        .beat_instance(&instance("a", 1_000), 1_000, 0)
        .await
        .unwrap();
    store
        .beat_instance(&instance("b", 2_000), 2_000, 0)
        .await
        .unwrap();
    store
        .beat_instance(&instance("a", 1_000), 5_000, 0)
        .await
        .unwrap();
    let live = store.live_instances(3_000).await.unwrap();
    assert_eq!(live.len(), 1, "{backend}: {live:?}");
    assert_eq!((live[0].id.as_str(), live[0].beat_at), ("a", 5_000));
    assert_eq!(store.live_instances(0).await.unwrap().len(), 2);
    store
        .beat_instance(&instance("a", 1_000), 60_000, 30_000)
        .await
        .unwrap();
    let all = store.live_instances(0).await.unwrap();
    assert_eq!(all.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), ["a"]);
}

on_both!(
    one_holder_at_a_time_until_it_runs_out,
    instances_beat_and_the_silent_are_forgotten
);
