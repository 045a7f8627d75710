//! The bulkhead (see [`Bulkhead`]).

use std::time::Duration;

use crate::ConfigError;
use crate::error::BulkheadFull;
use crate::sync::{AtomicU32, Ordering};

/// The bulkhead: at most `max_concurrent` calls in flight to one dependency, counting a call from
/// its first attempt to its last, its sleeps between retries included (a call asleep still holds
/// its connection, its permit, its memory). The slot is free again once the attempts are over,
/// before a `#[recover]` fallback runs: the fallback does not reach the dependency, and a slow
/// one must not hold up calls that would (every driver, hedged or not). A call that finds every slot taken waits up to
/// `max_wait` for one (default: not at all), then is turned away with
/// [`BulkheadFull`](crate::BulkheadFull), which is never retried (Resilience4j's `Bulkhead`,
/// Polly's concurrency limiter, Spring's `@ConcurrencyLimit`).
///
/// A retrying call's wait is part of the call: it never lasts past the call's deadline (its own
/// `max_elapsed`, whose clock starts with the wait, or the deadline inherited from an enclosing
/// call), whatever `max_wait` allows. A wait that ends there ends the call as a spent deadline
/// does: a timed attempt (the policy's `timeout`) is not made, and the call returns the
/// timeout's error (`GiveUpReason::DeadlineReached`); an attempt a deadline never cuts (no
/// `timeout`) cannot run without a slot, so the call is turned away with `BulkheadFull`.
///
/// Taking and giving back a slot is one atomic operation; only a call that must wait touches the
/// wait list (a `tokio::sync::Notify`), and a release looks at it only when someone waits. Waiters
/// are not served in order: a slot freed goes to whoever takes it first.
///
/// At most `max_concurrent` calls in flight at once, shared by
/// every call that names it.
///
/// ```
/// use reattempt::Bulkhead;
///
/// let bulkhead = Bulkhead::builder().max_concurrent(2).build().unwrap();
/// let a = bulkhead.try_acquire().unwrap();
/// let _b = bulkhead.try_acquire().unwrap();
/// assert!(bulkhead.try_acquire().is_err(), "both slots taken");
/// drop(a);
/// assert_eq!(bulkhead.in_flight(), 1);
/// assert!(bulkhead.try_acquire().is_ok());
/// ```
#[derive(Debug)]
pub struct Bulkhead {
    name: &'static str,
    max_concurrent: u32,
    max_wait: Option<Duration>,
    in_flight: AtomicU32,
    waiters: AtomicU32,
    #[cfg(not(loom))]
    freed: tokio::sync::Notify,
}

/// A slot of a [`Bulkhead`], held for a whole call; dropping it frees the slot.
#[derive(Debug)]
#[must_use = "the slot is freed when the permit is dropped"]
pub struct BulkheadPermit<'b> {
    bulkhead: &'b Bulkhead,
}

impl Drop for BulkheadPermit<'_> {
    fn drop(&mut self) {
        self.bulkhead.release();
    }
}

impl Bulkhead {
    /// A builder: 25 calls at once (Resilience4j's default), no wait.
    pub fn builder() -> BulkheadBuilder {
        BulkheadBuilder::default()
    }

    /// The name given to the builder (in events).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The most calls in flight at once.
    pub fn max_concurrent(&self) -> u32 {
        self.max_concurrent
    }

    /// How long a call may wait for a slot, if at all.
    pub fn max_wait(&self) -> Option<Duration> {
        self.max_wait
    }

    /// The calls in flight now.
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Takes a slot if one is free, without waiting.
    ///
    /// # Errors
    /// [`BulkheadFull`] when every slot is taken.
    #[inline]
    pub fn try_acquire(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        let max = self.max_concurrent;
        match self
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            }) {
            Ok(_) => Ok(BulkheadPermit { bulkhead: self }),
            Err(_) => Err(BulkheadFull::new()),
        }
    }

    /// Takes a slot, waiting up to `max_wait` for one if every slot is taken (not at all without
    /// `max_wait`). The wait is on tokio's clock.
    ///
    /// # Errors
    /// [`BulkheadFull`] when no slot came free in time.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::Bulkhead;
    ///
    ///     let bulkhead = Bulkhead::builder()
    ///         .max_concurrent(1)
    ///         .max_wait(Duration::from_millis(50))
    ///         .build()
    ///         .unwrap();
    ///     let held = bulkhead.acquire().await.unwrap();
    ///     assert!(bulkhead.acquire().await.is_err(), "nobody frees it within 50 ms");
    ///     let (second, ()) = tokio::join!(bulkhead.acquire(), async {
    ///         tokio::time::sleep(Duration::from_millis(10)).await;
    ///         drop(held);
    ///     });
    ///     assert!(second.is_ok(), "freed after 10 ms");
    /// }
    /// ```
    #[cfg(not(loom))]
    pub async fn acquire(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        self.acquire_until(None).await
    }

    /// As [`acquire`](Self::acquire), the wait ending at `until` if that comes before
    /// `max_wait` is over (a call's deadline: a call never waits for a slot past it).
    #[cfg(not(loom))]
    pub(crate) async fn acquire_until(
        &self,
        until: Option<tokio::time::Instant>,
    ) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        if let Ok(permit) = self.try_acquire() {
            return Ok(permit);
        }
        let Some(wait) = self.max_wait else {
            return Err(BulkheadFull::new());
        };
        let deadline =
            crate::engine::state::earliest(tokio::time::Instant::now().checked_add(wait), until);
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(self);
        loop {
            let freed = self.freed.notified();
            let mut freed = std::pin::pin!(freed);
            // Registered before the slot is tried again: a release between the two wakes it.
            freed.as_mut().enable();
            if let Ok(permit) = self.try_acquire() {
                return Ok(permit);
            }
            match deadline {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, freed).await.is_err() {
                        return Err(BulkheadFull::new());
                    }
                }
                None => freed.await,
            }
        }
    }

    /// Under `--cfg loom` (the model tests): no wait, as without `max_wait`.
    ///
    /// # Errors
    /// [`BulkheadFull`] when every slot is taken.
    #[cfg(loom)]
    #[allow(
        clippy::unused_async,
        reason = "the same signature as the normal build's"
    )]
    pub async fn acquire(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        self.try_acquire()
    }

    /// Under `--cfg loom`: no wait, as [`acquire`](Self::acquire).
    #[cfg(loom)]
    #[allow(
        clippy::unused_async,
        reason = "the same signature as the normal build's"
    )]
    pub(crate) async fn acquire_until(
        &self,
        _until: Option<tokio::time::Instant>,
    ) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        self.try_acquire()
    }

    pub(crate) fn release(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            #[cfg(not(loom))]
            self.freed.notify_one();
        }
    }
}

/// The wait of a call for a slot (boxed: only a call that finds the bulkhead full waits).
pub type SlotWait<'b, P> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<P, BulkheadFull>> + Send + Sync + 'b>,
>;

/// Where a call takes its slot from: a borrowed `&Bulkhead` (its permits borrow it), or an
/// owner of one ([`OwnedSlots`]: an `Arc<Bulkhead>`, a `&'static Bulkhead`) for a call that
/// keeps it in a future of its own, as tower's.
pub trait SlotSource<'b> {
    /// The slot a call holds.
    type Permit;
    /// The bulkhead.
    fn bulkhead(&self) -> &Bulkhead;
    /// Takes a slot if one is free.
    ///
    /// # Errors
    /// [`BulkheadFull`] when every slot is taken.
    fn try_take(&self) -> Result<Self::Permit, BulkheadFull>;
    /// Waits up to `max_wait` for a slot, and never past `until` (the call's deadline).
    fn wait(&self, until: Option<tokio::time::Instant>) -> SlotWait<'b, Self::Permit>;
}

impl<'b> SlotSource<'b> for &'b Bulkhead {
    type Permit = BulkheadPermit<'b>;
    fn bulkhead(&self) -> &Bulkhead {
        self
    }
    fn try_take(&self) -> Result<BulkheadPermit<'b>, BulkheadFull> {
        self.try_acquire()
    }
    fn wait(&self, until: Option<tokio::time::Instant>) -> SlotWait<'b, BulkheadPermit<'b>> {
        Box::pin(self.acquire_until(until))
    }
}

#[cfg(feature = "tower")]
/// The slots of a bulkhead reached through an owner (`Arc<Bulkhead>`, `&'static Bulkhead`):
/// each slot holds a clone of the owner.
#[derive(Debug, Clone, Copy)]
pub struct OwnedSlots<P>(pub P);

#[cfg(feature = "tower")]
/// A slot taken through [`OwnedSlots`]; dropping it frees the slot.
#[derive(Debug)]
#[must_use = "the slot is freed when the permit is dropped"]
pub struct OwnedPermit<P: std::ops::Deref<Target = Bulkhead>>(P);

#[cfg(feature = "tower")]
impl<P: std::ops::Deref<Target = Bulkhead>> Drop for OwnedPermit<P> {
    fn drop(&mut self) {
        self.0.release();
    }
}

#[cfg(feature = "tower")]
impl<P> SlotSource<'static> for OwnedSlots<P>
where
    P: std::ops::Deref<Target = Bulkhead> + Clone + Send + Sync + 'static,
{
    type Permit = OwnedPermit<P>;
    fn bulkhead(&self) -> &Bulkhead {
        &self.0
    }
    fn try_take(&self) -> Result<OwnedPermit<P>, BulkheadFull> {
        // The slot outlives this borrow: the owner the permit keeps frees it.
        std::mem::forget(self.0.try_acquire()?);
        Ok(OwnedPermit(self.0.clone()))
    }
    fn wait(&self, until: Option<tokio::time::Instant>) -> SlotWait<'static, OwnedPermit<P>> {
        let owner = self.0.clone();
        Box::pin(async move {
            std::mem::forget(owner.acquire_until(until).await?);
            Ok(OwnedPermit(owner))
        })
    }
}

/// A call's slot of its bulkhead, kept by the driver from before the first attempt to the
/// call's end; taken by [`poll_slot`](crate::__private::poll_slot).
#[derive(Default)]
pub enum CallSlot<'b, P = BulkheadPermit<'b>> {
    /// Not asked for yet (or the call has no bulkhead).
    #[default]
    Untaken,
    /// Waiting up to the bulkhead's `max_wait` for one.
    Waiting(SlotWait<'b, P>),
    /// Held: freed when the call ends (or this is dropped).
    Held(P),
    /// None was free: the call is turned away.
    Full,
    /// The wait for one reached the call's deadline (its own `max_elapsed`, or an enclosing
    /// call's) and its attempt cannot be made any more: the call holds no slot and ends as
    /// `DeadlineReached` (see [`poll_slot`](crate::__private::poll_slot)).
    Expired,
}

impl<P> std::fmt::Debug for CallSlot<'_, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CallSlot::Untaken => "Untaken",
            CallSlot::Waiting(_) => "Waiting",
            CallSlot::Held(_) => "Held",
            CallSlot::Full => "Full",
            CallSlot::Expired => "Expired",
        })
    }
}

impl<P> CallSlot<'_, P> {
    /// The slot as a bulkhead's `acquire` (or `try_acquire`) gave it.
    pub fn from_acquired(acquired: Result<P, BulkheadFull>) -> Self {
        match acquired {
            Ok(permit) => CallSlot::Held(permit),
            Err(_) => CallSlot::Full,
        }
    }

    /// Whether the call was turned away.
    #[inline]
    pub fn full(&self) -> bool {
        matches!(self, CallSlot::Full)
    }
}

/// A waiter, counted while it waits.
#[cfg(not(loom))]
struct Waiting<'b>(&'b Bulkhead);

#[cfg(not(loom))]
impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Builds a [`Bulkhead`].
///
/// ```
/// use std::time::Duration;
/// use reattempt::Bulkhead;
///
/// let bulkhead = Bulkhead::builder()
///     .max_concurrent(10)
///     .max_wait(Duration::from_millis(100))
///     .name("payments")
///     .build()
///     .unwrap();
/// assert_eq!(bulkhead.max_concurrent(), 10);
/// let err = Bulkhead::builder().max_concurrent(0).build().unwrap_err();
/// assert_eq!(err.field(), "max_concurrent");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct BulkheadBuilder {
    max_concurrent: u32,
    max_wait: Option<Duration>,
    name: &'static str,
}

impl Default for BulkheadBuilder {
    fn default() -> Self {
        BulkheadBuilder {
            max_concurrent: 25,
            max_wait: None,
            name: "bulkhead",
        }
    }
}

impl BulkheadBuilder {
    /// The most calls in flight at once (≥ 1; default 25).
    pub fn max_concurrent(mut self, n: u32) -> Self {
        self.max_concurrent = n;
        self
    }

    /// How long a call may wait for a slot (> 0; default: it does not wait). A blocking
    /// function never waits: it is turned away at once when every slot is taken.
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = Some(wait);
        self
    }

    /// A name for events (default `"bulkhead"`).
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Checks the settings and makes the bulkhead.
    ///
    /// # Errors
    /// A [`ConfigError`] naming `max_concurrent` (0) or `max_wait` (zero).
    pub fn build(self) -> Result<Bulkhead, ConfigError> {
        if self.max_concurrent == 0 {
            return Err(ConfigError::Zero {
                field: "max_concurrent",
            });
        }
        if self.max_wait.is_some_and(|w| w.is_zero()) {
            return Err(ConfigError::Zero { field: "max_wait" });
        }
        Ok(Bulkhead {
            name: self.name,
            max_concurrent: self.max_concurrent,
            max_wait: self.max_wait,
            in_flight: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            #[cfg(not(loom))]
            freed: tokio::sync::Notify::new(),
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn bulkhead(n: u32, wait: Option<u64>) -> Bulkhead {
        let mut b = Bulkhead::builder().max_concurrent(n);
        if let Some(ms) = wait {
            b = b.max_wait(Duration::from_millis(ms));
        }
        b.build().unwrap()
    }

    #[test]
    fn never_more_than_max_concurrent() {
        let b = bulkhead(3, None);
        let held: Vec<_> = (0..5).filter_map(|_| b.try_acquire().ok()).collect();
        assert_eq!(held.len(), 3);
        assert_eq!(b.in_flight(), 3);
        drop(held);
        assert_eq!(b.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn without_max_wait_a_full_bulkhead_turns_away_at_once() {
        let b = bulkhead(1, None);
        let _held = b.acquire().await.unwrap();
        let t0 = tokio::time::Instant::now();
        assert_eq!(b.acquire().await.unwrap_err(), BulkheadFull::new());
        assert_eq!(t0.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_gets_the_slot_freed_within_max_wait_and_not_after() {
        let b = std::sync::Arc::new(bulkhead(1, Some(100)));
        let held = b.acquire().await.unwrap();
        let waiter = {
            let b = b.clone();
            tokio::spawn(async move {
                let t0 = tokio::time::Instant::now();
                let got = b.acquire().await.map(drop).is_ok();
                (got, t0.elapsed())
            })
        };
        tokio::time::sleep(Duration::from_millis(40)).await;
        drop(held);
        let (served, waited_for) = waiter.await.unwrap();
        assert!(served);
        assert_eq!(waited_for, Duration::from_millis(40));
        let _held = b.acquire().await.unwrap();
        let t0 = tokio::time::Instant::now();
        assert!(b.acquire().await.is_err());
        assert_eq!(t0.elapsed(), Duration::from_millis(100));
        assert_eq!(b.waiters.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn every_waiter_is_served_as_slots_free() {
        let b = std::sync::Arc::new(bulkhead(2, Some(1_000)));
        let first: Vec<_> = (0..2).map(|_| b.try_acquire().unwrap()).collect();
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let b = b.clone();
                tokio::spawn(async move {
                    let p = b.acquire().await;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    p.is_ok()
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(5)).await;
        drop(first);
        for w in waiters {
            assert!(w.await.unwrap());
        }
        assert_eq!(b.in_flight(), 0);
    }

    #[test]
    fn bad_settings_name_their_field() {
        assert_eq!(
            Bulkhead::builder()
                .max_concurrent(0)
                .build()
                .unwrap_err()
                .field(),
            "max_concurrent"
        );
        assert_eq!(
            Bulkhead::builder()
                .max_wait(Duration::ZERO)
                .build()
                .unwrap_err()
                .field(),
            "max_wait"
        );
    }
}
