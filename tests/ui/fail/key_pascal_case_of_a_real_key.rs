use reattempt::retryable;

// Polly's `Delay` and `MaxDelay`, as C# writes them.
#[retryable(Delay = "200ms")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
