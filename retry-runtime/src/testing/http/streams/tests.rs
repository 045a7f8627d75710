//! The object route and the event feed, through a real client on loopback.

use std::time::Duration;

use super::super::{EventFault, ObjectFault, Service, event_line};
use super::parse_range;

/// Reads a body to its end or its error: the bytes, and whether it ended with an error.
async fn read(mut response: reqwest::Response) -> (Vec<u8>, bool) {
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(None) => return (bytes, false),
            Err(_) => return (bytes, true),
        }
    }
}

fn get(service: &Service, path: &str, headers: &[(&str, String)]) -> reqwest::RequestBuilder {
    let mut request = reqwest::Client::new().get(format!("{}{path}", service.url()));
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    request
}

#[test]
fn ranges_parse_as_rfc_9110_writes_them() {
    assert_eq!(parse_range("bytes=0-"), Some((0, None)));
    assert_eq!(parse_range("bytes=10-19"), Some((10, Some(19))));
    assert_eq!(parse_range("bytes=10-9"), None);
    assert_eq!(parse_range("bytes=-5"), None, "a suffix range is ignored");
    assert_eq!(
        parse_range("bytes=0-1,5-"),
        None,
        "several ranges are ignored"
    );
    assert_eq!(parse_range("items=0-"), None);
}

#[tokio::test]
async fn resets_fall_exactly_at_their_offsets_request_after_request() {
    let service = Service::start().await;
    let object = service.put_object("o", 1_000_000);
    service.script_object(
        "o",
        [ObjectFault::ResetAt(100_000), ObjectFault::ResetAt(654_321)],
    );
    let mut got = Vec::new();
    for _ in 0..3 {
        let range = format!("bytes={}-", got.len());
        let answer = get(
            &service,
            "/objects/o",
            &[("range", range), ("if-range", object.etag())],
        )
        .send()
        .await
        .unwrap();
        let (bytes, failed) = read(answer).await;
        got.extend_from_slice(&bytes);
        if !failed {
            break;
        }
    }
    assert_eq!(got, object.to_vec());
    let seen = service.object_requests("o");
    let rows: Vec<(u16, u64, u64)> = seen
        .iter()
        .map(|r| (r.status, r.start, r.written))
        .collect();
    assert_eq!(
        rows,
        [
            (206, 0, 100_000),
            (206, 100_000, 554_321),
            (206, 654_321, 345_679)
        ]
    );
    assert_eq!(
        service.object_bytes_written("o"),
        1_000_000,
        "nothing sent twice"
    );
}

#[tokio::test]
async fn a_reset_is_an_error_not_a_clean_end_even_at_offset_zero() {
    let service = Service::start().await;
    service.put_object("o", 10_000);
    service.script_object("o", [ObjectFault::ResetAt(0)]);
    let answer = get(&service, "/objects/o", &[]).send().await.unwrap();
    assert_eq!(answer.status(), 200, "the headers come first");
    assert_eq!(read(answer).await, (Vec::new(), true));
}

#[tokio::test]
async fn if_range_mismatch_gives_the_whole_new_version() {
    let service = Service::start().await;
    let v1 = service.put_object("o", 5_000);
    service.replace_object_after("o", 1);
    let first = get(&service, "/objects/o", &[]).send().await.unwrap();
    assert_eq!(read(first).await.0, v1.to_vec());
    let v2 = service.object("o").unwrap();
    assert_eq!(v2.version(), 2);
    for validator in [v1.etag(), v1.last_modified_header()] {
        let answer = get(
            &service,
            "/objects/o",
            &[("range", "bytes=100-".into()), ("if-range", validator)],
        )
        .send()
        .await
        .unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.headers()["etag"].to_str().unwrap(), v2.etag());
        assert_eq!(read(answer).await.0, v2.to_vec());
    }
    for validator in [v2.etag(), v2.last_modified_header()] {
        let answer = get(
            &service,
            "/objects/o",
            &[("range", "bytes=100-".into()), ("if-range", validator)],
        )
        .send()
        .await
        .unwrap();
        assert_eq!(answer.status(), 206);
        assert_eq!(read(answer).await.0, v2.range(100..5_000));
    }
    let weak = format!("W/{}", v2.etag());
    let answer = get(
        &service,
        "/objects/o",
        &[("range", "bytes=100-".into()), ("if-range", weak)],
    )
    .send()
    .await
    .unwrap();
    assert_eq!(answer.status(), 200, "a weak validator never matches");
}

#[tokio::test]
async fn a_range_past_the_end_is_416_and_a_closed_range_is_honoured() {
    let service = Service::start().await;
    let object = service.put_object("o", 100);
    let past = get(&service, "/objects/o", &[("range", "bytes=100-".into())])
        .send()
        .await
        .unwrap();
    assert_eq!(past.status(), 416);
    assert_eq!(past.headers()["content-range"], "bytes */100");
    let closed = get(&service, "/objects/o", &[("range", "bytes=10-19".into())])
        .send()
        .await
        .unwrap();
    assert_eq!(closed.headers()["content-range"], "bytes 10-19/100");
    assert_eq!(read(closed).await.0, object.range(10..20));
    let missing = get(&service, "/objects/none", &[]).send().await.unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn a_stall_keeps_the_connection_open_and_silent() {
    let service = Service::start().await;
    service.put_object("o", 300_000);
    service.script_object("o", [ObjectFault::StallAt(200_000)]);
    let mut answer = get(&service, "/objects/o", &[]).send().await.unwrap();
    let mut got = 0;
    while got < 200_000 {
        let chunk = tokio::time::timeout(Duration::from_secs(5), answer.chunk()).await;
        got += chunk
            .expect("the bytes before the stall come")
            .unwrap()
            .unwrap()
            .len();
    }
    let after = tokio::time::timeout(Duration::from_millis(300), answer.chunk()).await;
    assert!(after.is_err(), "silent after the stall: {after:?}");
    let stalled = got;
    assert_eq!(stalled, 200_000);
    assert_eq!(service.object_requests("o")[0].written, 200_000);
}

#[tokio::test]
async fn the_feed_resets_after_k_events_and_resumes_after_n() {
    let service = Service::start().await;
    service.publish_events(50);
    service.script_events([EventFault::ResetAfter(7), EventFault::StallAfter(3)]);
    let (first, failed) = read(get(&service, "/events?after=0", &[]).send().await.unwrap()).await;
    assert!(failed);
    let expected: String = (1..=7).map(event_line).collect();
    assert_eq!(String::from_utf8(first).unwrap(), expected);

    let mut stalled = get(&service, "/events?after=7", &[]).send().await.unwrap();
    let expected: String = (8..=10).map(event_line).collect();
    let mut lines = Vec::new();
    while lines.len() < expected.len() {
        let chunk = tokio::time::timeout(Duration::from_secs(5), stalled.chunk()).await;
        lines.extend_from_slice(
            &chunk
                .expect("the events before the stall")
                .unwrap()
                .unwrap(),
        );
    }
    assert_eq!(String::from_utf8(lines).unwrap(), expected);
    let after = tokio::time::timeout(Duration::from_millis(200), stalled.chunk()).await;
    assert!(after.is_err(), "silent after the stall: {after:?}");

    let (rest, failed) = read(get(&service, "/events?after=10", &[]).send().await.unwrap()).await;
    assert!(!failed);
    assert_eq!(String::from_utf8(rest).unwrap().lines().count(), 40);
    let seen: Vec<(u64, u64)> = service
        .event_requests()
        .iter()
        .map(|r| (r.after, r.sent))
        .collect();
    assert_eq!(seen, [(0, 7), (7, 3), (10, 40)]);
    let bad = get(&service, "/events?after=x", &[]).send().await.unwrap();
    assert_eq!(bad.status(), 400);
}
