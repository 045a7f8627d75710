use reattempt::retryable;

#[derive(Debug)]
pub struct E;

pub trait Api {
    fn get(&self) -> Result<u32, E>;
}

pub struct Client;

#[retryable(max_attempts = 3)]
impl Api for Client {
    fn get(&self) -> Result<u32, E> {
        Ok(1)
    }
}

fn main() {}
