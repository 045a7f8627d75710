use reattempt::retryable;

#[derive(Debug)]
pub struct E;

#[retryable(max_attempts = 3)]
pub trait Api {
    fn get(&self) -> Result<u32, E>;
}

fn main() {}
