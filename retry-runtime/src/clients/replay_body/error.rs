//! The errors a [`ReplayBody`] clone yields: [`BodyNotReplayable`] when it cannot replay the
//! body, [`BodyFailed`] for the inner body's own error.
//!
//! [`ReplayBody`]: super::body::ReplayBody

use std::error::Error;
use std::fmt;

pub(super) type BoxError = Box<dyn Error + Send + Sync>;

/// A [`ReplayBody`] clone that cannot yield its body: the body was larger than its cap and an
/// earlier attempt (another clone) has sent it, or the inner body failed while another clone
/// read it. A retrying client does not send such a clone (it checks
/// [`ReplayBody::is_capped`]); this error is what a clone sent anyway yields.
///
/// ```
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     use bytes::Bytes;
///     use http_body_util::{BodyExt, Full};
///     use reattempt::http::{BodyNotReplayable, ReplayBody};
///
///     let body = ReplayBody::new(Full::new(Bytes::from(vec![1; 100])), 10);
///     let first = body.clone().collect().await.unwrap().to_bytes();
///     assert_eq!(first.len(), 100, "capped: the first attempt sends it all");
///     let error = body.clone().collect().await.unwrap_err();
///     assert!(error.downcast_ref::<BodyNotReplayable>().is_some());
/// }
/// ```
///
/// [`ReplayBody`]: super::body::ReplayBody
/// [`ReplayBody::is_capped`]: super::body::ReplayBody::is_capped
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyNotReplayable {
    why: Why,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// The body exceeded this cap, and another attempt sent it.
    Capped(usize),
    /// The inner body failed while another attempt read it.
    Failed,
    /// This copy's attempt is over (it failed); the body is left to the next.
    Retired,
}

impl BodyNotReplayable {
    pub(super) fn capped(cap: usize) -> Self {
        BodyNotReplayable {
            why: Why::Capped(cap),
        }
    }

    pub(super) fn failed() -> Self {
        BodyNotReplayable { why: Why::Failed }
    }

    pub(super) fn retired() -> Self {
        BodyNotReplayable { why: Why::Retired }
    }

    /// Whether the copy was left behind (another copy took the body past its cap, or its own
    /// attempt was over), rather than the body itself failing.
    #[cfg_attr(
        not(feature = "tonic"),
        allow(dead_code, reason = "used by the gRPC layer")
    )]
    pub(crate) fn left_behind(&self) -> bool {
        matches!(self.why, Why::Capped(_) | Why::Retired)
    }
}

impl fmt::Display for BodyNotReplayable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.why {
            Why::Retired => f.write_str(
                "reattempt: this attempt is over; the request body is left to the next one",
            ),
            Why::Capped(cap) => write!(
                f,
                "reattempt: the request body is larger than its replay cap ({cap} bytes) and was sent by another attempt: it cannot be sent again"
            ),
            Why::Failed => f.write_str(
                "reattempt: the request body failed while another attempt read it: it cannot be sent again",
            ),
        }
    }
}

impl Error for BodyNotReplayable {}

/// The inner body's own error, as the copy that read it sees it: marked, so that a retrying
/// client tells the caller's failing body (no retry can help) from the server's failures. Its
/// message and source are the inner error's.
#[derive(Debug)]
pub(crate) struct BodyFailed(pub(crate) BoxError);

impl fmt::Display for BodyFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl Error for BodyFailed {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.0)
    }
}
