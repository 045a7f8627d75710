use reattempt::retryable;

const FACTOR: f64 = 1.5;

#[retryable(multiplier = config::FACTOR)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

mod config {
    pub const FACTOR: f64 = super::FACTOR;
}

fn main() {}
