use reattempt::retryable;

const NAME: &str = "payments.charge";

#[retryable(name = NAME)]
async fn charge() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
