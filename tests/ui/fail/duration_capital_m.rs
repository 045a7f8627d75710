use reattempt::retryable;

// humantime reads a capital `M` as months: refused, with the minute's spelling.
#[retryable(max_delay = "1M")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
