//! What may join two ranges into one file (RFC 9110 §13.1.5, §14.4): a strong validator only; a
//! body that ends before the object's length; a 416 that names another version; a redirect; a
//! resume whose headers never come. Against a server of the tests' own, which says what the
//! service does not (weak tags, dates, short answers).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reattempt::http::{DownloadError, download};
use reattempt::testing::http::{ObjectFault, Service};

use super::{drain, policy};

type Resume = fn(&http::HeaderMap) -> axum::response::Response;

/// A server whose first answer is a 200 of 1000 bytes of 7 with `headers`, cut after 400
/// bytes, and whose later answers are `resume`'s. Gives its URL and the request headers of
/// every later answer.
async fn server(
    headers: &'static [(&'static str, &'static str)],
    resume: Resume,
) -> (String, Arc<Mutex<Vec<http::HeaderMap>>>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let requests = Arc::clone(&seen);
    let app = axum::Router::new().route(
        "/f",
        axum::routing::get(move |h: http::HeaderMap| {
            let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
            let requests = Arc::clone(&requests);
            async move {
                if !first {
                    requests.lock().unwrap().push(h.clone());
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
                r.headers_mut()
                    .insert(http::header::CONTENT_LENGTH, 1000.into());
                for (k, v) in headers {
                    r.headers_mut()
                        .insert(*k, http::HeaderValue::from_static(v));
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
        r.headers_mut()
            .insert(*k, http::HeaderValue::from_static(v));
    }
    r
}

/// The download's bytes (all 7s, the first version's) and its end.
async fn run(url: &str) -> (Vec<u8>, Option<DownloadError>) {
    let policy = policy(3);
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

/// Bytes delivered from a response with only weak validators are never resumed: no second
/// request is sent (none could prove it gets the same bytes), the error says so, and the file
/// is the first version's 400 bytes.
async fn assert_not_resumed(headers: &'static [(&'static str, &'static str)]) {
    // Were a resume sent, it would get another version's bytes (9s) under the same validators.
    let (url, seen) = server(headers, |_| {
        response(
            206,
            vec![9u8; 600],
            &[
                ("etag", "W/\"v1\""),
                ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT"),
                ("content-range", "bytes 400-999/1000"),
            ],
        )
    })
    .await;
    let (file, error) = run(&url).await;
    assert_eq!(file, [7u8; 400], "{headers:?}");
    assert!(
        matches!(error, Some(DownloadError::NoValidator { delivered: 400 })),
        "{headers:?}: {error:?}"
    );
    assert!(seen.lock().unwrap().is_empty(), "{headers:?}: resumed");
}

#[tokio::test]
async fn a_weak_etag_never_validates_a_resume() {
    assert_not_resumed(&[("etag", "W/\"v1\"")]).await;
}

#[tokio::test]
async fn a_weak_etag_hides_a_date_which_is_never_sent_in_its_place() {
    assert_not_resumed(&[
        ("etag", "W/\"v1\""),
        ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT"),
    ])
    .await;
}

#[tokio::test]
async fn a_last_modified_within_the_second_of_date_is_weak_and_not_resumed() {
    assert_not_resumed(&[
        ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT"),
        ("date", "Thu, 01 Jan 2026 00:00:00 GMT"),
    ])
    .await;
}

#[tokio::test]
async fn a_last_modified_a_second_before_date_resumes_with_it_as_if_range() {
    let (url, seen) = server(
        &[
            ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT"),
            ("date", "Thu, 01 Jan 2026 00:00:01 GMT"),
        ],
        |_| {
            response(
                206,
                vec![7u8; 600],
                &[
                    ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT"),
                    ("content-range", "bytes 400-999/1000"),
                ],
            )
        },
    )
    .await;
    let (file, error) = run(&url).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(file, [7u8; 1000]);
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0]["range"], "bytes=400-");
    assert_eq!(seen[0]["if-range"], "Thu, 01 Jan 2026 00:00:00 GMT");
}

/// A server that answers at most 100 bytes of what is asked (`bytes N-(N+99)/1000`): each
/// clean end short of 1000 bytes is `Incomplete`, resumed from where it ended, to the whole.
#[tokio::test]
async fn a_206_shorter_than_asked_is_resumed_from_its_end_to_the_whole_length() {
    let (url, seen) = server(&[("etag", "\"v1\"")], |h| {
        let from: usize = h["range"]
            .to_str()
            .unwrap()
            .strip_prefix("bytes=")
            .and_then(|r| r.strip_suffix('-'))
            .unwrap()
            .parse()
            .unwrap();
        let last = (from + 99).min(999);
        let mut r = response(206, vec![7u8; last + 1 - from], &[("etag", "\"v1\"")]);
        r.headers_mut().insert(
            "content-range",
            format!("bytes {from}-{last}/1000").parse().unwrap(),
        );
        r
    })
    .await;
    let policy = policy(3);
    let client = reqwest::Client::new();
    let incomplete = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::clone(&incomplete);
    let chunks = download(&policy, &client, &url).on_retry(move |e: &DownloadError, _, _| {
        if let DownloadError::Incomplete {
            delivered,
            expected,
        } = e
        {
            heard.lock().unwrap().push((*delivered, *expected));
        }
    });
    let got = drain(chunks).await;
    assert!(got.error.is_none(), "{:?}", got.error);
    assert_eq!(got.len, 1000);
    let ranges: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|h| h["range"].to_str().unwrap().to_owned())
        .collect();
    let asked: Vec<String> = (4..10).map(|n| format!("bytes={}-", n * 100)).collect();
    assert_eq!(ranges, asked);
    let expected: Vec<(u64, u64)> = (5..10).map(|n| (n * 100, 1000)).collect();
    assert_eq!(*incomplete.lock().unwrap(), expected);
}

/// A 416 ends a download cleanly only for the version delivered: one carrying another `ETag`,
/// or whose `bytes */len` is not the length recorded, is `Changed`.
#[tokio::test]
async fn a_416_of_another_etag_or_length_is_changed_not_a_clean_end() {
    let another_etag: Resume = |_| {
        response(
            416,
            Vec::new(),
            &[("etag", "\"v2\""), ("content-range", "bytes */400")],
        )
    };
    let another_length: Resume = |_| {
        response(
            416,
            Vec::new(),
            &[("etag", "\"v1\""), ("content-range", "bytes */400")],
        )
    };
    for resume in [another_etag, another_length] {
        let (url, _) = server(&[("etag", "\"v1\"")], resume).await;
        let (file, error) = run(&url).await;
        assert_eq!(file.len(), 400);
        assert!(
            matches!(error, Some(DownloadError::Changed { delivered: 400, .. })),
            "{error:?}"
        );
    }
}

/// A 302 to a CDN (another origin): each resume is redirected too; `Range` and `If-Range`
/// reach the CDN.
#[tokio::test]
async fn a_redirect_to_another_origin_keeps_range_and_if_range() {
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
    assert_eq!(
        requests[1].if_range.as_deref(),
        Some(object.etag().as_str())
    );
}

/// A resume whose server accepts the connection and never sends headers (a proxy that hangs)
/// is cut by the idle limit, which bounds an open as it bounds the wait between chunks.
#[tokio::test]
async fn a_resume_whose_headers_never_come_is_cut_by_the_idle_limit() {
    let (url, _) = server(&[("etag", "\"v1\"")], |_| {
        unreachable!("every resume goes to the server that hangs")
    })
    .await;
    let hang = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hang_addr = hang.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let (s, _) = hang.accept().await.unwrap();
            held.push(s);
        }
    });
    let policy = policy(3);
    let client = reqwest::Client::new();
    let opens = Arc::new(AtomicUsize::new(0));
    let (first, rest) = (url.clone(), format!("http://{hang_addr}/f"));
    let counted = Arc::clone(&opens);
    let chunks = reattempt::http::download_with(&policy, move || {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        client.get(if n == 0 { &first } else { &rest })
    })
    .idle_timeout(Duration::from_millis(200));
    let got = tokio::time::timeout(Duration::from_secs(5), drain(chunks))
        .await
        .expect("still waiting for headers after 5 s with a 200 ms idle limit");
    assert_eq!(got.len, 400);
    assert!(
        matches!(got.error, Some(DownloadError::Timeout(_))),
        "{:?}",
        got.error
    );
    assert_eq!(
        opens.load(Ordering::SeqCst),
        3,
        "each open cut, then given up"
    );
}
