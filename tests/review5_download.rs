//! Review 5: the resumable download against validators that cannot prove "same bytes"
//! (RFC 9110 §8.8.1, §13.1.5, §14.4, §15.3.7.3), and a 206 that answers less than asked.
#![cfg(all(feature = "reqwest", feature = "testing-http"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reattempt::RetryPolicy;
use reattempt::http::{DownloadError, download};

type Resume = fn(&http::HeaderMap) -> axum::response::Response;

/// First answer: a 200 of 1000 bytes of 7, with `headers`, cut after 400 bytes. Later answers:
/// `resume`'s. Gives the URL and the request headers of every later answer.
async fn server(
    headers: &'static [(&'static str, &'static str)],
    resume: Resume,
) -> (String, Arc<std::sync::Mutex<Vec<http::HeaderMap>>>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    let app = axum::Router::new().route(
        "/f",
        axum::routing::get(move |h: http::HeaderMap| {
            let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
            let seen = Arc::clone(&seen2);
            async move {
                if !first {
                    seen.lock().unwrap().push(h.clone());
                    return resume(&h);
                }
                let body = futures_util::stream::once(async {
                    Ok::<_, std::io::Error>(Bytes::from(vec![7u8; 400]))
                })
                .chain(futures_util::stream::once(async {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Err(std::io::Error::other("cut"))
                }));
                let mut r = axum::response::Response::new(axum::body::Body::from_stream(body));
                r.headers_mut().insert(http::header::CONTENT_LENGTH, 1000.into());
                for (k, v) in headers {
                    r.headers_mut().insert(*k, http::HeaderValue::from_static(v));
                }
                r
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/f", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

fn response(
    status: u16,
    body: Vec<u8>,
    headers: &[(&'static str, &'static str)],
) -> axum::response::Response {
    let mut r = axum::response::Response::new(axum::body::Body::from(body));
    *r.status_mut() = http::StatusCode::from_u16(status).unwrap();
    for (k, v) in headers {
        r.headers_mut().insert(*k, http::HeaderValue::from_static(v));
    }
    r
}

async fn run(url: &str) -> (Vec<u8>, Option<DownloadError>) {
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(2))
        .build()
        .unwrap();
    let client = reqwest::Client::new();
    let mut chunks = download(&policy, &client, url);
    let mut file = Vec::new();
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(c) => file.extend_from_slice(&c),
            Err(e) => return (file, Some(e)),
        }
    }
    (file, None)
}

/// No byte of another version after the old one's: the file is a prefix of v1 (all 7s).
fn assert_not_spliced(file: &[u8], error: &Option<DownloadError>) {
    let foreign = file.iter().filter(|b| **b != 7).count();
    assert_eq!(
        foreign,
        0,
        "spliced: {} bytes of v1 then {foreign} bytes of v2, ended with {error:?}",
        file.len() - foreign
    );
}

/// A weak ETag only: "semantically equivalent", not byte-identical (RFC 9110 §8.8.1). A
/// client may combine parts only under a matching *strong* validator (§14.4/§15.3.7.3). The
/// resume sends `Range` with no `If-Range` at all, and accepts a 206 of other bytes under the
/// same weak tag.
#[tokio::test]
async fn review5_a_weak_etag_only_resume_splices_two_versions() {
    let (url, seen) = server(&[("etag", "W/\"v1\"")], |_| {
        response(
            206,
            vec![9u8; 600],
            &[("etag", "W/\"v1\""), ("content-range", "bytes 400-999/1000")],
        )
    })
    .await;
    let (file, error) = run(&url).await;
    let if_range = seen.lock().unwrap().first().map(|h| h.get("if-range").cloned());
    eprintln!("resume's If-Range: {if_range:?}");
    assert_not_spliced(&file, &error);
}

/// A weak ETag and a date: the resume sends the date as `If-Range` (RFC 9110 §13.1.5: a client
/// that has an entity tag MUST NOT send a date), the server's date differs so it answers a 200
/// of the new version, and `same()` compares the weak tags, finds them equal, skips 400 bytes
/// of the new version and delivers the rest.
#[tokio::test]
async fn review5_a_200_with_the_same_weak_etag_after_if_range_failed_splices() {
    let (url, _) = server(
        &[
            ("etag", "W/\"v1\""),
            ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT"),
        ],
        |_| {
            response(
                200,
                vec![9u8; 1000],
                &[
                    ("etag", "W/\"v1\""),
                    ("last-modified", "Fri, 02 Jan 2026 00:00:00 GMT"),
                ],
            )
        },
    )
    .await;
    let (file, error) = run(&url).await;
    assert_not_spliced(&file, &error);
}

/// A date only, equal to the response's Date: a weak validator (RFC 9110 §8.8.2.2, changed
/// within the second). The client sends it as `If-Range` anyway and combines the parts.
#[tokio::test]
async fn review5_a_last_modified_equal_to_date_is_weak_but_splices() {
    let (url, _) = server(
        &[
            ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT"),
            ("date", "Thu, 01 Jan 2026 00:00:00 GMT"),
        ],
        |_| {
            response(
                206,
                vec![9u8; 600],
                &[
                    ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT"),
                    ("content-range", "bytes 400-999/1000"),
                ],
            )
        },
    )
    .await;
    let (file, error) = run(&url).await;
    assert_not_spliced(&file, &error);
}

/// A 206 that answers less than asked (`bytes 400-499/1000` for `bytes=400-`): the body ends
/// cleanly after 100 bytes and the download ends as if complete, 500 of 1000 bytes, no error.
#[tokio::test]
async fn review5_a_short_206_ends_the_download_clean_and_truncated() {
    let (url, _) = server(&[("etag", "\"v1\"")], |_| {
        response(
            206,
            vec![7u8; 100],
            &[("etag", "\"v1\""), ("content-range", "bytes 400-499/1000")],
        )
    })
    .await;
    let (file, error) = run(&url).await;
    assert!(
        file.len() == 1000 || error.is_some(),
        "a clean end after {} of 1000 bytes",
        file.len()
    );
}

/// A 416 is read as "all delivered" from its `bytes */len` alone: its validator is not checked.
/// The object was replaced by a 400-byte one (another strong ETag): the download ends clean
/// with 400 of the old 1000 bytes, instead of `Changed`.
#[tokio::test]
async fn review5_a_416_of_another_version_ends_clean_and_truncated() {
    let (url, _) = server(&[("etag", "\"v1\"")], |_| {
        response(
            416,
            Vec::new(),
            &[("etag", "\"v2\""), ("content-range", "bytes */400")],
        )
    })
    .await;
    let (file, error) = run(&url).await;
    assert!(
        file.len() == 1000 || matches!(error, Some(DownloadError::Changed { .. })),
        "a clean end after {} of 1000 bytes of v1, error {error:?}",
        file.len()
    );
}

/// A resume whose server accepts the connection and never sends headers: with an idle limit
/// ("a stream that gives no item for `idle` (from its open …)") and no policy timeout.
#[tokio::test]
async fn review5_a_resume_stalled_before_headers_is_cut_by_the_idle_limit() {
    let (url, _) = server(&[("etag", "\"v1\"")], |_| {
        response(
            206,
            vec![7u8; 600],
            &[("etag", "\"v1\""), ("content-range", "bytes 400-999/1000")],
        )
    })
    .await;
    // Every request after the first: headers never come (a proxy in front that hangs).
    let hang = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hang_addr = hang.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let (s, _) = hang.accept().await.unwrap();
            held.push(s);
        }
    });
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(2))
        .build()
        .unwrap();
    let client = reqwest::Client::new();
    let opens = Arc::new(AtomicUsize::new(0));
    let (first, rest) = (url.clone(), format!("http://{hang_addr}/f"));
    let mut chunks = reattempt::http::download_with(&policy, move || {
        let n = opens.fetch_add(1, Ordering::SeqCst);
        client.get(if n == 0 { &first } else { &rest })
    })
    .idle_timeout(Duration::from_millis(200));
    let outcome = tokio::time::timeout(Duration::from_secs(5), async {
        let mut n = 0;
        while let Some(chunk) = chunks.next().await {
            match chunk {
                Ok(c) => n += c.len(),
                Err(e) => return (n, Some(e)),
            }
        }
        (n, None)
    })
    .await;
    assert!(outcome.is_ok(), "still waiting for headers after 5 s with a 200 ms idle limit");
}

/// A 302 to a CDN (another origin): each resume is redirected too; `Range` and `If-Range` must
/// reach the CDN.
#[tokio::test]
async fn review5_a_redirect_to_a_cdn_keeps_range_and_if_range() {
    use reattempt::testing::http::{ObjectFault, Service};
    let cdn = Service::start().await;
    let object = cdn.put_object("o", 1 << 20);
    cdn.script_object("o", [ObjectFault::ResetAt(300_000)]);
    let target = format!("{}/objects/o", cdn.url());
    let app = axum::Router::new().route(
        "/f",
        axum::routing::get(move || {
            let target = target.clone();
            async move {
                let mut r = axum::response::Response::new(axum::body::Body::empty());
                *r.status_mut() = http::StatusCode::FOUND;
                r.headers_mut().insert("location", target.parse().unwrap());
                r
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/f", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let (file, error) = run(&url).await;
    let requests = cdn.object_requests("o");
    assert!(error.is_none(), "{error:?}");
    assert_eq!(file, object.to_vec());
    assert_eq!(requests[1].range.as_deref(), Some("bytes=300000-"));
    assert_eq!(requests[1].if_range.as_deref(), Some(object.etag().as_str()));
}
