//! Quick start: a payment call that meets a 503 and a hung request, retried with backoff, a
//! per-attempt timeout and one idempotency key; a second call meets an outage and falls back to
//! `#[recover]`; a third is declined and not retried. No setup: the flaky gateway is in-process.
//!
//! Run it with `cargo run --example quickstart` (about two seconds).

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use reattempt::{IdempotencyKey, RetryContext, recover, retryable};
use tokio::time::Instant;

#[derive(Debug, Clone, PartialEq)]
enum PayError {
    /// 503 from the gateway: worth retrying.
    Unavailable,
    /// The attempt ran past its timeout: worth retrying.
    Timeout,
    /// The card was declined: retrying cannot help.
    Declined,
}

impl fmt::Display for PayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PayError::Unavailable => "503 Service Unavailable",
            PayError::Timeout => "timed out",
            PayError::Declined => "card declined",
        })
    }
}

impl From<reattempt::Elapsed> for PayError {
    fn from(_: reattempt::Elapsed) -> Self {
        PayError::Timeout
    }
}

/// What the gateway does with each request it receives, in order.
#[derive(Debug, Clone, Copy)]
enum Fault {
    Unavailable,
    Hang,
    Decline,
    Succeed,
}

/// An in-process stand-in for a payment gateway that replays its script of faults and, like a
/// real one, charges each idempotency key at most once.
struct Gateway {
    script: Mutex<Vec<Fault>>,
    charged: Mutex<Vec<IdempotencyKey>>,
}

impl Gateway {
    fn new(script: &[Fault]) -> Self {
        let mut script = script.to_vec();
        script.reverse();
        Gateway {
            script: Mutex::new(script),
            charged: Mutex::new(Vec::new()),
        }
    }

    async fn post(&self, order: &str, key: IdempotencyKey) -> Result<String, PayError> {
        let fault = {
            let mut script = self.script.lock().unwrap();
            if script.len() > 1 {
                script.pop().unwrap()
            } else {
                script[0]
            }
        };
        match fault {
            Fault::Unavailable => Err(PayError::Unavailable),
            Fault::Hang => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Err(PayError::Unavailable)
            }
            Fault::Decline => Err(PayError::Declined),
            Fault::Succeed => {
                let mut charged = self.charged.lock().unwrap();
                if !charged.contains(&key) {
                    charged.push(key);
                }
                Ok(format!(
                    "receipt for {order} (charged {} time)",
                    charged.len()
                ))
            }
        }
    }
}

struct PaymentClient {
    gateway: Gateway,
    started: Instant,
}

impl PaymentClient {
    /// Four attempts at most, 200 ms then 400 ms then 800 ms apart (full jitter), each cut after
    /// 500 ms; only 503s and timeouts are retried; an order that cannot be charged now is left
    /// pending rather than failed.
    #[retryable(max_attempts = 4, delay = "200ms", multiplier = 2, max_delay = "2s",
                jitter = "full", timeout = "500ms",
                retry_on = [PayError::Unavailable | PayError::Timeout],
                on_retry = report_retry, recover = Self::mark_pending)]
    async fn charge(&self, order: &str) -> Result<String, PayError> {
        let ctx = reattempt::context().expect("inside an attempt");
        println!(
            "  {:>6.0?}  attempt {}/{}  Idempotency-Key: {}",
            self.started.elapsed(),
            ctx.attempt(),
            ctx.max_attempts(),
            ctx.idempotency_key()
        );
        self.gateway.post(order, ctx.idempotency_key()).await
    }

    #[recover]
    async fn mark_pending(&self, err: PayError, order: &str) -> Result<String, PayError> {
        match err {
            PayError::Declined => Err(err),
            _ => Ok(format!("{order} marked PENDING after: {err}")),
        }
    }
}

fn report_retry(err: &PayError, ctx: &RetryContext, delay: Duration) {
    println!(
        "          attempt {} failed: {err}; retrying in {delay:.0?}",
        ctx.attempt()
    );
}

async fn run(title: &str, script: &[Fault], order: &str) {
    println!("{title}");
    let client = PaymentClient {
        gateway: Gateway::new(script),
        started: Instant::now(),
    };
    let result = client.charge(order).await;
    println!("  {:>6.0?}  result: {result:?}\n", client.started.elapsed());
}

#[tokio::main]
async fn main() {
    run(
        "1. A 503, then a hung request, then success:",
        &[Fault::Unavailable, Fault::Hang, Fault::Succeed],
        "order-1",
    )
    .await;
    run(
        "2. The gateway is down for good: #[recover] marks the order pending:",
        &[Fault::Unavailable],
        "order-2",
    )
    .await;
    run(
        "3. The card is declined: not retried, and recover passes the error on:",
        &[Fault::Decline],
        "order-3",
    )
    .await;
}
