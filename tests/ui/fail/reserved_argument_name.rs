use reattempt::retryable;

// The expansion declares `__reattempt_…` names in the body (here `__reattempt_result_type`):
// an argument of that name would silently be the expansion's, not the caller's.
#[retryable(max_attempts = 2)]
async fn fetch(__reattempt_result_type: u32) -> Result<u32, String> {
    Ok(__reattempt_result_type + 1)
}

fn main() {
    let _ = fetch(1);
}
