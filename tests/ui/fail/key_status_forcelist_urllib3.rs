use reattempt::retryable;

#[retryable(status_forcelist = [502, 503])]
fn fetch() -> Result<u32, String> {
    Ok(1)
}

fn main() {
    let _ = fetch();
}
