use std::sync::LazyLock;

use reattempt::{Bulkhead, retryable};

static BULKHEAD: LazyLock<Bulkhead> = LazyLock::new(|| Bulkhead::builder().build().unwrap());

#[retryable(max_attempts = 2, bulkhead = BULKHEAD)]
fn fetch() -> Result<u32, std::num::ParseIntError> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
