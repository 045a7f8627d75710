// A shared argument returned as a borrow of `&mut self` (elision gives the `Ok` the receiver's
// lifetime): refused, as it is without the attribute (the first attempt at lending returned it
// with the receiver's lifetime: a use after free).
use reattempt::retryable;

struct Pool {
    tries: u32,
}

impl Pool {
    #[retryable(max_attempts = 2)]
    async fn conn(&mut self, other: &u32) -> Result<&u32, String> {
        self.tries += 1;
        Ok(other)
    }
}

fn main() {}
