//! reqwest's own error type, end to end: a newcomer's reqwest call retried through a server on
//! loopback that resets connections, hangs and answers 503, with `timeout`, `retry_if =
//! reattempt::transient` and `circuit_breaker` and nothing else written (feature `reqwest`:
//! `reqwest::Error` has a timeout and a rejection conversion and is classified).
//!
//! Real time: tokio's paused clock does not mix with real sockets.

use std::sync::LazyLock;
use std::time::Duration;

use reattempt::testing::http::{Fault, Service};
use reattempt::{CircuitBreaker, retryable};

#[retryable(max_attempts = 5, delay = "10ms", timeout = "300ms", retry_if = reattempt::transient,
            idempotent = true)] // a GET: safe to repeat
async fn price(client: &reqwest::Client, base: &str, sku: &str) -> Result<String, reqwest::Error> {
    client
        .get(format!("{base}/prices/{sku}"))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await
}

static BREAKER: LazyLock<CircuitBreaker> = LazyLock::new(|| {
    CircuitBreaker::builder()
        .failure_threshold(2)
        .reset_timeout(Duration::from_secs(600))
        .build()
        .unwrap()
});

#[retryable(max_attempts = 3, delay = "10ms", timeout = "300ms", retry_if = reattempt::transient,
            idempotent = true, // a GET: safe to repeat
            circuit_breaker = BREAKER)]
async fn guarded_price(
    client: &reqwest::Client,
    base: &str,
    sku: &str,
) -> Result<String, reqwest::Error> {
    client
        .get(format!("{base}/prices/{sku}"))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await
}

#[tokio::test]
async fn a_reset_a_hang_and_a_503_are_retried_until_the_answer() {
    let service = Service::start().await;
    let client = reqwest::Client::new();
    service.script_for("tea", [Fault::Reset, Fault::Hang, Fault::Unavailable]);
    let body = price(&client, &service.url(), "tea")
        .await
        .expect("answered");
    assert!(!body.is_empty());
    assert_eq!(service.seen_for("tea").len(), 4, "reset, hang, 503, answer");
}

#[tokio::test]
async fn hangs_to_the_end_give_the_timeout_as_a_reqwest_error() {
    let service = Service::start().await;
    let client = reqwest::Client::new();
    service.script_for("cake", [Fault::Hang; 5]);
    let err = price(&client, &service.url(), "cake").await.unwrap_err();
    assert_eq!(
        err.status(),
        Some(reqwest::StatusCode::GATEWAY_TIMEOUT),
        "{err}"
    );
    assert_eq!(service.seen_for("cake").len(), 5);
}

#[tokio::test]
async fn a_breaker_opened_by_resets_ends_the_call_with_the_reset() {
    let service = Service::start().await;
    let client = reqwest::Client::new();
    service.script_for("jam", [Fault::Reset, Fault::Reset, Fault::Reset]);
    // Two resets open the breaker (threshold 2); the retry it turns away ends the call with the
    // last reset, a real reqwest error, not the rejection.
    let err = guarded_price(&client, &service.url(), "jam")
        .await
        .unwrap_err();
    assert!(
        err.status().is_none(),
        "a connection error, not a status: {err}"
    );
    assert_eq!(service.seen_for("jam").len(), 2);
    // The next call is turned away at once: the rejection, as a synthetic 503.
    let err = guarded_price(&client, &service.url(), "jam")
        .await
        .unwrap_err();
    assert_eq!(
        err.status(),
        Some(reqwest::StatusCode::SERVICE_UNAVAILABLE),
        "{err}"
    );
    assert_eq!(service.seen_for("jam").len(), 2, "nothing sent");
}
