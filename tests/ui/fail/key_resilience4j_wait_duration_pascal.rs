use reattempt::retryable;

#[retryable(WaitDuration = "500ms")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
