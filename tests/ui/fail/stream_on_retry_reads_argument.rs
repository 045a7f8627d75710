//! A hook beside `resume` that borrows an argument taken by value, which the stream owns.
use std::time::Duration;

use futures_util::Stream;
use reattempt::{RetryContext, retryable};

fn log(tag: &str, e: &String, ctx: &RetryContext, d: Duration) {
    let _ = (tag, e, ctx.attempt(), d);
}

#[retryable(on_retry = |e, ctx, d| log(&tag, e, ctx, d), resume = |offset, _n: &u64| *offset += 1)]
async fn lines(tag: String, offset: u64) -> Result<impl Stream<Item = Result<u64, String>>, String> {
    let _ = tag.len();
    Ok(futures_util::stream::iter((offset..3).map(Ok)))
}

fn main() {}
