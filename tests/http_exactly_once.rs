//! End to end over real HTTP on loopback: whatever the network does to a charge — a hang, a lost
//! response, a reset, a 503, a 429 — the card is charged exactly once per logical call, because
//! every attempt of a call carries the same `Idempotency-Key` and the service replays it.

use std::collections::HashSet;
use std::sync::Arc;

use reattempt::testing::http::{Fault, Outcome, RetryAfter, Service};
use reattempt_support::payments::{Keys, Payments, quick};

/// The fault scripts a single charge is run through (each followed by a healthy service).
fn scripts() -> Vec<(&'static str, Vec<Fault>)> {
    vec![
        ("no fault", vec![]),
        ("lost response", vec![Fault::LoseResponse]),
        ("commit then reset", vec![Fault::CommitThenReset]),
        ("hang", vec![Fault::Hang]),
        ("reset", vec![Fault::Reset]),
        ("503", vec![Fault::Unavailable]),
        ("429", vec![Fault::RateLimited(RetryAfter::Seconds(0))]),
        (
            "lost response, then 503, then reset",
            vec![Fault::LoseResponse, Fault::Unavailable, Fault::Reset],
        ),
        (
            "503, hang, commit then reset, lost response",
            vec![
                Fault::Unavailable,
                Fault::Hang,
                Fault::CommitThenReset,
                Fault::LoseResponse,
            ],
        ),
        (
            "reset, 429, lost response",
            vec![
                Fault::Reset,
                Fault::RateLimited(RetryAfter::Seconds(0)),
                Fault::LoseResponse,
            ],
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_script_charges_exactly_once() {
    let service = Service::start().await;
    let client = Arc::new(Payments::new(&service, quick()));
    for (i, (_, faults)) in scripts().into_iter().enumerate() {
        service.script_for(&format!("order-{i}"), faults);
    }
    // The scripts run side by side: each order has a script of its own.
    let tasks: Vec<_> = scripts()
        .into_iter()
        .enumerate()
        .map(|(i, (name, faults))| {
            let client = Arc::clone(&client);
            let order = format!("order-{i}");
            let amount = 100 + i64::try_from(i).unwrap();
            tokio::spawn(async move {
                let receipt = client.charge(&order, amount).await;
                (name, faults, order, receipt)
            })
        })
        .collect();
    for task in tasks {
        let (name, faults, order, receipt) = task.await.expect("no panic");
        let receipt = receipt.unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(receipt.order_id, order);
        assert_eq!(service.effects(&order), 1, "{name}: charged exactly once");

        let seen = service.seen_for(&order);
        assert_eq!(
            seen.len(),
            faults.len() + 1,
            "{name}: one request per fault, then one"
        );
        let first_key = seen[0].key.clone().expect("a key");
        assert!(
            seen.iter().all(|s| s.key.as_ref() == Some(&first_key)),
            "{name}: the same key on every attempt"
        );
        let committed = faults
            .iter()
            .any(|f| matches!(f, Fault::LoseResponse | Fault::CommitThenReset));
        let last = &seen.last().expect("a request").outcome;
        if committed {
            assert_eq!(
                *last,
                Outcome::Replayed,
                "{name}: the last attempt got the replay"
            );
        } else {
            assert_eq!(*last, Outcome::Applied, "{name}");
        }
    }
    assert_eq!(
        service.total_effects(),
        u32::try_from(scripts().len()).unwrap()
    );
}

#[tokio::test]
async fn calls_send_different_keys_and_each_keeps_its_own() {
    let service = Service::start().await;
    let client = Payments::new(&service, quick());
    let mut keys = HashSet::new();
    for i in 0..10 {
        let order = format!("order-{i}");
        service.script_for(&order, [Fault::Unavailable, Fault::CommitThenReset]);
        client.charge(&order, 500).await.expect("charged");
        let seen = service.seen_for(&order);
        assert_eq!(seen.len(), 3);
        let call_keys: HashSet<_> = seen.iter().map(|s| s.key.clone().expect("a key")).collect();
        assert_eq!(
            call_keys.len(),
            1,
            "one key for the three attempts of {order}"
        );
        keys.extend(call_keys);
        assert_eq!(service.effects(&order), 1);
    }
    assert_eq!(keys.len(), 10, "ten calls, ten keys");
}

#[tokio::test]
async fn without_a_stable_key_a_lost_response_is_charged_twice() {
    // The control experiment: the same fault, a client that changes its key on every attempt.
    // That the service then charges twice shows the other tests can see a double charge.
    let service = Service::start().await;
    let mut client = Payments::new(&service, quick());
    client.keys = Keys::PerAttempt;
    service.script_for("order-naive", [Fault::LoseResponse]);
    client.charge("order-naive", 700).await.expect("charged");
    assert_eq!(service.effects("order-naive"), 2, "charged twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_clients_are_each_charged_once() {
    let service = Service::start().await;
    let patterns = [
        vec![],
        vec![Fault::LoseResponse],
        vec![Fault::Unavailable, Fault::CommitThenReset],
        vec![Fault::Reset, Fault::LoseResponse],
        vec![Fault::Hang],
        vec![
            Fault::RateLimited(RetryAfter::Seconds(0)),
            Fault::Unavailable,
        ],
    ];
    for i in 0..100 {
        service.script_for(&format!("order-{i}"), patterns[i % patterns.len()].clone());
    }
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            // A client of its own each: its own connection pool, its own connections.
            let client = Payments::new(&service, quick());
            tokio::spawn(async move { client.charge(&format!("order-{i}"), 1000).await })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        let receipt = task.await.expect("no panic");
        assert!(receipt.is_ok(), "order-{i}: {receipt:?}");
        assert_eq!(service.effects(&format!("order-{i}")), 1, "order-{i}");
    }
    assert_eq!(service.total_effects(), 100);
    let seen = service.seen();
    let keys: HashSet<_> = seen.iter().filter_map(|s| s.key.clone()).collect();
    assert_eq!(keys.len(), 100, "one key per client call");
    let expected: usize = (0..100)
        .map(|i| patterns[i % patterns.len()].len() + 1)
        .sum();
    assert_eq!(
        seen.len(),
        expected,
        "one request per scripted fault, then one"
    );
}
