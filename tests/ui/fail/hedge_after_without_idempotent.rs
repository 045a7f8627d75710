use reattempt::retryable;

// Hedged copies overlap, and each may act: a call is hedged only when it says it is safe to
// repeat.
#[retryable(max_attempts = 2, hedge_after = "50ms")]
async fn charge() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
