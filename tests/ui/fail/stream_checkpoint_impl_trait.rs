//! A checkpoint of an `impl Trait` type: the open's parameter cannot be written with it.
use futures_util::Stream;
use reattempt::retryable;

#[retryable(resume = |offset, _n: &u64| ())]
async fn lines(offset: impl Into<u64> + Clone + Send) -> Result<impl Stream<Item = Result<u64, String>>, String> {
    Ok(futures_util::stream::iter((offset.into()..3).map(Ok)))
}

fn main() {}
