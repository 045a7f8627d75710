//! A hedged call that is told to stop (a pushback, the throttle at half, a refusal): no further
//! copy starts, the copies in flight still answer, payments come back.

use super::*;

// ------------------------------------------------------------------------------------------
// 1. Hedging: a pushback saying "don't retry" on one hedge must stop FURTHER hedges only (A6
//    "Hedging policy: Don't send any more hedged requests"); the copy still in flight may win.

#[tokio::test(start_paused = true)]
async fn hedge_pushback_stop_does_not_cancel_the_copy_in_flight() {
    let mock = Mock::new(|i, _req| {
        Box::pin(async move {
            match i {
                // The original: slow, then OK.
                0 => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok(ok_headers())
                }
                // The first hedge: UNAVAILABLE (non-fatal) with pushback "-1" (stop).
                _ => Ok(trailers_only(14, Some("-1"))),
            }
        })
    });
    let policy = HedgingPolicy::new(3, Duration::from_millis(10), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy).layer(mock.clone());
    let out = svc.call(request()).await;
    assert!(
        out.is_ok(),
        "A6: pushback-stop on a hedge only stops further hedges; the original's OK must win, got {:?} after {} calls",
        out.err(),
        mock.calls.load(SeqCst)
    );
}

// 2. Hedging under the throttle: the throttle at/below half stops FURTHER hedges (A6: "subsequent
//    hedged RPCs will only be sent if token_count is greater than the threshold"); it must not
//    end the call with a non-fatal status while another copy is still in flight.
#[tokio::test(start_paused = true)]
async fn hedge_throttle_at_half_does_not_cancel_the_copy_in_flight() {
    let mock = Mock::new(|i, _req| {
        Box::pin(async move {
            match i {
                0 => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok(ok_headers())
                }
                _ => Ok(trailers_only(14, None)),
            }
        })
    });
    // 2 tokens, threshold 1: the hedge may start (2 > 1); its failure leaves 1 (not above).
    let throttle = RetryThrottle::new(2, 0.1).unwrap();
    let policy = HedgingPolicy::new(3, Duration::from_millis(10), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy)
        .throttle(throttle)
        .layer(mock.clone());
    let out = svc.call(request()).await;
    assert!(
        out.is_ok(),
        "the original's OK must win, got {:?} after {} calls",
        out.err(),
        mock.calls.load(SeqCst)
    );
}

// ------------------------------------------------------------------------------------------
// Refusals in hedged calls (a second review): no copy starts after a refusal, the copies in
// flight still answer, payments come back, and a copy left behind by the cap is no failure.

// R2-1. A hedge whose timer was armed before a pushback said "stop" still starts when it fires:
// `hedge_allowed` is asked only when the timer is armed, and `start_next` skips the refusal check
// for a hedge.
#[tokio::test(start_paused = true)]
async fn r2_a_hedge_armed_before_a_pushback_stop_is_not_sent() {
    let mock = Mock::new(|i, _req| {
        Box::pin(async move {
            // The original fails at 15 ms with a pushback saying stop; the first hedge (10 ms)
            // is a slow OK; a third copy must never be sent (A6: no more hedges after a
            // pushback saying stop).
            if i == 0 {
                tokio::time::sleep(Duration::from_millis(15)).await;
                Ok(trailers_only(14, Some("-1")))
            } else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(ok_headers())
            }
        })
    });
    let policy = HedgingPolicy::new(3, Duration::from_millis(10), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy).layer(mock.clone());
    let out = svc.call(request()).await;
    assert!(out.is_ok());
    assert_eq!(
        mock.calls.load(SeqCst),
        2,
        "A6: after a pushback saying stop, no further hedged request is sent"
    );
}

// R2-2. Same with the throttle: a hedge armed while above half, the throttle falls to half,
// the armed hedge still fires.
#[tokio::test(start_paused = true)]
async fn r2_a_hedge_armed_before_the_throttle_fell_to_half_is_not_sent() {
    let mock = Mock::new(|i, _req| {
        Box::pin(async move {
            if i == 0 {
                tokio::time::sleep(Duration::from_millis(15)).await;
                Ok(trailers_only(14, None))
            } else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(ok_headers())
            }
        })
    });
    // 2 tokens, threshold 1: one failure leaves 1 (not above): no hedge may start after it.
    let throttle = RetryThrottle::new(2, 0.1).unwrap();
    let policy = HedgingPolicy::new(3, Duration::from_millis(10), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy)
        .throttle(throttle.clone())
        .layer(mock.clone());
    let out = svc.call(request()).await;
    assert!(out.is_ok());
    assert_eq!(
        mock.calls.load(SeqCst),
        2,
        "A6: no hedge once the throttle is at half (tokens {})",
        throttle.tokens()
    );
}

// R2-3. A retry decided by one copy's failure, then the last copy in flight fails with a
// pushback saying stop (in the same poll): the copies are gone, and `start_next`'s "alone" path
// starts the pending retry without asking `retry_refused` (nor refunding it). The retry is sent
// at 15 ms, before the next hedge would be due (20 ms): it is the pending retry, not a hedge.
#[tokio::test(start_paused = true)]
async fn r2_a_pending_retry_after_the_last_copy_says_stop_is_not_made() {
    let t0 = tokio::time::Instant::now();
    let third_at = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&third_at);
    let mock = Mock::new(move |i, _req| {
        let seen = Arc::clone(&seen);
        Box::pin(async move {
            match i {
                // Original: UNAVAILABLE at 15 ms (A6: the next copy at once).
                0 => {
                    tokio::time::sleep(Duration::from_millis(15)).await;
                    Ok(trailers_only(14, None))
                }
                // Hedge at 10 ms: UNAVAILABLE with pushback stop, also at 15 ms.
                1 => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    Ok(trailers_only(14, Some("-1")))
                }
                _ => {
                    *seen.lock().unwrap() = Some(t0.elapsed());
                    Ok(ok_headers())
                }
            }
        })
    });
    let policy = HedgingPolicy::new(3, Duration::from_millis(10), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy).layer(mock.clone());
    let out = svc.call(request()).await;
    assert_eq!(
        mock.calls.load(SeqCst),
        2,
        "no request after the pushback said stop; third sent at {:?}; got {out:?}",
        third_at.lock().unwrap()
    );
}

// R2-4. Budget accounting of a refused pending retry in a hedged call: the retry's cost comes
// back (`Engine::unmade`), but `unmade` also forgets that the call hedged, so the hedged call's
// success then deposits like a first-try success (a hedged call deposits nothing).
#[tokio::test(start_paused = true)]
async fn r2_a_refused_retry_refund_does_not_make_a_hedged_call_deposit() {
    let mock = Mock::new(|i, _req| {
        Box::pin(async move {
            match i {
                // t=0 .. 25: UNAVAILABLE, pushback 50 ms: a retry pending at 75 ms (paid).
                0 => {
                    tokio::time::sleep(Duration::from_millis(25)).await;
                    Ok(trailers_only(14, Some("50")))
                }
                // Hedge t=10 .. 30: UNAVAILABLE, pushback stop: the pending retry is refused.
                1 => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok(trailers_only(14, Some("-1")))
                }
                // Hedge t=20 .. 220: OK.
                _ => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    Ok(ok_headers())
                }
            }
        })
    });
    let budget = Arc::new(
        reattempt::RetryBudget::builder()
            .max_tokens(100)
            .build()
            .unwrap(),
    );
    let policy = HedgingPolicy::new(4, Duration::from_millis(10), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy)
        .budget(Arc::clone(&budget))
        .layer(mock.clone());
    let out = svc.call(request()).await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(mock.calls.load(SeqCst), 3);
    assert_eq!(
        budget.available(),
        90,
        "two hedges paid 5 each and are kept; the refused retry refunded; a hedged call deposits nothing"
    );
}

// R2-5. A hedge left behind by the cap (the client's own doing: `retry_if` says so, and keeps it
// from the A6 throttle) is still recorded as the dependency's failure by the circuit breaker:
// one streaming call whose original copy succeeds opens a breaker at failure_threshold(1).
#[tokio::test(start_paused = true)]
async fn r2_a_hedge_left_behind_by_the_cap_is_no_failure_for_the_breaker() {
    let mock = Mock::new(|_i, req| {
        Box::pin(async move {
            let got = req.into_body().collect().await;
            if let Err(e) = got {
                return Err(Box::new(std::io::Error::other(e)) as BoxError);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(ok_headers())
        })
    });
    let breaker = Arc::new(
        reattempt::CircuitBreaker::builder()
            .failure_threshold(1)
            .build()
            .unwrap(),
    );
    let policy = HedgingPolicy::new(3, Duration::from_millis(7), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy)
        .replay_cap(16)
        .circuit_breaker(Arc::clone(&breaker))
        .layer(mock.clone());
    let body = Chunks {
        left: (0..4_u8).map(|i| Bytes::from(vec![i; 8])).collect(),
        sleep: None,
    };
    let req = http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .body(Body::new(body))
        .unwrap();
    let out = svc.call(req).await;
    assert!(out.is_ok(), "{:?}", out.err());
    assert_eq!(
        format!("{:?}", breaker.state()),
        "Closed",
        "the server never failed (calls: {})",
        mock.calls.load(SeqCst)
    );
    // And the next call goes through.
    let next = svc.call(request()).await;
    assert!(next.is_ok(), "next call: {:?}", next.err());
}

/// A request body that yields one chunk, then fails.
struct Failing {
    sent: bool,
}

impl http_body::Body for Failing {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        if self.sent {
            return Poll::Ready(Some(Err("the caller's stream broke".into())));
        }
        self.sent = true;
        Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from_static(
            b"12345678",
        )))))
    }
}

/// A request body that fails is the caller's own failure: the call ends with `CANCELLED`, sent
/// once, not retried as a transport's `UNAVAILABLE` until its attempts run out.
#[tokio::test(start_paused = true)]
async fn a_request_body_that_fails_ends_the_call_as_cancelled() {
    let mock = Mock::new(|_i, req| {
        Box::pin(async move {
            match req.into_body().collect().await {
                // As hyper reports a request body that failed: a transport error whose cause is
                // the body's error.
                Err(e) => Err(Box::new(std::io::Error::other(e)) as BoxError),
                Ok(_) => Ok(ok_headers()),
            }
        })
    });
    let policy = GrpcRetryPolicy::new(
        4,
        Duration::from_millis(5),
        Duration::from_millis(5),
        1.0,
        &[Code::Unavailable, Code::Unknown, Code::Internal],
    )
    .unwrap();
    let mut svc = GrpcRetryLayer::new(policy).layer(mock.clone());
    let req = http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .body(Body::new(Failing { sent: false }))
        .unwrap();
    let status = svc.call(req).await.unwrap_err();
    assert_eq!(status.code(), Code::Cancelled, "{status:?}");
    assert_eq!(mock.calls.load(SeqCst), 1);
}
