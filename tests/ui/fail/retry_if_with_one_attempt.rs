// `retry_if` with one attempt, beside a budget (which counts no failures): it decides nothing.
use std::sync::LazyLock;

use reattempt::{RetryBudget, retryable};

static BUDGET: LazyLock<RetryBudget> = LazyLock::new(|| RetryBudget::builder().build().unwrap());

#[retryable(max_attempts = 1, retry_if = reattempt::transient, budget = BUDGET)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
