//! `#[retryable(resume = …)]`: a function that returns a stream, resumed from the checkpoint of
//! the last item delivered. Each test scripts an in-memory source (what each open gives) and
//! reads the stream the function returns, on tokio's paused clock.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};
use reattempt::retryable;
use tokio::time::Instant;

#[derive(Debug, Clone, PartialEq)]
enum Error {
    /// The connection broke (retryable).
    Reset,
    /// Refused for good (not retried).
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
/// them), then fail with `then` (or end, or stall).
#[derive(Clone, Debug)]
enum Open {
    Refuse(Error),
    Deliver { take: usize, then: Then },
}

#[derive(Clone, Debug)]
enum Then {
    Fail(Error),
    End,
    Stall,
}

/// An event feed of `last` events, each open scripted; it records where each open resumed from.
struct Feed {
    last: u64,
    script: Mutex<VecDeque<Open>>,
    opens: Mutex<Vec<(Option<u64>, Duration)>>,
    start: Instant,
}

impl Feed {
    fn new(last: u64, script: impl IntoIterator<Item = Open>) -> Self {
        Feed {
            last,
            script: Mutex::new(script.into_iter().collect()),
            opens: Mutex::new(Vec::new()),
            start: Instant::now(),
        }
    }

    fn opens(&self) -> Vec<Option<u64>> {
        self.opens.lock().unwrap().iter().map(|(a, _)| *a).collect()
    }

    /// The source: what the next open of the script gives (past its end: every event, then the
    /// end).
    async fn open(&self, after: Option<u64>) -> Result<impl Stream<Item = Result<Event, Error>> + use<>, Error> {
        self.opens.lock().unwrap().push((after, self.start.elapsed()));
        let step = self.script.lock().unwrap().pop_front().unwrap_or(Open::Deliver {
            take: usize::MAX,
            then: Then::End,
        });
        let (take, then) = match step {
            Open::Refuse(e) => return Err(e),
            Open::Deliver { take, then } => (take, then),
        };
        let first = after.map_or(1, |a| a + 1);
        let events: Vec<_> = (first..=self.last).take(take).map(|seq| Ok(Event { seq })).collect();
        let tail = match then {
            Then::Fail(e) => stream::iter(vec![Err(e)]).boxed(),
            Then::End => stream::iter(vec![]).boxed(),
            Then::Stall => stream::pending().boxed(),
        };
        Ok(stream::iter(events).chain(tail))
    }

    #[retryable(max_attempts = 3, delay = "100ms", jitter = "none",
                resume = |after, event: &Event| *after = Some(event.seq))]
    async fn events(&self, after: Option<u64>) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
        self.open(after).await
    }
}

/// Every item of the stream, in order.
async fn drain<T>(stream: impl Stream<Item = T>) -> Vec<T> {
    stream.collect().await
}

fn seqs(items: &[Result<Event, Error>]) -> Vec<Result<u64, Error>> {
    items.iter().map(|i| i.clone().map(|e| e.seq)).collect()
}

fn ok(range: std::ops::RangeInclusive<u64>) -> Vec<Result<u64, Error>> {
    range.map(Ok).collect()
}

#[tokio::test(start_paused = true)]
async fn items_arrive_once_and_in_order_across_resets() {
    let deliver = |take| Open::Deliver { take, then: Then::Fail(Error::Reset) };
    let feed = Feed::new(10, [deliver(3), deliver(2), deliver(4)]);
    let stream = feed.events(None).await.expect("opened");
    let items = drain(stream).await;
    assert_eq!(seqs(&items), ok(1..=10));
    assert_eq!(feed.opens(), [None, Some(3), Some(5), Some(9)]);
}
