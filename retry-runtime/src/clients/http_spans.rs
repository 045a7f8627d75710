//! What the HTTP drivers (the tower layer's `.http()`, the reqwest middleware) record on the
//! call's and the attempts' spans (feature `spans`), by OpenTelemetry's HTTP client conventions:
//! on the call `http.request.method`, `server.address` and `server.port` (from the request's
//! URI: never the whole URL, whose path and query may carry secrets); on each attempt
//! `http.request.resend_count` (only on a resend, as the conventions say) and
//! `http.response.status_code` when a response came.

#[cfg(any(test, all(feature = "tower", feature = "http")))]
use http::Uri;
use http::{Method, StatusCode};

use crate::engine::context::with_spans;

/// An attempt's request to `uri` is being made, inside the attempt (its copy of the request):
/// the call's request attributes, and the attempt's resend count.
#[cfg(all(feature = "tower", feature = "http"))]
pub(crate) fn request_sent(method: &Method, uri: &Uri) {
    sent(method, uri.host(), port(uri));
}

/// As [`request_sent`], for a request to a host and port already parsed (reqwest's `Url`).
pub(crate) fn sent(method: &Method, host: Option<&str>, port: Option<u16>) {
    with_spans(|spans, tag, number| {
        if number <= 1 {
            spans.record_call("http.request.method", known_method(method));
            if let Some(host) = host {
                spans.record_call("server.address", host);
            }
            if let Some(port) = port {
                spans.record_call("server.port", port);
            }
        } else {
            spans.record_attempt(tag, "http.request.resend_count", i64::from(number - 1));
        }
    });
}

/// An attempt answered with `status` (noted where the driver judges it, recorded on the
/// attempt's span when the engine decides).
pub(crate) fn response_came(status: StatusCode) {
    crate::engine::spans::note_attempt(
        "http.response.status_code",
        i64::from(status.as_u16()),
        crate::engine::spans::ErrorType::Number,
    );
}

/// The method as the conventions name it: one of the known methods, else `_OTHER` (a method
/// is an open set: its text is the caller's).
fn known_method(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::CONNECT => "CONNECT",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::PATCH => "PATCH",
        _ => "_OTHER",
    }
}

/// The port the request goes to: the URI's, else its scheme's default.
#[cfg(any(test, all(feature = "tower", feature = "http")))]
fn port(uri: &Uri) -> Option<u16> {
    uri.port_u16().or_else(|| match uri.scheme_str() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_outside_the_known_set_is_other() {
        assert_eq!(known_method(&Method::PATCH), "PATCH");
        assert_eq!(
            known_method(&Method::from_bytes(b"PURGE").unwrap()),
            "_OTHER"
        );
    }

    #[test]
    fn the_port_is_the_uris_else_its_schemes() {
        let port_of = |uri: &str| port(&uri.parse().unwrap());
        assert_eq!(port_of("http://api.test:8080/x"), Some(8080));
        assert_eq!(port_of("https://api.test/x"), Some(443));
        assert_eq!(port_of("http://api.test/x"), Some(80));
        assert_eq!(port_of("/x"), None);
    }
}
