//! What a per-attempt `timeout` cancels with Redis (redis-rs, a multiplexed async connection):
//! a command that was sent runs to its end on the server, which has no way to cancel it; only
//! the answer is lost. Counted on the server: a Lua script that increments `started`, works
//! 500 ms, then increments `finished`, called through `#[retryable(timeout = "100ms")]`.
//!
//! A private `redis-server` (Debian's package; `.ci/run` installs it when missing) on a free
//! loopback port, without persistence, killed when the test ends. No binary: the test fails,
//! saying so. Real clock: about a second.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reattempt::{Effect, Elapsed, retryable};
use redis::AsyncCommands as _;
use redis::aio::MultiplexedConnection;

/// A `redis-server` of its own, on `127.0.0.1:port`, killed when dropped.
struct RedisServer {
    child: Child,
    url: String,
}

impl RedisServer {
    fn start() -> Self {
        let binary = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect("redis-server is not installed (Debian's `redis-server` package; .ci/run installs it)");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(binary)
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        RedisServer {
            child,
            url: format!("redis://127.0.0.1:{port}/"),
        }
    }

    /// A connection, once the server accepts one (polled: it starts in a few milliseconds).
    async fn connect(&self) -> MultiplexedConnection {
        let client = redis::Client::open(self.url.as_str()).expect("a valid URL");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match client.get_multiplexed_async_connection().await {
                Ok(conn) => return conn,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("redis-server did not start: {e}"),
            }
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Increments `started`, works 500 ms on the server (Redis runs one command at a time: the
/// script holds it), then increments `finished`.
const SLOW: &str = "
redis.call('INCR', 'started')
local t0 = redis.call('TIME')
repeat
  local t = redis.call('TIME')
until (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > 500000
redis.call('INCR', 'finished')
return 1
";

/// A timed-out attempt becomes a `RedisError` over an I/O error of kind `TimedOut` (redis-rs's
/// own error for a timeout).
fn timed_out(elapsed: Elapsed) -> redis::RedisError {
    std::io::Error::new(std::io::ErrorKind::TimedOut, elapsed).into()
}

#[retryable(max_attempts = 1, timeout = "100ms", timeout_into = timed_out)]
async fn slow(conn: &mut MultiplexedConnection) -> Result<i64, redis::RedisError> {
    redis::cmd("EVAL").arg(SLOW).arg(0).query_async(conn).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sent_command_runs_to_its_end_on_the_server() {
    let server = RedisServer::start();
    let mut conn = server.connect().await;
    let started = Instant::now();
    let err = slow(&mut conn).await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "cut at 100 ms"
    );
    assert_eq!(
        reattempt::Transient::effect(&std::io::Error::from(std::io::ErrorKind::TimedOut)),
        Effect::Unknown,
        "what the crate says of such a timeout"
    );
    // Another connection's command waits for the script (the server runs one at a time), then
    // sees that it finished: the work was done, only the answer was lost.
    let mut other = server.connect().await;
    let (began, finished): (i64, i64) = redis::pipe()
        .get("started")
        .get("finished")
        .query_async(&mut other)
        .await
        .expect("the server answers after the script");
    assert_eq!((began, finished), (1, 1), "the script ran to its end");
    // The first connection is usable at once: the dropped command's answer is discarded.
    let _: () = conn
        .set("after", 1)
        .await
        .expect("the connection still works");
    let after: i64 = conn.get("after").await.expect("and answers");
    assert_eq!(after, 1);
}
