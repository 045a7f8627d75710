//! Hedging end to end over real HTTP on loopback: a replica commits a charge, then answers only
//! after a long pause. The `#[retryable(hedge_after = "100ms", idempotent = true)]` charge sends a copy after 100 ms
//! with the same `Idempotency-Key` (from `context()`), gets the stored answer at once, and drops
//! the slow copy: the card is charged once and the call answers in about the hedge delay plus a
//! fast answer, not the pause. The same hedge with a fresh key per attempt charges twice.

use std::time::{Duration, Instant};

use reattempt::testing::http::{Fault, Service};
use reattempt::{context, retryable};
use reattempt_support::http_client;
use reattempt_support::payments::{PayError, Receipt};

/// The pause of the slow replica: far longer than the hedge delay plus a fast answer.
const PAUSE: Duration = Duration::from_secs(5);

struct Gateway {
    http: reqwest::Client,
    base: String,
    /// Sends `key-attempt` instead of the call's key: the mistake the shared key prevents.
    key_per_attempt: bool,
}

impl Gateway {
    #[retryable(max_attempts = 3, hedge_after = "100ms", idempotent = true, timeout = "10s", delay = "10ms",
                retry_on = [PayError::Timeout | PayError::Unavailable | PayError::Network(_)])]
    async fn charge(&self, order_id: &str, amount_cents: i64) -> Result<Receipt, PayError> {
        let ctx = context().expect("inside an attempt");
        let key = if self.key_per_attempt {
            format!("{}-{}", ctx.idempotency_key(), ctx.attempt())
        } else {
            ctx.idempotency_key().to_string()
        };
        let response = self
            .http
            .post(format!("{}/charges", self.base))
            .header("Idempotency-Key", key)
            .json(&serde_json::json!({"order_id": order_id, "amount_cents": amount_cents}))
            .send()
            .await?;
        if response.status().is_success() {
            Ok(response.json().await?)
        } else if response.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE {
            Err(PayError::Unavailable)
        } else {
            Err(PayError::Unexpected(response.status()))
        }
    }
}

fn gateway(service: &Service, key_per_attempt: bool) -> Gateway {
    Gateway {
        http: http_client(),
        base: service.url(),
        key_per_attempt,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_replica_is_hedged_and_the_charge_is_made_once() {
    let service = Service::start().await;
    service.script_for("order-1", [Fault::SlowAnswer(PAUSE)]);
    let t0 = Instant::now();
    let receipt = gateway(&service, false)
        .charge("order-1", 1250)
        .await
        .expect("the hedge's answer");
    let took = t0.elapsed();
    assert_eq!(receipt.order_id, "order-1");
    service.assert_hedged_once("order-1");
    assert!(
        took < PAUSE / 2,
        "answered by the hedge (100 ms + a fast answer), not after the pause: {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_shared_key_the_hedge_charges_twice() {
    let service = Service::start().await;
    service.script_for("order-2", [Fault::SlowAnswer(PAUSE)]);
    let receipt = gateway(&service, true).charge("order-2", 990).await;
    assert_eq!(receipt.expect("the hedge's answer").order_id, "order-2");
    assert_eq!(
        service.effects("order-2"),
        2,
        "a fresh key per copy: the hedge is a second charge"
    );
}
