use reattempt::retryable;

#[derive(Debug)]
pub struct E;

pub struct Client;

#[retryable(max_attempts = 3)]
impl Client {
    pub async fn get(&self) -> Result<u32, E> {
        Ok(1)
    }
}

fn main() {}
