//! Streaming bodies past the replay cap, and the clocks at the edges (the largest grpc-timeout,
//! a spent deadline, a stalled hedge).

use super::*;

// ------------------------------------------------------------------------------------------
// 7. Hedging with a streaming body that goes past the replay cap AFTER a hedge was started: A6
//    says the call is committed to the copy that sent the most, the others are cancelled. The
//    hedge that falls behind fails its body (BodyNotReplayable, read as UNAVAILABLE, non-fatal),
//    and that failure ends the whole call, cancelling the committed copy that would succeed.
#[tokio::test(start_paused = true)]
async fn a_hedge_left_behind_by_the_cap_does_not_kill_the_committed_copy() {
    let mock = Mock::new(|_i, req| {
        Box::pin(async move {
            let got = req.into_body().collect().await;
            if let Err(e) = got {
                // As hyper reports a request body that failed: a transport error whose cause
                // is the body's error.
                return Err(Box::new(std::io::Error::other(e)) as BoxError);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(ok_headers())
        })
    });
    let policy = HedgingPolicy::new(3, Duration::from_millis(7), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy)
        .replay_cap(16)
        .layer(mock.clone());
    // 4 × 8 bytes, one every 5 ms: the hedge starts at 7 ms (8 bytes read, under the cap); the
    // third chunk (24 bytes) caps the body at 15 ms.
    let body = Chunks {
        left: (0..4_u8).map(|i| Bytes::from(vec![i; 8])).collect(),
        sleep: None,
    };
    let req = http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .body(Body::new(body))
        .unwrap();
    let out = svc.call(req).await;
    assert!(
        out.is_ok(),
        "the copy that streamed the whole body must win; got {:?} after {} calls",
        out.err(),
        mock.calls.load(SeqCst)
    );
}

// 7b. The same, with the left-behind copy's failure as hyper reports it: the body's error makes
//     hyper reset the stream with INTERNAL_ERROR, and the attempt sees only h2's
//     `Reset(INTERNAL_ERROR, User)`, without the body's error in its sources (INTERNAL by gRPC's
//     HTTP/2 mapping, a fatal status for the hedging policy). gRFC A6: past the buffer limit no
//     copy but the one holding the body may end the call (grpc-java `RetriableStreamTest`,
//     `hedging_perRpcBufferLimitExceeded`: the other stream is cancelled, the call committed).
#[tokio::test(start_paused = true)]
async fn a_left_behind_copy_reset_by_hyper_does_not_end_the_call() {
    let mock = Mock::new(|_i, req| {
        Box::pin(async move {
            if req.into_body().collect().await.is_err() {
                return Err(Box::new(h2::Error::from(h2::Reason::INTERNAL_ERROR)) as BoxError);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(ok_headers())
        })
    });
    let policy = HedgingPolicy::new(3, Duration::from_millis(7), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy)
        .replay_cap(16)
        .layer(mock.clone());
    // As in 7: the hedge starts at 7 ms with 8 bytes recorded; the third chunk caps the body.
    let body = Chunks {
        left: (0..4_u8).map(|i| Bytes::from(vec![i; 8])).collect(),
        sleep: None,
    };
    let req = http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .body(Body::new(body))
        .unwrap();
    let out = svc.call(req).await;
    assert!(
        out.is_ok(),
        "the copy holding the body answers; got {:?} after {} calls",
        out.err(),
        mock.calls.load(SeqCst)
    );
    assert_eq!(
        mock.calls.load(SeqCst),
        3,
        "both hedges started before the cap (7 ms, 14 ms)"
    );
}

// 7c. Hedges that start before the body's first read, on a body that turns out to be past the
//     cap (a unary request: one chunk, here 32 bytes over a cap of 16, ready after 5 ms): each
//     waits for the first read instead of opening a stream it may have to reset, and is then not
//     sent at all. gRFC A6: a copy that cannot carry the body is not started.
#[tokio::test(start_paused = true)]
async fn hedges_that_cannot_carry_the_body_are_not_sent() {
    let mock = Mock::new(|_i, req| {
        Box::pin(async move {
            if req.into_body().collect().await.is_err() {
                return Err(Box::new(h2::Error::from(h2::Reason::INTERNAL_ERROR)) as BoxError);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
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
        .body(Body::new(body))
        .unwrap();
    let response = svc
        .call(req)
        .await
        .expect("the copy holding the body answers");
    assert_eq!(mock.calls.load(SeqCst), 1, "neither hedge was sent");
    // Both hedges started (at 1 ms and 2 ms, before the first read), but A6's
    // `grpc-previous-rpc-attempts` counts the attempts sent: one.
    assert_eq!(
        response.headers().get("grpc-previous-rpc-attempts"),
        None,
        "one attempt was sent"
    );
}

// ------------------------------------------------------------------------------------------
// 8. Clocks at the edges: the largest grpc-timeout a caller can send (99999999H, ~11 400
//    years) must neither panic nor end the call early.
#[tokio::test(start_paused = true)]
async fn the_largest_grpc_timeout_is_a_long_deadline() {
    let mock = Mock::new(|i, _req| {
        Box::pin(async move {
            if i == 0 {
                return Ok(trailers_only(14, None));
            }
            Ok(ok_headers())
        })
    });
    let mut svc = GrpcRetryLayer::new(unavailable_policy()).layer(mock.clone());
    let mut req = request();
    req.headers_mut()
        .insert("grpc-timeout", http::HeaderValue::from_static("99999999H"));
    let out = svc.call(req).await;
    assert!(out.is_ok(), "{:?}", out.err());
    assert_eq!(mock.calls.load(SeqCst), 2);
}

// 3b. A stream the server reset with INTERNAL_ERROR (its handler panicked, after doing the
//     work) is INTERNAL by gRPC's HTTP/2 mapping (PROTOCOL-HTTP2.md "Errors"; tonic's
//     code_from_h2), not retryable; the layer sends it again as UNAVAILABLE.
#[tokio::test(start_paused = true)]
async fn a_stream_reset_with_internal_error_is_not_resent() {
    let mock = Mock::new(|_, _req| {
        Box::pin(
            async move { Err(Box::new(h2::Error::from(h2::Reason::INTERNAL_ERROR)) as BoxError) },
        )
    });
    let mut svc = GrpcRetryLayer::new(unavailable_policy()).layer(mock.clone());
    let status = svc.call(request()).await.unwrap_err();
    assert_eq!(
        (status.code(), mock.calls.load(SeqCst)),
        (Code::Internal, 1),
        "layer: {status:?}"
    );
}

// 9. A deadline already spent on entry (grpc-timeout 0n): the call must end DEADLINE_EXCEEDED
//    without sending anything.
#[tokio::test(start_paused = true)]
async fn a_spent_deadline_sends_nothing() {
    let mock = Mock::new(|_, _req| Box::pin(async move { Ok(ok_headers()) }));
    let mut svc = GrpcRetryLayer::new(unavailable_policy()).layer(mock.clone());
    let mut req = request();
    req.headers_mut()
        .insert("grpc-timeout", http::HeaderValue::from_static("0n"));
    let out = svc.call(req).await;
    assert_eq!(
        (
            out.as_ref().err().map(tonic::Status::code),
            mock.calls.load(SeqCst)
        ),
        (Some(Code::DeadlineExceeded), 0),
        "{out:?}"
    );
}

// 10. Hedging with a streaming body: a hedge that polled the inner body once (so the inner body
//     holds ITS waker) and then stops polling it (hyper's pipe does so while its h2 stream has no
//     send window: a slow hedge server) stalls the original copy, which waits in `waiters` and
//     is woken only when some clone reads.
#[tokio::test(start_paused = true)]
async fn a_stalled_hedge_does_not_stall_the_original_copys_body() {
    let mock = Mock::new(|i, req| {
        Box::pin(async move {
            let mut body = req.into_body();
            if i == 0 {
                // hyper pipes each request body from its own task.
                let got = tokio::spawn(async move { body.collect().await.map(|_| ()) })
                    .await
                    .unwrap();
                if let Err(e) = got {
                    return Err(format!("request body failed: {e}").into());
                }
                return Ok(ok_headers());
            }
            tokio::spawn(async move {
                // The hedge: reads what is there, polls once more, then stops reading (no window).
                loop {
                    let once = std::future::poll_fn(|cx| {
                        Poll::Ready(http_body::Body::poll_frame(Pin::new(&mut body), cx))
                    })
                    .await;
                    if !matches!(once, Poll::Ready(Some(Ok(_)))) {
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_secs(3600)).await;
                drop(body);
            });
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(ok_headers())
        })
    });
    let policy = HedgingPolicy::new(2, Duration::from_millis(7), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy).layer(mock.clone());
    let body = Chunks {
        left: (0..4_u8).map(|i| Bytes::from(vec![i; 8])).collect(),
        sleep: None,
    };
    let req = http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .body(Body::new(body))
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), svc.call(req)).await;
    assert!(
        matches!(out, Ok(Ok(_))),
        "the original (fast) copy must finish its 32-byte body in ~20 ms; got {out:?} ({} calls)",
        mock.calls.load(SeqCst)
    );
}

// 10 (control, passes). Hedging with a streaming body: a hedge that polled the inner body once (so the inner body
//     holds ITS waker) and then stops polling it (hyper's pipe does so while its h2 stream has no
//     send window: a slow hedge server) stalls the original copy, which waits in `waiters` and
//     is woken only when some clone reads.
#[tokio::test(start_paused = true)]
async fn control_a_hedge_that_drops_its_body_does_not_stall() {
    let mock = Mock::new(|i, req| {
        Box::pin(async move {
            let mut body = req.into_body();
            if i == 0 {
                // hyper pipes each request body from its own task.
                let got = tokio::spawn(async move { body.collect().await.map(|_| ()) })
                    .await
                    .unwrap();
                if let Err(e) = got {
                    return Err(format!("request body failed: {e}").into());
                }
                return Ok(ok_headers());
            }
            tokio::spawn(async move {
                // The hedge: reads what is there, polls once more, then stops reading (no window).
                loop {
                    let once = std::future::poll_fn(|cx| {
                        Poll::Ready(http_body::Body::poll_frame(Pin::new(&mut body), cx))
                    })
                    .await;
                    if !matches!(once, Poll::Ready(Some(Ok(_)))) {
                        break;
                    }
                }
                drop(body); // CONTROL: the hedge lets go of its body
                tokio::time::sleep(Duration::from_secs(3600)).await;
            });
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(ok_headers())
        })
    });
    let policy = HedgingPolicy::new(2, Duration::from_millis(7), &[Code::Unavailable]).unwrap();
    let mut svc = GrpcRetryLayer::hedging(policy).layer(mock.clone());
    let body = Chunks {
        left: (0..4_u8).map(|i| Bytes::from(vec![i; 8])).collect(),
        sleep: None,
    };
    let req = http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .body(Body::new(body))
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), svc.call(req)).await;
    assert!(
        matches!(out, Ok(Ok(_))),
        "the original (fast) copy must finish its 32-byte body in ~20 ms; got {out:?} ({} calls)",
        mock.calls.load(SeqCst)
    );
}
