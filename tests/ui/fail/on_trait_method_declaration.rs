use reattempt::retryable;

trait Fetch {
    #[retryable(max_attempts = 2)]
    fn fetch(&self) -> Result<u32, String>;
}

struct Client;

impl Fetch for Client {
    fn fetch(&self) -> Result<u32, String> {
        Ok(1)
    }
}

fn main() {
    let _ = Client.fetch();
}
