//! A content-coded object (stored gzipped: S3's `Content-Encoding: gzip` metadata, nginx's
//! `gzip_static`), sent gzipped with a strong `ETag` whatever the request's `Accept-Encoding`.
//! `Range` counts the bytes as sent (gzip's): a client that decodes counts other bytes, so a
//! download through it re-reads the whole object and skips, and one that does not decode resumes
//! the encoded bytes by `Range`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reattempt::http::{DownloadError, download};

use super::policy;

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A gzip member of stored (uncompressed) deflate blocks.
fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    let blocks: Vec<&[u8]> = data.chunks(65_535).collect();
    for (i, block) in blocks.iter().enumerate() {
        out.push(u8::from(i + 1 == blocks.len()));
        let len = u16::try_from(block.len()).unwrap();
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&u32::try_from(data.len()).unwrap().to_le_bytes());
    out
}

/// What one request asked: its `Range` start, and its `Accept-Encoding`.
#[derive(Debug, Clone, PartialEq)]
struct Asked {
    from: Option<usize>,
    accept_encoding: Option<String>,
}

/// A server of `encoded` (a gzip member) as `Content-Encoding: gzip`, honouring `Range` over the
/// encoded bytes; its first answer is cut after 100,000 of them. Gives its URL and the requests.
async fn gzip_server(encoded: Arc<Vec<u8>>) -> (String, Arc<Mutex<Vec<Asked>>>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let requests = Arc::clone(&asked);
    let app = axum::Router::new().route(
        "/f",
        axum::routing::get(move |h: http::HeaderMap| {
            let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
            let enc = Arc::clone(&encoded);
            let requests = Arc::clone(&requests);
            async move {
                let total = enc.len();
                let from = h
                    .get("range")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("bytes="))
                    .and_then(|v| v.strip_suffix('-'))
                    .and_then(|v| v.parse::<usize>().ok());
                let accept_encoding = h
                    .get("accept-encoding")
                    .map(|v| v.to_str().unwrap().to_owned());
                requests.lock().unwrap().push(Asked {
                    from,
                    accept_encoding,
                });
                let start = from.unwrap_or(0).min(total);
                let part = Bytes::copy_from_slice(&enc[start..]);
                let body = if first {
                    let head = part.slice(..100_000);
                    axum::body::Body::from_stream(
                        futures_util::stream::once(async move { Ok::<_, std::io::Error>(head) })
                            .chain(futures_util::stream::once(async {
                                tokio::time::sleep(Duration::from_millis(50)).await;
                                Err(std::io::Error::other("cut"))
                            })),
                    )
                } else {
                    axum::body::Body::from(part)
                };
                let mut r = axum::response::Response::new(body);
                let hs = r.headers_mut();
                hs.insert("etag", http::HeaderValue::from_static("\"gz1\""));
                hs.insert("content-encoding", http::HeaderValue::from_static("gzip"));
                hs.insert("content-length", (total - start).into());
                if from.is_some() {
                    hs.insert(
                        "content-range",
                        format!("bytes {start}-{}/{total}", total - 1)
                            .parse()
                            .unwrap(),
                    );
                    *r.status_mut() = http::StatusCode::PARTIAL_CONTENT;
                }
                r
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/f", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, asked)
}

async fn collect(client: &reqwest::Client, url: &str) -> (Vec<u8>, Option<DownloadError>) {
    let policy = policy(3);
    let mut chunks = download(&policy, client, url);
    let mut file = Vec::new();
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(c) => file.extend_from_slice(&c),
            Err(e) => return (file, Some(e)),
        }
    }
    (file, None)
}

fn object() -> Vec<u8> {
    (0..300_000u32).map(|i| (i % 251) as u8).collect()
}

fn identity(from: Option<usize>) -> Asked {
    Asked {
        from,
        accept_encoding: Some("identity".into()),
    }
}

/// A decoding client (reqwest's `gzip` on) strips `Content-Length` from what it decodes: the
/// resume's 206 tells the download that its count is of decoded bytes, so it re-reads the
/// whole object under the same `ETag` and skips what was delivered, never splicing a decoded
/// prefix with an encoded range. Every request asks for `identity`.
#[tokio::test]
async fn a_decoding_client_re_reads_the_whole_object_and_skips_rather_than_splice() {
    let object = object();
    let (url, asked) = gzip_server(Arc::new(gzip(&object))).await;
    let client = reqwest::Client::new();
    let (file, error) = collect(&client, &url).await;
    assert!(error.is_none(), "{error:?}");
    assert!(file == object, "{} bytes, not the object", file.len());
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert_eq!(asked[0], identity(None));
    assert!(asked[1].from.is_some(), "a Range first: {asked:?}");
    assert_eq!(asked[2], identity(None), "then the whole object");
}

/// A client that does not decode delivers the encoded bytes, which `Range` counts: it resumes
/// where the cut was, and the file is the gzip member as stored.
#[tokio::test]
async fn a_client_that_does_not_decode_resumes_the_encoded_bytes_by_range() {
    let encoded = Arc::new(gzip(&object()));
    let (url, asked) = gzip_server(Arc::clone(&encoded)).await;
    let client = reqwest::Client::builder().no_gzip().build().unwrap();
    let (file, error) = collect(&client, &url).await;
    assert!(error.is_none(), "{error:?}");
    assert!(
        file == *encoded,
        "{} bytes, not the encoded object",
        file.len()
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked, [identity(None), identity(Some(100_000))]);
}
