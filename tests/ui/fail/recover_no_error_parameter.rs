use reattempt::{recover, retryable};

#[retryable(max_attempts = 2, recover = fallback)]
fn fetch(id: u32) -> Result<u32, String> {
    Err(format!("{id} is down"))
}

#[recover]
fn fallback() -> Result<u32, String> {
    Ok(0)
}

fn main() {
    let _ = fetch(1);
}
