// Spring Retry links from the @Recover side by signature; here the link is `recover = f`.
use reattempt::{recover, retryable};

#[retryable(max_attempts = 2)]
fn fetch(id: u32) -> Result<u32, String> {
    Err(format!("{id} is down"))
}

#[recover(fetch)]
fn fallback(_err: String, id: u32) -> Result<u32, String> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
    let _ = fallback(String::new(), 1);
}
