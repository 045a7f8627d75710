// A fallback method without the error: one error, at its parameter list.
use reattempt::{recover, retryable};

struct Client;

impl Client {
    #[retryable(max_attempts = 2, recover = Self::fallback)]
    async fn fetch(&self, id: u32) -> Result<u32, String> {
        Err(format!("{id} is down"))
    }

    #[recover]
    async fn fallback(&self) -> Result<u32, String> {
        Ok(0)
    }
}

fn main() {
    drop(Client.fetch(1));
}
