use reattempt::retryable;

#[retryable(max_attempts = 3, one_layer = "yes")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {
    drop(fetch());
}
