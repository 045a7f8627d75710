//! End to end over real HTTP on loopback: a dependency that fails every request, or is fully
//! down (its port refuses connections), and comes back. The circuit breaker opens during the
//! outage, rejects calls without sending them, and closes after its probes succeed; a retry
//! budget keeps the number of requests near one per call.
//!
//! Real time, with a breaker `reset_timeout` of 300 ms; every loop is bounded.

use std::time::Duration;

use reattempt::testing::http::{Fault, Service};
use reattempt::{BreakerState, CircuitBreaker, RetryBudget};
use reattempt_support::payments::{PayError, Payments, policy};

const RESET: Duration = Duration::from_millis(300);

fn client_with_breaker(service: &Service) -> Payments {
    let mut client = Payments::new(
        service,
        policy(
            3,
            Duration::from_millis(10),
            Duration::from_millis(500),
            Duration::from_secs(1),
        ),
    );
    client.breaker = CircuitBreaker::builder()
        .failure_threshold(5)
        .reset_timeout(RESET)
        .half_open_probes(2)
        .build()
        .unwrap();
    client
}

#[tokio::test]
async fn the_breaker_opens_during_an_outage_and_closes_after_recovery() {
    let service = Service::start().await;
    let client = client_with_breaker(&service);
    client.charge("warm-up", 100).await.expect("healthy");

    // Outage: every request is a 503. Five failed attempts (two calls) open the breaker.
    service.set_default(Fault::Unavailable);
    let mut calls = 0;
    while client.breaker.state() != BreakerState::Open {
        calls += 1;
        assert!(calls <= 5, "the breaker did not open");
        let result = client.charge(&format!("outage-{calls}"), 100).await;
        assert!(
            matches!(result, Err(PayError::Unavailable | PayError::CircuitOpen)),
            "{result:?}"
        );
    }
    assert_eq!(
        calls, 2,
        "3 failed attempts, then 2 more and the third is rejected"
    );

    // Open: calls are rejected at once and nothing reaches the service.
    let requests = service.request_count();
    for i in 0..10 {
        let result = client.charge(&format!("rejected-{i}"), 100).await;
        assert!(matches!(result, Err(PayError::CircuitOpen)), "{result:?}");
    }
    assert_eq!(service.request_count(), requests, "nothing was sent");
    assert_eq!(service.total_effects(), 1);

    // The service recovers; after reset_timeout two probes succeed and close the breaker.
    service.set_default(Fault::Pass);
    tokio::time::sleep(RESET + Duration::from_millis(50)).await;
    client.charge("probe-1", 100).await.expect("first probe");
    assert_eq!(client.breaker.state(), BreakerState::HalfOpen);
    client.charge("probe-2", 100).await.expect("second probe");
    assert_eq!(client.breaker.state(), BreakerState::Closed);
    assert_eq!(service.request_count(), requests + 2);
}

#[tokio::test]
async fn a_failed_probe_reopens_the_breaker() {
    let service = Service::start().await;
    let client = client_with_breaker(&service);
    service.set_default(Fault::Unavailable);
    for i in 0..2 {
        let _ = client.charge(&format!("outage-{i}"), 100).await;
    }
    assert_eq!(client.breaker.state(), BreakerState::Open);
    tokio::time::sleep(RESET + Duration::from_millis(50)).await;
    let requests = service.request_count();
    let result = client.charge("probe", 100).await;
    // The probe meets a 503 and reopens the breaker, which then rejects the call's retry: the
    // call ends with the probe's real error, not the rejection.
    assert!(matches!(result, Err(PayError::Unavailable)), "{result:?}");
    assert_eq!(service.request_count(), requests + 1, "one probe went out");
    assert_eq!(client.breaker.state(), BreakerState::Open);
}

#[tokio::test]
async fn a_dependency_fully_down_then_back() {
    let mut service = Service::start().await;
    let client = client_with_breaker(&service);
    client.charge("before", 100).await.expect("healthy");

    // Fully down: the port refuses connections.
    service.stop().await;
    let mut calls = 0;
    while client.breaker.state() != BreakerState::Open {
        calls += 1;
        assert!(calls <= 5, "the breaker did not open");
        let result = client.charge(&format!("down-{calls}"), 100).await;
        assert!(
            matches!(result, Err(PayError::Network(_) | PayError::CircuitOpen)),
            "{result:?}"
        );
    }
    let result = client.charge("while-open", 100).await;
    assert!(matches!(result, Err(PayError::CircuitOpen)), "{result:?}");

    // Back on the same port; the breaker lets probes through after reset_timeout.
    service.restart().await;
    tokio::time::sleep(RESET + Duration::from_millis(50)).await;
    for i in 0..2 {
        client
            .charge(&format!("after-{i}"), 100)
            .await
            .expect("the service is back");
    }
    assert_eq!(client.breaker.state(), BreakerState::Closed);
    assert_eq!(service.effects("before"), 1);
    assert_eq!(service.effects("after-0"), 1);
    assert_eq!(service.effects("after-1"), 1);
    assert_eq!(service.effects("while-open"), 0);
}

#[tokio::test]
async fn a_retry_budget_keeps_an_outage_near_one_request_per_call() {
    let service = Service::start().await;
    let mut client = Payments::new(
        &service,
        policy(
            3,
            Duration::from_millis(1),
            Duration::from_millis(500),
            Duration::from_secs(1),
        ),
    );
    // 20 tokens at 5 per retry: four retries, then none until calls succeed again.
    client.budget = RetryBudget::builder()
        .max_tokens(20)
        .retry_cost(5)
        .build()
        .unwrap();
    service.set_default(Fault::Unavailable);
    for i in 0..40 {
        let result = client.charge(&format!("order-{i}"), 100).await;
        assert!(matches!(result, Err(PayError::Unavailable)), "{result:?}");
    }
    // Without the budget: 40 × 3 = 120 requests.
    assert_eq!(service.request_count(), 40 + 4);
    assert_eq!(client.budget.available(), 0);

    // Recovery: successes refill the bucket, one token each.
    service.set_default(Fault::Pass);
    for i in 0..5 {
        client
            .charge(&format!("ok-{i}"), 100)
            .await
            .expect("charged");
    }
    assert_eq!(client.budget.available(), 5);
}
