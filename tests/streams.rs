//! `#[retryable(resume = …)]`: a function that returns a stream, resumed from the checkpoint of
//! the last item delivered. Each test scripts an in-memory source (what each open gives: a
//! refusal, or some events then a reset, an end or a stall) and reads the stream the function
//! returns, on tokio's paused clock, so that every delay is exact.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};
use reattempt::{CircuitBreaker, RetryBudget, recover, retryable};
use tokio::time::Instant;

#[derive(Debug, Clone, PartialEq)]
enum Error {
    /// The connection broke (retryable).
    Reset,
    /// Refused for good (not retried by the keys that say which errors are).
    Fatal,
    Elapsed,
    BreakerOpen,
}

impl From<reattempt::Elapsed> for Error {
    fn from(_: reattempt::Elapsed) -> Self {
        Error::Elapsed
    }
}

impl From<reattempt::BreakerOpen> for Error {
    fn from(_: reattempt::BreakerOpen) -> Self {
        Error::BreakerOpen
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Event {
    seq: u64,
}

/// What one open does: refuse, or deliver the events after the checkpoint (at most `take` of
/// them), then `then`.
#[derive(Clone, Debug)]
enum Open {
    Refuse(Error),
    Deliver(usize, Then),
    /// An open that does not answer (cut by `timeout`).
    Hang,
}

#[derive(Clone, Debug)]
enum Then {
    Fail(Error),
    End,
    Stall,
}

use Open::{Deliver, Hang, Refuse};

fn reset_after(take: usize) -> Open {
    Deliver(take, Then::Fail(Error::Reset))
}

/// Counts the sources alive: each open's stream holds one, dropped with it.
struct Live(Arc<AtomicUsize>);

impl Live {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, SeqCst);
        Live(Arc::clone(count))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

/// An event feed of the events `1..=last`, each open scripted (past the script's end: every
/// event, then the end); it records where and when each open resumed from.
struct Feed {
    last: u64,
    script: Mutex<VecDeque<Open>>,
    opens: Mutex<Vec<(Option<u64>, Duration)>>,
    live: Arc<AtomicUsize>,
    start: Instant,
    breaker: CircuitBreaker,
    budget: RetryBudget,
}

type Events<'a> = std::pin::Pin<Box<dyn Stream<Item = Result<Event, Error>> + Send + 'a>>;

impl Feed {
    fn new(last: u64, script: impl IntoIterator<Item = Open>) -> Self {
        Feed {
            last,
            script: Mutex::new(script.into_iter().collect()),
            opens: Mutex::new(Vec::new()),
            live: Arc::new(AtomicUsize::new(0)),
            start: Instant::now(),
            breaker: CircuitBreaker::builder()
                .failure_threshold(2)
                .reset_timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            budget: RetryBudget::builder()
                .max_tokens(10)
                .initial_tokens(10)
                .retry_cost(5)
                .success_deposit(0)
                .build()
                .unwrap(),
        }
    }

    /// Where each open resumed from.
    fn opens(&self) -> Vec<Option<u64>> {
        self.opens.lock().unwrap().iter().map(|(a, _)| *a).collect()
    }

    /// When each open was made, from the feed's start.
    fn open_times(&self) -> Vec<Duration> {
        self.opens.lock().unwrap().iter().map(|(_, t)| *t).collect()
    }

    /// The source: what the next open of the script gives (after a turn of the executor, as a
    /// request's would).
    async fn open(&self, after: Option<u64>) -> Result<Events<'static>, Error> {
        tokio::task::yield_now().await;
        self.opens
            .lock()
            .unwrap()
            .push((after, self.start.elapsed()));
        let step = self
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Deliver(usize::MAX, Then::End));
        let (take, then) = match step {
            Refuse(e) => return Err(e),
            Deliver(take, then) => (take, then),
            Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                (usize::MAX, Then::End)
            }
        };
        let first = after.map_or(1, |a| a + 1);
        let events: Vec<_> = (first..=self.last)
            .take(take)
            .map(|seq| Ok(Event { seq }))
            .collect();
        let tail = match then {
            Then::Fail(e) => stream::iter(vec![Err(e)]).boxed(),
            Then::End => stream::iter(vec![]).boxed(),
            Then::Stall => stream::pending().boxed(),
        };
        let live = Live::new(&self.live);
        Ok(stream::iter(events)
            .chain(tail)
            .map(move |item| {
                let _held = &live;
                item
            })
            .boxed())
    }

    #[retryable(max_attempts = 3, delay = "100ms", jitter = "none",
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events(
        &self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.open(after).await
    }

    #[retryable(max_attempts = 3, delay = "100ms", jitter = "none", progress_resets = false,
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events_without_reset(
        &self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.open(after).await
    }

    #[retryable(max_attempts = 3, delay = "100ms", jitter = "none", idle_timeout = "1s",
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events_idle(
        &self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.open(after).await
    }

    #[retryable(max_attempts = 3, delay = "100ms", jitter = "none", max_elapsed = "2s",
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events_by_deadline(
        &self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.open(after).await
    }

    #[retryable(max_attempts = 10, delay = "100ms", jitter = "none", budget = self.budget,
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events_on_budget(
        &self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.open(after).await
    }

    #[retryable(max_attempts = 10, delay = "100ms", jitter = "none", circuit_breaker = self.breaker,
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events_behind_breaker(
        &self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.open(after).await
    }

    #[retryable(max_attempts = 3, delay = "100ms", jitter = "none", retry_on = [Error::Reset],
                recover = Self::replayed, resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events_recovered(
        &self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.open(after).await
    }

    /// The fallback: a replica's events after the checkpoint, marked `+ 100`.
    #[recover]
    async fn replayed(
        &self,
        err: Error,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        assert_eq!(err, Error::Fatal);
        let first = after.map_or(1, |a| a + 1);
        Ok(stream::iter(
            (first..=self.last).map(|seq| Ok(Event { seq: seq + 100 })),
        ))
    }

    #[retryable(max_attempts = 3, delay = "100ms", jitter = "none", timeout = "1s",
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events_timed(
        &self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.open(after).await
    }

    #[retryable(max_attempts = 3, delay = "100ms", jitter = "none", timeout = "1s", idempotent = false,
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events_not_idempotent(
        &self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.open(after).await
    }

    #[retryable(max_attempts = 3, delay = "100ms", jitter = "none", retry_on = [Error::Reset],
                on_retry = |_, _, _| RESUMES_HEARD.with(|n| n.set(n.get() + 1)),
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events_resets_only(
        &self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.open(after).await
    }

    /// A path for `resume`, naming the argument with `checkpoint`.
    fn advance(after: &mut Option<u64>, event: &Event) {
        *after = Some(event.seq);
    }

    #[retryable(max_attempts = 3, delay = "100ms", resume = Self::advance, checkpoint = after)]
    async fn events_by_path(&self, after: Option<u64>) -> Result<Events<'_>, Error> {
        self.open(after).await
    }
}

thread_local! {
    /// The resumes `on_retry` heard (the tests run each on a thread of its own).
    static RESUMES_HEARD: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

fn seqs(items: &[Result<Event, Error>]) -> Vec<Result<u64, Error>> {
    items.iter().map(|i| i.clone().map(|e| e.seq)).collect()
}

fn ok(range: std::ops::RangeInclusive<u64>) -> Vec<Result<u64, Error>> {
    range.map(Ok).collect()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[tokio::test(start_paused = true)]
async fn items_arrive_once_and_in_order_across_resets() {
    let feed = Feed::new(10, [reset_after(3), reset_after(2), reset_after(4)]);
    let stream = feed.events(None).await.expect("opened");
    let items: Vec<_> = stream.collect().await;
    assert_eq!(seqs(&items), ok(1..=10));
    assert_eq!(feed.opens(), [None, Some(3), Some(5), Some(9)]);
    // The path form resumes the same way.
    let feed = Feed::new(6, [reset_after(2), reset_after(3)]);
    let items: Vec<_> = feed.events_by_path(Some(0)).await.unwrap().collect().await;
    assert_eq!(seqs(&items), ok(1..=6));
    assert_eq!(feed.opens(), [Some(0), Some(2), Some(5)]);
}

#[tokio::test(start_paused = true)]
async fn a_failed_open_is_retried_and_its_last_error_returned_up_front() {
    let feed = Feed::new(3, [Refuse(Error::Reset), Refuse(Error::Reset)]);
    let items: Vec<_> = feed.events(Some(1)).await.unwrap().collect().await;
    assert_eq!(seqs(&items), ok(2..=3));
    assert_eq!(feed.opens(), [Some(1); 3]);
    assert_eq!(feed.open_times(), [ms(0), ms(100), ms(300)]);

    let feed = Feed::new(
        3,
        [
            Refuse(Error::Reset),
            Refuse(Error::Reset),
            Refuse(Error::Fatal),
        ],
    );
    let Err(err) = feed.events(None).await else {
        panic!("three refusals of three attempts");
    };
    assert_eq!(err, Error::Fatal);
    assert_eq!(feed.opens().len(), 3);
}

/// A stream that delivered since its last failure starts its schedule again: many resets, each
/// after the first delay; with `progress_resets = false`, the failures count over the whole
/// stream and the backoff grows.
#[tokio::test(start_paused = true)]
async fn progress_resets_the_backoff_and_the_attempts() {
    let feed = Feed::new(6, (0..5).map(|_| reset_after(1)));
    let items: Vec<_> = feed.events(None).await.unwrap().collect().await;
    assert_eq!(seqs(&items), ok(1..=6), "5 resets with max_attempts = 3");
    assert_eq!(
        feed.open_times(),
        [ms(0), ms(100), ms(200), ms(300), ms(400), ms(500)],
        "each resume after the first delay"
    );

    let feed = Feed::new(6, (0..5).map(|_| reset_after(1)));
    let items: Vec<_> = feed
        .events_without_reset(None)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(
        seqs(&items),
        [Ok(1), Ok(2), Ok(3), Err(Error::Reset)],
        "the third failure is the last of 3 attempts"
    );
    assert_eq!(
        feed.open_times(),
        [ms(0), ms(100), ms(300)],
        "100 ms, then 200 ms"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stall_longer_than_the_idle_timeout_is_resumed() {
    let feed = Feed::new(5, [Deliver(2, Then::Stall)]);
    let items: Vec<_> = feed.events_idle(None).await.unwrap().collect().await;
    assert_eq!(seqs(&items), ok(1..=5));
    assert_eq!(feed.opens(), [None, Some(2)]);
    assert_eq!(
        feed.open_times(),
        [ms(0), ms(1100)],
        "1 s without an item, then the first delay"
    );
}

/// `max_elapsed` bounds the whole stream: no resume past it, and a stream still open at the
/// deadline ends there with the deadline's error.
#[tokio::test(start_paused = true)]
async fn max_elapsed_bounds_the_whole_stream() {
    // Progress on every open: the attempts never run out, the deadline does.
    let feed = Feed::new(1000, (0..100).map(|_| reset_after(1)));
    let t0 = Instant::now();
    let items: Vec<_> = feed.events_by_deadline(None).await.unwrap().collect().await;
    assert!(t0.elapsed() <= Duration::from_secs(2), "{:?}", t0.elapsed());
    let opens = feed.opens().len();
    assert!(
        (19..=21).contains(&opens),
        "one open per 100 ms for 2 s: {opens}"
    );
    assert_eq!(
        items.len(),
        opens + 1,
        "an event per open, and the end's error"
    );
    assert!(items.last().unwrap().is_err(), "{:?}", items.last());

    let feed = Feed::new(1000, [Deliver(3, Then::Stall)]);
    let t0 = Instant::now();
    let items: Vec<_> = feed.events_by_deadline(None).await.unwrap().collect().await;
    assert_eq!(
        t0.elapsed(),
        Duration::from_secs(2),
        "ended at the deadline"
    );
    assert_eq!(
        seqs(&items),
        [Ok(1), Ok(2), Ok(3), Err(Error::Elapsed)],
        "a stalled stream ends with the deadline's error"
    );
}

#[tokio::test(start_paused = true)]
async fn the_budget_pays_for_each_resume_across_the_stream() {
    // 10 tokens at 5 a resume, no item pays back (a refused open): the third resume is refused.
    let feed = Feed::new(
        6,
        [reset_after(1), Refuse(Error::Reset), Refuse(Error::Reset)],
    );
    let items: Vec<_> = feed.events_on_budget(None).await.unwrap().collect().await;
    assert_eq!(seqs(&items), [Ok(1), Err(Error::Reset)]);
    assert_eq!(feed.opens(), [None, Some(1), Some(1)]);
    assert_eq!(feed.budget.available(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_breaker_hears_every_resume_and_turns_the_next_call_away() {
    let feed = Feed::new(
        6,
        [reset_after(1), Refuse(Error::Reset), Refuse(Error::Reset)],
    );
    let items: Vec<_> = feed
        .events_behind_breaker(None)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(
        seqs(&items),
        [Ok(1), Err(Error::Reset)],
        "two failed opens open the breaker, which turns the next resume away"
    );
    assert_eq!(feed.breaker.state(), reattempt::BreakerState::Open);
    let Err(err) = feed.events_behind_breaker(Some(1)).await else {
        panic!("the breaker is open");
    };
    assert_eq!(err, Error::BreakerOpen);
    assert_eq!(feed.opens().len(), 3, "nothing opened");
}

#[tokio::test(start_paused = true)]
async fn the_fallback_continues_the_stream_from_its_checkpoint() {
    // Mid-stream: a failure not retried, after 2 events.
    let feed = Feed::new(4, [Deliver(2, Then::Fail(Error::Fatal))]);
    let items: Vec<_> = feed.events_recovered(None).await.unwrap().collect().await;
    assert_eq!(seqs(&items), [Ok(1), Ok(2), Ok(103), Ok(104)]);
    // At the first open: the function returns the fallback's stream.
    let feed = Feed::new(4, [Refuse(Error::Fatal)]);
    let items: Vec<_> = feed
        .events_recovered(Some(1))
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(seqs(&items), [Ok(102), Ok(103), Ok(104)]);
    assert_eq!(feed.opens(), [Some(1)]);
}

/// Dropping the stream drops its source, and nothing runs after: no resume from a sleep.
#[tokio::test(start_paused = true)]
async fn dropping_the_stream_cancels_everything() {
    let feed = Feed::new(10, [Deliver(2, Then::Stall)]);
    let mut stream = Box::pin(feed.events(None).await.unwrap());
    assert_eq!(stream.next().await.map(|e| e.unwrap().seq), Some(1));
    assert_eq!(feed.live.load(SeqCst), 1, "the source is being read");
    drop(stream);
    assert_eq!(feed.live.load(SeqCst), 0, "dropped with the stream");

    // Dropped while it waits to resume.
    let feed = Feed::new(10, [reset_after(1)]);
    let mut stream = Box::pin(feed.events(None).await.unwrap());
    assert!(stream.next().await.is_some());
    let waiting = tokio::time::timeout(ms(50), stream.next()).await;
    assert!(waiting.is_err(), "asleep before its resume");
    drop(stream);
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(feed.opens(), [None], "no resume after the drop");
    assert_eq!(feed.live.load(SeqCst), 0);
}

/// A `self` taken by value: each open gets its own clone.
#[derive(Clone)]
struct Handle(Arc<Feed>);

impl Handle {
    #[retryable(max_attempts = 3, delay = "100ms",
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events(
        self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.0.open(after).await
    }
}

/// A generic function, its stream owning what it reads.
#[retryable(max_attempts = 3, delay = "100ms",
            resume = |after, event: &Event| *after = Some(event.seq))]
async fn generic_events<F: AsRef<Feed> + Clone + Send + Sync>(
    feed: F,
    after: Option<u64>,
) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
    feed.as_ref().open(after).await
}

impl AsRef<Feed> for Handle {
    fn as_ref(&self) -> &Feed {
        &self.0
    }
}

fn is_send<T: Send>(t: T) -> T {
    t
}

#[tokio::test(start_paused = true)]
async fn by_value_self_generic_fns_and_send_streams() {
    let handle = Handle(Arc::new(Feed::new(5, [reset_after(2)])));
    let stream = is_send(is_send(handle.clone().events(None)).await.unwrap());
    let items: Vec<_> = stream.collect().await;
    assert_eq!(seqs(&items), ok(1..=5));
    assert_eq!(handle.0.opens(), [None, Some(2)]);

    let handle = Handle(Arc::new(Feed::new(5, [reset_after(4)])));
    let stream = is_send(
        is_send(generic_events(handle.clone(), Some(1)))
            .await
            .unwrap(),
    );
    let items: Vec<_> = stream.collect().await;
    assert_eq!(seqs(&items), ok(2..=5));
    assert_eq!(handle.0.opens(), [Some(1), Some(5)]);

    // `&self`: the stream borrows the feed, and is `Send` as the feed is `Sync`.
    let feed = Feed::new(2, []);
    let stream = is_send(is_send(feed.events(None)).await.unwrap());
    assert_eq!(stream.count().await, 2);
}

/// The policy's `timeout` bounds each open; a stream is idempotent unless it says otherwise, so
/// an open cut short is retried, and with `idempotent = false` it is not (its outcome is unknown).
#[tokio::test(start_paused = true)]
async fn the_timeout_bounds_each_open_and_a_stream_is_idempotent_by_default() {
    let feed = Feed::new(3, [Hang]);
    let items: Vec<_> = feed.events_timed(None).await.unwrap().collect().await;
    assert_eq!(seqs(&items), ok(1..=3));
    assert_eq!(
        feed.open_times(),
        [ms(0), ms(1100)],
        "cut at 1 s, then the first delay"
    );

    let feed = Feed::new(3, [Hang]);
    let Err(err) = feed.events_not_idempotent(None).await else {
        panic!("a cut open of a stream that is not idempotent is not repeated");
    };
    assert_eq!(err, Error::Elapsed);
    assert_eq!(feed.opens().len(), 1);
}

/// Only the errors `retry_on` names are resumed (each heard by `on_retry`); another is the
/// stream's last item.
#[tokio::test(start_paused = true)]
async fn only_the_errors_retried_resume_the_stream() {
    let feed = Feed::new(
        9,
        [
            reset_after(2),
            reset_after(2),
            Deliver(1, Then::Fail(Error::Fatal)),
        ],
    );
    let items: Vec<_> = feed.events_resets_only(None).await.unwrap().collect().await;
    assert_eq!(
        seqs(&items),
        [Ok(1), Ok(2), Ok(3), Ok(4), Ok(5), Err(Error::Fatal)]
    );
    assert_eq!(feed.opens(), [None, Some(2), Some(4)]);
    assert_eq!(RESUMES_HEARD.with(std::cell::Cell::get), 2);
}

/// `mut self` by value: each open changes a clone of its own, never the caller's nor the last
/// open's.
#[derive(Clone)]
struct Cursor {
    feed: Arc<Feed>,
    opened: u32,
}

impl Cursor {
    #[retryable(max_attempts = 3, delay = "100ms",
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events(
        mut self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.opened += 1;
        self.feed.open_counted(self.opened, after).await
    }
}

/// A `mut` argument the body changes: each open starts from the caller's value.
#[retryable(max_attempts = 3, delay = "100ms",
            resume = |after, event: &Event| *after = Some(event.seq))]
async fn events_with_scratch(
    feed: Arc<Feed>,
    mut scratch: Vec<u32>,
    after: Option<u64>,
) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
    scratch.push(1);
    feed.open_counted(u32::try_from(scratch.len()).unwrap(), after)
        .await
}

impl Feed {
    /// `open`, failing with `Fatal` unless the open's own count is 1 (a count carried over from
    /// another open, or from the caller, is a clone shared where it must not be).
    async fn open_counted(&self, count: u32, after: Option<u64>) -> Result<Events<'static>, Error> {
        if count != 1 {
            return Err(Error::Fatal);
        }
        self.open(after).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_mut_self_and_a_mut_argument_are_each_opens_own() {
    let cursor = Cursor {
        feed: Arc::new(Feed::new(5, [reset_after(2), reset_after(1)])),
        opened: 0,
    };
    let items: Vec<_> = cursor.clone().events(None).await.unwrap().collect().await;
    assert_eq!(seqs(&items), ok(1..=5));
    assert_eq!(cursor.feed.opens(), [None, Some(2), Some(3)]);
    assert_eq!(cursor.opened, 0);

    let feed = Arc::new(Feed::new(5, [reset_after(2), reset_after(1)]));
    let items: Vec<_> = events_with_scratch(feed.clone(), vec![], None)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(seqs(&items), ok(1..=5));
    assert_eq!(feed.opens(), [None, Some(2), Some(3)]);
}

/// A key reading a borrowed argument: the stream borrows it, as it borrows `&self`.
#[retryable(max_attempts = 10, delay = "100ms", circuit_breaker = feed.breaker,
            resume = |after, event: &Event| *after = Some(event.seq))]
async fn events_of(
    feed: &Feed,
    after: Option<u64>,
) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
    feed.open(after).await
}

/// A `move` closure owns what it reads: an argument the body does not read is its alone.
#[retryable(max_attempts = 3, delay = "100ms",
            on_retry = move |_, _, _| { heard.fetch_add(1, SeqCst); },
            resume = |after, event: &Event| *after = Some(event.seq))]
async fn events_heard(
    feed: Arc<Feed>,
    heard: Arc<AtomicUsize>,
    after: Option<u64>,
) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
    feed.open(after).await
}

#[tokio::test(start_paused = true)]
async fn keys_reading_a_borrowed_argument_or_moving_an_unread_one() {
    let feed = Feed::new(
        6,
        [reset_after(1), Refuse(Error::Reset), Refuse(Error::Reset)],
    );
    let items: Vec<_> = events_of(&feed, None).await.unwrap().collect().await;
    assert_eq!(seqs(&items), [Ok(1), Err(Error::Reset)]);
    assert_eq!(feed.breaker.state(), reattempt::BreakerState::Open);

    let feed = Arc::new(Feed::new(5, [reset_after(2), reset_after(1)]));
    let heard = Arc::new(AtomicUsize::new(0));
    let items: Vec<_> = events_heard(feed.clone(), heard.clone(), None)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(seqs(&items), ok(1..=5));
    assert_eq!(heard.load(SeqCst), 2, "one `on_retry` for each resume");
}

/// A generic checkpoint (where `impl Trait` is refused): the open takes a clone of the current
/// one.
#[retryable(max_attempts = 3, delay = "100ms",
            resume = |after, event: &Event| *after = Some(event.seq).into())]
async fn events_from<C: Into<Option<u64>> + From<Option<u64>> + Clone + Send>(
    feed: Arc<Feed>,
    after: C,
) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
    feed.open(after.into()).await
}

#[tokio::test(start_paused = true)]
async fn a_generic_checkpoint() {
    let feed = Arc::new(Feed::new(5, [reset_after(2)]));
    let items: Vec<_> = events_from(feed.clone(), Some(1))
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(seqs(&items), ok(2..=5));
    assert_eq!(feed.opens(), [Some(1), Some(3)]);
}

/// The fix the refusal of `circuit_breaker = self.breaker` on a by-value `self` names: a
/// `static` breaker, which the stream borrows for ever.
static BREAKER: std::sync::LazyLock<CircuitBreaker> = std::sync::LazyLock::new(|| {
    CircuitBreaker::builder()
        .failure_threshold(2)
        .reset_timeout(Duration::from_secs(60))
        .build()
        .unwrap()
});

impl Handle {
    #[retryable(max_attempts = 10, delay = "100ms", circuit_breaker = BREAKER,
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events_behind_static(
        self,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.0.open(after).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_by_value_self_behind_a_static_breaker() {
    let handle = Handle(Arc::new(Feed::new(
        6,
        [reset_after(1), Refuse(Error::Reset), Refuse(Error::Reset)],
    )));
    let items: Vec<_> = handle
        .clone()
        .events_behind_static(None)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(seqs(&items), [Ok(1), Err(Error::Reset)]);
    assert_eq!(BREAKER.state(), reattempt::BreakerState::Open);
}
