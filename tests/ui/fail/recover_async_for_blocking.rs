// A blocking #[retryable] fn calls its fallback without awaiting: the fallback is a plain fn.
use reattempt::{recover, retryable};

#[retryable(max_attempts = 2, recover = fallback)]
fn fetch(id: u32) -> Result<u32, String> {
    Err(format!("{id} is down"))
}

#[recover]
async fn fallback(err: String) -> Result<u32, String> {
    Err(err)
}

fn main() {
    let _ = fetch(1);
}
