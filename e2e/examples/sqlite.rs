//! An insert into SQLite retried while another connection holds the database's write lock.
//!
//! The program creates a database file in the temporary directory, opens a pool whose
//! connections do not wait for a lock (`busy_timeout(0)`, so a locked database fails at once
//! with `SQLITE_BUSY`, "database is locked"), and has a second connection take the write lock
//! (`BEGIN IMMEDIATE`) and hold it for 300 ms. The insert is a
//! `#[retryable(retry_if = reattempt::transient, …)]` function returning
//! `Result<_, sqlx::Error>`: `reattempt::transient` says which `sqlx::Error`s are worth another
//! try (lock and deadlock errors of SQLite, Postgres and MySQL, a pool timeout, transient I/O),
//! so it retries until the lock is let go (a locked database did nothing: retried whether or not
//! the call is idempotent). A row with a `UNIQUE` key that is already there (a constraint
//! violation) is not retried. The insert is not said to be idempotent: a timed-out attempt
//! (whose statement SQLite's worker thread may still run) is returned, not repeated.
//!
//! Run it with `cargo run -p reattempt-e2e --example sqlite --features sqlx` (under a second;
//! no setup: SQLite is compiled from the bundled source; sqlx 0.9 needs Rust 1.94).
//!
//! To copy it into your own crate:
//!
//! ```toml
//! [dependencies]
//! reattempt = { version = "0.1", features = ["sqlx"] }
//! sqlx = { version = "0.9", default-features = false, features = ["sqlite-bundled", "runtime-tokio"] }
//! tokio = { version = "1", features = ["macros", "rt-multi-thread", "time"] }
//! ```

use std::time::{Duration, Instant};

use reattempt::{RetryContext, retryable};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::{ConnectOptions as _, Connection as _};

/// Inserts one order. A locked database is retried after a random wait (full jitter, the
/// default) of up to 20 ms, doubling to at most 100 ms, for at most 2 s in all.
#[retryable(max_attempts = 50, delay = "20ms", max_delay = "100ms", max_elapsed = "2s",
            timeout = "1s", retry_if = reattempt::transient, on_retry = print_retry)]
async fn insert_order(pool: &SqlitePool, id: &str, cents: i64) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO orders (id, amount_cents) VALUES (?, ?)")
        .bind(id)
        .bind(cents)
        .execute(pool)
        .await?;
    Ok(())
}

fn print_retry(error: &sqlx::Error, ctx: &RetryContext, delay: Duration) {
    println!(
        "    attempt {} failed ({error}); retrying in {} ms",
        ctx.attempt(),
        delay.as_millis()
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!("reattempt-sqlite-{}.db", std::process::id()));
    let options = SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true)
        .busy_timeout(Duration::ZERO); // fail at once on a lock (the retries do the waiting)
    let pool = SqlitePoolOptions::new()
        .max_connections(2)
        .connect_with(options.clone())
        .await?;
    sqlx::query("CREATE TABLE orders (id TEXT PRIMARY KEY, amount_cents INTEGER NOT NULL)")
        .execute(&pool)
        .await?;

    println!("1. Another connection holds the write lock for 300 ms");
    let mut holder = options.connect().await?;
    sqlx::query("BEGIN IMMEDIATE").execute(&mut holder).await?;
    let holding = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        sqlx::query("COMMIT").execute(&mut holder).await?;
        holder.close().await
    });
    let started = Instant::now();
    insert_order(&pool, "order-1", 1250).await?;
    println!(
        "    order-1 inserted after {} ms",
        started.elapsed().as_millis()
    );
    holding.await??;

    println!("2. The same order again: a constraint violation, not retried");
    let error = insert_order(&pool, "order-1", 1250).await.unwrap_err();
    println!("    gave up at once: {error}");

    let (rows,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM orders")
        .fetch_one(&pool)
        .await?;
    println!("rows: {rows}");
    assert_eq!(rows, 1);
    pool.close().await;
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
