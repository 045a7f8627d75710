// A second `&mut` argument, of its own lifetime, returned as a borrow of `&mut self` (two errors:
// its per-attempt reborrow conflicts with the next attempt's; its lifetime is not the lent one).
use reattempt::retryable;

struct Pool {
    tries: u32,
}

impl Pool {
    #[retryable(max_attempts = 2)]
    async fn conn(&mut self, log: &mut u32) -> Result<&mut u32, String> {
        self.tries += 1;
        Ok(log)
    }
}

fn main() {}
