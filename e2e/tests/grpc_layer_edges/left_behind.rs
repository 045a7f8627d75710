//! The copy that holds the body past the cap answers while a copy left behind is still pending:
//! the holder's outcome is the call's, and no left-behind status reaches the user's hooks.

use super::*;

// ------------------------------------------------------------------------------------------
// Issue 37: the copy holding the body past the cap answers with a server status while
// a copy left behind is still pending (hyper has not yet reported its reset). The call must end
// with the holder's status, the server's answer; never with a status the server never sent.
async fn holder_fails_while_left_behind_pending(
    code: i32,
) -> (Result<http::Response<Body>, tonic::Status>, usize) {
    let mock = Mock::new(move |_i, req| {
        Box::pin(async move {
            if req.into_body().collect().await.is_err() {
                // Left behind: hyper reports the reset later than the holder's answer.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(Box::new(h2::Error::from(h2::Reason::INTERNAL_ERROR)) as BoxError);
            }
            // The holder: the server read the whole body and answers with `code`.
            Ok(trailers_only(code, None))
        })
    });
    let policy = HedgingPolicy::new(2, Duration::from_millis(7), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy)
        .replay_cap(16)
        .layer(mock.clone());
    let body = Chunks {
        left: (0..4_u8).map(|i| Bytes::from(vec![i; 8])).collect(),
        sleep: None,
    };
    let req = http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .body(Body::new(body))
        .unwrap();
    let out = svc.call(req).await;
    (out, mock.calls.load(SeqCst))
}

#[tokio::test(start_paused = true)]
async fn the_holders_fatal_status_ends_the_call_while_a_left_behind_copy_is_pending() {
    let (out, calls) = holder_fails_while_left_behind_pending(13).await;
    let status = out.expect_err("the server answered INTERNAL");
    assert_eq!(calls, 2, "the hedge was sent before the cap");
    assert_eq!(
        status.code(),
        Code::Internal,
        "the server's own answer (INTERNAL) must end the call; got {status:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_holders_non_fatal_status_ends_the_call_not_a_pending_left_behind_copys() {
    let (out, calls) = holder_fails_while_left_behind_pending(14).await;
    let status = out.expect_err("the server answered UNAVAILABLE");
    assert_eq!(calls, 2, "the hedge was sent before the cap");
    assert!(
        status.code() == Code::Unavailable && !status.message().contains("cap"),
        "the server's own UNAVAILABLE (no message) must end the call, not a left-behind one; got {status:?}"
    );
}

// Issue 37: the call's deadline passes while the copy holding the body past the cap is
// still in flight, after a hedge was left behind unsent. The call must end DEADLINE_EXCEEDED
// (as without hedging), not with the left-behind copy's status, which no server sent.
#[tokio::test(start_paused = true)]
async fn a_deadline_while_the_holder_runs_is_deadline_exceeded_not_a_left_behind_status() {
    let mock = Mock::new(|_i, req| {
        Box::pin(async move {
            if req.into_body().collect().await.is_err() {
                return Err(Box::new(h2::Error::from(h2::Reason::INTERNAL_ERROR)) as BoxError);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(ok_headers())
        })
    });
    let policy = HedgingPolicy::new(3, Duration::from_millis(1), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy)
        .replay_cap(16)
        .layer(mock.clone());
    let body = Chunks {
        left: vec![Bytes::from(vec![1; 32])],
        sleep: None,
    };
    let req = http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .header("content-type", "application/grpc")
        .header("grpc-timeout", "40m")
        .body(Body::new(body))
        .unwrap();
    let status = svc
        .call(req)
        .await
        .expect_err("the server answers after the deadline");
    assert_eq!(mock.calls.load(SeqCst), 1, "the hedges were not sent");
    assert_eq!(
        status.code(),
        Code::DeadlineExceeded,
        "the call's deadline passed; got {status:?}"
    );
}

// Issue 37: without a hedge, the same call for comparison (the reference behaviour).
#[tokio::test(start_paused = true)]
async fn a_deadline_past_the_cap_without_hedging_is_deadline_exceeded() {
    let mock = Mock::new(|_i, req| {
        Box::pin(async move {
            let _ = req.into_body().collect().await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(ok_headers())
        })
    });
    let mut svc = GrpcRetryLayer::new(unavailable_policy())
        .replay_cap(16)
        .layer(mock.clone());
    let body = Chunks {
        left: vec![Bytes::from(vec![1; 32])],
        sleep: None,
    };
    let req = http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .header("content-type", "application/grpc")
        .header("grpc-timeout", "40m")
        .body(Body::new(body))
        .unwrap();
    let status = svc.call(req).await.expect_err("after the deadline");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
}

// Issue 37: the commit rule past the cap with the user's own hooks
// (`GrpcRetryLayer::from_policy(..).hooks(..)`, a policy with `hedge_after`). The left-behind
// copy's status is handed to the user's `retry_if`, which cannot recognise it (the test for it,
// `left_behind_by_the_cap`, is crate-private): a rule that does not retry UNAVAILABLE (the
// rustdoc's own `Aborted` example) lets the left-behind copy END the call, although the copy
// holding the body answers OK. gRFC A6: no other copy may end the call.
#[derive(Clone)]
struct OnlyAborted;
impl reattempt::Hooks<http::Response<Body>, tonic::Status> for OnlyAborted {
    fn retry_if(&mut self, status: &tonic::Status) -> bool {
        status.code() == Code::Aborted
    }
}

async fn hedged_past_cap_with_user_hooks<H>(
    hooks: Option<H>,
) -> (Result<http::Response<Body>, tonic::Status>, usize)
where
    H: reattempt::Hooks<http::Response<Body>, tonic::Status> + Clone + Send + Sync + 'static,
{
    let mock = Mock::new(|_i, req| {
        Box::pin(async move {
            if req.into_body().collect().await.is_err() {
                return Err(Box::new(h2::Error::from(h2::Reason::INTERNAL_ERROR)) as BoxError);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(ok_headers())
        })
    });
    let policy = reattempt::RetryPolicy::builder()
        .max_attempts(3)
        .hedge_after(reattempt::HedgeAfter::Fixed(Duration::from_millis(7)))
        .idempotent(true)
        .build()
        .unwrap();
    let mut layer = GrpcRetryLayer::from_policy(policy).replay_cap(16);
    if let Some(h) = hooks {
        layer = layer.hooks(h);
    }
    let mut svc = layer.layer(mock.clone());
    let body = Chunks {
        left: (0..4_u8).map(|i| Bytes::from(vec![i; 8])).collect(),
        sleep: None,
    };
    let req = http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .body(Body::new(body))
        .unwrap();
    let out = svc.call(req).await;
    (out, mock.calls.load(SeqCst))
}

#[tokio::test(start_paused = true)]
async fn a_left_behind_copy_does_not_end_the_call_under_the_crates_hooks() {
    let (out, calls) = hedged_past_cap_with_user_hooks::<OnlyAborted>(None).await;
    assert!(out.is_ok(), "{:?} after {calls} calls", out.err());
}

#[tokio::test(start_paused = true)]
async fn a_left_behind_copy_does_not_end_the_call_under_the_users_hooks() {
    let (out, calls) = hedged_past_cap_with_user_hooks(Some(OnlyAborted)).await;
    assert!(
        out.is_ok(),
        "the copy holding the body answers OK; got {:?} after {calls} calls",
        out.err()
    );
}

// Issue 37: a request whose body is at its end from the start (`is_end_stream`): hyper
// sends END_STREAM with the headers and never polls such a body, so its "first read" never
// settles. Hedges now wait for it: none is sent while the first copy hangs. The transport here
// behaves as hyper does: it never polls a body that is at its end.
#[tokio::test(start_paused = true)]
async fn a_hedge_of_a_request_whose_body_has_ended_is_sent() {
    use http_body::Body as _;
    let mock = Mock::new(|i, req| {
        Box::pin(async move {
            assert!(req.body().is_end_stream(), "hyper would not poll it");
            if i == 0 {
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
            Ok(ok_headers())
        })
    });
    let policy = HedgingPolicy::new(3, Duration::from_millis(10), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy).layer(mock.clone());
    let started = tokio::time::Instant::now();
    let out = svc.call(request()).await;
    assert!(out.is_ok());
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the hedge at 10 ms should answer; the call took {:?} with {} copies sent",
        started.elapsed(),
        mock.calls.load(SeqCst)
    );
}

// Issue 37: a stream the server refused (REFUSED_STREAM) after the transport had read
// the body past the cap. The transparent retry cannot carry the body; the call ends, but with a
// status saying the body "was sent by another attempt" and "this copy was not sent": a status
// neither the server nor the transport gave (there is no other attempt). Expected: the refused
// stream's own status (UNAVAILABLE, as `transport_status` maps REFUSED_STREAM).
#[tokio::test(start_paused = true)]
async fn a_stream_refused_past_the_cap_ends_with_the_refusal() {
    let mock = Mock::new(|_i, req| {
        Box::pin(async move {
            let _ = req.into_body().collect().await;
            Err(Box::new(h2::Error::from(h2::Reason::REFUSED_STREAM)) as BoxError)
        })
    });
    let mut svc = GrpcRetryLayer::new(unavailable_policy())
        .replay_cap(16)
        .layer(mock.clone());
    let body = Chunks {
        left: vec![Bytes::from(vec![1; 32])],
        sleep: None,
    };
    let req = http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .body(Body::new(body))
        .unwrap();
    let status = svc.call(req).await.expect_err("refused");
    assert_eq!(mock.calls.load(SeqCst), 1);
    assert!(
        !status.message().contains("another attempt"),
        "one attempt only, refused by the server; got {status:?}"
    );
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    let reset = std::error::Error::source(&status)
        .and_then(|s| s.downcast_ref::<h2::Error>())
        .and_then(h2::Error::reason);
    assert_eq!(
        reset,
        Some(h2::Reason::REFUSED_STREAM),
        "the transport's error is the source: {status:?}"
    );
}

// Issue 37: the user's hooks never see a copy left behind by the cap (it is the layer's own
// doing, which they could not tell from a server's UNAVAILABLE), and it never counts as a
// failure for a breaker that one failure opens.
#[derive(Clone, Default)]
struct Recording(Arc<Mutex<Vec<String>>>);
impl reattempt::Hooks<http::Response<Body>, tonic::Status> for Recording {
    fn retry_if(&mut self, status: &tonic::Status) -> bool {
        self.0.lock().unwrap().push(status.message().to_owned());
        status.code() == Code::Aborted
    }
    fn counts_as_failure(&mut self, status: &tonic::Status) -> bool {
        self.0.lock().unwrap().push(status.message().to_owned());
        true
    }
    fn error_failed(&mut self, status: &tonic::Status) -> bool {
        self.0.lock().unwrap().push(status.message().to_owned());
        true
    }
}

#[tokio::test(start_paused = true)]
async fn the_users_hooks_and_the_breaker_never_see_a_left_behind_copy() {
    let mock = Mock::new(|_i, req| {
        Box::pin(async move {
            if req.into_body().collect().await.is_err() {
                return Err(Box::new(h2::Error::from(h2::Reason::INTERNAL_ERROR)) as BoxError);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(ok_headers())
        })
    });
    let breaker = Arc::new(
        reattempt::CircuitBreaker::builder()
            .failure_threshold(1)
            .build()
            .unwrap(),
    );
    let policy = reattempt::RetryPolicy::builder()
        .max_attempts(3)
        .hedge_after(reattempt::HedgeAfter::Fixed(Duration::from_millis(7)))
        .idempotent(true)
        .build()
        .unwrap();
    let hooks = Recording::default();
    let mut svc = GrpcRetryLayer::from_policy(policy)
        .replay_cap(16)
        .hooks(hooks.clone())
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
    assert!(
        mock.calls.load(SeqCst) >= 2,
        "a hedge was sent before the cap, and left behind"
    );
    let seen = hooks.0.lock().unwrap().clone();
    assert!(seen.is_empty(), "the hooks saw {seen:?}");
    assert_eq!(breaker.state(), reattempt::BreakerState::Closed);
}
