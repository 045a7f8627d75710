//! Errors from other crates: every key that turns a failure of the library's own (a timeout, a
//! guard's rejection) into the function's error, for each error type users retry, through the
//! attribute (loop and hedged, and `policy = …`) and the closure API. Each row is written as a
//! user would, with nothing but the key (the type's own conversion) or its `…_into` key, and each
//! call is made with its guard in the state that rejects, so that the conversion really runs.
#![allow(clippy::missing_errors_doc, reason = "test fns")]

use std::sync::LazyLock;
use std::time::Duration;

use reattempt::{AdaptiveThrottle, Bulkhead, CircuitBreaker, RetryPolicy};

/// A breaker open until the end of the test.
fn open_breaker() -> CircuitBreaker {
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(3600))
        .build()
        .unwrap();
    let permit = breaker.try_acquire().unwrap();
    breaker.record(permit, false);
    breaker
}

/// A throttle whose window holds only refused requests: it sheds almost every request.
fn shedding_throttle() -> AdaptiveThrottle {
    let throttle = AdaptiveThrottle::builder().build().unwrap();
    for _ in 0..600 {
        let _ = throttle.try_acquire();
        throttle.record(false);
    }
    throttle
}

/// A bulkhead of one slot (which the test holds).
fn one_slot() -> Bulkhead {
    Bulkhead::builder().max_concurrent(1).build().unwrap()
}

static TIMED: RetryPolicy = match RetryPolicy::builder()
    .max_attempts(2)
    .delay(Duration::from_millis(1))
    .timeout(Duration::from_millis(20))
    .build()
{
    Ok(p) => p,
    Err(_) => panic!(),
};

/// One row of the matrix: the error type `$ty`, how the test reads a converted failure back
/// (`$text`: the text it carries), and the conversions the attribute and the closure API take
/// (`into`, `open`, `shed`, `full`: nothing for a type with its own, its `…_into` key otherwise).
macro_rules! row {
    (
        $module:ident, $ty:ty, text = $text:expr,
        into = [$($into:tt)*], open = [$($open:tt)*], shed = [$($shed:tt)*], full = [$($full:tt)*],
        closure = |$c:ident| $closure:expr
    ) => {
        mod $module {
            use super::*;
            #[allow(unused_imports, reason = "used by some rows")]
            use reattempt::{BreakerOpen, BulkheadFull, Elapsed, Throttled};

            type E = $ty;

            fn text(e: &E) -> String {
                let f: fn(&E) -> String = $text;
                f(e)
            }

            static BREAKER: LazyLock<CircuitBreaker> = LazyLock::new(open_breaker);
            static THROTTLE: LazyLock<AdaptiveThrottle> = LazyLock::new(shedding_throttle);
            static BULKHEAD: LazyLock<Bulkhead> = LazyLock::new(one_slot);

            #[reattempt::retryable(max_attempts = 2, delay = "1ms", timeout = "20ms" $($into)*)]
            async fn slow() -> Result<u32, E> {
                std::future::pending().await
            }

            #[reattempt::retryable(max_attempts = 2, delay = "1ms", timeout = "20ms",
                                   hedge_after = "5ms", idempotent = true $($into)*)]
            async fn slow_hedged(_id: &str) -> Result<u32, E> {
                std::future::pending().await
            }

            #[reattempt::retryable(policy = TIMED $($into)*)]
            async fn slow_policy(_id: &str) -> Result<u32, E> {
                std::future::pending().await
            }

            #[reattempt::retryable(max_attempts = 2, circuit_breaker = BREAKER $($open)*)]
            async fn guarded() -> Result<u32, E> {
                Ok(1)
            }

            #[reattempt::retryable(max_attempts = 2, hedge_after = "5ms", idempotent = true,
                                   circuit_breaker = BREAKER $($open)*)]
            async fn guarded_hedged(_id: &str) -> Result<u32, E> {
                Ok(1)
            }

            #[reattempt::retryable(max_attempts = 2, throttle = THROTTLE $($shed)*)]
            async fn throttled() -> Result<u32, E> {
                Ok(1)
            }

            #[reattempt::retryable(max_attempts = 2, bulkhead = BULKHEAD $($full)*)]
            fn bulkheaded() -> Result<u32, E> {
                Ok(1)
            }

            #[tokio::test(start_paused = true)]
            async fn every_key_converts_through_the_attribute() {
                assert!(text(&slow().await.unwrap_err()).contains("timed out"));
                assert!(text(&slow_hedged("a").await.unwrap_err()).contains("timed out"));
                assert!(text(&slow_policy("a").await.unwrap_err()).contains("timed out"));
                assert!(text(&guarded().await.unwrap_err()).contains("circuit breaker is open"));
                assert!(
                    text(&guarded_hedged("a").await.unwrap_err()).contains("circuit breaker is open")
                );
                let _held = BULKHEAD.try_acquire().unwrap();
                assert!(text(&bulkheaded().unwrap_err()).contains("bulkhead full"));
                // The throttle sheds with a probability near 1: some call of a few is shed.
                let mut shed = false;
                for _ in 0..20 {
                    if let Err(e) = throttled().await {
                        assert!(text(&e).contains("adaptive throttle"), "{}", text(&e));
                        shed = true;
                        break;
                    }
                }
                assert!(shed, "no call was shed");
            }

            #[tokio::test(start_paused = true)]
            async fn every_key_converts_through_the_closure_api() {
                let breaker = open_breaker();
                let bulkhead = Bulkhead::builder().max_concurrent(1).build().unwrap();
                let _held = bulkhead.try_acquire().unwrap();
                let $c = TIMED.retry(|| std::future::pending::<Result<u32, E>>());
                let out = $closure.await;
                assert!(text(&out.unwrap_err()).contains("timed out"));
                let $c = TIMED.retry(|| async { Ok::<u32, E>(1) });
                let out = $closure.circuit_breaker(&breaker).await;
                assert!(text(&out.unwrap_err()).contains("circuit breaker is open"));
                let $c = TIMED.retry(|| async { Ok::<u32, E>(1) });
                let out = $closure.bulkhead(&bulkhead).await;
                assert!(text(&out.unwrap_err()).contains("bulkhead full"));
            }
        }
    };
}

row!(
    io_error,
    std::io::Error,
    text = |e| e.to_string(),
    into = [],
    open = [],
    shed = [],
    full = [],
    closure = |c| c
);
row!(
    anyhow_error,
    anyhow::Error,
    text = |e| e.to_string(),
    into = [],
    open = [],
    shed = [],
    full = [],
    closure = |c| c
);
row!(
    boxed_error,
    Box<dyn std::error::Error + Send + Sync>,
    text = |e| e.to_string(),
    into = [],
    open = [],
    shed = [],
    full = [],
    closure = |c| c
);
row!(
    string,
    String,
    text = Clone::clone,
    into = [],
    open = [],
    shed = [],
    full = [],
    closure = |c| c
);

/// Another crate's type with no conversion of its own, through an alias: every key takes its
/// `…_into` key (the closure API, its `.…_into(..)` before the guard).
type ParseError = std::num::ParseIntError;

/// A `ParseIntError` cannot carry our text: the conversions pick one parse failure per kind.
fn parse_error(text: &str) -> ParseError {
    text.parse::<i8>().unwrap_err()
}

/// The kind of parse failure each conversion picked, as text.
fn parse_text(e: &ParseError) -> String {
    match e.kind() {
        std::num::IntErrorKind::Empty => "timed out".into(),
        std::num::IntErrorKind::InvalidDigit => "circuit breaker is open".into(),
        std::num::IntErrorKind::PosOverflow => "bulkhead full".into(),
        std::num::IntErrorKind::NegOverflow => "adaptive throttle".into(),
        other => format!("{other:?}"),
    }
}

row!(
    alias_of_a_foreign_type,
    ParseError,
    text = parse_text,
    into = [, timeout_into = |_| parse_error("")],
    open = [, breaker_open_into = |_| parse_error("x")],
    shed = [, throttled_into = |_| parse_error("-999")],
    full = [, bulkhead_full_into = |_| parse_error("999")],
    closure = |c| c
        .timeout_into(|_| parse_error(""))
        .breaker_open_into(|_| parse_error("x"))
        .bulkhead_full_into(|_| parse_error("999"))
);

// The crate's own conversions for the errors of tonic, sqlx and reqwest (their features): every
// key with nothing else written.
#[cfg(feature = "tonic")]
row!(
    tonic_status,
    tonic::Status,
    text = |e| e.message().to_string(),
    into = [],
    open = [],
    shed = [],
    full = [],
    closure = |c| c
);
#[cfg(feature = "sqlx")]
row!(
    sqlx_error,
    sqlx::Error,
    text = |e| e.to_string(),
    into = [],
    open = [],
    shed = [],
    full = [],
    closure = |c| c
);
#[cfg(feature = "reqwest")]
row!(
    reqwest_error,
    reqwest::Error,
    text = |e| e.to_string(),
    into = [],
    open = [],
    shed = [],
    full = [],
    closure = |c| c
);

/// A call without a breaker or a throttle keeps no outcome across its sleeps, so its future is
/// `Send` whatever its error type: here `Box<dyn Error>`, which is not `Send` (the hedged
/// attribute, `policy = …`, and the closure API).
mod send_without_guards {
    use std::error::Error;
    use std::future::IntoFuture;
    use std::time::Duration;

    use reattempt::{RetryPolicy, retryable};

    static POLICY: RetryPolicy = match RetryPolicy::builder().max_attempts(2).build() {
        Ok(p) => p,
        Err(_) => panic!(),
    };

    fn assert_send<F: Send>(f: F) -> F {
        f
    }

    async fn fetch(key: &str) -> Result<String, Box<dyn Error>> {
        tokio::time::sleep(Duration::from_millis(1)).await;
        Ok(key.to_owned())
    }

    #[retryable(policy = POLICY, timeout_into = |e| e.to_string().into())]
    async fn get(key: &str) -> Result<String, Box<dyn Error>> {
        fetch(key).await
    }

    #[retryable(max_attempts = 2, hedge_after = "50ms", idempotent = true)]
    async fn get_hedged(key: &str) -> Result<String, Box<dyn Error>> {
        fetch(key).await
    }

    #[tokio::test(start_paused = true)]
    async fn spawned_with_an_error_type_that_is_not_send() {
        let a = tokio::spawn(async { assert_send(get("a")).await.map_err(|e| e.to_string()) });
        let b = tokio::spawn(async {
            assert_send(get_hedged("b"))
                .await
                .map_err(|e| e.to_string())
        });
        let c = tokio::spawn(async {
            let policy = RetryPolicy::builder().build().unwrap();
            let call = policy.retry(|| fetch("c")).without_timeout();
            assert_send(IntoFuture::into_future(call))
                .await
                .map_err(|e| e.to_string())
        });
        assert_eq!(a.await.unwrap().unwrap(), "a");
        assert_eq!(b.await.unwrap().unwrap(), "b");
        assert_eq!(c.await.unwrap().unwrap(), "c");
    }
}
