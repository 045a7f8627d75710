//! A stream whose error type cannot say it stalled: told at `idle_timeout`.

use futures_util::Stream;
use reattempt::retryable;

#[derive(Debug)]
struct Event {
    seq: u64,
}

#[derive(Debug)]
enum Error {
    Reset,
}

#[retryable(idle_timeout = "30s", resume = |after, event: &Event| *after = event.seq)]
async fn events(after: u64) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
    let events = (after + 1..4).map(|seq| Ok(Event { seq }));
    Ok(futures_util::stream::iter(events.chain([Err(Error::Reset)])))
}

fn main() {
    drop(events(0));
}
