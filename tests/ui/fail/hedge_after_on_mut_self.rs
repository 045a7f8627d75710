use reattempt::retryable;

struct Client {
    sent: u32,
}

impl Client {
    #[retryable(max_attempts = 2, hedge_after = "50ms", idempotent = true)]
    async fn send(&mut self) -> std::io::Result<u32> {
        self.sent += 1;
        Ok(self.sent)
    }
}

fn main() {
    let mut c = Client { sent: 0 };
    let _ = c.send();
}
