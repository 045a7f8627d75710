use reattempt::retryable;

#[retryable(max_attempts = 4)]
#[retryable]
fn fetch() -> Result<u32, String> {
    Err("down".into())
}

fn main() {
    let _ = fetch();
}
