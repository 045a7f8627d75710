//! The gRPC layer's edges, each found by a hostile review and failing before its fix: what A6,
//! gRPC's HTTP/2 mapping, tonic or the layer's rustdoc says, against an in-process transport
//! under tokio's paused clock.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy, HedgingPolicy, RetryThrottle};
use tonic::Code;
use tonic::body::Body;
use tower_layer::Layer;
use tower_service::Service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Fut = Pin<Box<dyn Future<Output = Result<http::Response<Body>, BoxError>> + Send>>;
type Handler = Arc<dyn Fn(usize, http::Request<Body>) -> Fut + Send + Sync>;

/// An in-process transport: call `i` (0-based) is answered by the handler.
#[derive(Clone)]
struct Mock {
    calls: Arc<AtomicUsize>,
    handler: Handler,
}

impl Mock {
    fn new(f: impl Fn(usize, http::Request<Body>) -> Fut + Send + Sync + 'static) -> Self {
        Mock {
            calls: Arc::new(AtomicUsize::new(0)),
            handler: Arc::new(f),
        }
    }
}

impl Service<http::Request<Body>> for Mock {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = Fut;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, req: http::Request<Body>) -> Fut {
        let i = self.calls.fetch_add(1, SeqCst);
        (self.handler)(i, req)
    }
}

fn trailers_only(code: i32, pushback: Option<&'static str>) -> http::Response<Body> {
    let mut b = http::Response::builder()
        .header("content-type", "application/grpc")
        .header("grpc-status", code.to_string());
    if let Some(p) = pushback {
        b = b.header("grpc-retry-pushback-ms", p);
    }
    b.body(Body::empty()).unwrap()
}

fn ok_headers() -> http::Response<Body> {
    http::Response::builder()
        .header("content-type", "application/grpc")
        .body(Body::empty())
        .unwrap()
}

fn request() -> http::Request<Body> {
    http::Request::post("http://svc.test/grpc.health.v1.Health/Check")
        .header("content-type", "application/grpc")
        .body(Body::empty())
        .unwrap()
}

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
// 3. Transport errors: tonic's own channel timeout (`Endpoint::timeout`, tonic::TimeoutExpired)
//    and an RST_STREAM(CANCEL) are CANCELLED in tonic (Status::from_error). The layer reads every
//    non-`Status` error as UNAVAILABLE, so it RETRIES them (UNAVAILABLE is the usual retryable
//    code) and reports a code bare tonic never would.

fn unavailable_policy() -> GrpcRetryPolicy {
    GrpcRetryPolicy::new(
        4,
        Duration::from_millis(10),
        Duration::from_millis(10),
        1.0,
        &[Code::Unavailable],
    )
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_channel_timeout_is_cancelled_as_tonic_says_not_a_retried_unavailable() {
    let mock = Mock::new(|_, _req| {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Err(Box::new(tonic::TimeoutExpired(())) as BoxError)
        })
    });
    let bare = tonic::Status::from_error(Box::new(tonic::TimeoutExpired(())));
    let mut svc = GrpcRetryLayer::new(unavailable_policy()).layer(mock.clone());
    let status = svc.call(request()).await.unwrap_err();
    assert_eq!(
        (status.code(), mock.calls.load(SeqCst)),
        (bare.code(), 1),
        "bare tonic: {bare:?}; layer: {status:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_stream_is_not_retried_as_unavailable() {
    let mock = Mock::new(|_, _req| {
        Box::pin(async move { Err(Box::new(h2::Error::from(h2::Reason::CANCEL)) as BoxError) })
    });
    let mut svc = GrpcRetryLayer::new(unavailable_policy()).layer(mock.clone());
    let status = svc.call(request()).await.unwrap_err();
    assert_eq!(
        (status.code(), mock.calls.load(SeqCst)),
        (Code::Cancelled, 1),
        "layer: {status:?}"
    );
}

// ------------------------------------------------------------------------------------------
// 4. A client-streaming body still being read by the FAILED attempt (hyper pipes the request
//    body from a spawned task until the stream is reset) races the retry: the dead attempt is
//    "ahead", crosses the cap, and the live retry is refused its replay.

struct Chunks {
    left: Vec<Bytes>,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if self.left.is_empty() {
            return Poll::Ready(None);
        }
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_millis(5))));
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.sleep = None;
        let chunk = self.left.remove(0);
        Poll::Ready(Some(Ok(http_body::Frame::data(chunk))))
    }
}

#[tokio::test(start_paused = true)]
async fn the_failed_attempts_body_pipe_does_not_starve_the_retry() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    let mock = Mock::new(move |i, req| {
        let seen = Arc::clone(&seen2);
        Box::pin(async move {
            let mut body = req.into_body();
            if i == 0 {
                // Read the first message, then answer Trailers-Only UNAVAILABLE while the
                // transport (hyper's pipe task) keeps sending the body until reset.
                let _ = body.frame().await;
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    while let Some(Ok(_)) = body.frame().await {}
                });
                return Ok(trailers_only(14, None));
            }
            let got = body
                .collect()
                .await
                .map(http_body_util::Collected::to_bytes);
            seen.lock()
                .unwrap()
                .push(got.as_ref().map(Bytes::len).map_err(ToString::to_string));
            got?;
            Ok(ok_headers())
        })
    });
    let policy = GrpcRetryPolicy::new(
        3,
        Duration::from_millis(20),
        Duration::from_millis(20),
        1.0,
        &[Code::Unavailable],
    )
    .unwrap();
    let mut svc = GrpcRetryLayer::new(policy)
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
    assert!(
        out.is_ok(),
        "the retry (the only live attempt) must get the whole body; got {:?}, retry saw {:?}",
        out.err(),
        seen.lock().unwrap()
    );
}

// ------------------------------------------------------------------------------------------
// 5. The transparent retry says the same grpc-timeout as the refused attempt, not the time left
//    ("each attempt tells the server the time left").
#[tokio::test(start_paused = true)]
async fn the_transparent_retry_tells_the_time_left() {
    let timeouts = Arc::new(Mutex::new(Vec::new()));
    let t2 = Arc::clone(&timeouts);
    let mock = Mock::new(move |i, req| {
        let t = Arc::clone(&t2);
        Box::pin(async move {
            t.lock().unwrap().push(
                req.headers()
                    .get("grpc-timeout")
                    .map(|v| v.to_str().unwrap().to_owned()),
            );
            if i == 0 {
                tokio::time::sleep(Duration::from_millis(400)).await;
                return Err(Box::new(h2::Error::from(h2::Reason::REFUSED_STREAM)) as BoxError);
            }
            Ok(ok_headers())
        })
    });
    let mut svc = GrpcRetryLayer::new(unavailable_policy()).layer(mock);
    let mut req = request();
    req.headers_mut()
        .insert("grpc-timeout", http::HeaderValue::from_static("1S"));
    svc.call(req).await.unwrap();
    let timeouts = timeouts.lock().unwrap().clone();
    assert_eq!(timeouts.len(), 2);
    let parse = |s: &str| -> Duration {
        let (d, u) = s.split_at(s.len() - 1);
        let v: u64 = d.parse().unwrap();
        match u {
            "n" => Duration::from_nanos(v),
            "u" => Duration::from_micros(v),
            "m" => Duration::from_millis(v),
            "S" => Duration::from_secs(v),
            _ => panic!(),
        }
    };
    let second = parse(timeouts[1].as_deref().unwrap());
    assert!(
        second <= Duration::from_millis(601),
        "400 ms were spent; the resent stream says {timeouts:?}"
    );
}

// ------------------------------------------------------------------------------------------
// 6. A proxy's HTTP 503 (no gRPC headers at all: no grpc-status, no application/grpc) is
//    UNAVAILABLE by gRPC's HTTP-to-gRPC mapping (tonic's `infer_grpc_status` says so too), and
//    grpc-java / grpc-go retry it: those are not gRPC response headers, nothing is committed.
//    The layer returns it as a committed response: the caller gets UNAVAILABLE, never retried.
#[tokio::test(start_paused = true)]
async fn a_proxy_503_without_grpc_status_is_retried() {
    let mock = Mock::new(|i, _req| {
        Box::pin(async move {
            if i == 0 {
                return Ok(http::Response::builder()
                    .status(503)
                    .header("content-type", "text/plain")
                    .body(Body::empty())
                    .unwrap());
            }
            Ok(ok_headers())
        })
    });
    let mut svc = GrpcRetryLayer::new(unavailable_policy()).layer(mock.clone());
    let response = svc.call(request()).await.unwrap();
    assert_eq!(
        (response.status().as_u16(), mock.calls.load(SeqCst)),
        (200, 2),
        "the proxy's 503 (UNAVAILABLE for gRPC) was handed to the caller"
    );
}

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
