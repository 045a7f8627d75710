use reattempt::retryable;

struct Event {
    seq: u64,
}

struct Events(Vec<Event>);

#[retryable(resume = |after, event: &Event| *after = event.seq)]
async fn events(after: &u64) -> Result<Events, String> {
    Ok(Events(vec![Event { seq: *after }]))
}

fn main() {
    drop(events(&0));
    let _ = |e: Events| e.0.len();
}
