//! What the tests' clients use: an HTTP client and the `Retry-After` parser.

/// The delay a response's `Retry-After` header asks for (delta-seconds or an HTTP-date): the
/// library's own parser (this crate's feature `http`, on by default, which turns on
/// `reattempt/http`).
#[cfg(feature = "http")]
pub use reattempt::http::retry_after;

/// The HTTP client of the examples and tests: reqwest, talking straight to loopback (no proxy
/// from the environment).
///
/// # Panics
/// When reqwest cannot build a client (no TLS is asked for, so it does not happen).
///
/// ```
/// let client = reattempt_support::http_client();
/// # drop(client);
/// ```
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("an HTTP client")
}
