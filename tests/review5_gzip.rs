//! Review 5: a download of a content-coded object through a reqwest client with `gzip` on (a
//! usual client: reqwest's `gzip` feature turns decoding on by default). `Range` counts the
//! bytes of the representation as sent (gzip's); the checkpoint counts the bytes reqwest
//! decoded. An object stored gzipped (S3's `Content-Encoding: gzip` metadata, nginx's
//! `gzip_static`) is sent gzipped with a strong ETag whatever the request's Accept-Encoding.
#![cfg(all(feature = "reqwest", feature = "testing-http"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reattempt::RetryPolicy;
use reattempt::http::download;

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
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

#[tokio::test]
async fn review5_a_gzipped_object_resumes_at_a_decoded_offset() {
    let object: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let encoded = Arc::new(gzip(&object));
    let calls = Arc::new(AtomicUsize::new(0));
    let ranges = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let (enc, seen, r2) = (Arc::clone(&encoded), Arc::clone(&calls), Arc::clone(&ranges));
    let app = axum::Router::new().route(
        "/f",
        axum::routing::get(move |h: http::HeaderMap| {
            let first = seen.fetch_add(1, Ordering::SeqCst) == 0;
            let enc = Arc::clone(&enc);
            let ranges = Arc::clone(&r2);
            async move {
                let total = enc.len();
                let from = h
                    .get("range")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("bytes="))
                    .and_then(|v| v.strip_suffix('-'))
                    .and_then(|v| v.parse::<usize>().ok());
                ranges.lock().unwrap().push(format!("{from:?}"));
                let start = from.unwrap_or(0).min(total);
                let part = Bytes::copy_from_slice(&enc[start..]);
                let body = if first {
                    // Cut after 100,000 encoded bytes.
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
                        format!("bytes {start}-{}/{total}", total - 1).parse().unwrap(),
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

    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .delay(Duration::from_millis(2))
        .build()
        .unwrap();
    let client = reqwest::Client::new(); // `gzip` on: decoding is on
    let mut chunks = download(&policy, &client, &url);
    let (mut file, mut error) = (Vec::new(), None);
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(c) => file.extend_from_slice(&c),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let ranges = ranges.lock().unwrap().clone();
    let good = file == object || file == *encoded;
    assert!(
        good,
        "delivered {} bytes (object {} decoded, {} encoded), ended {:?}; requests' Range starts: {ranges:?}; \
         the bytes after the seam match the object: {}",
        file.len(),
        object.len(),
        encoded.len(),
        error.as_ref().map(ToString::to_string),
        file.len() > 99_990 && object.starts_with(&file[..file.len().min(object.len())]),
    );
}
