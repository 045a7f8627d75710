use reattempt::retryable;

struct Client {
    config: Config,
}

struct Config {
    timeout: &'static str,
}

impl Client {
    #[retryable(timeout = self.config.timeout)]
    async fn fetch(&self) -> Result<u32, std::io::Error> {
        Ok(1)
    }
}

fn main() {}
