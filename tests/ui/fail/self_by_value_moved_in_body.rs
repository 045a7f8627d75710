use reattempt::retryable;

#[derive(Clone)]
struct Client {
    name: String,
}

impl Client {
    #[retryable(max_attempts = 2)]
    async fn into_name(self) -> Result<String, String> {
        Ok(self.name)
    }
}

fn main() {
    drop(
        Client {
            name: String::new(),
        }
        .into_name(),
    );
}
