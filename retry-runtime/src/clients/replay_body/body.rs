//! [`ReplayBody`]: a request body recorded up to a cap while an attempt sends it, and replayed
//! to the next attempts (feature `http`). Public as `http::ReplayBody`.
//!
//! One recording is shared by every clone of a body (an `Arc`); each clone has its own read
//! position. A clone first yields the recorded chunks, then reads on from the inner body (the
//! clone that is ahead reads it, and appends what it reads to the recording), so a retry, or a
//! hedge sent while the first attempt still streams, sends exactly the bytes the first did.
//! Past the cap nothing is kept: the recording is dropped, the clone that reads the inner body
//! streams the rest to its own attempt, and the call is committed to that attempt
//! ([`ReplayBody::is_capped`]).

use std::error::Error;
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

/// The cap of a [`ReplayBody`] when none is given: 64 KiB recorded at most per request.
///
/// ```
/// assert_eq!(reattempt::http::DEFAULT_REPLAY_CAP, 65_536);
/// ```
pub const DEFAULT_REPLAY_CAP: usize = 64 * 1024;

type BoxError = Box<dyn Error + Send + Sync>;

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

/// The state of the attempt a clone was handed to.
#[derive(Default)]
struct AttemptFlags {
    /// Set when the attempt is over (failed): the clone reads no more of the inner body, so a
    /// dead attempt's body pipe cannot take the body past its cap under a live retry.
    retired: AtomicBool,
    /// Set while the clone is being sent ([`ReplayBody::poll_send`] let it go, and its attempt
    /// is neither retired nor dropped).
    sending: AtomicBool,
}

/// What the clones' attempts share, beside the recording: which clone holds the body past its
/// cap, and how many are being sent (the attempts' handles, [`Retire`], keep it).
struct Copies {
    /// Set once the body is capped (shared with a request's [`Committed`] extension).
    capped: Arc<AtomicBool>,
    cap: usize,
    /// The id of the clone that read the body past its cap ([`NO_HOLDER`] before).
    holder: AtomicU64,
    /// The clones being sent.
    sending: AtomicUsize,
    /// The clones waiting for the inner body (or to be sent), with their ids. The inner body is
    /// polled with a waker of this list ([`Waiters`]), which wakes every clone in it: a copy
    /// whose consumer stopped polling (a hedge on a stream without send window) never holds the
    /// others up.
    waiters: Arc<Waiters>,
}

/// No clone holds the body past its cap (yet).
const NO_HOLDER: u64 = u64::MAX;

impl Copies {
    /// The attempt of `flags` sends its clone no more: a copy waiting in
    /// [`ReplayBody::poll_send`] may go.
    fn stop_sending(&self, flags: &AttemptFlags) {
        if flags.sending.swap(false, Ordering::AcqRel) {
            self.sending.fetch_sub(1, Ordering::AcqRel);
            self.waiters.wake_others(NO_HOLDER);
        }
    }

    /// Whether clone `id` is left behind: the body is capped and another clone holds it.
    fn left_behind(&self, id: u64) -> bool {
        let holder = self.holder.load(Ordering::Acquire);
        self.capped.load(Ordering::Acquire) && holder != NO_HOLDER && holder != id
    }
}

struct Shared<B> {
    next_id: AtomicU64,
    state: Mutex<State<B>>,
    /// The cap, and what the clones' attempts share (readable without the lock).
    copies: Arc<Copies>,
}

/// The clones waiting for the inner body; as a waker, wakes them all.
#[derive(Default)]
struct Waiters(Mutex<Vec<(u64, Waker)>>);

impl Waiters {
    fn list(&self) -> MutexGuard<'_, Vec<(u64, Waker)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds (or refreshes) the waker of clone `id`.
    fn register(&self, id: u64, waker: &Waker) {
        let mut list = self.list();
        match list.iter_mut().find(|(waiter, _)| *waiter == id) {
            Some((_, w)) => w.clone_from(waker),
            None => list.push((id, waker.clone())),
        }
    }

    fn remove(&self, id: u64) {
        self.list().retain(|(waiter, _)| *waiter != id);
    }

    /// Wakes every waiting clone but `id`.
    fn wake_others(&self, id: u64) {
        let woken: Vec<(u64, Waker)> = std::mem::take(&mut *self.list());
        for (waiter, waker) in woken {
            if waiter != id {
                waker.wake();
            }
        }
    }
}

impl std::task::Wake for Waiters {
    fn wake(self: Arc<Self>) {
        self.wake_others(u64::MAX);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wake_others(u64::MAX);
    }
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
    fn recorded(&self) -> usize {
        self.shared.lock().chunks.iter().map(Bytes::len).sum()
    }
}

/// Retires the clone it was taken from (see [`ReplayBody::retire_handle`]).
#[cfg_attr(
    not(feature = "tonic"),
    allow(dead_code, reason = "used by the gRPC layer")
)]
pub(crate) struct Retire {
    attempt: Arc<AttemptFlags>,
    copies: Arc<Copies>,
    /// The clone's id.
    id: u64,
}

#[cfg_attr(
    not(feature = "tonic"),
    allow(dead_code, reason = "used by the gRPC layer")
)]
impl Retire {
    pub(crate) fn retire(&self) {
        self.attempt.retired.store(true, Ordering::Release);
        self.copies.stop_sending(&self.attempt);
    }

    /// The error of a clone left behind, if this one is: another clone took the body past its
    /// cap. Whatever the attempt's transport reported (hyper resets the stream of a body that
    /// failed, and its error does not say why), the copy could not carry the body.
    pub(crate) fn left_behind(&self) -> Option<BodyNotReplayable> {
        self.copies
            .left_behind(self.id)
            .then(|| BodyNotReplayable::capped(self.copies.cap))
    }
}

/// A request's mark that its body is a [`ReplayBody`]: whether the body is capped, so the call
/// committed to one attempt (in the request's extensions; see [`ReplayBody::request`]).
#[derive(Debug, Clone)]
#[cfg_attr(
    not(feature = "tower"),
    allow(dead_code, reason = "read by the retrying clients")
)]
pub(crate) struct Committed(Arc<AtomicBool>);

#[cfg_attr(
    not(feature = "tower"),
    allow(dead_code, reason = "read by the retrying clients")
)]
impl Committed {
    /// Whether the request's body was capped: it cannot be sent again.
    pub(crate) fn is_committed(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Whether the request behind `extensions` has a capped [`ReplayBody`].
    pub(crate) fn in_extensions(extensions: &http::Extensions) -> bool {
        extensions
            .get::<Committed>()
            .is_some_and(Committed::is_committed)
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
    fn capped(cap: usize) -> Self {
        BodyNotReplayable {
            why: Why::Capped(cap),
        }
    }

    fn failed() -> Self {
        BodyNotReplayable { why: Why::Failed }
    }

    fn retired() -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::VecDeque;
    use std::future::poll_fn;

    use http_body_util::{BodyExt, Full, StreamBody};
    use proptest::prelude::*;
    use tokio::sync::mpsc;

    /// A body of the given chunks, of unknown size, ending with `trailers` if any.
    struct Chunks {
        chunks: VecDeque<Bytes>,
        trailers: Option<HeaderMap>,
    }

    fn chunks(sizes: &[usize]) -> (Chunks, Vec<u8>) {
        let mut all = Vec::new();
        let mut chunks = VecDeque::new();
        for (i, &n) in sizes.iter().enumerate() {
            let chunk: Vec<u8> = (0..n)
                .map(|j| u8::try_from((i * 31 + j) % 256).unwrap())
                .collect();
            all.extend_from_slice(&chunk);
            chunks.push_back(Bytes::from(chunk));
        }
        (
            Chunks {
                chunks,
                trailers: None,
            },
            all,
        )
    }

    impl Body for Chunks {
        type Data = Bytes;
        type Error = std::io::Error;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
            if let Some(chunk) = self.chunks.pop_front() {
                return Poll::Ready(Some(Ok(Frame::data(chunk))));
            }
            Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
        }
    }

    /// A body fed through a channel: `Pending` until the test sends the next chunk.
    fn channel() -> (
        mpsc::UnboundedSender<Bytes>,
        impl Body<Data = Bytes, Error = std::io::Error> + Send + Unpin,
    ) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Bytes>();
        let stream =
            futures_stream(move |cx| rx.poll_recv(cx).map(|c| c.map(|c| Ok(Frame::data(c)))));
        (tx, StreamBody::new(stream))
    }

    struct PollFnStream<F>(F);
    impl<F, T> futures_core::Stream for PollFnStream<F>
    where
        F: FnMut(&mut Context<'_>) -> Poll<Option<T>> + Unpin,
    {
        type Item = T;
        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
            (self.0)(cx)
        }
    }
    fn futures_stream<F, T>(f: F) -> PollFnStream<F>
    where
        F: FnMut(&mut Context<'_>) -> Poll<Option<T>> + Unpin,
    {
        PollFnStream(f)
    }

    async fn collect<B>(body: ReplayBody<B>) -> Result<(Vec<u8>, Option<HeaderMap>), BoxError>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<BoxError>,
    {
        let collected = body.collect().await?;
        let trailers = collected.trailers().cloned();
        Ok((collected.to_bytes().to_vec(), trailers))
    }

    fn is_not_replayable(error: &BoxError) -> bool {
        error.downcast_ref::<BodyNotReplayable>().is_some()
    }

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn send_and_sync_over_a_send_body() {
        struct SendOnly(std::cell::Cell<u8>);
        impl Body for SendOnly {
            type Data = Bytes;
            type Error = std::io::Error;
            fn poll_frame(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
            ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
                Poll::Ready(None)
            }
        }
        assert_send_sync::<ReplayBody<SendOnly>>();
        let _ = SendOnly(std::cell::Cell::new(0)).0.get();
    }

    #[tokio::test]
    async fn clones_replay_identical_bytes() {
        let (body, all) = chunks(&[3, 0, 7, 1]);
        let body = ReplayBody::new(body, DEFAULT_REPLAY_CAP);
        for _ in 0..3 {
            assert_eq!(collect(body.clone()).await.unwrap().0, all);
        }
        assert!(!body.is_capped());
        assert_eq!(body.recorded(), all.len());
    }

    #[tokio::test]
    async fn cap_exactly_at_the_total_is_replayable() {
        let (body, all) = chunks(&[4, 4, 2]);
        let body = ReplayBody::new(body, 10);
        assert_eq!(collect(body.clone()).await.unwrap().0, all);
        assert_eq!(collect(body.clone()).await.unwrap().0, all);
        assert!(!body.is_capped());
    }

    #[tokio::test]
    async fn one_byte_under_the_total_is_capped_and_freed() {
        let (body, all) = chunks(&[4, 4, 2]);
        let body = ReplayBody::new(body, 9);
        assert_eq!(collect(body.clone()).await.unwrap().0, all, "sent once");
        assert!(body.is_capped());
        assert_eq!(body.recorded(), 0, "the recording is freed");
        let error = collect(body.clone()).await.unwrap_err();
        assert!(is_not_replayable(&error), "{error}");
    }

    #[tokio::test]
    async fn a_size_hint_above_the_cap_caps_from_the_start() {
        let body = ReplayBody::new(Full::new(Bytes::from(vec![5; 100])), 99);
        assert!(body.is_capped());
        let copy = body.clone();
        assert_eq!(copy.size_hint().exact(), Some(100));
        assert_eq!(collect(copy).await.unwrap().0, vec![5; 100]);
        assert_eq!(body.recorded(), 0);
        assert!(collect(body.clone()).await.is_err());

        let fits = ReplayBody::new(Full::new(Bytes::from(vec![5; 100])), 100);
        assert!(!fits.is_capped());
    }

    #[tokio::test]
    async fn trailers_are_replayed() {
        let (mut body, all) = chunks(&[2, 2]);
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        body.trailers = Some(trailers.clone());
        let body = ReplayBody::new(body, DEFAULT_REPLAY_CAP);
        for _ in 0..2 {
            let (bytes, got) = collect(body.clone()).await.unwrap();
            assert_eq!(bytes, all);
            assert_eq!(got.as_ref(), Some(&trailers));
        }
    }

    #[tokio::test]
    async fn size_hint_and_end_of_stream_per_clone() {
        let body = ReplayBody::new(Full::new(Bytes::from_static(b"hello")), 64);
        let mut first = body.clone();
        assert_eq!(first.size_hint().exact(), Some(5));
        assert!(!first.is_end_stream());
        let frame = poll_fn(|cx| Pin::new(&mut first).poll_frame(cx)).await;
        assert_eq!(frame.unwrap().unwrap().into_data().unwrap(), "hello");
        assert_eq!(first.size_hint().exact(), Some(0));
        let second = body.clone();
        assert_eq!(second.size_hint().exact(), Some(5));
        assert!(!second.is_end_stream());
        assert!(first.is_end_stream(), "Full is at its end");

        let empty = ReplayBody::new(http_body_util::Empty::<Bytes>::new(), 64);
        assert!(empty.is_end_stream());
        assert_eq!(empty.size_hint().exact(), Some(0));
    }

    #[tokio::test]
    async fn a_clone_made_after_the_whole_body_replays_it_alone() {
        let (body, all) = chunks(&[1, 2, 3]);
        let body = ReplayBody::new(body, DEFAULT_REPLAY_CAP);
        assert_eq!(collect(body.clone()).await.unwrap().0, all);
        assert!(body.shared.lock().body.is_none(), "the inner body is gone");
        let late = body.clone();
        assert_eq!(late.size_hint().exact(), Some(all.len() as u64));
        assert_eq!(collect(late).await.unwrap().0, all);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_clones_both_complete() {
        for _ in 0..50 {
            let (tx, inner) = channel();
            let body = ReplayBody::new(inner, DEFAULT_REPLAY_CAP);
            let a = tokio::spawn(collect(body.clone()));
            let b = tokio::spawn(collect(body.clone()));
            let mut all = Vec::new();
            for i in 0..20u8 {
                let chunk = vec![i; usize::from(i) + 1];
                all.extend_from_slice(&chunk);
                tx.send(Bytes::from(chunk)).unwrap();
                tokio::task::yield_now().await;
            }
            drop(tx);
            let (a, b) = tokio::time::timeout(std::time::Duration::from_secs(10), async {
                (a.await.unwrap().unwrap().0, b.await.unwrap().unwrap().0)
            })
            .await
            .expect("a clone was never woken");
            assert_eq!(a, all);
            assert_eq!(b, all);
        }
    }

    /// Polls `body` once with a waker that does nothing.
    fn poll_noop<B>(body: &mut ReplayBody<B>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<BoxError>,
    {
        let mut cx = Context::from_waker(Waker::noop());
        Pin::new(body).poll_frame(&mut cx)
    }

    /// A task waiting on `clone` for its next chunk.
    fn wait_for_chunk<B>(mut clone: ReplayBody<B>) -> tokio::task::JoinHandle<Bytes>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        tokio::spawn(async move {
            let frame = poll_fn(|cx| Pin::new(&mut clone).poll_frame(cx)).await;
            frame.unwrap().unwrap().into_data().unwrap()
        })
    }

    /// A copy waits to be sent while another is being sent and nothing is read yet (gRFC A6:
    /// it may not be able to carry the body); the first chunk within the cap lets it go, and it
    /// then replays the recording.
    #[tokio::test]
    async fn a_copy_is_sent_once_the_first_read_fits_the_cap() {
        let (tx, inner) = channel();
        let body = ReplayBody::new(inner, 16);
        let mut first = body.clone();
        let copy = body.clone();
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(
            first.poll_send(&mut cx),
            Poll::Ready(Ok(())),
            "alone: at once"
        );
        let waiting =
            tokio::spawn(async move { poll_fn(|cx| copy.poll_send(cx)).await.map(|()| copy) });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "nothing read yet: the copy waits");
        assert!(poll_noop(&mut first).is_pending());
        tx.send(Bytes::from_static(b"8 bytes.")).unwrap();
        assert!(matches!(poll_noop(&mut first), Poll::Ready(Some(Ok(_)))));
        let mut copy = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the waiting copy was never woken")
            .unwrap()
            .expect("recorded within the cap: sent");
        assert!(
            matches!(poll_noop(&mut copy), Poll::Ready(Some(Ok(f))) if f.data_ref().unwrap() == "8 bytes.")
        );
        assert!(copy.retire_handle().left_behind().is_none());
    }

    /// The copy that reads the body past the cap holds it; a copy waiting to be sent is then
    /// left behind without being sent, and so is any attempt of a clone that is not the holder,
    /// whatever it failed with (grpc-java `RetriableStreamTest`, `hedging_perRpcBufferLimitExceeded`:
    /// past the limit the call commits to the stream that wrote it, the other is cancelled).
    #[tokio::test]
    async fn past_the_cap_a_waiting_copy_is_left_behind_unsent() {
        let (tx, inner) = channel();
        let body = ReplayBody::new(inner, 16);
        let mut holder = body.clone();
        let sent_early = body.clone();
        let copy = body.clone();
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(holder.poll_send(&mut cx), Poll::Ready(Ok(())));
        let waiting = tokio::spawn(async move { poll_fn(|cx| copy.poll_send(cx)).await });
        tokio::task::yield_now().await;
        assert!(poll_noop(&mut holder).is_pending());
        tx.send(Bytes::from(vec![1; 32])).unwrap();
        assert!(matches!(poll_noop(&mut holder), Poll::Ready(Some(Ok(_)))));
        assert!(body.is_capped());
        let waited = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the waiting copy was never woken")
            .unwrap();
        assert_eq!(waited, Err(BodyNotReplayable::capped(16)), "not sent");
        assert!(
            holder.retire_handle().left_behind().is_none(),
            "the holder answers"
        );
        assert_eq!(
            sent_early.retire_handle().left_behind(),
            Some(BodyNotReplayable::capped(16))
        );
        assert!(
            !sent_early
                .retire_handle()
                .left_behind()
                .unwrap()
                .to_string()
                .is_empty()
        );
    }

    /// A copy waiting to be sent goes when the copy being sent is over without reading (its
    /// attempt failed, or was dropped): nobody else would read the body.
    #[tokio::test]
    async fn a_waiting_copy_goes_when_the_sender_is_over() {
        for retire in [true, false] {
            let (_tx, inner) = channel();
            let body = ReplayBody::new(inner, 16);
            let first = body.clone();
            let copy = body.clone();
            let mut cx = Context::from_waker(Waker::noop());
            assert_eq!(first.poll_send(&mut cx), Poll::Ready(Ok(())));
            let waiting = tokio::spawn(async move { poll_fn(|cx| copy.poll_send(cx)).await });
            tokio::task::yield_now().await;
            assert!(!waiting.is_finished(), "retire {retire}");
            if retire {
                first.retire_handle().retire();
            } else {
                drop(first);
            }
            let sent = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
                .await
                .expect("the waiting copy was never woken")
                .unwrap();
            assert_eq!(sent, Ok(()), "retire {retire}");
        }
    }

    #[tokio::test]
    async fn a_waiting_clone_is_woken_when_the_reader_is_dropped() {
        let (tx, inner) = channel();
        let body = ReplayBody::new(inner, DEFAULT_REPLAY_CAP);
        let waiting = wait_for_chunk(body.clone());
        tokio::task::yield_now().await;
        // Another clone polls the inner body after it: the inner body now holds its (dead)
        // waker only.
        let mut reader = body.clone();
        assert!(poll_noop(&mut reader).is_pending());
        drop(reader);
        tx.send(Bytes::from_static(b"late")).unwrap();
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the waiting clone was never woken")
            .unwrap();
        assert_eq!(got, "late");
    }

    #[tokio::test]
    async fn a_waiting_clone_is_woken_when_another_reads() {
        let (tx, inner) = channel();
        let body = ReplayBody::new(inner, DEFAULT_REPLAY_CAP);
        let waiting = wait_for_chunk(body.clone());
        tokio::task::yield_now().await;
        let mut reader = body.clone();
        assert!(poll_noop(&mut reader).is_pending());
        tx.send(Bytes::from_static(b"data")).unwrap();
        // The inner body wakes the reader's (dead) waker; the reader reads and wakes the other.
        assert!(matches!(poll_noop(&mut reader), Poll::Ready(Some(Ok(_)))));
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the waiting clone was never woken")
            .unwrap();
        assert_eq!(got, "data");
    }

    #[tokio::test]
    async fn the_reader_streams_on_past_the_cap_while_a_follower_fails() {
        let (tx, inner) = channel();
        let body = ReplayBody::new(inner, 4);
        let mut reader = body.clone();
        let mut follower = body.clone();
        tx.send(Bytes::from_static(b"abc")).unwrap();
        assert!(matches!(poll_noop(&mut reader), Poll::Ready(Some(Ok(_)))));
        tx.send(Bytes::from_static(b"de")).unwrap();
        assert!(matches!(poll_noop(&mut reader), Poll::Ready(Some(Ok(_)))));
        assert!(body.is_capped());
        match poll_noop(&mut follower) {
            Poll::Ready(Some(Err(e))) => assert!(is_not_replayable(&e)),
            other => panic!("{:?}", other.map(|o| o.map(|r| r.is_ok()))),
        }
        tx.send(Bytes::from_static(b"f")).unwrap();
        drop(tx);
        assert!(matches!(poll_noop(&mut reader), Poll::Ready(Some(Ok(_)))));
        assert!(matches!(poll_noop(&mut reader), Poll::Ready(None)));
    }

    #[tokio::test]
    async fn an_inner_error_goes_to_the_reader_and_fails_the_others() {
        let stream = futures_stream({
            let mut n = 0;
            move |_| {
                n += 1;
                Poll::Ready(match n {
                    1 => Some(Ok(Frame::data(Bytes::from_static(b"x")))),
                    2 => Some(Err(std::io::Error::other("reset"))),
                    _ => None,
                })
            }
        });
        let body = ReplayBody::new(StreamBody::new(stream), 64);
        let error = collect(body.clone()).await.unwrap_err();
        assert!(
            !is_not_replayable(&error),
            "the inner body's own error: {error}"
        );
        let error = collect(body.clone()).await.unwrap_err();
        assert!(is_not_replayable(&error));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Each clone yields exactly the source's bytes, or (past the cap) only the first
        /// does and the others fail.
        #[test]
        fn clones_yield_the_source_or_fail_past_the_cap(
            sizes in proptest::collection::vec(0usize..64, 0..12),
            cap in 0usize..400,
            clones in 1usize..4,
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            rt.block_on(async {
                let (inner, all) = chunks(&sizes);
                let body = ReplayBody::new(inner, cap);
                let first = collect(body.clone()).await.unwrap().0;
                prop_assert_eq!(&first, &all);
                let capped = all.len() > cap;
                prop_assert_eq!(body.is_capped(), capped);
                for _ in 1..clones {
                    match collect(body.clone()).await {
                        Ok((bytes, _)) => {
                            prop_assert!(!capped);
                            prop_assert_eq!(&bytes, &all);
                        }
                        Err(e) => {
                            prop_assert!(capped);
                            prop_assert!(is_not_replayable(&e));
                        }
                    }
                }
                Ok(())
            })?;
        }
    }
}
