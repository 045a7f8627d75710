//! Issue 25, finding 11: a `&mut self` method, or a `&'a mut` argument, whose returned value
//! borrows from it (reconnect, then hand out the connection).

use reattempt::retryable;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Connection {
    opened: u32,
}

#[derive(Debug, Default)]
pub struct Pool {
    conn: Connection,
    attempts: u32,
}

impl Pool {
    // `&mut self` -> `&mut Connection`, async.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn conn(&mut self) -> Result<&mut Connection, Fail> {
        self.attempts += 1;
        self.conn.opened += 1;
        if self.attempts < 2 {
            return Err(Fail);
        }
        Ok(&mut self.conn)
    }

    // `&mut self` -> `&Connection`, blocking, with a `retry_on`.
    #[retryable(max_attempts = 3, delay = "1ms", retry_on = [Fail])]
    fn conn_blocking(&mut self) -> Result<&Connection, Fail> {
        self.attempts += 1;
        if self.attempts < 2 {
            return Err(Fail);
        }
        Ok(&self.conn)
    }

    // A struct borrowing from `self`, under a named lifetime.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn lease<'a>(&'a mut self, tag: &'a str) -> Result<Lease<'a>, Fail> {
        self.attempts += 1;
        if self.attempts < 2 {
            return Err(Fail);
        }
        Ok(Lease {
            conn: &mut self.conn,
            tag,
        })
    }
}

#[derive(Debug)]
pub struct Lease<'a> {
    conn: &'a mut Connection,
    tag: &'a str,
}

// A `&'a mut` argument.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn checkout<'a>(pool: &'a mut Pool, n: u32) -> Result<&'a mut Connection, Fail> {
    pool.attempts += n;
    if pool.attempts < 2 {
        return Err(Fail);
    }
    Ok(&mut pool.conn)
}

/// A trait with a native `async fn` returning a borrow of `self`.
pub trait Source {
    async fn row(&mut self, n: u32) -> Result<&mut Connection, Fail>;
}

impl Source for Pool {
    #[retryable(max_attempts = 4, delay = "1ms", timeout = "50ms", timeout_into = |_| Fail, retry_on = [Fail])]
    async fn row(&mut self, n: u32) -> Result<&mut Connection, Fail> {
        self.attempts += 1;
        if self.attempts == 1 {
            // Timed out: the attempt is dropped and the next one gets `self` back.
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
        if self.attempts < n {
            return Err(Fail);
        }
        Ok(&mut self.conn)
    }
}

/// Under `#[tracing::instrument]`, with an event name and an `on_retry` hook.
pub struct Traced {
    pool: Pool,
    retries: u32,
}

impl Traced {
    #[tracing::instrument(skip(self))]
    #[retryable(max_attempts = 3, delay = "1ms", name = "traced.conn")]
    async fn conn(&mut self, label: String) -> Result<&mut Connection, Fail> {
        self.retries += u32::from(!label.is_empty());
        self.pool.attempts += 1;
        if self.pool.attempts < 3 {
            return Err(Fail);
        }
        Ok(&mut self.pool.conn)
    }
}

fn assert_send<T: Send>(_: T) {}

#[test]
fn the_futures_are_send() {
    let mut pool = Pool::default();
    assert_send(pool.conn());
    let mut pool = Pool::default();
    assert_send(pool.lease("t"));
    let mut pool = Pool::default();
    assert_send(checkout(&mut pool, 1));
    let mut pool = Pool::default();
    assert_send(Source::row(&mut pool, 2));
}

#[tokio::test(start_paused = true)]
async fn a_trait_method_with_a_timeout_and_instrument() {
    let mut pool = Pool::default();
    let conn = Source::row(&mut pool, 3).await.expect("third attempt");
    conn.opened = 4;
    assert_eq!((pool.attempts, pool.conn.opened), (3, 4));

    let mut traced = Traced {
        pool: Pool::default(),
        retries: 0,
    };
    traced
        .conn("x".to_owned())
        .await
        .expect("third attempt")
        .opened = 1;
    assert_eq!(
        (
            traced.retries,
            traced.pool.attempts,
            traced.pool.conn.opened
        ),
        (3, 3, 1)
    );
    let mut pool = Pool {
        attempts: 10,
        ..Pool::default()
    };
    // Gives up: the last error, after max_attempts.
    assert_eq!(Source::row(&mut pool, 100).await.err(), Some(Fail));
    assert_eq!(pool.attempts, 14);
}

#[tokio::test(start_paused = true)]
async fn borrowed_returns_compile_and_retry() {
    let mut pool = Pool::default();
    let conn = pool.conn().await.expect("second attempt");
    conn.opened += 10;
    assert_eq!(pool.conn.opened, 12);
    assert_eq!(pool.attempts, 2);

    let mut pool = Pool::default();
    assert_eq!(pool.conn_blocking().map(|c| c.opened), Ok(0));
    assert_eq!(pool.attempts, 2);

    let mut pool = Pool::default();
    let lease = pool.lease("t").await.expect("second attempt");
    lease.conn.opened = 5;
    assert_eq!(lease.tag, "t");
    assert_eq!(pool.conn.opened, 5);
    assert_eq!(pool.attempts, 2);

    let mut pool = Pool::default();
    checkout(&mut pool, 1).await.expect("second attempt").opened = 7;
    assert_eq!((pool.attempts, pool.conn.opened), (2, 7));
}
