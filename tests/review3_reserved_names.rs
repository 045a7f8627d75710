//! Hostile review 3: names the expansion binds around the body, other than `__reattempt…`.
//!
//! A method's body sees its `self` renamed to `__self`, and each attempt binds the receiver as
//! `__self` before the arguments: an argument named `__self` is then silently the receiver (the
//! reserved-name check of `valid::check_reserved_names` knows only the `__reattempt` prefix).

use reattempt::retryable;

#[derive(Debug)]
struct S(u32);

impl S {
    #[retryable(max_attempts = 2)]
    fn add_blocking(&self, __self: &S) -> Result<u32, String> {
        Ok(self.0 * 10 + __self.0)
    }

    #[retryable(max_attempts = 2)]
    async fn add(&self, __self: &S) -> Result<u32, String> {
        Ok(self.0 * 10 + __self.0)
    }
}

#[test]
fn an_argument_named_like_the_renamed_receiver_is_the_callers_value() {
    // Either a compile error at the argument (as for `__reattempt…`) or the caller's value;
    // never the receiver in the argument's place.
    assert_eq!(S(1).add_blocking(&S(2)), Ok(12));
}

#[tokio::test]
async fn an_async_methods_argument_named_like_the_renamed_receiver_is_the_callers_value() {
    assert_eq!(S(1).add(&S(2)).await, Ok(12));
}
