//! A stream's fallback that returns no stream: told at the fallback's name (rustc names the bound
//! its output misses); the two errors after it are rustc's, following from the first.

use futures_util::Stream;
use reattempt::{recover, retryable};

#[derive(Debug)]
struct Event {
    seq: u64,
}

#[derive(Debug)]
enum Error {
    Reset,
}

#[recover]
async fn replay(err: Error, after: u64, limit: u32) -> Result<Vec<Event>, Error> {
    let _ = (after, limit);
    Err(err)
}

#[retryable(recover = replay, resume = |after, event: &Event| *after = event.seq)]
async fn events(after: u64, limit: u32) -> Result<impl Stream<Item = Result<Event, Error>>, Error> {
    let events = (after + 1..u64::from(limit)).map(|seq| Ok(Event { seq }));
    Ok(futures_util::stream::iter(events.chain([Err(Error::Reset)])))
}

fn main() {
    drop(events(0, 3));
}
