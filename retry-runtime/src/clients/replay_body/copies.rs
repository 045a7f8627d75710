//! What the clones of a [`ReplayBody`] share beside the recording: which clone holds the body
//! past its cap, which are being sent, which wait for the inner body; and the handles retrying
//! clients keep ([`Retire`] for an attempt, [`Committed`] in a request's extensions).
//!
//! [`ReplayBody`]: super::body::ReplayBody

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use super::error::BodyNotReplayable;

/// The state of the attempt a clone was handed to.
#[derive(Default)]
pub(super) struct AttemptFlags {
    /// Set when the attempt is over (failed): the clone reads no more of the inner body, so a
    /// dead attempt's body pipe cannot take the body past its cap under a live retry.
    pub(super) retired: AtomicBool,
    /// Set while the clone is being sent ([`ReplayBody::poll_send`] let it go, and its attempt
    /// is neither retired nor dropped).
    ///
    /// [`ReplayBody::poll_send`]: super::body::ReplayBody::poll_send
    pub(super) sending: AtomicBool,
}

/// What the clones' attempts share, beside the recording: which clone holds the body past its
/// cap, and how many are being sent (the attempts' handles, [`Retire`], keep it).
pub(super) struct Copies {
    /// Set once the body is capped (shared with a request's [`Committed`] extension).
    pub(super) capped: Arc<AtomicBool>,
    pub(super) cap: usize,
    /// The id of the clone that read the body past its cap ([`NO_HOLDER`] before).
    pub(super) holder: AtomicU64,
    /// The clones being sent.
    pub(super) sending: AtomicUsize,
    /// The clones waiting for the inner body (or to be sent), with their ids. The inner body is
    /// polled with a waker of this list ([`Waiters`]), which wakes every clone in it: a copy
    /// whose consumer stopped polling (a hedge on a stream without send window) never holds the
    /// others up.
    pub(super) waiters: Arc<Waiters>,
}

/// No clone holds the body past its cap (yet).
pub(super) const NO_HOLDER: u64 = u64::MAX;

impl Copies {
    /// The attempt of `flags` sends its clone no more: a copy waiting in
    /// [`ReplayBody::poll_send`] may go.
    ///
    /// [`ReplayBody::poll_send`]: super::body::ReplayBody::poll_send
    pub(super) fn stop_sending(&self, flags: &AttemptFlags) {
        if flags.sending.swap(false, Ordering::AcqRel) {
            self.sending.fetch_sub(1, Ordering::AcqRel);
            self.waiters.wake_others(NO_HOLDER);
        }
    }

    /// Whether clone `id` is left behind: the body is capped and another clone holds it.
    pub(super) fn left_behind(&self, id: u64) -> bool {
        let holder = self.holder.load(Ordering::Acquire);
        self.capped.load(Ordering::Acquire) && holder != NO_HOLDER && holder != id
    }
}

/// The clones waiting for the inner body; as a waker, wakes them all.
#[derive(Default)]
pub(super) struct Waiters(Mutex<Vec<(u64, Waker)>>);

impl Waiters {
    fn list(&self) -> MutexGuard<'_, Vec<(u64, Waker)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds (or refreshes) the waker of clone `id`.
    pub(super) fn register(&self, id: u64, waker: &Waker) {
        let mut list = self.list();
        match list.iter_mut().find(|(waiter, _)| *waiter == id) {
            Some((_, w)) => w.clone_from(waker),
            None => list.push((id, waker.clone())),
        }
    }

    pub(super) fn remove(&self, id: u64) {
        self.list().retain(|(waiter, _)| *waiter != id);
    }

    /// Wakes every waiting clone but `id`.
    pub(super) fn wake_others(&self, id: u64) {
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

/// Retires the clone it was taken from (see [`ReplayBody::retire_handle`]).
///
/// [`ReplayBody::retire_handle`]: super::body::ReplayBody::retire_handle
#[cfg_attr(
    not(feature = "tonic"),
    allow(dead_code, reason = "used by the gRPC layer")
)]
pub(crate) struct Retire {
    pub(super) attempt: Arc<AttemptFlags>,
    pub(super) copies: Arc<Copies>,
    /// The clone's id.
    pub(super) id: u64,
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
///
/// [`ReplayBody::request`]: super::body::ReplayBody::request
#[derive(Debug, Clone)]
#[cfg_attr(
    not(feature = "tower"),
    allow(dead_code, reason = "read by the retrying clients")
)]
pub(crate) struct Committed(pub(super) Arc<AtomicBool>);

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
    ///
    /// [`ReplayBody`]: super::body::ReplayBody
    pub(crate) fn in_extensions(extensions: &http::Extensions) -> bool {
        extensions
            .get::<Committed>()
            .is_some_and(Committed::is_committed)
    }
}
