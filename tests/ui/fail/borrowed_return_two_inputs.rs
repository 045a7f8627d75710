// The `Ok` borrows from two `&mut` inputs: an attempt can be lent one.
use reattempt::retryable;

#[retryable(max_attempts = 2)]
async fn pair<'a, 'b>(a: &'a mut u32, b: &'b mut u32) -> Result<(&'a mut u32, &'b mut u32), String> {
    Ok((a, b))
}

fn main() {}
