//! A body that trickles: [`Fault::SlowBody`](super::Fault::SlowBody).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::Sleep;

/// The pieces of a body, each sent after a pause, so that the whole takes `total`.
pub(super) struct Trickle {
    pieces: VecDeque<Bytes>,
    every: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    left: u64,
}

/// At most this many pieces.
const PIECES: usize = 4;

impl Trickle {
    pub(super) fn new(body: &str, total: Duration) -> Self {
        let bytes = Bytes::copy_from_slice(body.as_bytes());
        let size = bytes.len().div_ceil(PIECES).max(1);
        let pieces: VecDeque<Bytes> = (0..bytes.len())
            .step_by(size)
            .map(|at| bytes.slice(at..(at + size).min(bytes.len())))
            .collect();
        let every = total / u32::try_from(pieces.len().max(1)).unwrap_or(1);
        Trickle {
            left: bytes.len() as u64,
            pieces,
            every,
            sleep: None,
        }
    }
}

impl Body for Trickle {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.pieces.is_empty() {
            return Poll::Ready(None);
        }
        let every = self.every;
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(every)));
        ready!(sleep.as_mut().poll(cx));
        self.sleep = None;
        let piece = self.pieces.pop_front().unwrap_or_default();
        self.left -= piece.len() as u64;
        Poll::Ready(Some(Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.pieces.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}
