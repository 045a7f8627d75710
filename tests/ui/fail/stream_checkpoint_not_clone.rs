//! A checkpoint that is not `Clone` is reported at the argument, with the derive to add; the
//! second error (`opened` cannot be called) is rustc's, following from the first.

use reattempt::retryable;

struct Event {
    seq: u64,
}

/// A cursor that cannot be cloned.
struct Cursor(u64);

struct Events(Vec<Event>);

#[retryable(resume = |after, event: &Event| after.0 = event.seq)]
async fn events(after: Cursor) -> Result<impl futures_util::Stream<Item = Result<Event, String>>, String> {
    Ok(futures_util::stream::iter(vec![Ok(Event { seq: after.0 })]))
}

fn main() {
    drop(events(Cursor(0)));
    let _ = |e: Events| e.0.len();
}
