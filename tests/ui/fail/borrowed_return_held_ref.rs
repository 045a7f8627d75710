// A by-value argument holding a reference, returned through it as a borrow of the lent input.
use reattempt::retryable;

#[derive(Clone)]
struct Holder<'h>(&'h u32);

#[retryable(max_attempts = 2)]
async fn conn<'a>(pool: &'a mut u32, held: Holder<'_>) -> Result<&'a u32, String> {
    *pool += 1;
    Ok(held.0)
}

fn main() {}
