use std::sync::LazyLock;

use reattempt::{RetryBudget, retryable};

static BUDGET: LazyLock<RetryBudget> = LazyLock::new(|| RetryBudget::builder().build().expect("valid"));

#[retryable(budget = "BUDGET")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
    let _ = &*BUDGET;
}
