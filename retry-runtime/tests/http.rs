//! The `http` feature: `Retry-After` parsing and which status codes are transient; with `reqwest`,
//! which real `reqwest::Error`s (made against loopback sockets) are transient.
#![cfg(feature = "http")]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderValue, StatusCode, header::RETRY_AFTER};
use retry_runtime::http::{retry_after, retry_after_at};
use retry_runtime::{Transient, transient};

fn header(value: &str) -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert(RETRY_AFTER, value.parse().unwrap());
    map
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Sun, 06 Nov 1994 08:49:37 GMT.
const RFC_DATE_SECS: u64 = 784_111_777;

#[test]
fn delta_seconds() {
    assert_eq!(retry_after(&header("120")), Some(secs(120)));
    assert_eq!(retry_after(&header(" 5 ")), Some(secs(5)));
    assert_eq!(retry_after(&header("0")), Some(Duration::ZERO));
}

#[test]
fn malformed_delta_seconds_are_no_delay() {
    for bad in ["-1", "1.5", "abc", "", "+5", "5s"] {
        assert_eq!(retry_after(&header(bad)), None, "{bad:?}");
    }
}

#[test]
fn huge_delta_seconds_saturate() {
    let thirty_digits = "123456789012345678901234567890";
    assert_eq!(thirty_digits.len(), 30);
    assert_eq!(retry_after(&header(thirty_digits)), Some(secs(u64::MAX)));
}

#[test]
fn http_date_in_the_future() {
    let then = SystemTime::now() + Duration::from_secs(90);
    let map = header(&httpdate::fmt_http_date(then));
    let delay = retry_after(&map).unwrap();
    // The date drops the sub-second part and a little time passes before `now()` is read.
    assert!(
        delay <= Duration::from_secs(90) && delay >= Duration::from_secs(85),
        "{delay:?}"
    );

    let now = UNIX_EPOCH + Duration::from_secs(RFC_DATE_SECS - 90);
    let map = header("Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(retry_after_at(&map, now), Some(secs(90)));
}

#[test]
fn http_date_in_the_past_is_zero() {
    let then = SystemTime::now() - Duration::from_secs(3600);
    assert_eq!(
        retry_after(&header(&httpdate::fmt_http_date(then))),
        Some(Duration::ZERO)
    );
    assert_eq!(
        retry_after(&header("Sun, 06 Nov 1994 08:49:37 GMT")),
        Some(Duration::ZERO)
    );
}

#[test]
fn obsolete_date_forms() {
    let now = UNIX_EPOCH + Duration::from_secs(RFC_DATE_SECS - 30);
    for form in ["Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
        assert_eq!(retry_after_at(&header(form), now), Some(secs(30)), "{form}");
    }
}

#[test]
fn missing_header_is_no_delay() {
    assert_eq!(retry_after(&HeaderMap::new()), None);
    let mut map = HeaderMap::new();
    map.insert(http::header::DATE, HeaderValue::from_static("120"));
    assert_eq!(retry_after(&map), None);
}

#[test]
fn non_ascii_value_is_no_delay() {
    let mut map = HeaderMap::new();
    map.insert(RETRY_AFTER, HeaderValue::from_bytes(b"12\xc3\xa9").unwrap());
    assert_eq!(retry_after(&map), None);
}

#[test]
fn two_headers_first_valid_wins() {
    let mut map = HeaderMap::new();
    map.append(RETRY_AFTER, HeaderValue::from_static("10"));
    map.append(RETRY_AFTER, HeaderValue::from_static("20"));
    assert_eq!(retry_after(&map), Some(secs(10)));

    let mut map = HeaderMap::new();
    map.append(RETRY_AFTER, HeaderValue::from_static("tomorrow"));
    map.append(RETRY_AFTER, HeaderValue::from_static("20"));
    assert_eq!(retry_after(&map), Some(secs(20)));
}

#[test]
fn status_code_table() {
    const TRANSIENT: [u16; 6] = [408, 429, 500, 502, 503, 504];
    for code in 100..=599 {
        let status = StatusCode::from_u16(code).unwrap();
        assert_eq!(status.is_transient(), TRANSIENT.contains(&code), "{status}");
        assert_eq!(transient(&status), status.is_transient());
    }
    assert!(!transient(&StatusCode::NOT_IMPLEMENTED));
    assert!(!transient(&StatusCode::HTTP_VERSION_NOT_SUPPORTED));
}

/// Real `reqwest::Error`s, made against loopback sockets only; every wait is bounded.
#[cfg(feature = "reqwest")]
mod reqwest_errors {
    use std::io::{ErrorKind, Read, Write};
    use std::net::{SocketAddr, TcpListener, TcpStream};
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    use retry_runtime::Transient;
    use retry_runtime::http::retry_after;

    fn client(timeout: Duration) -> reqwest::Client {
        reqwest::Client::builder()
            .no_proxy()
            .timeout(timeout)
            .build()
            .unwrap()
    }

    fn url(addr: SocketAddr) -> String {
        format!("http://{addr}/")
    }

    /// A loopback server handling up to `connections` connections with `handle`, then
    /// stopping; it also stops if no client comes within 5 s, so a failing test cannot hang.
    fn serve(
        connections: usize,
        handle: impl Fn(TcpStream) + Send + 'static,
    ) -> (SocketAddr, JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(5);
            let mut served = 0;
            while served < connections && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        stream.set_nonblocking(false).unwrap();
                        stream
                            .set_read_timeout(Some(Duration::from_secs(5)))
                            .unwrap();
                        handle(stream);
                        served += 1;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => panic!("accept: {e}"),
                }
            }
        });
        (addr, server)
    }

    /// Reads a request's head (up to the blank line; the tests send no bodies).
    fn read_head(stream: &mut TcpStream) {
        let mut head = Vec::new();
        let mut byte = [0; 1];
        while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
            match stream.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => return,
            }
        }
    }

    fn respond(response: &'static str) -> impl Fn(TcpStream) + Send + 'static {
        move |mut stream| {
            read_head(&mut stream);
            // The client may already have given up (a redirect limit, a short body): ignore.
            let _ = stream.write_all(response.as_bytes());
        }
    }

    #[test]
    fn builder_error_is_permanent() {
        let error = reqwest::Client::new().get("not a url").build().unwrap_err();
        assert!(error.is_builder());
        assert!(!error.is_transient());
    }

    #[tokio::test]
    async fn refused_connection_is_transient() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // The listener is dropped: nothing listens on `port` any more.
        let error = client(Duration::from_secs(5))
            .get(format!("http://127.0.0.1:{port}/"))
            .send()
            .await
            .unwrap_err();
        assert!(error.is_connect(), "{error:?}");
        assert!(error.is_transient());
    }

    #[tokio::test]
    async fn timeout_is_transient() {
        // The kernel completes the handshake for the listener's backlog; nobody ever answers.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let error = client(Duration::from_millis(200))
            .get(url(addr))
            .send()
            .await
            .unwrap_err();
        assert!(error.is_timeout(), "{error:?}");
        assert!(!error.is_connect(), "{error:?}");
        assert!(error.is_transient());
        drop(listener);
    }

    #[tokio::test]
    async fn status_errors_follow_the_status() {
        let (addr, server) = serve(
            1,
            respond(
                "HTTP/1.1 503 Service Unavailable\r\nretry-after: 7\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            ),
        );
        let response = client(Duration::from_secs(5))
            .get(url(addr))
            .send()
            .await
            .unwrap();
        assert_eq!(
            retry_after(response.headers()),
            Some(Duration::from_secs(7))
        );
        let error = response.error_for_status().unwrap_err();
        assert_eq!(error.status(), Some(http::StatusCode::SERVICE_UNAVAILABLE));
        assert!(error.is_transient());
        server.join().unwrap();

        let (addr, server) = serve(
            1,
            respond("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"),
        );
        let error = client(Duration::from_secs(5))
            .get(url(addr))
            .send()
            .await
            .unwrap()
            .error_for_status()
            .unwrap_err();
        assert_eq!(error.status(), Some(http::StatusCode::NOT_FOUND));
        assert!(!error.is_transient());
        server.join().unwrap();
    }

    /// Closing a socket with unread data makes Linux send RST: the client's read fails with
    /// `ConnectionReset`, an `io::Error` deep in the reqwest error's source chain.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn reset_after_connecting_is_transient() {
        let (addr, server) = serve(1, |mut stream| {
            let mut first = [0; 1];
            let _ = stream.read(&mut first);
        });
        let error = client(Duration::from_secs(5))
            .get(url(addr))
            .send()
            .await
            .unwrap_err();
        assert!(error.is_request(), "{error:?}");
        assert!(!error.is_connect() && !error.is_timeout(), "{error:?}");
        assert!(error.is_transient(), "{error:?}");
        server.join().unwrap();
    }

    /// A connection closed cleanly before any response (a kept-alive connection the server
    /// dropped) is hyper's "incomplete message": a request error, retried on a fresh connection.
    #[tokio::test]
    async fn closed_before_answering_is_transient() {
        let (addr, server) = serve(1, |mut stream| read_head(&mut stream));
        let error = client(Duration::from_secs(5))
            .get(url(addr))
            .send()
            .await
            .unwrap_err();
        assert!(error.is_request(), "{error:?}");
        assert!(!error.is_connect() && !error.is_timeout(), "{error:?}");
        assert!(error.is_transient(), "{error:?}");
        server.join().unwrap();
    }

    #[tokio::test]
    async fn redirect_error_is_permanent() {
        let (addr, server) = serve(
            3,
            respond(
                "HTTP/1.1 302 Found\r\nlocation: /\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            ),
        );
        let error = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::limited(2))
            .build()
            .unwrap()
            .get(url(addr))
            .send()
            .await
            .unwrap_err();
        assert!(error.is_redirect(), "{error:?}");
        assert!(!error.is_transient());
        server.join().unwrap();
    }

    /// reqwest reports a body cut short while it is read as a decode error, with the EOF behind
    /// it (the server closed the connection short of its content-length: a crash mid-answer).
    /// An EOF is classified as a reset is: transient, its outcome unknown (the server had begun
    /// to answer, so it acted), and so retried by the crate only on an idempotent call.
    #[tokio::test]
    async fn a_short_body_is_an_unknown_outcome() {
        let (addr, server) = serve(
            1,
            respond("HTTP/1.1 200 OK\r\ncontent-length: 100\r\nconnection: close\r\n\r\nshort"),
        );
        let response = client(Duration::from_secs(5))
            .get(url(addr))
            .send()
            .await
            .unwrap();
        let error = response.text().await.unwrap_err();
        assert!(error.is_decode(), "{error:?}");
        assert!(error.is_transient(), "{error:?}");
        assert_eq!(error.effect(), retry_runtime::Effect::Unknown, "{error:?}");
        server.join().unwrap();
    }
}
