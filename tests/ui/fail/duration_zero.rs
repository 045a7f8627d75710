use reattempt::retryable;

#[retryable(timeout = "0s")]
async fn fetch() -> std::io::Result<u32> {
    Ok(1)
}

fn main() {
    drop(fetch());
}
