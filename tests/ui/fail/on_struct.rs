use reattempt::retryable;

#[retryable(max_attempts = 2)]
struct Client {
    retries: u32,
}

fn main() {
    let client = Client { retries: 1 };
    let _ = client.retries;
}
