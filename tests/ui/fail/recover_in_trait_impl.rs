use reattempt::{recover, retryable};

trait Fetch {
    async fn fetch(&self) -> Result<u32, String>;
    async fn fallback(&self, err: String) -> Result<u32, String>;
}

struct Client;

impl Fetch for Client {
    #[retryable(max_attempts = 2, recover = Self::fallback)]
    async fn fetch(&self) -> Result<u32, String> {
        Ok(1)
    }

    #[recover]
    async fn fallback(&self, err: String) -> Result<u32, String> {
        Err(err)
    }
}

fn main() {
    drop(Client.fetch());
}
