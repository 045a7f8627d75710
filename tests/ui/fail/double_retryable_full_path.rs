#[reattempt::retryable(max_attempts = 3)]
#[tracing::instrument]
#[reattempt::retryable(max_attempts = 5)]
async fn fetch() -> Result<u32, String> {
    Err("down".into())
}

fn main() {
    drop(fetch());
}
