use reattempt::{recover, retryable};

#[retryable(max_attempts = 2, recover = fallback)]
fn fetch(id: u32) -> Result<u32, String> {
    Err(format!("{id} is down"))
}

#[recover]
fn fallback(err: std::io::Error) -> Result<u32, String> {
    Err(err.to_string())
}

fn main() {
    let _ = fetch(1);
}
