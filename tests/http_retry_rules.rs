//! End to end over real HTTP on loopback: what is retried and when. A 400 is answered after one
//! request; a 429's `Retry-After` (delta-seconds or an HTTP-date) is waited out before the next
//! attempt, and a hint beyond `max_delay` ends the call rather than coming back early; a reused
//! key with another body is refused.
//!
//! Real time: tokio's paused clock does not mix with real sockets, so hints are kept to a second.

use std::time::Duration;

use reattempt::testing::http::{Fault, Outcome, RetryAfter, Service};
use reattempt_support::payments::{PayError, Payments, policy, quick};

#[tokio::test]
async fn a_400_is_answered_after_one_request() {
    let service = Service::start().await;
    let client = Payments::new(&service, quick());
    let result = client.charge("order-bad", -1).await;
    assert!(
        matches!(&result, Err(PayError::Rejected(why)) if why.contains("amount_cents")),
        "{result:?}"
    );
    let seen = service.seen_for("order-bad");
    assert_eq!(seen.len(), 1, "not retried");
    assert_eq!(seen[0].outcome, Outcome::Status(400));
    assert_eq!(service.effects("order-bad"), 0);
}

#[tokio::test]
async fn a_400_after_a_503_ends_the_call() {
    let service = Service::start().await;
    let client = Payments::new(&service, quick());
    service.script_for("order-bad", [Fault::Unavailable]);
    let result = client.charge("order-bad", 0).await;
    assert!(matches!(result, Err(PayError::Rejected(_))), "{result:?}");
    assert_eq!(
        service.seen_for("order-bad").len(),
        2,
        "the 503 retried, the 400 not"
    );
}

/// A client that would retry after 10 ms if the server did not ask for longer.
fn prompt_client(service: &Service) -> Payments {
    Payments::new(
        service,
        policy(
            3,
            Duration::from_millis(10),
            Duration::from_secs(1),
            Duration::from_secs(5),
        ),
    )
}

#[tokio::test]
async fn retry_after_in_seconds_is_waited_out() {
    let service = Service::start().await;
    let client = prompt_client(&service);
    service.script_for("order-1", [Fault::RateLimited(RetryAfter::Seconds(1))]);
    client.charge("order-1", 100).await.expect("charged");
    let seen = service.seen_for("order-1");
    assert_eq!(seen.len(), 2);
    let gap = seen[1].at - seen[0].at;
    assert!(
        gap >= Duration::from_secs(1),
        "the hint was honoured: {gap:?}"
    );
    assert!(gap < Duration::from_secs(2), "and not much more: {gap:?}");
    assert!(seen[1].wall >= seen[0].retry_not_before.expect("a hint"));
    assert_eq!(service.effects("order-1"), 1);
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_waited_out() {
    let service = Service::start().await;
    let client = prompt_client(&service);
    service.script_for(
        "order-2",
        [Fault::RateLimited(RetryAfter::Date(Duration::from_secs(1)))],
    );
    client.charge("order-2", 100).await.expect("charged");
    let seen = service.seen_for("order-2");
    assert_eq!(seen.len(), 2);
    let date = seen[0].retry_not_before.expect("a date was sent");
    assert!(
        seen[1].wall >= date,
        "retried {:?} before the date",
        date.duration_since(seen[1].wall).unwrap_or_default()
    );
    // The date is at least a second away, rounded up to the header's whole seconds.
    let gap = seen[1].at - seen[0].at;
    assert!(gap >= Duration::from_secs(1), "{gap:?}");
    assert!(gap < Duration::from_secs(3), "{gap:?}");
}

#[tokio::test]
async fn a_hint_longer_than_max_delay_ends_the_call_without_coming_back_early() {
    let service = Service::start().await;
    // The server asks for a minute; the client's ceiling is 200 ms: coming back after 200 ms
    // would only be refused again, so the call ends with the 429 (it used to be cut to 200 ms).
    let client = Payments::new(
        &service,
        policy(
            3,
            Duration::from_millis(10),
            Duration::from_secs(1),
            Duration::from_millis(200),
        ),
    );
    service.script_for("order-3", [Fault::RateLimited(RetryAfter::Seconds(60))]);
    let result = client.charge("order-3", 100).await;
    assert!(
        matches!(result, Err(PayError::TooManyRequests(Some(d))) if d == Duration::from_secs(60)),
        "{result:?}"
    );
    assert_eq!(service.seen_for("order-3").len(), 1, "not retried early");
    assert_eq!(service.effects("order-3"), 0);
}

#[tokio::test]
async fn a_key_reused_with_another_body_is_refused_not_replayed() {
    // The service's side of the IETF draft: a key names one request, not just any request.
    let service = Service::start().await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let post = |amount: i64| {
        http.post(format!("{}/charges", service.url()))
            .header("Idempotency-Key", "k-1")
            .json(&serde_json::json!({"order_id": "order-4", "amount_cents": amount}))
            .send()
    };
    assert_eq!(post(100).await.unwrap().status(), 201);
    let replay = post(100).await.unwrap();
    assert_eq!(replay.status(), 201);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(post(999).await.unwrap().status(), 422);
    assert_eq!(service.effects("order-4"), 1);
}
