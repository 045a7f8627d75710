use reattempt::retryable;

fn is_transient(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
}

#[retryable(ShouldHandle = is_transient)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
