use reattempt::retryable;

// backon's `ExponentialBuilder::default().with_max_times(3)`.
#[retryable(with_max_times = 3)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
