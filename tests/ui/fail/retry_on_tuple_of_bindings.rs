// A tuple of bindings and `_` matches every value of its type.
use reattempt::retryable;

#[retryable(retry_on = [(code, _)])]
fn fetch(up: bool) -> Result<u32, (u16, String)> {
    if up { Err((400, String::new())) } else { Err((503, String::new())) }
}

fn main() {
    let _ = fetch(true);
}
