use reattempt::retryable;

struct S(u32);

impl S {
    // The expansion renames the body's `self` to `__self`: an argument of that name would
    // silently be the receiver.
    #[retryable(max_attempts = 2)]
    async fn add(&self, __self: &S) -> Result<u32, String> {
        Ok(self.0 * 10 + __self.0)
    }
}

fn main() {
    let _ = S(1).add(&S(2));
}
