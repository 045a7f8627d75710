use reattempt::{recover, retryable};

#[retryable(max_attempts = 2, recover = fallback)]
fn fetch(id: u32) -> Result<u32, String> {
    Err(format!("{id} is down"))
}

#[recover]
fn fallback(id: u32, err: String) -> Result<u32, String> {
    Err(format!("{id}: {err}"))
}

fn main() {
    let _ = fetch(1);
}
