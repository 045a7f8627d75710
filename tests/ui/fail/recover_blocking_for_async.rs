use reattempt::{recover, retryable};

#[retryable(max_attempts = 2, recover = fallback)]
async fn fetch(id: u32) -> Result<u32, String> {
    Err(format!("{id} is down"))
}

#[recover]
fn fallback(err: String) -> Result<u32, String> {
    Err(err)
}

fn main() {
    drop(fetch(1));
}
