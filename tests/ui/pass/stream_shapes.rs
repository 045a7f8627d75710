#![deny(warnings, clippy::pedantic)]
//! `#[retryable(resume = …)]` on the shapes of a function returning a stream: a free fn with a
//! borrowed argument, a declared `BoxStream`, a run-time `policy`, every hook key, a conversion
//! for a foreign error, a trait's `async fn` and an `#[async_trait]` method; each run once.

use std::sync::LazyLock;
use std::time::Duration;

use futures_util::stream::{self, BoxStream, StreamExt};
use futures_util::Stream;
use reattempt::{RetryContext, RetryPolicy, retryable};

#[derive(Debug, Clone, PartialEq)]
enum Error {
    Reset,
    Timeout,
}

impl From<reattempt::Elapsed> for Error {
    fn from(_: reattempt::Elapsed) -> Self {
        Error::Timeout
    }
}

/// Lines of a log after `offset`, the first open broken after one line.
fn tail(name: &str, offset: usize) -> impl Stream<Item = Result<String, Error>> + use<> {
    let lines: Vec<_> = (offset..3).map(|i| Ok(format!("{name}:{i}"))).collect();
    let broken = (offset == 0).then_some(Err(Error::Reset));
    stream::iter(lines.into_iter().take(1 + 2 * usize::from(offset > 0)).chain(broken))
}

#[retryable(max_attempts = 3, delay = "10ms", idle_timeout = "1s",
            resume = |offset, _line: &String| *offset += 1)]
async fn log_lines<'a>(name: &'a str, offset: usize) -> Result<impl Stream<Item = Result<String, Error>> + 'a, Error> {
    Ok(tail(name, offset))
}

#[retryable(max_attempts = 3, delay = "10ms", name = "boxed", idempotent = true,
            resume = |offset, _line: &String| *offset += 1)]
async fn boxed_lines(name: String, offset: usize) -> Result<BoxStream<'static, Result<String, Error>>, Error> {
    Ok(tail(&name, offset).boxed())
}

static POLICY: LazyLock<RetryPolicy> =
    LazyLock::new(|| RetryPolicy::builder().max_attempts(3).build().unwrap());

fn hint(_: &Error) -> Option<Duration> {
    None
}

fn log(e: &Error, ctx: &RetryContext, delay: Duration) {
    let _ = (e, ctx.attempt(), delay);
}

#[retryable(policy = POLICY, retry_if = |e: &Error| *e == Error::Reset, retry_after = hint,
            on_retry = log, delay_for = |_, _, d| Some(d), progress_resets = false,
            resume = |offset, _line: &String| *offset += 1)]
async fn with_hooks(offset: usize) -> Result<impl Stream<Item = Result<String, Error>>, Error> {
    Ok(tail("hooks", offset))
}

/// An error of another crate's kind: no `From<Elapsed>`, a conversion instead.
#[derive(Debug)]
struct Foreign;

#[retryable(timeout = "1s", idle_timeout = "5s", max_elapsed = "1m", timeout_into = |_| Foreign,
            resume = |offset, _line: &String| *offset += 1)]
async fn foreign(offset: usize) -> Result<impl Stream<Item = Result<String, Foreign>>, Foreign> {
    Ok(tail("foreign", offset).map(|l| l.map_err(|_| Foreign)))
}

trait Logs {
    async fn lines(&self, offset: usize) -> Result<BoxStream<'_, Result<String, Error>>, Error>;
}

struct Server {
    name: String,
}

impl Logs for Server {
    #[retryable(max_attempts = 3, delay = "10ms", resume = |offset, _line: &String| *offset += 1)]
    async fn lines(&self, offset: usize) -> Result<BoxStream<'_, Result<String, Error>>, Error> {
        Ok(tail(&self.name, offset).boxed())
    }
}

#[async_trait::async_trait]
trait SharedLogs {
    /// The stream borrows `self` (`'_`): a `'static` one could not, as the open reads `self`.
    async fn lines(&self, offset: usize) -> Result<BoxStream<'_, Result<String, Error>>, Error>;
}

#[async_trait::async_trait]
impl SharedLogs for Server {
    #[retryable(max_attempts = 3, delay = "10ms", resume = |offset, _line: &String| *offset += 1)]
    async fn lines(&self, offset: usize) -> Result<BoxStream<'_, Result<String, Error>>, Error> {
        Ok(tail(&self.name, offset).boxed())
    }
}

async fn all<S: Stream<Item = Result<String, E>>, E: std::fmt::Debug>(s: S) -> Vec<String> {
    s.map(|l| l.unwrap()).collect().await
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let name = String::from("a");
    assert_eq!(all(log_lines(&name, 0).await.unwrap()).await, ["a:0", "a:1", "a:2"]);
    assert_eq!(all(boxed_lines(name.clone(), 1).await.unwrap()).await, ["a:1", "a:2"]);
    assert_eq!(all(with_hooks(0).await.unwrap()).await.len(), 3);
    assert_eq!(all(foreign(0).await.unwrap()).await.len(), 3);
    let server = Server { name };
    assert_eq!(all(Logs::lines(&server, 0).await.unwrap()).await.len(), 3);
    assert_eq!(all(SharedLogs::lines(&server, 0).await.unwrap()).await.len(), 3);
}
