// An upper-case name that resolves to nothing (a typo, or a variant not imported) would be a
// binding that matches every error: it is named as a value, so the compiler reports it.
use reattempt::retryable;

#[derive(Debug)]
enum ApiError {
    Unavailable,
    Declined,
}

use ApiError::*;

#[retryable(retry_on = [Unavailble])]
fn fetch(up: bool) -> Result<u32, ApiError> {
    if up { Err(Declined) } else { Err(Unavailable) }
}

fn main() {
    let _ = fetch(true);
}
