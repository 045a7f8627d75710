//! gRFC A6's transparent retry through the gRPC layer: a raw HTTP/2 server on 127.0.0.1 refuses
//! the first stream (`RST_STREAM(REFUSED_STREAM)`, as a server at its stream limit or going
//! away does) and answers the next with a gRPC `SERVING`. The layer sends the refused request
//! again at once, with or without a retry policy, and that resend is not an attempt of the
//! policy. A plain channel (no layer) fails, which shows the server does refuse.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use bytes::Bytes;
use reattempt::tonic::{GrpcRetryLayer, GrpcRetryPolicy, ServiceConfig};
use tonic::Code;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tower_layer::Layer;

/// A server that refuses the streams whose index (0-based, across connections) `refuse` says,
/// and answers the others `SERVING`; returns its address and the count of streams it saw.
async fn refusing_server(refuse: fn(usize) -> bool) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let streams = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&streams);
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let counter = Arc::clone(&counter);
            tokio::spawn(async move {
                let mut connection = h2::server::handshake(socket).await.unwrap();
                while let Some(Ok((request, mut respond))) = connection.accept().await {
                    let i = counter.fetch_add(1, SeqCst);
                    if refuse(i) {
                        respond.send_reset(h2::Reason::REFUSED_STREAM);
                        continue;
                    }
                    tokio::spawn(async move {
                        // Read the request to its end, then answer as a gRPC server does.
                        let mut body = request.into_body();
                        while let Some(chunk) = body.data().await {
                            let chunk = chunk.unwrap();
                            let _ = body.flow_control().release_capacity(chunk.len());
                        }
                        let response = http::Response::builder()
                            .header("content-type", "application/grpc")
                            .body(())
                            .unwrap();
                        let mut send = respond.send_response(response, false).unwrap();
                        // HealthCheckResponse { status: SERVING (1) }: field 1, varint 1.
                        let message = Bytes::from_static(&[0, 0, 0, 0, 2, 0x08, 0x01]);
                        send.send_data(message, false).unwrap();
                        let mut trailers = http::HeaderMap::new();
                        trailers.insert("grpc-status", "0".parse().unwrap());
                        send.send_trailers(trailers).unwrap();
                    });
                }
            });
        }
    });
    (addr, streams)
}

fn channel(addr: std::net::SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_millis(500))
        .connect_lazy()
}

#[tokio::test]
async fn a_refused_stream_is_sent_again_at_once_even_without_a_policy() {
    let (addr, streams) = refusing_server(|i| i == 0).await;
    // A service config that names no method: no retry policy at all.
    let layer = GrpcRetryLayer::from_service_config(ServiceConfig::from_json("{}").unwrap());
    let mut client = HealthClient::new(layer.layer(channel(addr)));
    let reply = client
        .check(HealthCheckRequest::default())
        .await
        .expect("the transparent retry succeeds");
    assert_eq!(reply.into_inner().status(), ServingStatus::Serving);
    assert_eq!(streams.load(SeqCst), 2);
}

#[tokio::test]
async fn without_the_layer_the_refused_stream_fails() {
    let (addr, streams) = refusing_server(|i| i == 0).await;
    let mut client = HealthClient::new(channel(addr));
    let status = client
        .check(HealthCheckRequest::default())
        .await
        .unwrap_err();
    assert_ne!(status.code(), Code::Ok);
    assert_eq!(streams.load(SeqCst), 1);
}

#[tokio::test]
async fn a_transparent_retry_is_not_an_attempt_of_the_policy_and_happens_once() {
    // Every stream refused: each policy attempt is refused, resent once, refused again.
    let (addr, streams) = refusing_server(|_| true).await;
    let policy = GrpcRetryPolicy::new(
        2,
        Duration::from_millis(5),
        Duration::from_millis(5),
        1.0,
        &[Code::Unavailable],
    )
    .unwrap();
    let mut client = HealthClient::new(GrpcRetryLayer::new(policy).layer(channel(addr)));
    let status = client
        .check(HealthCheckRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    // 2 attempts of the policy, each sent twice (the second time transparently).
    assert_eq!(streams.load(SeqCst), 4);
}
