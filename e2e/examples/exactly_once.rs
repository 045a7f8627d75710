//! Exactly once for a write that is not idempotent, against a real PostgreSQL killed mid-run.
//!
//! The program starts a private PostgreSQL cluster (Debian's `postgresql` package: `initdb` into
//! a temporary directory, a server on a free loopback port), then makes 200 increments of a
//! counter, each a `#[retryable]` function, while the server is stopped like a crash
//! (`pg_ctl stop -m immediate`: what an OOM kill or a failover look like) and started again.
//! Four of the increments commit and then wait for a synchronous standby that does not exist,
//! so the crash takes them down committed but not acknowledged: the caller cannot know.
//!
//! - **Plain** (`UPDATE … SET v = v + 1`, `retry_if = reattempt::transient`, not said to be
//!   idempotent): a failure whose outcome is unknown (an EOF, a reset) is returned, never
//!   repeated. Nothing is applied twice; the caller gets the errors to look into.
//! - **Keyed** (the same increment, recording the call's idempotency key in the same
//!   transaction, `idempotent = true`): a repeat after an unknown outcome finds the key of a
//!   commit that landed and adds nothing. Every increment is applied exactly once, no error.
//!
//! Run it with `cargo run -p reattempt-e2e --example exactly_once --features sqlx` (about ten
//! seconds; needs Debian's `postgresql` package; run as root, it runs the server as user
//! `postgres`). The recipe is in the guide's *unknown outcomes* chapter.
//!
//! To copy the recipe into your own crate (with a server of your own in place of the private
//! cluster, the end-to-end tests' `postgres::Cluster`):
//!
//! ```toml
//! [dependencies]
//! reattempt = { version = "0.1", features = ["sqlx"] }
//! sqlx = { version = "0.9", default-features = false, features = ["postgres", "runtime-tokio"] }
//! tokio = { version = "1", features = ["macros", "rt-multi-thread", "time"] }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use reattempt::retryable;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

// The end-to-end tests' private cluster (some of its helpers are for the tests only).
#[path = "../tests/postgres/mod.rs"]
#[allow(dead_code)]
mod postgres;

const CALLS: i32 = 200;
/// The calls that commit and then wait for a standby: the crash catches them committed.
const STUCK: i32 = 4;

/// One increment, as most code writes it: not safe to repeat after an unknown outcome.
#[retryable(max_attempts = 20, delay = "50ms", max_delay = "500ms", retry_if = reattempt::transient)]
async fn plain(pool: &PgPool, call: i32, attempts: &AtomicU32) -> Result<(), sqlx::Error> {
    attempts.fetch_add(1, Ordering::Relaxed);
    let mut tx = pool.begin().await?;
    stuck_if(&mut tx, call).await?;
    sqlx::query("UPDATE counters SET v = v + 1 WHERE id = $1")
        .bind(row(call))
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

/// The same increment with the call's key in the same transaction: safe to repeat, and said so.
#[retryable(max_attempts = 20, delay = "50ms", max_delay = "500ms", retry_if = reattempt::transient,
            idempotent = true)]
async fn keyed(pool: &PgPool, call: i32, attempts: &AtomicU32) -> Result<(), sqlx::Error> {
    attempts.fetch_add(1, Ordering::Relaxed);
    let key = reattempt::context()
        .expect("inside an attempt")
        .idempotency_key();
    let mut tx = pool.begin().await?;
    stuck_if(&mut tx, call).await?;
    let first = sqlx::query("INSERT INTO applied (key) VALUES ($1::uuid) ON CONFLICT DO NOTHING")
        .bind(key.to_string())
        .execute(&mut *tx)
        .await?
        .rows_affected()
        == 1;
    if first {
        sqlx::query("UPDATE counters SET v = v + 1 WHERE id = $1")
            .bind(row(call))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await
}

/// The counter row of a call: the stuck calls each have their own (a commit waiting for a
/// standby keeps its row locked), the others share row 0.
fn row(call: i32) -> i32 {
    if call < STUCK { call + 1 } else { 0 }
}

/// The first attempt of a stuck call makes its COMMIT wait for a standby that does not exist.
async fn stuck_if(tx: &mut sqlx::PgConnection, call: i32) -> Result<(), sqlx::Error> {
    let first = reattempt::context().is_some_and(|c| c.attempt() == 1);
    if call < STUCK && first {
        sqlx::query("SET LOCAL synchronous_commit = on")
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

struct Outcome {
    applied: i64,
    errors: usize,
    attempts: u32,
}

async fn run(keyed_writes: bool) -> Outcome {
    let cluster = postgres::Cluster::start_new_with(&[("synchronous_standby_names", "nobody")]);
    // Commits do not wait for the standby (`synchronous_commit = local`), but the stuck calls'.
    let options = cluster
        .url
        .parse::<PgConnectOptions>()
        .expect("the cluster's URL")
        .options([("synchronous_commit", "local")]);
    let pool = PgPoolOptions::new()
        .max_connections(8)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options)
        .await
        .expect("the cluster answers");
    sqlx::raw_sql(
        "CREATE TABLE counters (id int PRIMARY KEY, v bigint NOT NULL);
         INSERT INTO counters SELECT g, 0 FROM generate_series(0, 4) g;
         CREATE TABLE applied (key uuid PRIMARY KEY);",
    )
    .execute(&pool)
    .await
    .expect("the schema");
    let attempts = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    for call in 0..CALLS {
        let (pool, attempts) = (pool.clone(), Arc::clone(&attempts));
        tasks.push(tokio::spawn(async move {
            // Spread the calls out, so that some are in flight when the server goes down.
            tokio::time::sleep(Duration::from_millis(u64::try_from(call).unwrap() * 5)).await;
            if keyed_writes {
                keyed(&pool, call, &attempts).await
            } else {
                plain(&pool, call, &attempts).await
            }
        }));
    }
    // The crash, once the stuck calls wait for their standby and some calls are done.
    wait_for_stuck(&pool).await;
    cluster.stop_immediate();
    tokio::time::sleep(Duration::from_millis(200)).await;
    cluster.start();
    let mut errors = 0;
    for task in tasks {
        if let Err(e) = task.await.expect("no panic") {
            println!("  a call failed: {e}");
            errors += 1;
        }
    }
    let pool = PgPool::connect(&cluster.url)
        .await
        .expect("the cluster answers again");
    let applied: i64 = sqlx::query_scalar("SELECT sum(v)::bigint FROM counters")
        .fetch_one(&pool)
        .await
        .expect("the sum");
    Outcome {
        applied,
        errors,
        attempts: attempts.load(Ordering::Relaxed),
    }
}

/// Waits (polling the server) until the stuck calls' commits wait for their standby.
async fn wait_for_stuck(pool: &PgPool) {
    for _ in 0..400 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'",
        )
        .fetch_one(pool)
        .await
        .unwrap_or(0);
        if waiting >= i64::from(STUCK) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the stuck calls never waited for their standby");
}

#[tokio::main]
async fn main() {
    println!(
        "{CALLS} increments, a crash-like stop while {STUCK} of them are committed but not acknowledged:"
    );
    let plain = run(false).await;
    println!(
        "plain: {} attempts, {} applied, {} errors returned (each an unknown outcome, not repeated)",
        plain.attempts, plain.applied, plain.errors
    );
    // Each call is applied at most once: the applied increments and the errors account for
    // every call, some of the errors' increments having landed.
    assert!(plain.applied <= i64::from(CALLS));
    assert!(plain.applied + i64::try_from(plain.errors).unwrap() >= i64::from(CALLS));
    let keyed = run(true).await;
    println!(
        "keyed: {} attempts, {} applied, {} errors (the key makes each repeat safe)",
        keyed.attempts, keyed.applied, keyed.errors
    );
    assert_eq!((keyed.applied, keyed.errors), (i64::from(CALLS), 0));
}
