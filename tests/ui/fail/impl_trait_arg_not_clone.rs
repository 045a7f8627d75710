use reattempt::retryable;

#[retryable(max_attempts = 2)]
async fn fetch(path: impl AsRef<str>) -> Result<usize, String> {
    Ok(path.as_ref().len())
}

fn main() {
    drop(fetch("/"));
}
