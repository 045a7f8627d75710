use reattempt::retryable;

#[retryable(max_attempts = 2, recover = fallback)]
fn fetch(id: u32) -> Result<u32, String> {
    Err(format!("{id} is down"))
}

fn fallback(_err: String, id: u32) -> Result<u32, String> {
    Ok(id)
}

fn main() {
    let _ = fetch(1);
    let _ = fallback(String::new(), 1);
}
