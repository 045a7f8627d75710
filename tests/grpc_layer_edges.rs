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
