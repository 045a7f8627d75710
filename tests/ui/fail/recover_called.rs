// The fallback called instead of named.
use reattempt::{recover, retryable};

struct Client;

impl Client {
    #[retryable(recover = Self::cached())]
    async fn fetch(&self) -> Result<u32, String> {
        Ok(1)
    }

    #[recover]
    async fn cached(&self, _: String) -> Result<u32, String> {
        Ok(0)
    }
}

fn main() {
    let _ = Client.fetch();
}
