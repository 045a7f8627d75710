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
