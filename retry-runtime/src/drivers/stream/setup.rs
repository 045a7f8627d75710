//! A resumed stream being set up: [`RetryPolicy::retry_stream`] gives a [`StreamSetup`], whose
//! [`resume`](StreamSetup::resume) says how the stream resumes and gives the [`RetryStream`];
//! the settings below change one slot of its type each.

use std::fmt::Debug;
use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

use futures_core::Stream;

use super::phase::{HeldPermit, Phase, Timer};
use super::recover::{NoRecover, RecoverStream};
use crate::convert::{FromBreakerOpen, FromElapsed};
use crate::drivers::timeout::{ElapsedInto, NoTimeout};
use crate::engine::context::RetryContext;
use crate::engine::hooks::{DelayFor, DelaySlot, FnHooks, Hooks};
use crate::engine::state::Engine;
use crate::error::{BreakerOpen, Elapsed};
use crate::guards::breaker::CircuitBreaker;
use crate::guards::budget::RetryBudget;
use crate::schedule::policy::RetryPolicy;

impl RetryPolicy {
    /// Retries a stream under this policy by resuming it: `open(checkpoint)` opens the stream
    /// from a checkpoint, and [`resume`](StreamSetup::resume) says where the first open starts and
    /// how each item moves the checkpoint. A retryable failure mid-stream (an `Err` item, or no
    /// item for [`idle_timeout`](RetryStream::idle_timeout)) re-opens it from the checkpoint of
    /// the last item delivered, after the schedule's delay, so that each item reaches the
    /// consumer once and in order.
    ///
    /// The rules, which the rest of [`RetryStream`]'s docs detail:
    /// - **One schedule for the whole stream, started again by progress.** A failure after items
    ///   were delivered (since the last failure) starts the schedule again, that attempt counting
    ///   as the first ([`progress_resets`](RetryStream::progress_resets), on by default): so
    ///   `max_attempts` bounds the attempts in a row since the last one that delivered, and a
    ///   long watch survives any number of blips, each after the first delay. A source that
    ///   delivers an item and breaks every time is re-opened for as long as it does: it is making
    ///   progress, which neither the breaker nor the budget counts against it (turn
    ///   `progress_resets` off to bound such a stream's failures over its life). The budget pays
    ///   for every resume; `max_elapsed` bounds the whole stream.
    /// - **The policy's `timeout` bounds each open** (until `open`'s future gives the stream);
    ///   the gap between items is bounded by [`idle_timeout`](RetryStream::idle_timeout).
    /// - **A resume repeats a read**: a stream is taken as safe to re-open after a failure whose
    ///   outcome is unknown (say [`idempotent(false)`](RetryStream::idempotent) otherwise).
    /// - **Items are never buffered**: an item is handed on as the stream gives it, after
    ///   `advance` moved the checkpoint past it.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::RetryPolicy;
    ///
    ///     // A feed of the events after `after`, up to 6, whose connection breaks after every
    ///     // 2 events it sends.
    ///     fn feed(after: u64) -> impl futures_util::Stream<Item = io::Result<u64>> {
    ///         let events = (after + 1..=6).take(2).map(Ok);
    ///         let reset = (after + 2 < 6).then(|| Err(io::ErrorKind::ConnectionReset.into()));
    ///         stream::iter(events.chain(reset))
    ///     }
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let mut events = policy
    ///         .retry_stream(|after: u64| async move { Ok(feed(after)) })
    ///         .resume(0, |after, event: &u64| *after = *event);
    ///     let mut seen = vec![];
    ///     while let Some(event) = events.next().await {
    ///         seen.push(event.unwrap());
    ///     }
    ///     assert_eq!(seen, [1, 2, 3, 4, 5, 6], "each once, in order");
    ///     assert_eq!(events.resumes(), 2);
    /// }
    /// ```
    pub fn retry_stream<Open>(&self, open: Open) -> StreamSetup<'_, Open> {
        StreamSetup { policy: self, open }
    }
}

/// A stream being set up: say how it resumes with [`resume`](Self::resume). Made by
/// [`RetryPolicy::retry_stream`].
///
/// ```
/// use futures_util::stream;
/// use reattempt::{RetryPolicy, StreamSetup};
///
/// let policy = RetryPolicy::builder().build().unwrap();
/// let setup: StreamSetup<'_, _> = policy.retry_stream(|after: u64| async move {
///     Ok::<_, std::io::Error>(stream::iter([Ok(after + 1)]))
/// });
/// let _feed = setup.resume(0, |after, item: &u64| *after = *item);
/// ```
#[must_use = "a stream is set up by `.resume(initial, advance)`"]
#[derive(Debug, Clone)]
pub struct StreamSetup<'p, Open> {
    policy: &'p RetryPolicy,
    open: Open,
}

impl<'p, Open> StreamSetup<'p, Open> {
    /// The stream's checkpoint: `initial` is where the first open starts (`open(initial)`), and
    /// `advance(&mut checkpoint, &item)` moves it past each item as the item is handed to the
    /// consumer. A re-open gets a clone of the checkpoint as it stands: that of the last item
    /// delivered.
    ///
    /// The checkpoint is whatever the source resumes from: the last event's sequence number
    /// (`|after, event| *after = Some(event.seq)`), a byte offset
    /// (`|offset, chunk| *offset += chunk.len() as u64`), a resume token.
    ///
    /// ```
    /// use futures_util::stream;
    /// use reattempt::RetryPolicy;
    ///
    /// let policy = RetryPolicy::builder().build().unwrap();
    /// let chunks = policy
    ///     .retry_stream(|offset: u64| async move {
    ///         Ok::<_, std::io::Error>(stream::iter([Ok(vec![0u8; 512 - offset as usize])]))
    ///     })
    ///     .resume(0, |offset, chunk: &Vec<u8>| *offset += chunk.len() as u64);
    /// assert_eq!(*chunks.checkpoint(), 0);
    /// ```
    pub fn resume<C, Adv, Fut, S, T, E>(
        self,
        initial: C,
        advance: Adv,
    ) -> RetryStream<'p, C, Open, Adv, Fut, S, T, E>
    where
        Open: FnMut(C) -> Fut,
        Fut: Future<Output = Result<S, E>>,
        S: Stream<Item = Result<T, E>>,
        Adv: FnMut(&mut C, &T),
        C: Clone,
    {
        RetryStream {
            engine: Engine::new(self.policy),
            open: self.open,
            advance,
            checkpoint: initial,
            hooks: FnHooks::new().idempotent(true),
            timeout: ElapsedInto,
            recover: Some(NoRecover),
            settings: Settings {
                name: "retry_stream",
                idle: None,
                progress_resets: true,
                breaker: None,
                budget: None,
            },
            phase: Phase::Idle,
            timer: Timer::new(),
            idle_armed: false,
            permit: HeldPermit::NONE,
            progressed: false,
            resumes: 0,
            opened_before: false,
            last: None,
            items: PhantomData,
        }
    }
}

/// The longest gap between items, and what a gap that long becomes.
type Stall<E> = (Duration, fn(Elapsed) -> E);

/// The breaker asked before each open, and what its rejection becomes.
type BreakerInto<'p, E> = (&'p CircuitBreaker, fn(BreakerOpen) -> E);

/// The settings of a [`RetryStream`] that take no slot of its type.
pub(super) struct Settings<'p, E> {
    pub(super) name: &'static str,
    /// The longest gap between items, and the error a gap that long becomes.
    pub(super) idle: Option<Stall<E>>,
    pub(super) progress_resets: bool,
    pub(super) breaker: Option<BreakerInto<'p, E>>,
    pub(super) budget: Option<&'p RetryBudget>,
}

/// A stream retried by resuming it from a checkpoint: a `futures` [`Stream`](https://docs.rs/futures-core/0.3/futures_core/stream/trait.Stream.html) of the source's
/// items. Made by [`RetryPolicy::retry_stream`] and [`StreamSetup::resume`]; see there for the
/// rules. Its settings carry the attribute's names.
///
/// - **Items**: each `Ok` item is handed on once, in order, after `advance` moved the
///   checkpoint past it. An `Err` item that [`retry_if`](Self::retry_if) retries (by default
///   every error) ends the attempt: the stream is re-opened from the checkpoint after the
///   schedule's delay. One it does not retry is the stream's last item. A clean end of the
///   source ends the stream.
/// - **Guards**: the circuit breaker is asked before each open, and hears an attempt's success
///   at its first item (a stream that delivers is up); a failure before any item is a failure.
///   The budget pays for each resume, and an attempt's first item pays it back.
/// - **Cancellation**: dropping the stream drops the open or the source it is polling, and the
///   sleep: nothing runs after it. A breaker's permit it held goes back unused.
/// - **Events**: each resume logs `reattempt: stream resumed` at `DEBUG` (fields `name`,
///   `resumes`, `attempt`) and, with the `metrics` feature, increments
///   `reattempt.stream.resumes` (attribute `reattempt.name`); failures and give-ups are logged as any call's.
///
/// The type is `Unpin`: the open's future and the source are boxed (one allocation per open).
///
/// ```
/// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     use std::{io, time::Duration};
///     use futures_util::{StreamExt, stream};
///     use reattempt::{RetryBudget, RetryPolicy, transient};
///
///     let policy = RetryPolicy::builder().max_attempts(5).max_elapsed(Duration::from_secs(600)).build().unwrap();
///     let budget = RetryBudget::builder().build().unwrap();
///     let mut feed = policy
///         .retry_stream(|after: u64| async move {
///             let reset = (after < 4).then(|| Err(io::Error::from(io::ErrorKind::ConnectionReset)));
///             Ok(stream::iter((after + 1..=after + 2).map(Ok)).chain(stream::iter(reset)))
///         })
///         .resume(0, |after, item: &u64| *after = *item)
///         .retry_if(transient)
///         .idle_timeout(Duration::from_secs(30))
///         .budget(&budget)
///         .name("orders");
///     let mut seen = vec![];
///     while let Some(item) = feed.next().await {
///         seen.push(item.unwrap());
///     }
///     assert_eq!(seen, [1, 2, 3, 4, 5, 6]);
///     assert_eq!(feed.resumes(), 2);
/// }
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct RetryStream<
    'p,
    C,
    Open,
    Adv,
    Fut,
    S,
    T,
    E,
    K = FnHooks<(), E>,
    Tm = ElapsedInto,
    R: RecoverStream<C, T, E> = NoRecover,
> {
    pub(super) engine: Engine<'p>,
    pub(super) open: Open,
    pub(super) advance: Adv,
    pub(super) checkpoint: C,
    pub(super) hooks: K,
    pub(super) timeout: Tm,
    /// Taken when the stream gives up.
    pub(super) recover: Option<R>,
    pub(super) settings: Settings<'p, E>,
    pub(super) phase: Phase<Fut, S, R::Fut, R::Stream>,
    /// The open's time limit, the idle limit (or the call's deadline) while streaming, or the
    /// backoff: one timer, reset in place.
    pub(super) timer: Timer,
    /// Whether the armed timer is the idle limit (rather than the open's or the call's time
    /// limit).
    pub(super) idle_armed: bool,
    /// The breaker's permit of the attempt being opened, until its first item.
    pub(super) permit: HeldPermit<'p>,
    /// The attempt running now delivered an item.
    pub(super) progressed: bool,
    pub(super) resumes: u32,
    /// An attempt was opened: the next open is a resume.
    pub(super) opened_before: bool,
    /// The last failure, kept while a resume waits: a breaker that turns the resume away ends
    /// the stream with it.
    pub(super) last: Option<Result<(), E>>,
    pub(super) items: PhantomData<fn() -> T>,
}

// Nothing in it is pinned in place: the open's future and the source are boxed.
impl<C, Open, Adv, Fut, S, T, E, K, Tm, R: RecoverStream<C, T, E>> Unpin
    for RetryStream<'_, C, Open, Adv, Fut, S, T, E, K, Tm, R>
{
}

impl<C: Debug, Open, Adv, Fut, S, T, E, K, Tm, R: RecoverStream<C, T, E>> Debug
    for RetryStream<'_, C, Open, Adv, Fut, S, T, E, K, Tm, R>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryStream")
            .field("name", &self.settings.name)
            .field("checkpoint", &self.checkpoint)
            .field("attempt", &self.engine.attempt())
            .field("resumes", &self.resumes)
            .field("phase", &self.phase.name())
            .finish_non_exhaustive()
    }
}

impl<'p, C, Open, Adv, Fut, S, T, E, K, Tm, R: RecoverStream<C, T, E>>
    RetryStream<'p, C, Open, Adv, Fut, S, T, E, K, Tm, R>
{
    /// The checkpoint as it stands: that of the last item delivered (the initial one before).
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let mut events = policy
    ///         .retry_stream(|after: u64| async move { Ok::<_, std::io::Error>(stream::iter([Ok(after + 1), Ok(after + 2)])) })
    ///         .resume(0, |after, event: &u64| *after = *event);
    ///     assert_eq!(*events.checkpoint(), 0);
    ///     events.next().await;
    ///     assert_eq!(*events.checkpoint(), 1, "moved past the item delivered");
    /// }
    /// ```
    pub fn checkpoint(&self) -> &C {
        &self.checkpoint
    }

    /// How many times the stream was re-opened after its first open.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
    ///     let mut opens = 0;
    ///     let refused = policy.retry_stream(|(): ()| {
    ///         opens += 1;
    ///         async { Err::<stream::Empty<std::io::Result<u8>>, _>(std::io::Error::other("down")) }
    ///     });
    ///     let mut stream = refused.resume((), |(), _| {});
    ///     assert!(stream.next().await.unwrap().is_err());
    ///     assert_eq!(stream.resumes(), 2, "opened once, then re-opened twice");
    /// }
    /// ```
    pub fn resumes(&self) -> u32 {
        self.resumes
    }

    /// Names the stream in its events and metrics (default `"retry_stream"`).
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use futures_util::stream;
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let feed = policy
    ///         .retry_stream(|(): ()| async { Ok::<_, std::io::Error>(stream::iter([Ok(1u8)])) })
    ///         .resume((), |(), _| {})
    ///         .name("orders-feed");
    ///     assert!(format!("{feed:?}").contains("orders-feed"));
    /// }
    /// ```
    pub fn name(mut self, name: &'static str) -> Self {
        self.settings.name = name;
        self
    }

    /// A stream that gives no item for `idle` (from the start of its open, the wait for the
    /// open's answer included, or from its last item) has stalled: the attempt fails with `E::from_elapsed(Elapsed)`, a timeout (retried unless
    /// [`retry_if`](Self::retry_if) says otherwise), and the stream resumes from its checkpoint.
    /// No idle limit by default.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::{io, time::Duration};
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     // Item 1, then silence (the connection is up, nothing comes): re-opened after 30 s.
    ///     let items: Vec<u64> = policy
    ///         .retry_stream(|after: u64| async move {
    ///             let rest = stream::iter((after + 1..=3).map(Ok::<_, io::Error>));
    ///             Ok(if after == 0 { rest.take(1).chain(stream::pending()).boxed() } else { rest.boxed() })
    ///         })
    ///         .resume(0, |after, item: &u64| *after = *item)
    ///         .idle_timeout(Duration::from_secs(30))
    ///         .map(Result::unwrap)
    ///         .collect()
    ///         .await;
    ///     assert_eq!(items, [1, 2, 3]);
    /// }
    /// ```
    pub fn idle_timeout(self, idle: Duration) -> Self
    where
        E: FromElapsed,
    {
        self.idle_timeout_into(idle, E::from_elapsed)
    }

    /// As [`idle_timeout`](Self::idle_timeout), a stall becoming `Err(stalled(Elapsed))`: for
    /// an error type without `FromElapsed`.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    ///     // An error type of another crate's, with no `From<Elapsed>`: a status code.
    ///     let last = policy
    ///         .retry_stream(|(): ()| async { Ok::<_, u16>(stream::pending::<Result<u8, u16>>()) })
    ///         .resume((), |(), _| {})
    ///         .without_timeout()
    ///         .idle_timeout_into(Duration::from_secs(5), |_| 504)
    ///         .next()
    ///         .await;
    ///     assert_eq!(last, Some(Err(504)), "stalled twice: the attempts are spent");
    /// }
    /// ```
    pub fn idle_timeout_into(mut self, idle: Duration, stalled: fn(Elapsed) -> E) -> Self {
        self.settings.idle = Some((idle, stalled));
        self
    }

    /// Whether a failure after items were delivered (since the last failure) starts the
    /// schedule again: the attempt count and the backoff (default `true`). With `false`, the
    /// stream's failures count against `max_attempts` over its whole life, progress or not.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    ///     // Each open gives one item, then breaks.
    ///     let open = |after: u64| async move {
    ///         let reset = io::Error::from(io::ErrorKind::ConnectionReset);
    ///         Ok(stream::iter([Ok(after + 1), Err(reset)]))
    ///     };
    ///     let counted: Vec<_> = policy
    ///         .retry_stream(open)
    ///         .resume(0, |after, item: &u64| *after = *item)
    ///         .progress_resets(false)
    ///         .collect()
    ///         .await;
    ///     assert_eq!(counted.len(), 3, "items 1 and 2, then the second failure ends it");
    ///     assert!(counted[2].is_err());
    /// }
    /// ```
    pub fn progress_resets(mut self, resets: bool) -> Self {
        self.settings.progress_resets = resets;
        self
    }

    /// Pays each resume from `budget` (the same budget other calls to the dependency use); an
    /// attempt's first item pays it back. A resume the budget cannot pay ends the stream with
    /// the last failure.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::{RetryBudget, RetryPolicy};
    ///
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let empty = RetryBudget::builder().initial_tokens(0).build().unwrap();
    ///     let items: Vec<_> = policy
    ///         .retry_stream(|after: u64| async move {
    ///             Ok(stream::iter([Ok(after + 1), Err(io::Error::from(io::ErrorKind::ConnectionReset))]))
    ///         })
    ///         .resume(0, |after, item: &u64| *after = *item)
    ///         .budget(&empty)
    ///         .collect()
    ///         .await;
    ///     assert_eq!(items.len(), 2, "item 1, then the failure: no token to pay a resume");
    /// }
    /// ```
    pub fn budget(mut self, budget: &'p RetryBudget) -> Self {
        self.settings.budget = Some(budget);
        self
    }

    /// Asks `breaker` before each open; an open it turns away ends the stream with
    /// `E::from_breaker_open(BreakerOpen)` (or, for a resume, the last failure). The breaker
    /// hears an attempt's success at its first item.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::{CircuitBreaker, RetryPolicy};
    ///
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let breaker = CircuitBreaker::builder().failure_threshold(1).build().unwrap();
    ///     breaker.record(breaker.try_acquire().unwrap(), false); // open
    ///     let mut feed = policy
    ///         .retry_stream(|(): ()| async { Ok::<_, io::Error>(stream::iter([Ok(1u8)])) })
    ///         .resume((), |(), _| {})
    ///         .circuit_breaker(&breaker);
    ///     let turned_away = feed.next().await.unwrap().unwrap_err();
    ///     assert!(turned_away.to_string().contains("circuit breaker is open"));
    /// }
    /// ```
    pub fn circuit_breaker(self, breaker: &'p CircuitBreaker) -> Self
    where
        E: FromBreakerOpen,
    {
        self.breaker_open_into(breaker, E::from_breaker_open)
    }

    /// As [`circuit_breaker`](Self::circuit_breaker), a rejection becoming `open(BreakerOpen)`.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::{CircuitBreaker, RetryPolicy};
    ///
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let breaker = CircuitBreaker::builder().failure_threshold(1).build().unwrap();
    ///     breaker.record(breaker.try_acquire().unwrap(), false); // open
    ///     let mut feed = policy
    ///         .retry_stream(|(): ()| async { Ok::<_, u16>(stream::iter([Ok(1u8)])) })
    ///         .resume((), |(), _| {})
    ///         .without_timeout()
    ///         .breaker_open_into(&breaker, |_| 503);
    ///     assert_eq!(feed.next().await, Some(Err(503)));
    /// }
    /// ```
    pub fn breaker_open_into(
        mut self,
        breaker: &'p CircuitBreaker,
        open: fn(BreakerOpen) -> E,
    ) -> Self {
        self.settings.breaker = Some((breaker, open));
        self
    }

    fn map<K2, Tm2, R2: RecoverStream<C, T, E>>(
        self,
        hooks: impl FnOnce(K) -> K2,
        timeout: impl FnOnce(Tm) -> Tm2,
        recover: impl FnOnce(Option<R>) -> Option<R2>,
    ) -> RetryStream<'p, C, Open, Adv, Fut, S, T, E, K2, Tm2, R2> {
        debug_assert!(
            matches!(self.phase, Phase::Idle),
            "set up after the first poll"
        );
        RetryStream {
            engine: self.engine,
            open: self.open,
            advance: self.advance,
            checkpoint: self.checkpoint,
            hooks: hooks(self.hooks),
            timeout: timeout(self.timeout),
            recover: recover(self.recover),
            settings: self.settings,
            phase: Phase::Idle,
            timer: self.timer,
            idle_armed: self.idle_armed,
            permit: self.permit,
            progressed: self.progressed,
            resumes: self.resumes,
            opened_before: self.opened_before,
            last: self.last,
            items: PhantomData,
        }
    }

    /// All the hooks in one value: whether to retry an error, its class, a server's hint, what
    /// to do before a retry (see [`Hooks`]). Only failures are judged: the outcome type is `()`.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::{FnHooks, RetryPolicy};
    ///
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let hooks = FnHooks::new().retry_if(|e: &io::Error| e.kind() == io::ErrorKind::ConnectionReset);
    ///     let items: Vec<_> = policy
    ///         .retry_stream(|(): ()| async {
    ///             Ok(stream::iter([Ok(1u8), Err(io::Error::from(io::ErrorKind::PermissionDenied))]))
    ///         })
    ///         .resume((), |(), _| {})
    ///         .hooks(hooks)
    ///         .collect()
    ///         .await;
    ///     assert_eq!(items.len(), 2, "not retried: the error is the last item");
    /// }
    /// ```
    pub fn hooks<H: Hooks<(), E>>(
        self,
        hooks: H,
    ) -> RetryStream<'p, C, Open, Adv, Fut, S, T, E, H, Tm, R> {
        self.map(|_| hooks, |t| t, |r| r)
    }

    /// The error of an open that ran out of the policy's `timeout`: `timed_out(Elapsed)`.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(1).timeout(Duration::from_secs(1)).build().unwrap();
    ///     let mut feed = policy
    ///         .retry_stream(|(): ()| async {
    ///             std::future::pending::<()>().await; // the open never answers
    ///             Ok::<_, u16>(stream::iter([Ok(1u8)]))
    ///         })
    ///         .resume((), |(), _| {})
    ///         .timeout_into(|_| 504);
    ///     assert_eq!(feed.next().await, Some(Err(504)));
    /// }
    /// ```
    pub fn timeout_into<F: FnMut(Elapsed) -> E>(
        self,
        timed_out: F,
    ) -> RetryStream<'p, C, Open, Adv, Fut, S, T, E, K, F, R> {
        self.map(|k| k, |_| timed_out, |r| r)
    }

    /// Opens without the policy's `timeout`, so the error type needs no conversion from
    /// [`Elapsed`]; `max_elapsed` still ends the sleeps, not a stream that is delivering.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     // `&str` has no conversion from a timeout: the stream is opened without one.
    ///     let items: Vec<Result<u8, &str>> = policy
    ///         .retry_stream(|(): ()| async { Ok(stream::iter([Ok(1), Ok(2)])) })
    ///         .resume((), |(), _| {})
    ///         .without_timeout()
    ///         .collect()
    ///         .await;
    ///     assert_eq!(items, [Ok(1), Ok(2)]);
    /// }
    /// ```
    pub fn without_timeout(self) -> RetryStream<'p, C, Open, Adv, Fut, S, T, E, K, NoTimeout, R> {
        self.map(|k| k, |_| NoTimeout, |r| r)
    }

    /// The stream's fallback when it gives up, at its first open or mid-stream: `fallback(error,
    /// checkpoint)` (the checkpoint of the last item delivered) gives a stream whose items
    /// follow those delivered (`Ok`; not retried), or the stream's last item (`Err`). As
    /// `#[recover]` is for a call.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().max_attempts(2).build().unwrap();
    ///     let items: Vec<u64> = policy
    ///         .retry_stream(|after: u64| async move {
    ///             // The live feed gives item 1, then is down for good.
    ///             let down = io::Error::from(io::ErrorKind::ConnectionRefused);
    ///             if after == 0 { Ok(stream::iter(vec![Ok(1), Err(down)])) } else { Err(down) }
    ///         })
    ///         .resume(0, |after, item: &u64| *after = *item)
    ///         // The archive serves what follows the last item delivered.
    ///         .recover(|_err, after| async move { Ok(stream::iter((after + 1..=3).map(Ok))) })
    ///         .map(Result::unwrap)
    ///         .collect()
    ///         .await;
    ///     assert_eq!(items, [1, 2, 3]);
    /// }
    /// ```
    pub fn recover<F>(self, fallback: F) -> RetryStream<'p, C, Open, Adv, Fut, S, T, E, K, Tm, F>
    where
        F: RecoverStream<C, T, E>,
    {
        self.map(|k| k, |t| t, |_| Some(fallback))
    }
}

// The hooks by the attribute's names, while they are the default `FnHooks`. Each names the type
// it gives, a slot changed: long, and spelled out for the docs.
#[allow(clippy::type_complexity)]
impl<'p, C, Open, Adv, Fut, S, T, E, A, B, D, N, F, Tm, R: RecoverStream<C, T, E>>
    RetryStream<'p, C, Open, Adv, Fut, S, T, E, FnHooks<(), E, A, B, D, N, F>, Tm, R>
{
    /// Resumes only after the errors for which `predicate` is `true` (default: every error);
    /// another error is the stream's last item.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::RetryPolicy;
    ///
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let items: Vec<_> = policy
    ///         .retry_stream(|(): ()| async {
    ///             Ok(stream::iter([Ok(1u8), Err(io::Error::from(io::ErrorKind::InvalidData))]))
    ///         })
    ///         .resume((), |(), _| {})
    ///         .retry_if(|e| e.kind() == io::ErrorKind::ConnectionReset)
    ///         .collect()
    ///         .await;
    ///     assert_eq!(items.len(), 2);
    ///     assert_eq!(items[1].as_ref().unwrap_err().kind(), io::ErrorKind::InvalidData);
    /// }
    /// ```
    pub fn retry_if<P: FnMut(&E) -> bool>(
        self,
        predicate: P,
    ) -> RetryStream<'p, C, Open, Adv, Fut, S, T, E, FnHooks<(), E, P, B, D, N, F>, Tm, R> {
        self.map(|h| h.retry_if(predicate), |t| t, |r| r)
    }

    /// Reads a server's requested delay from an error: a resume waits at least that long.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::RetryPolicy;
    ///     use tokio::time::Instant;
    ///
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     let start = Instant::now();
    ///     // The server says: come back in 5 s (e.g. gRPC pushback, or a Retry-After).
    ///     let items: Vec<_> = policy
    ///         .retry_stream(|after: u64| async move {
    ///             Ok(stream::iter([Ok(after + 1), Err(Duration::from_secs(5))]).take(if after == 0 { 2 } else { 1 }))
    ///         })
    ///         .resume(0, |after, item: &u64| *after = *item)
    ///         .without_timeout()
    ///         .retry_after(|wait: &Duration| Some(*wait))
    ///         .collect()
    ///         .await;
    ///     assert_eq!(items, [Ok(1), Ok(2)]);
    ///     assert!(start.elapsed() >= Duration::from_secs(5));
    /// }
    /// ```
    pub fn retry_after<H: FnMut(&E) -> Option<Duration>>(
        self,
        hint: H,
    ) -> RetryStream<
        'p,
        C,
        Open,
        Adv,
        Fut,
        S,
        T,
        E,
        FnHooks<(), E, A, B, DelayFor<H, D::Choose>, N, F>,
        Tm,
        R,
    >
    where
        D: DelaySlot,
    {
        self.map(|h| h.retry_after(hint), |t| t, |r| r)
    }

    /// Calls `f` before each resume's sleep, with the failure, the call's context and the delay.
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::{Jitter, RetryPolicy};
    ///
    ///     let policy = RetryPolicy::builder().jitter(Jitter::None).build().unwrap();
    ///     let mut log = vec![];
    ///     let _: Vec<_> = policy
    ///         .retry_stream(|after: u64| async move {
    ///             let reset = (after == 0).then(|| Err(io::Error::from(io::ErrorKind::ConnectionReset)));
    ///             Ok(stream::iter([Ok(after + 1)]).chain(stream::iter(reset)))
    ///         })
    ///         .resume(0, |after, item: &u64| *after = *item)
    ///         .on_retry(|e, ctx, delay| log.push(format!("attempt {} failed ({}); resuming in {delay:?}", ctx.attempt(), e.kind())))
    ///         .collect()
    ///         .await;
    ///     assert_eq!(log, ["attempt 1 failed (connection reset); resuming in 100ms"]);
    /// }
    /// ```
    pub fn on_retry<G: FnMut(&E, &RetryContext, Duration)>(
        self,
        f: G,
    ) -> RetryStream<'p, C, Open, Adv, Fut, S, T, E, FnHooks<(), E, A, B, D, G, F>, Tm, R> {
        self.map(|h| h.on_retry(f), |t| t, |r| r)
    }

    /// Whether re-opening after a failure whose outcome is unknown is safe (default `true`: a
    /// resume repeats a read from the checkpoint). With `false`, such a failure ends the
    /// stream (`GiveUpReason::UnknownOutcome`).
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::io;
    ///     use futures_util::{StreamExt, stream};
    ///     use reattempt::{RetryPolicy, transient};
    ///
    ///     let policy = RetryPolicy::builder().build().unwrap();
    ///     // A stream whose reading has an effect (a queue that hands each message out once): a reset
    ///     // may have come after the server sent (and dropped) the rest, so it is not re-opened.
    ///     let items: Vec<_> = policy
    ///         .retry_stream(|(): ()| async {
    ///             Ok(stream::iter([Ok(1u8), Err(io::Error::from(io::ErrorKind::ConnectionReset))]))
    ///         })
    ///         .resume((), |(), _| {})
    ///         .retry_if(transient)
    ///         .idempotent(false)
    ///         .collect()
    ///         .await;
    ///     assert!(items[1].is_err());
    /// }
    /// ```
    pub fn idempotent(self, idempotent: bool) -> Self {
        self.map(|h| h.idempotent(idempotent), |t| t, |r| r)
    }
}
