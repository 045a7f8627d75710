use reattempt::retryable;

#[retryable(max_attempts = 3)]
pub enum Reply {
    Ok,
}

fn main() {}
