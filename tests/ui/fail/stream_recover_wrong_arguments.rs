//! A stream's fallback whose arguments do not fit: told the signatures that do, from the
//! function's own types (the checkpoint argument among the arguments).

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
async fn replay(err: Error, after: String) -> Result<futures_util::stream::Empty<Result<Event, Error>>, Error> {
    let _ = after;
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
