//! `resume` on a function that returns the stream itself, with no `Result` around it.
use futures_util::Stream;
use reattempt::retryable;

#[retryable(resume = |offset, _n: &u64| *offset += 1)]
async fn lines(offset: u64) -> impl Stream<Item = Result<u64, String>> {
    futures_util::stream::iter((offset..3).map(Ok))
}

fn main() {}
