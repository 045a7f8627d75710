use reattempt::retryable;

#[retryable(max_attempts = 3)]
mod client {
    pub fn get() -> Result<u32, String> {
        Ok(1)
    }
}

fn main() {}
