use reattempt::retryable;

#[retryable(retry_if = |e: &String| e.len() as u32)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
