//! Resumable streams over real HTTP on loopback, against `reattempt::testing::http::Service`:
//! a 64 MiB download through 5 connection resets (checksum, bytes re-fetched, peak memory), an
//! object changed mid-download, a server that ignores `Range`, a stall caught by the idle limit;
//! and the event feed `?after=N` through resets, with a deadline and a budget across resumes;
//! what may validate a resume (`validators`), and content-coded objects (`encoding`).
//!
//! Real sockets: no paused clock, so the durations are short and real (a stall of 200 ms).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use reattempt::http::{DownloadError, download};
use reattempt::testing::http::{EventFault, Object, ObjectFault, Service};
use reattempt::{RetryBudget, RetryPolicy};
use sha2::{Digest, Sha256};

mod encoding;
mod validators;

// ---- Peak memory: a counting allocator, per thread ----------------------------------------
//
// Each test runs on its own thread with a current-thread runtime, which also runs the service
// and reqwest's connection: the live bytes allocated on this thread are the download's whole
// footprint, client and server, and other tests running alongside do not count.

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are
// thread-local cells with constant initialisers (no allocation, no destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size().cast_signed());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-layout.size().cast_signed());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size.cast_signed() - layout.size().cast_signed());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Starts measuring: the peak is reset to what is live now; gives that baseline.
fn measure_from_here() -> isize {
    let live = LIVE.with(Cell::get);
    PEAK.with(|peak| peak.set(live));
    live
}

fn peak() -> isize {
    PEAK.with(Cell::get)
}

// ---- Helpers ---------------------------------------------------------------------------------

const MIB: u64 = 1 << 20;

fn sha256_of(object: &Object) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for chunk in object.chunks(0) {
        hasher.update(&chunk);
    }
    hasher.finalize().into()
}

fn policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(max_attempts)
        .delay(Duration::from_millis(2))
        .build()
        .unwrap()
}

/// What a download delivered: its SHA-256, its length, its largest chunk, its end.
struct Downloaded {
    sha256: [u8; 32],
    len: u64,
    largest_chunk: usize,
    error: Option<DownloadError>,
}

async fn drain<S>(mut chunks: S) -> Downloaded
where
    S: futures_util::Stream<Item = Result<Bytes, DownloadError>> + Unpin,
{
    let mut hasher = Sha256::new();
    let (mut len, mut largest_chunk, mut error) = (0, 0, None);
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(chunk) => {
                hasher.update(&chunk);
                len += chunk.len() as u64;
                largest_chunk = largest_chunk.max(chunk.len());
            }
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    Downloaded {
        sha256: hasher.finalize().into(),
        len,
        largest_chunk,
        error,
    }
}

// ---- Downloads -------------------------------------------------------------------------------

/// The rule asserted: at each reset, the bytes the server wrote that the client had not
/// delivered — `written[i] - (start[i+1] - start[i])`, what the resume fetched again — are at
/// most the largest chunk the client saw; so over 5 resets, the server's bytes written minus
/// 64 MiB are at most 5 × that chunk. The checksum matches, each resume's `Range` starts where
/// the previous answer's delivered bytes end, and the peak of live heap bytes on the test's
/// thread (client and server together) stays under 4 MiB, a sixteenth of the object.
#[tokio::test]
async fn a_64_mib_download_survives_5_resets_refetching_at_most_a_chunk_each() {
    let service = Service::start().await;
    let object = service.put_object("big.bin", 64 * MIB);
    let expected = sha256_of(&object);
    // Offsets off any chunk boundary.
    let resets = [7, 19, 29, 41, 53].map(|m| m * MIB + 12_345);
    service.script_object("big.bin", resets.map(ObjectFault::ResetAt));

    let policy = policy(3);
    let client = reqwest::Client::new();
    let url = format!("{}/objects/big.bin", service.url());
    let baseline = measure_from_here();
    let started = Instant::now();
    let mut chunks = download(&policy, &client, &url);
    let got = drain(&mut chunks).await;
    let took = started.elapsed();
    let peak = peak() - baseline;

    assert!(got.error.is_none(), "{:?}", got.error);
    assert_eq!(got.len, 64 * MIB);
    assert_eq!(got.sha256, expected, "the SHA-256 of the object");
    assert_eq!(chunks.resumes(), 5);

    let seen = service.object_requests("big.bin");
    assert_eq!(seen.len(), 6);
    let mut refetched = Vec::new();
    for pair in seen.windows(2) {
        let (this, next) = (&pair[0], &pair[1]);
        assert_eq!(next.status, 206);
        assert_eq!(next.range, Some(format!("bytes={}-", next.start)));
        assert_eq!(next.if_range, Some(object.etag()));
        let again = this.written - (next.start - this.start);
        assert!(
            again <= got.largest_chunk as u64,
            "re-fetched {again} bytes at a reset, more than the largest chunk ({})",
            got.largest_chunk
        );
        refetched.push(again);
    }
    let written = service.object_bytes_written("big.bin");
    assert!(written - 64 * MIB <= 5 * got.largest_chunk as u64);
    assert!(peak < 4 << 20, "peak live heap {peak} bytes");
    println!(
        "download 64 MiB, 5 resets: re-fetched {refetched:?} bytes (total {}), largest chunk {} B, \
         peak live heap {} KiB (client and server), {took:?}",
        written - 64 * MIB,
        got.largest_chunk,
        peak / 1024
    );
}

#[tokio::test]
async fn an_object_changed_mid_download_ends_with_changed_and_a_prefix_of_the_old_version() {
    for dated in [false, true] {
        let service = Service::start().await;
        let old = service.put_object("doc", 2 * MIB);
        service.object_without_etag("doc", dated);
        service.script_object("doc", [ObjectFault::ResetAt(700_000)]);
        service.replace_object_after("doc", 1);

        let policy = policy(5);
        let client = reqwest::Client::new();
        let mut chunks = download(&policy, &client, &format!("{}/objects/doc", service.url()));
        let mut delivered = Vec::new();
        let error = loop {
            match chunks.next().await {
                Some(Ok(chunk)) => delivered.extend_from_slice(&chunk),
                Some(Err(e)) => break e,
                None => panic!("a changed object must not end cleanly"),
            }
        };
        assert!(chunks.next().await.is_none(), "the error is the last item");
        let DownloadError::Changed {
            delivered: at,
            was,
            now,
        } = &error
        else {
            panic!("not Changed: {error}");
        };
        assert_eq!(*at, 700_000);
        assert_eq!(
            delivered,
            old.range(0..700_000),
            "a prefix of the old version only"
        );
        let new = service.object("doc").unwrap();
        let validator = if dated {
            (old.last_modified_header(), new.last_modified_header())
        } else {
            (old.etag(), new.etag())
        };
        assert_eq!(was.as_ref().and_then(|v| v.if_range()), Some(&*validator.0));
        assert_eq!(now.as_ref().and_then(|v| v.if_range()), Some(&*validator.1));
        let seen = service.object_requests("doc");
        assert_eq!(seen.len(), 2, "not retried: {seen:?}");
        assert_eq!(seen[1].if_range.as_deref(), Some(&*validator.0));
        assert_eq!(
            seen[1].status, 200,
            "If-Range failed: the whole new version"
        );
    }
}

#[tokio::test]
async fn a_server_that_ignores_range_duplicates_no_byte() {
    let service = Service::start().await;
    let object = service.put_object("plain", 3 * MIB);
    service.ignore_range("plain", true);
    service.script_object(
        "plain",
        [
            ObjectFault::ResetAt(1_000_001),
            ObjectFault::ResetAt(2_500_000),
        ],
    );
    let policy = policy(3);
    let client = reqwest::Client::new();
    let mut chunks = download(
        &policy,
        &client,
        &format!("{}/objects/plain", service.url()),
    );
    let got = drain(&mut chunks).await;
    assert!(got.error.is_none(), "{:?}", got.error);
    assert_eq!(got.len, 3 * MIB);
    assert_eq!(got.sha256, sha256_of(&object));
    let seen = service.object_requests("plain");
    let rows: Vec<(u16, Option<&str>)> = seen
        .iter()
        .map(|r| (r.status, r.range.as_deref()))
        .collect();
    assert_eq!(
        rows,
        [
            (200, None),
            (200, Some("bytes=1000001-")),
            (200, Some("bytes=2500000-"))
        ]
    );
}

#[tokio::test]
async fn a_stalled_download_is_cut_by_the_idle_limit_and_resumed() {
    let service = Service::start().await;
    let object = service.put_object("slow", MIB);
    service.script_object("slow", [ObjectFault::StallAt(400_000)]);
    let policy = policy(3);
    let client = reqwest::Client::new();
    let started = Instant::now();
    let mut chunks = download(&policy, &client, &format!("{}/objects/slow", service.url()))
        .idle_timeout(Duration::from_millis(200));
    let got = drain(&mut chunks).await;
    assert!(got.error.is_none(), "{:?}", got.error);
    assert_eq!(got.sha256, sha256_of(&object));
    assert_eq!(chunks.resumes(), 1);
    assert!(started.elapsed() >= Duration::from_millis(200));
    let seen = service.object_requests("slow");
    assert_eq!(seen[1].range.as_deref(), Some("bytes=400000-"));
}

#[tokio::test]
async fn a_stall_with_no_idle_limit_left_ends_with_the_timeout() {
    let service = Service::start().await;
    service.put_object("stuck", MIB);
    service.script_object("stuck", [ObjectFault::StallAt(1_000); 3]);
    let policy = policy(3);
    let client = reqwest::Client::new();
    let mut chunks = download(
        &policy,
        &client,
        &format!("{}/objects/stuck", service.url()),
    )
    .idle_timeout(Duration::from_millis(100))
    .progress_resets(false);
    let got = drain(&mut chunks).await;
    assert!(
        matches!(got.error, Some(DownloadError::Timeout(_))),
        "{:?}",
        got.error
    );
    assert_eq!(got.len, 1_000, "the first stall's bytes, nothing twice");
    assert_eq!(chunks.resumes(), 2);
}

// ---- The event feed ----------------------------------------------------------------------------

#[derive(Debug, serde::Deserialize)]
struct Event {
    seq: u64,
}

/// The events of one response, line by line: a line split across chunks is put together.
fn lines(response: reqwest::Response) -> impl futures_util::Stream<Item = Result<Event, String>> {
    let body = response.bytes_stream();
    futures_util::stream::unfold(
        (body, Vec::<u8>::new()),
        |(mut body, mut pending)| async move {
            loop {
                if let Some(end) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    let event = serde_json::from_slice(&line).map_err(|e| e.to_string());
                    return Some((event, (body, pending)));
                }
                match body.next().await {
                    Some(Ok(chunk)) => pending.extend_from_slice(&chunk),
                    Some(Err(e)) => return Some((Err(e.to_string()), (body, Vec::new()))),
                    None => return None,
                }
            }
        },
    )
}

async fn open_feed(
    client: &reqwest::Client,
    url: &str,
    after: u64,
) -> Result<impl futures_util::Stream<Item = Result<Event, String>> + use<>, String> {
    let response = client
        .get(format!("{url}/events?after={after}"))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("status {}", response.status().as_u16()));
    }
    Ok(lines(response))
}

#[tokio::test]
async fn every_event_arrives_once_and_in_order_across_resets_and_a_stall() {
    let service = Service::start().await;
    service.publish_events(1_000);
    service.script_events([
        EventFault::ResetAfter(100),
        EventFault::ResetAfter(1),
        EventFault::Status(503),
        EventFault::StallAfter(250),
        EventFault::ResetAfter(0),
        EventFault::ResetAfter(333),
    ]);
    let policy = policy(4);
    let client = reqwest::Client::new();
    let url = service.url();
    let mut events = policy
        .retry_stream(|after: u64| open_feed(&client, &url, after))
        .resume(0, |after, event: &Event| *after = event.seq)
        .idle_timeout(Duration::from_millis(200));
    let mut seqs = Vec::new();
    while let Some(event) = events.next().await {
        seqs.push(event.unwrap().seq);
    }
    assert_eq!(seqs, (1..=1_000).collect::<Vec<_>>(), "each once, in order");
    assert_eq!(events.resumes(), 6);
    let afters: Vec<u64> = service.event_requests().iter().map(|r| r.after).collect();
    assert_eq!(afters, [0, 100, 101, 101, 351, 351, 684]);
    assert_eq!(service.events_sent(), 1_000, "no event sent twice");
}

#[tokio::test]
async fn max_elapsed_ends_a_stream_that_keeps_stalling() {
    let service = Service::start().await;
    service.publish_events(1_000);
    service.script_events([EventFault::StallAfter(5); 50]);
    let policy = RetryPolicy::builder()
        .max_attempts(100)
        .delay(Duration::from_millis(10))
        .max_elapsed(Duration::from_millis(700))
        .build()
        .unwrap();
    let client = reqwest::Client::new();
    let url = service.url();
    let started = Instant::now();
    let mut events = policy
        .retry_stream(|after: u64| open_feed(&client, &url, after))
        .resume(0, |after, event: &Event| *after = event.seq)
        .idle_timeout(Duration::from_millis(150));
    let mut seqs = Vec::new();
    let mut last = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => seqs.push(event.seq),
            Err(e) => last = Some(e),
        }
    }
    let took = started.elapsed();
    assert!(
        last.is_some(),
        "the stream ends with an error at the deadline"
    );
    // Without the deadline: up to 100 attempts of 150 ms each.
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(took >= Duration::from_millis(300), "took {took:?}");
    let n = seqs.len() as u64;
    assert!(n >= 10, "several attempts delivered: {n}");
    assert_eq!(
        seqs,
        (1..=n).collect::<Vec<_>>(),
        "each once, in order, up to the end"
    );
}

#[tokio::test]
async fn a_budget_that_runs_dry_ends_the_stream_with_the_last_failure() {
    let service = Service::start().await;
    service.publish_events(100);
    service.script_events([EventFault::ResetAfter(10)]);
    service.script_events([EventFault::Status(503); 10]);
    let budget = RetryBudget::builder()
        .max_tokens(10)
        .retry_cost(5)
        .timeout_cost(5)
        .build()
        .unwrap();
    let policy = policy(10);
    let client = reqwest::Client::new();
    let url = service.url();
    let mut events = policy
        .retry_stream(|after: u64| open_feed(&client, &url, after))
        .resume(0, |after, event: &Event| *after = event.seq)
        .budget(&budget);
    let mut seqs = Vec::new();
    let mut last = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => seqs.push(event.seq),
            Err(e) => last = Some(e),
        }
    }
    assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
    assert_eq!(last.as_deref(), Some("status 503"));
    assert_eq!(budget.available(), 0, "spent on the resumes that failed");
    let statuses: Vec<u16> = service.event_requests().iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [200, 503, 503],
        "the first resume paid back at its first event? no: it failed"
    );
}

// ---- A server of the test's own, for what the service does not do ---------------------------

/// A server whose first answer is a 200 of `len` bytes (with `etag`, if any) cut after `cut`
/// bytes (the body fails: hyper closes the connection), and whose later answers are `resume`'s.
async fn hand_server(
    len: usize,
    cut: usize,
    etag: Option<&'static str>,
    resume: fn(&http::HeaderMap) -> axum::response::Response,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let app = axum::Router::new().route(
        "/f",
        axum::routing::get(move |headers: http::HeaderMap| {
            let first = seen.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                if !first {
                    return resume(&headers);
                }
                // The failure comes after the first piece was sent (hyper flushes it while
                // the body waits).
                let first = futures_util::stream::once(async move {
                    Ok::<_, std::io::Error>(Bytes::from(vec![7u8; cut]))
                });
                let then = futures_util::stream::once(async {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Err(std::io::Error::other("the disk failed"))
                });
                let mut response =
                    axum::response::Response::new(axum::body::Body::from_stream(first.chain(then)));
                let h = response.headers_mut();
                h.insert(http::header::CONTENT_LENGTH, len.into());
                if let Some(etag) = etag {
                    h.insert(http::header::ETAG, http::HeaderValue::from_static(etag));
                }
                response
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/f", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, calls)
}

#[tokio::test]
async fn a_partial_answer_from_another_offset_is_bad_range_and_not_resumed() {
    let (url, calls) = hand_server(1_000, 400, Some("\"v1\""), |_| {
        let mut response = axum::response::Response::new(axum::body::Body::from(vec![7u8; 1_000]));
        *response.status_mut() = http::StatusCode::PARTIAL_CONTENT;
        let h = response.headers_mut();
        h.insert(http::header::ETAG, http::HeaderValue::from_static("\"v1\""));
        h.insert(
            http::header::CONTENT_RANGE,
            http::HeaderValue::from_static("bytes 0-999/1000"),
        );
        response
    })
    .await;
    let policy = policy(3);
    let client = reqwest::Client::new();
    let got = drain(download(&policy, &client, &url)).await;
    assert_eq!(got.len, 400);
    let Some(DownloadError::BadRange {
        expected,
        content_range,
    }) = got.error
    else {
        panic!("not BadRange: {:?}", got.error);
    };
    assert_eq!(
        (expected, content_range.as_deref()),
        (400, Some("bytes 0-999/1000"))
    );
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "not retried"
    );
}

#[tokio::test]
async fn bytes_from_an_answer_without_validators_are_not_resumed() {
    let (url, calls) = hand_server(1_000, 400, None, |_| {
        axum::response::Response::new(axum::body::Body::from(vec![8u8; 1_000]))
    })
    .await;
    let policy = policy(3);
    let client = reqwest::Client::new();
    let got = drain(download(&policy, &client, &url)).await;
    assert_eq!(got.len, 400);
    assert!(
        matches!(
            got.error,
            Some(DownloadError::NoValidator { delivered: 400 })
        ),
        "{:?}",
        got.error
    );
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "no resume that could splice"
    );
}

#[tokio::test]
async fn a_resume_waits_for_the_servers_retry_after() {
    static RESUMES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let (url, calls) = hand_server(1_000, 400, Some("\"v1\""), |headers| {
        if RESUMES.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            let mut busy = axum::response::Response::new(axum::body::Body::empty());
            *busy.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
            busy.headers_mut().insert(
                http::header::RETRY_AFTER,
                http::HeaderValue::from_static("1"),
            );
            return busy;
        }
        assert_eq!(headers[http::header::RANGE], "bytes=400-");
        assert_eq!(headers[http::header::IF_RANGE], "\"v1\"");
        let mut rest = axum::response::Response::new(axum::body::Body::from(vec![7u8; 600]));
        *rest.status_mut() = http::StatusCode::PARTIAL_CONTENT;
        let h = rest.headers_mut();
        h.insert(http::header::ETAG, http::HeaderValue::from_static("\"v1\""));
        h.insert(
            http::header::CONTENT_RANGE,
            http::HeaderValue::from_static("bytes 400-999/1000"),
        );
        rest
    })
    .await;
    let policy = policy(3);
    let client = reqwest::Client::new();
    let started = Instant::now();
    let got = drain(download(&policy, &client, &url)).await;
    assert!(got.error.is_none(), "{:?}", got.error);
    assert_eq!(got.len, 1_000);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 3);
}

#[tokio::test]
async fn opened_reports_a_missing_object_up_front_and_retries_a_503_first() {
    let service = Service::start().await;
    let object = service.put_object("there", 10_000);
    service.script_object("there", [ObjectFault::Status(503)]);
    let policy = policy(3);
    let client = reqwest::Client::new();
    let missing = download(&policy, &client, &format!("{}/objects/gone", service.url()))
        .opened()
        .await;
    let Err(DownloadError::Status { status, .. }) = missing else {
        panic!("a 404 is returned by `opened`: {missing:?}");
    };
    assert_eq!(status, 404);
    let there = download(
        &policy,
        &client,
        &format!("{}/objects/there", service.url()),
    )
    .opened()
    .await
    .expect("the 503 was retried before the stream was handed over");
    let got = drain(there).await;
    assert_eq!(got.sha256, sha256_of(&object));
    let statuses: Vec<u16> = service
        .object_requests("there")
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [503, 200]);
}
