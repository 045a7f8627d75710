use reattempt::retryable;

#[retryable(max_attempts = 2)]
fn fetch() -> Option<u32> {
    Some(1)
}

fn main() {
    let _ = fetch();
}
