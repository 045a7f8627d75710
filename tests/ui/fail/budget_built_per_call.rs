use reattempt::{RetryBudget, retryable};

#[retryable(budget = &RetryBudget::default())]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
