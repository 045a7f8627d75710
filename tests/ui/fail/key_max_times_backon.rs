use reattempt::retryable;

#[retryable(max_times = 4)]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
