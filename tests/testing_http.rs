//! `reattempt::testing::http` as a user's test meets it: a `#[retryable]` client against the
//! service's scripted statuses (per route and per subject) and a body that trickles past the
//! attempt's timeout, read back per idempotency key.

use std::time::Duration;

use reattempt::retryable;
use reattempt::testing::http::{Fault, Outcome, Route, Service};

#[derive(Debug)]
enum CallError {
    Status(u16),
    Timeout,
    Network(#[allow(dead_code, reason = "shown by Debug in a failed assertion")] String),
}

impl From<reattempt::Elapsed> for CallError {
    fn from(_: reattempt::Elapsed) -> Self {
        CallError::Timeout
    }
}

struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    #[retryable(max_attempts = 4, delay = "5ms", jitter = "none", timeout = "300ms",
                retry_on = [CallError::Status(500..=599) | CallError::Timeout | CallError::Network(_)])]
    async fn charge(&self, order_id: &str) -> Result<String, CallError> {
        let key = reattempt::context()
            .expect("in an attempt")
            .idempotency_key()
            .to_string();
        let response = self
            .http
            .post(format!("{}/charges", self.base))
            .header("Idempotency-Key", key)
            .json(&serde_json::json!({"order_id": order_id, "amount_cents": 700}))
            .send()
            .await
            .map_err(|e| CallError::Network(e.to_string()))?;
        match response.status().as_u16() {
            201 => response
                .text()
                .await
                .map_err(|e| CallError::Network(e.to_string())),
            status => Err(CallError::Status(status)),
        }
    }
}

fn outcomes_of_the_call(service: &Service) -> Vec<Outcome> {
    let key = service.seen()[0].key.clone().expect("the call's key");
    service
        .seen_with_key(&key)
        .into_iter()
        .map(|s| s.outcome)
        .collect()
}

async fn start() -> (Service, Client) {
    let service = Service::start().await;
    let client = Client {
        http: reqwest::Client::new(),
        base: service.url(),
    };
    (service, client)
}

#[tokio::test]
async fn scripted_statuses_of_a_route_are_retried_and_the_charge_is_made_once() {
    let (service, client) = start().await;
    service.script_route(Route::Charges, [Fault::Status(502), Fault::Status(504)]);
    let receipt = client.charge("o-1").await.expect("the third attempt");
    assert!(receipt.contains("ch_"), "{receipt}");
    assert_eq!(
        outcomes_of_the_call(&service),
        [Outcome::Status(502), Outcome::Status(504), Outcome::Applied]
    );
    assert_eq!(service.effects("o-1"), 1);
}

#[tokio::test]
async fn a_scripted_client_error_of_a_subject_is_not_retried() {
    let (service, client) = start().await;
    service.script_for("o-2", [Fault::Status(409)]);
    let result = client.charge("o-2").await;
    assert!(matches!(result, Err(CallError::Status(409))), "{result:?}");
    assert_eq!(service.request_count(), 1);
    assert_eq!(service.effects("o-2"), 0);
}

#[tokio::test]
async fn a_body_that_trickles_past_the_timeout_is_retried_and_replayed() {
    let (service, client) = start().await;
    service.script_for("o-3", [Fault::SlowBody(Duration::from_secs(2))]);
    let receipt = client.charge("o-3").await.expect("the second attempt");
    assert!(receipt.contains("ch_"), "{receipt}");
    // The first attempt's headers came at once and its body did not within 300 ms: the attempt
    // timed out after the charge was made, and the retry got the stored answer.
    assert_eq!(
        outcomes_of_the_call(&service),
        [Outcome::Applied, Outcome::Replayed]
    );
    assert_eq!(service.effects("o-3"), 1);
}
