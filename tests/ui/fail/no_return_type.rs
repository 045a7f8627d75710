use reattempt::retryable;

#[retryable(max_attempts = 2)]
fn fetch() {}

fn main() {
    fetch();
}
