use reattempt::retryable;

#[retryable(retry_host_predicate = "previous_hosts")]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
