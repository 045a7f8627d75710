//! [`ReplayBody`]: the recording its clones share, and how a clone replays it and reads on
//! from the inner body.

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

use super::copies::{AttemptFlags, Committed, Copies, NO_HOLDER, Retire};
use super::error::{BodyFailed, BodyNotReplayable, BoxError};

/// The cap of a [`ReplayBody`] when none is given: 64 KiB recorded at most per request.
///
/// ```
/// assert_eq!(reattempt::http::DEFAULT_REPLAY_CAP, 65_536);
/// ```
pub const DEFAULT_REPLAY_CAP: usize = 64 * 1024;

/// A request body that can be sent again: the bytes an attempt sends are recorded (up to a cap)
/// and every clone replays them, then reads on from the inner body.
///
/// Clones share one recording (cloning is an `Arc` clone); each clone reads from the start. A
/// retrying client keeps one clone and gives each attempt another. Clones may be polled at
/// once (a hedge while the first attempt still sends): the one that is ahead reads the inner
/// body, the others wait for it and are woken when it has read (or was dropped). Trailers are
/// recorded and replayed too.
///
/// Past the cap (a chunk that would make the recording larger than `cap` bytes, or an inner
/// body whose size hint says it is larger from the start) the recording is dropped and the
/// body is [capped](Self::is_capped): the clone that reads it streams the rest of it to its
/// attempt, and any other clone that needs a recorded chunk fails with [`BodyNotReplayable`].
/// A retrying client must then not retry (nor hedge) the call: it is committed to the attempt
/// that reads the body. The tower layer's `.http()` and the reqwest middleware check it.
///
/// `ReplayBody<B>` is `Send` and `Sync` when `B` is `Send` (the inner body is kept behind a
/// mutex).
///
/// ```
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     use bytes::Bytes;
///     use http_body_util::{BodyExt, Full};
///     use reattempt::http::{DEFAULT_REPLAY_CAP, ReplayBody};
///
///     let body = ReplayBody::new(Full::new(Bytes::from("order 42")), DEFAULT_REPLAY_CAP);
///     let first = body.clone().collect().await.unwrap().to_bytes();
///     let again = body.clone().collect().await.unwrap().to_bytes();
///     assert_eq!(first, "order 42");
///     assert_eq!(again, first);
///     assert!(!body.is_capped());
/// }
/// ```
pub struct ReplayBody<B> {
    shared: Arc<Shared<B>>,
    /// This clone's id (its waker's key).
    id: u64,
    /// The number of data chunks this clone has yielded.
    pos: usize,
    /// The number of bytes this clone has yielded.
    sent: usize,
    /// Whether this clone has yielded the trailers.
    trailers_sent: bool,
    /// This clone's attempt: whether it is being sent, or over.
    attempt: Arc<AttemptFlags>,
}

struct Shared<B> {
    next_id: AtomicU64,
    state: Mutex<State<B>>,
    /// The cap, and what the clones' attempts share (readable without the lock).
    copies: Arc<Copies>,
}

struct State<B> {
    /// The inner body, until it has ended.
    body: Option<Pin<Box<B>>>,
    /// The data chunks read from the inner body, while not capped.
    chunks: Vec<Bytes>,
    /// The number of data chunks read from the inner body.
    read: usize,
    /// The number of bytes read from the inner body.
    read_bytes: usize,
    trailers: Option<HeaderMap>,
    /// The inner body has ended (its `poll_frame` gave `None`).
    done: bool,
    /// The inner body failed: the clone that read it got its error.
    failed: bool,
}

impl<B> Shared<B> {
    fn lock(&self) -> MutexGuard<'_, State<B>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<B> ReplayBody<B>
where
    B: Body<Data = Bytes>,
{
    /// Wraps `body`, recording at most `cap` bytes of it ([`DEFAULT_REPLAY_CAP`] is a usual
    /// value). A body whose size hint says it is larger than `cap` (its exact size, or its
    /// lower bound) is capped from the start: nothing of it is recorded.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use http_body_util::Full;
    /// use reattempt::http::ReplayBody;
    ///
    /// let small = ReplayBody::new(Full::new(Bytes::from(vec![0; 1024])), 4096);
    /// assert!(!small.is_capped());
    /// let large = ReplayBody::new(Full::new(Bytes::from(vec![0; 8192])), 4096);
    /// assert!(large.is_capped(), "larger than the cap: sent once");
    /// ```
    pub fn new(body: B, cap: usize) -> Self {
        let too_large = body.size_hint().lower() > u64::try_from(cap).unwrap_or(u64::MAX);
        ReplayBody {
            shared: Arc::new(Shared {
                copies: Arc::new(Copies {
                    capped: Arc::new(AtomicBool::new(too_large)),
                    cap,
                    holder: AtomicU64::new(NO_HOLDER),
                    sending: AtomicUsize::new(0),
                    waiters: Arc::default(),
                }),
                next_id: AtomicU64::new(1),
                state: Mutex::new(State {
                    body: Some(Box::pin(body)),
                    chunks: Vec::new(),
                    read: 0,
                    read_bytes: 0,
                    trailers: None,
                    done: false,
                    failed: false,
                }),
            }),
            id: 0,
            pos: 0,
            sent: 0,
            trailers_sent: false,
            attempt: Arc::default(),
        }
    }

    /// Wraps the body of `request` (see [`new`](Self::new)) and marks the request, so that a
    /// retrying client (the tower layer's `.http()`, the reqwest middleware) sees when the
    /// call is committed to one attempt (the body was [capped](Self::is_capped)) and neither
    /// retries nor hedges it then. A request whose `ReplayBody` was made with `new` alone is
    /// not marked: build it with this function to send it through a retrying layer.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use http_body_util::Full;
    /// use reattempt::http::{DEFAULT_REPLAY_CAP, ReplayBody};
    ///
    /// let request = http::Request::post("http://api.test/upload")
    ///     .body(Full::new(Bytes::from("chunk")))
    ///     .unwrap();
    /// let request = ReplayBody::request(request, DEFAULT_REPLAY_CAP);
    /// assert!(!request.body().is_capped());
    /// ```
    pub fn request(request: http::Request<B>, cap: usize) -> http::Request<Self> {
        let (mut parts, body) = request.into_parts();
        let body = ReplayBody::new(body, cap);
        parts.extensions.insert(body.committed());
        http::Request::from_parts(parts, body)
    }

    /// More than `cap` bytes have been read (or the body's exact size hint is above the cap):
    /// nothing can be replayed, the call is committed to the attempt that reads it.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     use bytes::Bytes;
    ///     use http_body_util::{BodyExt, StreamBody};
    ///     use http_body::Frame;
    ///     use reattempt::http::ReplayBody;
    ///
    ///     // Three chunks of 10 bytes, of unknown total size: recorded until the third.
    ///     let chunks = (0..3).map(|_| Ok::<_, std::io::Error>(Frame::data(Bytes::from(vec![7; 10]))));
    ///     let body = ReplayBody::new(StreamBody::new(futures_util_iter(chunks)), 25);
    ///     assert!(!body.is_capped());
    ///     let sent = body.clone().collect().await.unwrap().to_bytes();
    ///     assert_eq!(sent.len(), 30, "the attempt that reads it sends it all");
    ///     assert!(body.is_capped());
    ///     assert!(body.clone().collect().await.is_err(), "no replay past the cap");
    /// # }
    /// # fn futures_util_iter<I: Iterator + Unpin>(i: I) -> Iter<I> { Iter(i) }
    /// # struct Iter<I>(I);
    /// # impl<I: Iterator + Unpin> futures_core::Stream for Iter<I> {
    /// #     type Item = I::Item;
    /// #     fn poll_next(mut self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>)
    /// #         -> std::task::Poll<Option<I::Item>> { std::task::Poll::Ready(self.0.next()) }
    /// }
    /// ```
    pub fn is_capped(&self) -> bool {
        self.shared.copies.capped.load(Ordering::Acquire)
    }
}

impl<B> ReplayBody<B> {
    /// A handle that retires this clone: once its attempt has failed, it reads no more of the
    /// inner body (a body pipe that outlives its attempt must not take the body past the cap
    /// under the retry).
    #[cfg_attr(
        not(feature = "tonic"),
        allow(dead_code, reason = "used by the gRPC layer")
    )]
    pub(crate) fn retire_handle(&self) -> Retire {
        Retire {
            attempt: Arc::clone(&self.attempt),
            copies: Arc::clone(&self.shared.copies),
            id: self.id,
        }
    }

    /// Whether this clone may be sent now, for a copy of a call whose other copies may be
    /// sending the body (gRFC A6: past the buffer limit the call is committed to the attempt
    /// that holds the body, and a copy that cannot carry it is not started). Ready with `Ok` (and
    /// the clone counted as being sent, until its attempt is retired or it is dropped) once the
    /// body's first read has settled (a chunk recorded, the end, or a failure), or when no other
    /// clone is being sent (nobody else would read it); ready with the error a clone left behind
    /// yields when another clone has taken the body past its cap. Until then pending: a copy
    /// that opened its HTTP/2 stream and then found it cannot carry the body would have to
    /// reset it, and servers close a connection on which clients reset many streams.
    #[cfg_attr(
        not(feature = "tonic"),
        allow(dead_code, reason = "used by the gRPC layer")
    )]
    pub(crate) fn poll_send(&self, cx: &mut Context<'_>) -> Poll<Result<(), BodyNotReplayable>> {
        let copies = &self.shared.copies;
        let state = self.shared.lock();
        // Waiting first (a clone that stops sending wakes the list without the lock), then
        // looking: no wake-up is lost in between.
        copies.waiters.register(self.id, cx.waker());
        let capped = copies.capped.load(Ordering::Acquire);
        if capped && (self.pos < state.read || copies.left_behind(self.id)) {
            copies.waiters.remove(self.id);
            return Poll::Ready(Err(BodyNotReplayable::capped(copies.cap)));
        }
        let settled = state.read > 0 || state.done || state.failed;
        if !settled && copies.sending.load(Ordering::Acquire) > 0 {
            return Poll::Pending;
        }
        copies.waiters.remove(self.id);
        if !self.attempt.sending.swap(true, Ordering::AcqRel) {
            copies.sending.fetch_add(1, Ordering::AcqRel);
        }
        Poll::Ready(Ok(()))
    }

    /// The mark of a request whose body this is (see [`ReplayBody::request`]).
    pub(crate) fn committed(&self) -> Committed {
        Committed(Arc::clone(&self.shared.copies.capped))
    }

    /// The bytes recorded so far (tests).
    #[cfg(test)]
    pub(super) fn recorded(&self) -> usize {
        self.shared.lock().chunks.iter().map(Bytes::len).sum()
    }

    /// Whether the inner body has been dropped, read to its end or failed (tests).
    #[cfg(test)]
    pub(super) fn inner_is_gone(&self) -> bool {
        self.shared.lock().body.is_none()
    }
}

/// Each clone reads the body from its start (the recording, then the inner body).
impl<B> Clone for ReplayBody<B> {
    fn clone(&self) -> Self {
        ReplayBody {
            shared: Arc::clone(&self.shared),
            id: self.shared.next_id.fetch_add(1, Ordering::Relaxed),
            pos: 0,
            sent: 0,
            trailers_sent: false,
            attempt: Arc::default(),
        }
    }
}

impl<B> fmt::Debug for ReplayBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayBody")
            .field("cap", &self.shared.copies.cap)
            .field("capped", &self.shared.copies.capped.load(Ordering::Relaxed))
            .field("pos", &self.pos)
            .finish_non_exhaustive()
    }
}

/// A dropped clone waits no more. (The inner body holds the shared waker of every waiting
/// clone, not the dropped one's: the others are still woken.)
impl<B> Drop for ReplayBody<B> {
    fn drop(&mut self) {
        self.shared.copies.waiters.remove(self.id);
        self.shared.copies.stop_sending(&self.attempt);
    }
}

impl<B> Body for ReplayBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let shared = Arc::clone(&this.shared);
        let mut state = shared.lock();
        // The recording first.
        if this.pos < state.read {
            if shared.copies.capped.load(Ordering::Acquire) {
                return Poll::Ready(Some(Err(
                    BodyNotReplayable::capped(shared.copies.cap).into()
                )));
            }
            let chunk = state.chunks[this.pos].clone();
            this.pos += 1;
            this.sent += chunk.len();
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if !this.trailers_sent
            && let Some(trailers) = &state.trailers
        {
            this.trailers_sent = true;
            return Poll::Ready(Some(Ok(Frame::trailers(trailers.clone()))));
        }
        if state.done {
            return Poll::Ready(None);
        }
        if state.failed {
            return Poll::Ready(Some(Err(BodyNotReplayable::failed().into())));
        }
        // This clone is ahead: it reads the inner body.
        // A retired clone (its attempt failed) reads no more: the inner body is left to the
        // live attempt.
        if this.attempt.retired.load(Ordering::Acquire) {
            return Poll::Ready(Some(Err(BodyNotReplayable::retired().into())));
        }
        let Some(body) = state.body.as_mut() else {
            return Poll::Ready(None);
        };
        // Waiting first, then polled with the waker of every waiting clone: whichever of them
        // is polled next reads what the inner body has.
        shared.copies.waiters.register(this.id, cx.waker());
        let all = Waker::from(Arc::clone(&shared.copies.waiters));
        let polled = body.as_mut().poll_frame(&mut Context::from_waker(&all));
        match polled {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(frame))) => {
                let frame = match frame.into_data() {
                    Ok(data) => {
                        state.read += 1;
                        state.read_bytes += data.len();
                        this.pos += 1;
                        this.sent += data.len();
                        if !shared.copies.capped.load(Ordering::Acquire) {
                            if state.read_bytes > shared.copies.cap {
                                shared.copies.holder.store(this.id, Ordering::Release);
                                shared.copies.capped.store(true, Ordering::Release);
                                // Free the recording: nothing will replay it.
                                state.chunks = Vec::new();
                            } else {
                                state.chunks.push(data.clone());
                            }
                        } else if shared.copies.holder.load(Ordering::Acquire) == NO_HOLDER {
                            // Capped from the start (its size hint): the first reader holds it.
                            shared.copies.holder.store(this.id, Ordering::Release);
                        }
                        Frame::data(data)
                    }
                    Err(frame) => match frame.into_trailers() {
                        Ok(trailers) => {
                            state.trailers = Some(trailers.clone());
                            this.trailers_sent = true;
                            Frame::trailers(trailers)
                        }
                        // A frame of another kind (none in http-body 1): passed on, not kept.
                        Err(frame) => frame,
                    },
                };
                shared.copies.waiters.wake_others(this.id);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => {
                state.failed = true;
                state.body = None;
                shared.copies.waiters.wake_others(this.id);
                Poll::Ready(Some(Err(Box::new(BodyFailed(error.into())))))
            }
            Poll::Ready(None) => {
                state.done = true;
                state.body = None;
                shared.copies.waiters.wake_others(this.id);
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        let state = self.shared.lock();
        if self.pos < state.read {
            return false;
        }
        if !self.trailers_sent && state.trailers.is_some() {
            return false;
        }
        if state.done {
            return true;
        }
        if state.failed {
            return false;
        }
        match &state.body {
            Some(body) => body.is_end_stream(),
            None => true,
        }
    }

    fn size_hint(&self) -> SizeHint {
        let state = self.shared.lock();
        if self.pos < state.read && self.shared.copies.capped.load(Ordering::Acquire) {
            // It will fail: no size to promise.
            return SizeHint::default();
        }
        let recorded = u64::try_from(state.read_bytes - self.sent).unwrap_or(u64::MAX);
        match &state.body {
            Some(body) if !state.done => {
                let inner = body.size_hint();
                let mut hint = SizeHint::new();
                hint.set_lower(inner.lower().saturating_add(recorded));
                if let Some(upper) = inner.upper() {
                    hint.set_upper(upper.saturating_add(recorded));
                }
                hint
            }
            _ => SizeHint::with_exact(recorded),
        }
    }
}
