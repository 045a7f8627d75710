use reattempt::retryable;

#[retryable(max_attempts = 2, budget = 500)]
async fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    drop(fetch());
}
