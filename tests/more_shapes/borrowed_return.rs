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

/// What a lent call's attempts write beside the lent input.
#[derive(Debug, Default)]
pub struct Log {
    lines: Vec<String>,
}

impl Pool {
    // `&mut self` beside a `&str` of its own lifetime, read by every attempt.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn conn_to(&mut self, url: &str) -> Result<&mut Connection, String> {
        self.attempts += 1;
        if self.attempts < 2 {
            return Err(format!("{url}: busy"));
        }
        self.conn.opened += u32::try_from(url.len()).unwrap_or(0);
        Ok(&mut self.conn)
    }

    // `&mut self` beside a second `&mut`, not in the `Ok`, written by every attempt (each
    // attempt reborrows it).
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn conn_logged(&mut self, log: &mut Log) -> Result<&mut Connection, Fail> {
        self.attempts += 1;
        log.lines.push(format!("attempt {}", self.attempts));
        if self.attempts < 3 {
            return Err(Fail);
        }
        Ok(&mut self.conn)
    }

    // Blocking, with both.
    #[retryable(max_attempts = 3, delay = "1ms")]
    fn conn_logged_blocking(&mut self, url: &str, log: &mut Log) -> Result<&mut Connection, Fail> {
        self.attempts += 1;
        log.lines.push(format!("{url} {}", self.attempts));
        if self.attempts < 2 {
            return Err(Fail);
        }
        Ok(&mut self.conn)
    }
}

// A `&'a mut` argument beside a `&str` (and a by-value argument) of their own lifetimes.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn checkout_from<'a>(
    pool: &'a mut Pool,
    url: &str,
    label: String,
) -> Result<&'a mut Connection, String> {
    pool.attempts += 1;
    if pool.attempts < 2 {
        return Err(format!("{label}@{url}"));
    }
    Ok(&mut pool.conn)
}

/// `&self` beside the lent `&'a mut` argument.
pub struct Dialer {
    port: u32,
}

impl Dialer {
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn dial<'a>(&self, pool: &'a mut Pool, host: &str) -> Result<&'a mut Connection, Fail> {
        pool.attempts += 1;
        if pool.attempts < 2 || host.is_empty() {
            return Err(Fail);
        }
        pool.conn.opened = self.port;
        Ok(&mut pool.conn)
    }

    #[retryable(max_attempts = 3, delay = "1ms")]
    fn dial_blocking<'a>(&self, pool: &'a mut Pool) -> Result<&'a mut Connection, Fail> {
        pool.attempts += 1;
        if pool.attempts < 2 {
            return Err(Fail);
        }
        pool.conn.opened = self.port;
        Ok(&mut pool.conn)
    }
}

#[test]
fn other_borrowed_arguments_are_send() {
    let mut pool = Pool::default();
    let url = String::from("db");
    assert_send(pool.conn_to(&url));
    let mut pool = Pool::default();
    let mut log = Log::default();
    assert_send(pool.conn_logged(&mut log));
    let mut pool = Pool::default();
    assert_send(checkout_from(&mut pool, &url, String::new()));
    let mut pool = Pool::default();
    assert_send(Dialer { port: 1 }.dial(&mut pool, &url));
}

#[tokio::test(start_paused = true)]
async fn other_borrowed_arguments_beside_the_lent_one() {
    let mut pool = Pool::default();
    // Shorter than the pool: the `Ok` cannot borrow from it, and need not.
    let conn = {
        let url = String::from("db:5432");
        pool.conn_to(&url).await.expect("second attempt")
    };
    conn.opened += 1;
    assert_eq!((pool.attempts, pool.conn.opened), (2, 8));

    let mut pool = Pool::default();
    let mut log = Log::default();
    pool.conn_logged(&mut log)
        .await
        .expect("third attempt")
        .opened = 3;
    assert_eq!(log.lines, ["attempt 1", "attempt 2", "attempt 3"]);
    assert_eq!((pool.attempts, pool.conn.opened), (3, 3));

    let mut pool = Pool::default();
    let mut log = Log::default();
    {
        let url = String::from("u");
        pool.conn_logged_blocking(&url, &mut log)
            .expect("second attempt")
            .opened = 9;
    }
    assert_eq!(log.lines, ["u 1", "u 2"]);
    assert_eq!(pool.conn.opened, 9);

    let mut pool = Pool::default();
    let conn = {
        let url = String::from("db");
        checkout_from(&mut pool, &url, "l".to_owned())
            .await
            .expect("second attempt")
    };
    conn.opened = 6;
    assert_eq!((pool.attempts, pool.conn.opened), (2, 6));
    let mut pool = Pool {
        attempts: 1,
        ..Pool::default()
    };
    let url = String::from("h");
    let conn = Dialer { port: 7 }
        .dial(&mut pool, &url)
        .await
        .expect("second attempt");
    conn.opened += 1;
    assert_eq!(pool.conn.opened, 8);
    let mut pool = Pool::default();
    let conn = Dialer { port: 2 }
        .dial_blocking(&mut pool)
        .expect("second attempt");
    conn.opened += 1;
    assert_eq!((pool.attempts, pool.conn.opened), (2, 3));
}
