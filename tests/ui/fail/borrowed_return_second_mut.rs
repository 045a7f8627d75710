// A second `&mut` argument returned with the lent one's lifetime: each attempt reborrows it,
// and a reborrow that may be returned conflicts with the next attempt's (two live `&mut` to
// one value, in the first attempt at lending).
use reattempt::retryable;

struct Pool {
    tries: u32,
}

impl Pool {
    #[retryable(max_attempts = 2)]
    async fn conn<'a>(&'a mut self, other: &'a mut u32) -> Result<&'a mut u32, String> {
        self.tries += 1;
        Ok(other)
    }
}

fn main() {}
