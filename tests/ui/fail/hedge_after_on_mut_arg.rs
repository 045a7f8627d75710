use reattempt::retryable;

#[retryable(max_attempts = 2, hedge_after = "50ms", idempotent = true)]
async fn send(buffer: &mut Vec<u8>) -> std::io::Result<usize> {
    buffer.push(1);
    Ok(buffer.len())
}

fn main() {
    let mut b = vec![];
    let _ = send(&mut b);
}
