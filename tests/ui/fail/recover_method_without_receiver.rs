use reattempt::{recover, retryable};

struct Client;

impl Client {
    #[retryable(max_attempts = 2, recover = Self::fallback)]
    fn fetch(&self, id: u32) -> Result<u32, String> {
        Err(format!("{id} is down"))
    }

    #[recover]
    fn fallback(err: String) -> Result<u32, String> {
        Err(err)
    }
}

fn main() {
    let _ = Client.fetch(1);
}
