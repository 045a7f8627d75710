//! Under `#[async_trait]`, a `'static` stream whose open reads `&self`: the stream borrows
//! `self` for its life (every resume runs the body again), so it cannot be `'static`; rustc says
//! so. Declare `BoxStream<'_, …>` (tests/ui/pass/stream_shapes.rs), or take `self` by value.

use futures_util::stream::{self, BoxStream, StreamExt};
use reattempt::retryable;

#[derive(Debug)]
enum Error {
    Reset,
}

#[async_trait::async_trait]
trait Logs {
    async fn lines(&self, offset: usize) -> Result<BoxStream<'static, Result<String, Error>>, Error>;
}

struct Server {
    name: String,
}

#[async_trait::async_trait]
impl Logs for Server {
    #[retryable(resume = |offset, _line: &String| *offset += 1)]
    async fn lines(&self, offset: usize) -> Result<BoxStream<'static, Result<String, Error>>, Error> {
        let line = format!("{}:{offset}", self.name);
        Ok(stream::iter([Ok(line), Err(Error::Reset)]).boxed())
    }
}

fn main() {
    let server = Server { name: "a".into() };
    drop(server.lines(0));
}
