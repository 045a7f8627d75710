// `recover` hands the fallback every argument; with one under `#[cfg]` its parameters would
// depend on the configuration.
use reattempt::{recover, retryable};

#[retryable(max_attempts = 2, recover = fallback)]
fn fetch(id: u32, #[cfg(any())] trace: u64) -> Result<u32, String> {
    Err(format!("{id} is down"))
}

#[recover]
fn fallback(_err: String) -> Result<u32, String> {
    Ok(0)
}

fn main() {
    let _ = fetch(1);
}
