//! A return type that is an alias of the whole `Result`: the stream's type is not written.
use futures_util::stream::{BoxStream, StreamExt};
use reattempt::retryable;

type Lines = Result<BoxStream<'static, Result<u64, String>>, String>;

#[retryable(resume = |offset, _n: &u64| *offset += 1)]
async fn lines(offset: u64) -> Lines {
    Ok(futures_util::stream::iter((offset..3).map(Ok)).boxed())
}

fn main() {}
