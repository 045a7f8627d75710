use reattempt::{recover, retryable};

struct Client;

impl Client {
    #[retryable(max_attempts = 2, recover = fallback)]
    async fn fetch(&self, id: u32) -> Result<u32, String> {
        Err(format!("{id} is down"))
    }

    #[recover]
    async fn fallback(&self, err: String) -> Result<u32, String> {
        Err(err)
    }
}

fn main() {
    drop(Client.fetch(1));
}
