use reattempt::retryable;

struct Event {
    seq: u64,
}

/// What the open returns (the attribute is refused before its type matters).
struct Events(Vec<Event>);

struct Client;

impl Client {
    #[retryable(resume = |after, event: &Event| *after = Some(event.seq), hedge_after = "50ms", idempotent = true)]
    async fn events(&self, after: Option<u64>) -> Result<Events, String> {
        Ok(Events(vec![Event { seq: after.unwrap_or(0) }]))
    }
}

fn main() {
    drop(Client.events(None));
    let _ = |e: Event| e.seq;
    let _ = |e: Events| e.0.len();
}
