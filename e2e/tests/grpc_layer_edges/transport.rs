//! What the transport says: tonic's channel timeout and a cancelled stream, a failed attempt's
//! body pipe, the transparent retry's time left, a proxy's 503 without gRPC headers.

use super::*;

// ------------------------------------------------------------------------------------------
// 3. Transport errors: tonic's own channel timeout (`Endpoint::timeout`, tonic::TimeoutExpired)
//    and an RST_STREAM(CANCEL) are CANCELLED in tonic (Status::from_error). The layer reads every
//    non-`Status` error as UNAVAILABLE, so it RETRIES them (UNAVAILABLE is the usual retryable
//    code) and reports a code bare tonic never would.

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
