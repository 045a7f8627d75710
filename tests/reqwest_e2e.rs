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

/// A charge through `#[retryable(retry_if = reattempt::transient)]`, not said to be idempotent:
/// a POST that carries no key.
#[retryable(max_attempts = 3, delay = "10ms", timeout = "300ms", retry_if = reattempt::transient)]
async fn charge(
    client: &reqwest::Client,
    base: &str,
    order: &str,
) -> Result<String, reqwest::Error> {
    charge_once(client, base, order).await
}

/// The same charge, said to be safe to repeat (the server deduplicates by other means).
#[retryable(max_attempts = 3, delay = "10ms", timeout = "300ms", retry_if = reattempt::transient,
            idempotent = true)]
async fn charge_said_idempotent(
    client: &reqwest::Client,
    base: &str,
    order: &str,
) -> Result<String, reqwest::Error> {
    charge_once(client, base, order).await
}

/// One `POST /charges` of `order`, its body the answer.
async fn charge_once(
    client: &reqwest::Client,
    base: &str,
    order: &str,
) -> Result<String, reqwest::Error> {
    client
        .post(format!("{base}/charges"))
        .body(format!(r#"{{"order_id":"{order}","amount_cents":1250}}"#))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await
}

/// The server applies the charge, then resets the connection: the caller cannot know. Counted
/// on the server: not repeated unless the call says it may be (then applied twice, as said).
#[tokio::test]
async fn a_reset_after_the_charge_landed_is_not_repeated_unless_the_call_says_so() {
    let service = Service::start().await;
    let client = reqwest::Client::new();
    service.script_for("o-1", [Fault::CommitThenReset]);
    let err = charge(&client, &service.url(), "o-1").await.unwrap_err();
    assert_eq!(
        reattempt::Transient::effect(&err),
        reattempt::Effect::Unknown,
        "{err}"
    );
    assert_eq!(
        service.seen_for("o-1").len(),
        1,
        "one request: the reset was not repeated"
    );
    assert_eq!(service.effects("o-1"), 1, "charged once");

    service.script_for("o-2", [Fault::CommitThenReset]);
    charge_said_idempotent(&client, &service.url(), "o-2")
        .await
        .expect("repeated, and answered");
    assert_eq!(service.seen_for("o-2").len(), 2);
    assert_eq!(
        service.effects("o-2"),
        2,
        "charged twice, as the call said it may be"
    );

    // A 503 may come after the server (or the upstream behind a gateway) acted.
    service.script_for("o-3", [Fault::Unavailable]);
    let _ = charge(&client, &service.url(), "o-3").await;
    assert_eq!(
        service.seen_for("o-3").len(),
        1,
        "a 503 may come after the server acted: not repeated on a call that is not idempotent"
    );
}
