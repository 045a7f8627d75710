//! End to end with sqlx 0.9 and SQLite (feature `sqlx`): 200 inserts into a file that another
//! connection keeps write-locked (`BEGIN IMMEDIATE`) for a while, through a pool whose
//! connections do not wait for a lock (`busy_timeout(0)`), each insert a
//! `#[retryable(retry_if = reattempt::transient, timeout = …)]` function returning
//! `Result<_, sqlx::Error>`. `SQLITE_BUSY` is retried; each row has a unique key and the insert
//! is `ON CONFLICT(key) DO NOTHING`, so an insert retried after its first try landed (a timed-out
//! attempt whose statement the driver's worker still ran) adds nothing. Exactly 200 rows.
//! Real clock and a real file: the test takes about a second.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use reattempt::{RetryContext, retryable};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::{ConnectOptions as _, Connection as _, Row as _};

/// Inserts one row; a row with `key` already there (an earlier attempt landed) is left alone.
// `idempotent = true`: the insert is keyed and `ON CONFLICT DO NOTHING`, so running it again
// after an attempt whose outcome is unknown (a timeout) adds nothing.
#[retryable(max_attempts = 100, delay = "5ms", max_delay = "50ms", timeout = "2s",
            retry_if = reattempt::transient, idempotent = true, on_retry = count_retry)]
async fn insert(pool: &SqlitePool, key: &str, value: i64) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO items (key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING")
        .bind(key)
        .bind(value)
        .execute(pool)
        .await?;
    Ok(())
}

static RETRIES: AtomicUsize = AtomicUsize::new(0);
static BUSY_RETRIES: AtomicUsize = AtomicUsize::new(0);

fn count_retry(error: &sqlx::Error, _: &RetryContext, _: Duration) {
    RETRIES.fetch_add(1, SeqCst);
    let code = error
        .as_database_error()
        .and_then(sqlx::error::DatabaseError::code);
    // SQLITE_BUSY (5), or one of its extended codes.
    if code
        .and_then(|c| c.parse::<u32>().ok())
        .is_some_and(|c| c & 0xff == 5)
    {
        BUSY_RETRIES.fetch_add(1, SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_inserts_through_a_held_write_lock() {
    const ROWS: i64 = 200;
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteConnectOptions::new()
        .filename(dir.path().join("items.db"))
        .create_if_missing(true)
        .busy_timeout(Duration::ZERO);
    let pool = SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(options.clone())
        .await
        .unwrap();
    sqlx::query("CREATE TABLE items (key TEXT NOT NULL UNIQUE, value INTEGER NOT NULL)")
        .execute(&pool)
        .await
        .unwrap();

    // A second connection takes the write lock before the first insert, holds it 250 ms, lets
    // go for 100 ms, and takes it again for 250 ms.
    let mut holder = options.connect().await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut holder)
        .await
        .unwrap();
    let holding = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(250)).await;
        commit(&mut holder).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        // The writers fight for the lock too (none waits), so taking it may take a few tries.
        while sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut holder)
            .await
            .is_err()
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        commit(&mut holder).await;
        holder.close().await.unwrap();
    });

    // Four writers, 50 rows each, sharing the pool.
    let start = Instant::now();
    let mut writers = tokio::task::JoinSet::new();
    for writer in 0..4 {
        let pool = pool.clone();
        writers.spawn(async move {
            for row in (writer..ROWS).step_by(4) {
                insert(&pool, &format!("item-{row:03}"), row).await?;
            }
            Ok::<_, sqlx::Error>(())
        });
    }
    for written in writers.join_all().await {
        written.unwrap();
    }
    holding.await.unwrap();
    let took = start.elapsed();

    let row = sqlx::query("SELECT COUNT(*), COUNT(DISTINCT key), SUM(value) FROM items")
        .fetch_one(&pool)
        .await
        .unwrap();
    let (count, keys, sum): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    assert_eq!(count, ROWS, "rows");
    assert_eq!(keys, ROWS, "distinct keys");
    assert_eq!(sum, (0..ROWS).sum::<i64>(), "every value once");
    let missing: Vec<i64> = {
        let keys: Vec<String> = sqlx::query_scalar("SELECT key FROM items ORDER BY key")
            .fetch_all(&pool)
            .await
            .unwrap();
        (0..ROWS)
            .filter(|row| keys.binary_search(&format!("item-{row:03}")).is_err())
            .collect()
    };
    assert!(missing.is_empty(), "lost: {missing:?}");

    // The lock really bit: inserts were retried over SQLITE_BUSY.
    assert!(BUSY_RETRIES.load(SeqCst) > 0, "no SQLITE_BUSY retried");
    assert!(RETRIES.load(SeqCst) >= BUSY_RETRIES.load(SeqCst));
    assert!(took < Duration::from_secs(20), "{took:?}");
    pool.close().await;
}

/// Commits the holder's transaction. A COMMIT needs the writers' shared locks gone (SQLite's
/// rollback journal): on a busy machine one may be held at that instant (a failed COMMIT leaves
/// the transaction open), so the holder tries again, as it does to take the lock.
async fn commit(holder: &mut sqlx::SqliteConnection) {
    while sqlx::query("COMMIT").execute(&mut *holder).await.is_err() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
