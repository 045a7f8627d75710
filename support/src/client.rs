//! What the clients of the examples and tests use: an HTTP client, error and `Retry-After`
//! helpers, and a tracing subscriber.

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

/// The innermost cause of an error ("Connection refused (os error 111)"), which says more than
/// reqwest's "error sending request for url (…)".
///
/// ```
/// use std::io::{Error, ErrorKind};
///
/// #[derive(Debug)]
/// struct Send(Error);
/// impl std::fmt::Display for Send {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("error sending request")
///     }
/// }
/// impl std::error::Error for Send {
///     fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
///         Some(&self.0)
///     }
/// }
///
/// let error = Send(Error::from(ErrorKind::ConnectionRefused));
/// let refused = Error::from(ErrorKind::ConnectionRefused).to_string();
/// assert_eq!(reattempt_support::root_cause(&error), refused);
/// ```
pub fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// A `tracing` subscriber printing to stdout, filtered by `RUST_LOG` (`RUST_LOG=reattempt=debug`
/// shows each retry), or by `default` when it is unset; times are since the program started. A
/// second call does nothing.
///
/// ```
/// reattempt_support::init_tracing("warn");
/// ```
pub fn init_tracing(default: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(tracing_subscriber::fmt::time::Uptime::default())
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .try_init();
}
