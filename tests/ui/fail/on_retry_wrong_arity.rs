use reattempt::retryable;

#[retryable(on_retry = |e: &String| eprintln!("{e}"))]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
