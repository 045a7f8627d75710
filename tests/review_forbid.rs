//! Review (issue 11, "`#![forbid(unused_variables)]` collides with the expansion's
//! `#[allow]`s"): `strict_lints.rs` covers `forbid(unused_variables)` but not with a binding in
//! a `retry_on` pattern, whose predicate closure carries `#[allow(unused_variables)]`: E0453.
//! Also every expansion carries `#[allow(clippy::needless_pass_by_value)]` (and `#[recover]`
//! `#[allow(clippy::unnecessary_wraps)]`): under `#![forbid(clippy::pedantic)]` that is the
//! future-incompatible `forbidden_lint_groups` warning (an error under `deny(warnings)`).
//! Run: `cargo clippy --test review_forbid`.
#![forbid(clippy::pedantic, unused_variables)]
#![allow(missing_docs)]
use reattempt::retryable;

#[derive(Debug, PartialEq, Eq, Clone)]
pub enum E {
    Http(u16),
}

#[retryable(max_attempts = 2, delay = "1ms")]
async fn by_value(s: String) -> Result<usize, E> {
    Ok(s.len())
}

#[retryable(max_attempts = 2, delay = "1ms", retry_on = [E::Http(code @ 500..=599)])]
async fn bound(n: u32) -> Result<u32, E> {
    Ok(n)
}

#[tokio::test(start_paused = true)]
async fn run() {
    assert_eq!(by_value("ab".to_owned()).await, Ok(2));
    assert_eq!(bound(1).await, Ok(1));
}
