// The [breaker] table's key, as a config file spells it.
use reattempt::retryable;

#[retryable(reset-timeout = "30s")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
