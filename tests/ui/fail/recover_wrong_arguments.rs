use reattempt::{recover, retryable};

#[retryable(max_attempts = 2, recover = fallback)]
fn fetch(id: u32, region: &str) -> Result<u32, String> {
    Err(format!("{id} in {region} is down"))
}

#[recover]
fn fallback(err: String, region: &str) -> Result<u32, String> {
    Err(format!("{region}: {err}"))
}

fn main() {
    let _ = fetch(1, "eu");
}
