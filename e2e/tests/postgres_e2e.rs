//! End to end with sqlx 0.9 and a real PostgreSQL (feature `sqlx`): a private cluster per test
//! (`postgres/mod.rs`: Debian's `postgresql` package, `initdb` into a temporary directory), each
//! scenario counting what happened on the server, not only what the caller saw.
//!
//! - SERIALIZABLE transfers under contention: serialization failures (`40001`) are retried, and
//!   the log of applied transfers holds each successful call once, the balances agreeing with it.
//! - A deadlock (`40P01`): the victim is retried, both transfers applied once.
//! - 200 non-idempotent increments across a crash-like restart (`pg_ctl stop -m immediate`) and
//!   across a clean one (`-m fast`): none applied twice, per call (a log row per application),
//!   though four of them commit and are cut off before the server acknowledges it (they wait
//!   for a synchronous standby that does not exist); every error the callers see is an unknown
//!   outcome. Said idempotent, the same increments are applied twice: those four.
//! - The same with the idempotency-key recipe: 200 of 200 applied exactly once, the four
//!   retried and adding nothing.
//! - A timed-out attempt's query goes on running on the server unless the attempt bounds it
//!   (`reattempt::sqlx::set_postgres_timeouts`: `statement_timeout`), with a pool of several
//!   connections and of one; a timed-out attempt of a call not said idempotent is not repeated.
//!
//! Real clock, real servers: the file takes 10 to 20 s on two cores, most of it the serializable
//! transfers' retries and the `initdb`s.

mod postgres;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::{Duration, Instant};

use postgres::Cluster;
use reattempt::{Effect, RetryContext, Transient, retryable};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

/// A pool of `size` connections to `cluster`, named `name` in `pg_stat_activity`.
async fn pool(cluster: &Cluster, size: u32, name: &str) -> PgPool {
    pool_with(cluster, size, name, &[]).await
}

/// [`pool`], its connections with these settings.
async fn pool_with(cluster: &Cluster, size: u32, name: &str, settings: &[(&str, &str)]) -> PgPool {
    let options: PgConnectOptions = cluster.url.parse().unwrap();
    let options = options.options(settings.iter().copied());
    PgPoolOptions::new()
        .max_connections(size)
        // The pool itself waits for a restarting server (it retries a refused connection and
        // `57P03` until this): longer than a restart takes here.
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options.application_name(name))
        .await
        .unwrap_or_else(|e| panic!("connecting to {}: {e}\n{}", cluster.url, cluster.log()))
}

async fn exec(pool: &PgPool, sql: &'static str) {
    sqlx::raw_sql(sql)
        .execute(pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// The SQLSTATE of a database error.
fn sqlstate(error: &sqlx::Error) -> Option<String> {
    error
        .as_database_error()
        .and_then(sqlx::error::DatabaseError::code)
        .map(std::borrow::Cow::into_owned)
}

/// What an error was, for the counts: its SQLSTATE, or its variant (and I/O kind).
fn label(error: &sqlx::Error) -> String {
    match error {
        sqlx::Error::Database(_) => sqlstate(error).unwrap_or_default(),
        sqlx::Error::Io(io) => format!("io:{:?}", io.kind()),
        other => format!("{other:?}").chars().take(40).collect(),
    }
}

/// Failed attempts (or retried errors) counted by label and by effect (`Effect::as_str`), for
/// assertions and the report.
struct Seen(
    Mutex<BTreeMap<String, usize>>,
    Mutex<BTreeMap<&'static str, usize>>,
);

impl Seen {
    const fn new() -> Self {
        Seen(Mutex::new(BTreeMap::new()), Mutex::new(BTreeMap::new()))
    }

    fn add(&self, error: &sqlx::Error) {
        *self.0.lock().unwrap().entry(label(error)).or_default() += 1;
        *self
            .1
            .lock()
            .unwrap()
            .entry(error.effect().as_str())
            .or_default() += 1;
    }

    fn effects(&self) -> BTreeMap<&'static str, usize> {
        self.1.lock().unwrap().clone()
    }

    fn get(&self, label: &str) -> usize {
        self.0.lock().unwrap().get(label).copied().unwrap_or(0)
    }

    fn total(&self) -> usize {
        self.0.lock().unwrap().values().sum()
    }

    fn snapshot(&self) -> BTreeMap<String, usize> {
        self.0.lock().unwrap().clone()
    }
}

// ---------------------------------------------------------------------------------------------
// a. SERIALIZABLE transfers under contention.

static SERIALIZABLE_RETRIES: Seen = Seen::new();

fn count_serializable_retry(error: &sqlx::Error, _: &RetryContext, _: Duration) {
    SERIALIZABLE_RETRIES.add(error);
}

/// Moves `amount` from `from` to `to` in a SERIALIZABLE transaction of its own, reading both
/// balances and writing them back (a lost update under weaker isolation), and logs the transfer
/// under its `id`. A retry runs the whole transaction again.
#[retryable(max_attempts = 100, delay = "1ms", max_delay = "20ms",
            retry_if = reattempt::transient, on_retry = count_serializable_retry)]
async fn transfer(
    pool: &PgPool,
    id: i32,
    from: i32,
    to: i32,
    amount: i64,
) -> Result<(), sqlx::Error> {
    let mut tx = pool
        .begin_with("BEGIN ISOLATION LEVEL SERIALIZABLE")
        .await?;
    let balance = |account: i32| {
        sqlx::query_scalar::<_, i64>("SELECT balance FROM accounts WHERE id = $1").bind(account)
    };
    let from_balance = balance(from).fetch_one(&mut *tx).await?;
    let to_balance = balance(to).fetch_one(&mut *tx).await?;
    for (account, balance) in [(from, from_balance - amount), (to, to_balance + amount)] {
        sqlx::query("UPDATE accounts SET balance = $2 WHERE id = $1")
            .bind(account)
            .bind(balance)
            .execute(&mut *tx)
            .await?;
    }
    sqlx::query("INSERT INTO transfers (id, src, dst, amount) VALUES ($1, $2, $3, $4)")
        .bind(id)
        .bind(from)
        .bind(to)
        .bind(amount)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serializable_transfers_under_contention_apply_each_successful_call_once() {
    const TASKS: i32 = 8;
    const PER_TASK: i32 = 25;
    const ACCOUNTS: i32 = 5;
    let cluster = Cluster::start_new();
    let pool = pool(&cluster, 8, "transfers").await;
    exec(
        &pool,
        "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
         INSERT INTO accounts SELECT g, 1000 FROM generate_series(0, 4) g;
         CREATE TABLE transfers (id int PRIMARY KEY, src int NOT NULL, dst int NOT NULL,
                                 amount bigint NOT NULL);",
    )
    .await;

    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..TASKS {
        let pool = pool.clone();
        tasks.spawn(async move {
            let mut ok = 0;
            for n in 0..PER_TASK {
                let id = task * PER_TASK + n;
                let from = id % ACCOUNTS;
                let to = (id * 3 + 1 + task) % ACCOUNTS;
                let to = if to == from { (to + 1) % ACCOUNTS } else { to };
                transfer(&pool, id, from, to, i64::from(1 + id % 7))
                    .await
                    .unwrap_or_else(|e| panic!("transfer {id}: {e}"));
                ok += 1;
            }
            ok
        });
    }
    let succeeded: i32 = tasks.join_all().await.into_iter().sum();
    let took = start.elapsed();

    let (applied, distinct): (i64, i64) =
        sqlx::query_as("SELECT COUNT(*), COUNT(DISTINCT id) FROM transfers")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(succeeded, TASKS * PER_TASK);
    assert_eq!(
        applied,
        i64::from(succeeded),
        "transfers applied on the server"
    );
    assert_eq!(distinct, applied);
    let total: i64 = sqlx::query_scalar("SELECT SUM(balance)::bigint FROM accounts")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(total, 5000, "the sum of the balances");
    // Every balance is its start plus what the log says came in, less what went out: no
    // transfer half applied, none applied without its log row.
    let disagreeing: Vec<(i32, i64, i64)> = sqlx::query_as(
        "SELECT a.id, a.balance,
                1000 + COALESCE((SELECT SUM(amount) FROM transfers WHERE dst = a.id), 0)
                     - COALESCE((SELECT SUM(amount) FROM transfers WHERE src = a.id), 0)
         FROM accounts a
         WHERE a.balance <> 1000
                + COALESCE((SELECT SUM(amount) FROM transfers WHERE dst = a.id), 0)
                - COALESCE((SELECT SUM(amount) FROM transfers WHERE src = a.id), 0)",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(
        disagreeing.is_empty(),
        "balances against the log: {disagreeing:?}"
    );

    let retries = SERIALIZABLE_RETRIES.snapshot();
    eprintln!("serializable: {succeeded} transfers in {took:?}, retried: {retries:?}");
    assert!(
        SERIALIZABLE_RETRIES.get("40001") > 0,
        "no serialization failure retried: {retries:?}"
    );
    // Nothing but serialization failures (and deadlocks, which SERIALIZABLE writers can meet
    // too) was retried.
    assert_eq!(
        SERIALIZABLE_RETRIES.get("40001") + SERIALIZABLE_RETRIES.get("40P01"),
        SERIALIZABLE_RETRIES.total(),
        "{retries:?}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
}

// ---------------------------------------------------------------------------------------------
// b. A deadlock.

static DEADLOCK_RETRIES: Seen = Seen::new();

fn count_deadlock_retry(error: &sqlx::Error, _: &RetryContext, _: Duration) {
    DEADLOCK_RETRIES.add(error);
}

/// Moves `amount` from `from` to `to`, locking `from`'s row first; on the first attempt, waits
/// at `barrier` (with the other transfer, which locks the rows in the other order) before
/// taking the second lock, so that the two deadlock.
#[retryable(max_attempts = 5, delay = "10ms", retry_if = reattempt::transient,
            on_retry = count_deadlock_retry)]
async fn locking_transfer(
    pool: &PgPool,
    barrier: &tokio::sync::Barrier,
    id: i32,
    from: i32,
    to: i32,
    amount: i64,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    // The deadlock is found after this wait (1 s by default).
    sqlx::query("SET LOCAL deadlock_timeout = '100ms'")
        .execute(&mut *tx)
        .await?;
    for (account, change) in [(from, -amount), (to, amount)] {
        sqlx::query("UPDATE accounts SET balance = balance + $2 WHERE id = $1")
            .bind(account)
            .bind(change)
            .execute(&mut *tx)
            .await?;
        if account == from && reattempt::context().is_some_and(|c| c.attempt() == 1) {
            barrier.wait().await;
        }
    }
    sqlx::query("INSERT INTO transfers (id) VALUES ($1)")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_is_retried_and_both_transfers_apply_once() {
    let cluster = Cluster::start_new();
    let pool = pool(&cluster, 2, "deadlock").await;
    exec(
        &pool,
        "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
         INSERT INTO accounts VALUES (1, 1000), (2, 1000);
         CREATE TABLE transfers (id int NOT NULL);",
    )
    .await;
    let barrier = tokio::sync::Barrier::new(2);
    let start = Instant::now();
    let (a, b) = tokio::join!(
        locking_transfer(&pool, &barrier, 1, 1, 2, 10),
        locking_transfer(&pool, &barrier, 2, 2, 1, 20),
    );
    let took = start.elapsed();
    a.unwrap();
    b.unwrap();

    let retries = DEADLOCK_RETRIES.snapshot();
    eprintln!("deadlock: both applied in {took:?}, retried: {retries:?}");
    assert_eq!(
        DEADLOCK_RETRIES.get("40P01"),
        1,
        "one victim, retried once: {retries:?}"
    );
    assert_eq!(DEADLOCK_RETRIES.total(), 1, "{retries:?}");
    let logged: Vec<i32> = sqlx::query_scalar("SELECT id FROM transfers ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(logged, [1, 2], "each transfer applied once");
    let balances: Vec<i64> = sqlx::query_scalar("SELECT balance FROM accounts ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(balances, [1010, 990]);
    assert!(took < Duration::from_secs(5), "{took:?}");
}

// ---------------------------------------------------------------------------------------------
// c, d. Increments across a restart of the server.

/// The increments' calls, and the workers that make all but the stuck ones.
const CALLS: i32 = 200;
const WORKERS: i32 = 4;
/// The first `STUCK` calls commit and then wait for a synchronous standby that does not exist
/// (`synchronous_standby_names` at the server's first start; `synchronous_commit = on`, the
/// default, on their connections), so that the server goes down with their increments committed
/// but not acknowledged: the outcome their callers cannot know. The other connections commit
/// with `synchronous_commit = local`, without waiting. The restarted server has no standby names:
/// nothing waits after it. A commit waiting for the standby still holds its row locks (they go
/// after the wait), so each stuck call increments a row of its own (`1 + n`), the others row 0.
const STUCK: i32 = 4;

/// The counter row call `n` increments.
fn row(n: i32) -> i32 {
    if n < STUCK { 1 + n } else { 0 }
}

/// One non-idempotent increment (no `idempotent` key: the default), a plain autocommit
/// statement: it sleeps 10 ms (so that several are in flight when the server goes down), adds 1
/// to a counter row and logs `call` in the same statement, so that a call applied twice shows as
/// two log rows. Every failed attempt is counted in `failures`, and every attempt in `attempts`.
#[retryable(max_attempts = 20, delay = "50ms", max_delay = "500ms", retry_if = reattempt::transient)]
async fn increment(
    pool: &PgPool,
    row: i32,
    call: i32,
    attempts: &AtomicU32,
    failures: &Seen,
) -> Result<(), sqlx::Error> {
    plain_increment(pool, row, call, attempts, failures).await
}

/// The same increment, wrongly said to be idempotent: an unknown outcome is repeated.
#[retryable(max_attempts = 20, delay = "50ms", max_delay = "500ms", retry_if = reattempt::transient,
            idempotent = true)]
async fn increment_said_idempotent(
    pool: &PgPool,
    row: i32,
    call: i32,
    attempts: &AtomicU32,
    failures: &Seen,
) -> Result<(), sqlx::Error> {
    plain_increment(pool, row, call, attempts, failures).await
}

/// One attempt of [`increment`].
async fn plain_increment(
    pool: &PgPool,
    row: i32,
    call: i32,
    attempts: &AtomicU32,
    failures: &Seen,
) -> Result<(), sqlx::Error> {
    attempts.fetch_add(1, SeqCst);
    sqlx::query(
        "WITH pause AS (SELECT pg_sleep(0.01)),
              logged AS (INSERT INTO log (call_id) VALUES ($1))
         UPDATE counter SET v = v + 1 FROM pause WHERE counter.id = $2",
    )
    .bind(call)
    .bind(row)
    .execute(pool)
    .await
    .inspect_err(|e| failures.add(e))?;
    Ok(())
}

/// The idempotency-key recipe: the call's key (the same on every attempt) goes into `applied`
/// in the same statement as the increment, and the increment happens only if the key was not
/// there yet. Repeating it is safe: said so (`idempotent = true`). Returns the key.
#[retryable(max_attempts = 20, delay = "50ms", max_delay = "500ms", retry_if = reattempt::transient,
            idempotent = true)]
async fn increment_once(
    pool: &PgPool,
    row: i32,
    attempts: &AtomicU32,
    failures: &Seen,
) -> Result<String, sqlx::Error> {
    keyed_increment(pool, row, attempts, failures).await
}

/// One attempt of the recipe (polled inside the attempt: `context()` is the call's).
async fn keyed_increment(
    pool: &PgPool,
    row: i32,
    attempts: &AtomicU32,
    failures: &Seen,
) -> Result<String, sqlx::Error> {
    attempts.fetch_add(1, SeqCst);
    let key = reattempt::context()
        .expect("inside a retrying call")
        .idempotency_key()
        .to_string();
    sqlx::query(
        "WITH pause AS (SELECT pg_sleep(0.01)),
              fresh AS (INSERT INTO applied (key) SELECT $1::uuid FROM pause
                        ON CONFLICT DO NOTHING RETURNING key)
         UPDATE counter SET v = v + 1 FROM fresh WHERE counter.id = $2",
    )
    .bind(&key)
    .bind(row)
    .execute(pool)
    .await
    .inspect_err(|e| failures.add(e))?;
    Ok(key)
}

/// How the server goes down mid-run.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Immediate,
    Fast,
}

/// A server whose commits wait for a standby that never comes (but on connections that say
/// `synchronous_commit = local`), until it is restarted; a pool of such connections for the
/// workers (and the test's own queries) and one of waiting ones for the stuck calls; the tables.
async fn increments_setup() -> (Cluster, PgPool, PgPool) {
    let cluster = Cluster::start_new_with(&[("synchronous_standby_names", "nobody")]);
    let workers = pool_with(
        &cluster,
        WORKERS.unsigned_abs() + 1,
        "increments",
        &[("synchronous_commit", "local")],
    )
    .await;
    let stuck = pool_with(&cluster, STUCK.unsigned_abs(), "stuck", &[]).await;
    exec(
        &workers,
        "CREATE TABLE counter (id int PRIMARY KEY, v int NOT NULL);
         INSERT INTO counter SELECT g, 0 FROM generate_series(0, 4) g; -- rows 0 to STUCK
         CREATE TABLE log (call_id int NOT NULL);
         CREATE TABLE applied (key uuid PRIMARY KEY);",
    )
    .await;
    (cluster, workers, stuck)
}

/// One call's result and how many attempts it made.
type Outcome<T> = (Result<T, sqlx::Error>, u32);

/// Makes `CALLS` calls of `call`: the first `STUCK` each on a task of its own, the others on
/// `WORKERS` workers. Once the stuck ones wait for the standby (committed) and a quarter of the
/// calls are done, stops the server (`stop`) and starts it again. Returns each call's outcome,
/// by call number, and the time the calls took.
async fn across_a_restart<T, F>(
    cluster: &Cluster,
    watcher: &PgPool,
    stop: Stop,
    call: impl Fn(i32, std::sync::Arc<AtomicU32>) -> F + Clone + Send + 'static,
) -> (Vec<Outcome<T>>, Duration)
where
    T: Send + 'static,
    F: Future<Output = Result<T, sqlx::Error>> + Send,
{
    let next = std::sync::Arc::new(AtomicU32::new(STUCK.unsigned_abs()));
    let done = std::sync::Arc::new(AtomicU32::new(0));
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..STUCK {
        let call = call.clone();
        tasks.spawn(async move {
            let attempts = std::sync::Arc::new(AtomicU32::new(0));
            let result = call(n, attempts.clone()).await;
            vec![(n, result, attempts.load(SeqCst))]
        });
    }
    for _ in 0..WORKERS {
        let (next, done, call) = (next.clone(), done.clone(), call.clone());
        tasks.spawn(async move {
            let mut results = Vec::new();
            loop {
                let n = i32::try_from(next.fetch_add(1, SeqCst)).unwrap();
                if n >= CALLS {
                    break;
                }
                let attempts = std::sync::Arc::new(AtomicU32::new(0));
                let result = call(n, attempts.clone()).await;
                results.push((n, result, attempts.load(SeqCst)));
                done.fetch_add(1, SeqCst);
            }
            results
        });
    }
    // Polls for the stuck calls' commits and the quarter mark.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'",
        )
        .fetch_one(watcher)
        .await
        .unwrap();
        if waiting == i64::from(STUCK) && done.load(SeqCst) >= CALLS.unsigned_abs() / 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{waiting} calls wait for the standby, {} done",
            done.load(SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let done_before = done.load(SeqCst);
    let down = Instant::now();
    tokio::task::block_in_place(|| {
        match stop {
            Stop::Immediate => cluster.stop_immediate(),
            Stop::Fast => cluster.stop_fast(),
        }
        cluster.start();
    });
    eprintln!(
        "{stop:?}: stopped after {done_before} calls, up again in {:?}",
        down.elapsed()
    );
    let mut all: Vec<_> = tasks.join_all().await.into_iter().flatten().collect();
    let took = start.elapsed();
    all.sort_by_key(|(n, ..)| *n);
    assert_eq!(all.len(), CALLS.unsigned_abs() as usize);
    (all.into_iter().map(|(_, r, a)| (r, a)).collect(), took)
}

async fn counter(pool: &PgPool) -> i64 {
    sqlx::query_scalar::<_, i64>("SELECT SUM(v) FROM counter")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Non-idempotent increments across a restart: none applied twice; the server's count is the
/// calls that succeeded plus the failed calls whose statement did commit; the stuck calls (whose
/// commits the server never acknowledged) were applied, once, and failed.
async fn non_idempotent_increments_across_a_restart(stop: Stop, failures: &'static Seen) {
    let (cluster, workers, stuck) = increments_setup().await;
    let (outcomes, took) = across_a_restart(&cluster, &workers, stop, {
        let (workers, stuck) = (workers.clone(), stuck.clone());
        move |n, attempts| {
            let pool = if n < STUCK { &stuck } else { &workers }.clone();
            async move { increment(&pool, row(n), n, &attempts, failures).await }
        }
    })
    .await;

    // What the server applied, per call.
    let rows: Vec<(i32, i64)> =
        sqlx::query_as("SELECT call_id, COUNT(*) FROM log GROUP BY call_id ORDER BY call_id")
            .fetch_all(&workers)
            .await
            .unwrap();
    let applied: HashMap<i32, i64> = rows.into_iter().collect();
    let v = counter(&workers).await;
    let doubles: Vec<(&i32, &i64)> = applied.iter().filter(|(_, n)| **n > 1).collect();
    let ok = outcomes.iter().filter(|(r, _)| r.is_ok()).count();
    let failed: Vec<(i32, &sqlx::Error, u32)> = (0..CALLS)
        .zip(&outcomes)
        .filter_map(|(n, (r, a))| r.as_ref().err().map(|e| (n, e, *a)))
        .collect();
    let failed_but_applied = failed
        .iter()
        .filter(|(n, ..)| applied.contains_key(n))
        .count();
    let caller_errors: Vec<String> = failed.iter().map(|(_, e, _)| label(e)).collect();
    eprintln!(
        "{stop:?}: {CALLS} non-idempotent increments in {took:?}: v = {v}, {ok} ok, {} failed \
         ({failed_but_applied} of them applied: {caller_errors:?}), attempts failed: {:?} {:?}, \
         applied twice: {}",
        failed.len(),
        failures.snapshot(),
        failures.effects(),
        doubles.len(),
    );

    assert!(doubles.is_empty(), "calls applied twice: {doubles:?}");
    assert_eq!(
        v,
        applied.values().sum::<i64>(),
        "the counter against its log"
    );
    assert_eq!(
        usize::try_from(v).unwrap(),
        ok + failed_but_applied,
        "applied = succeeded + failed but committed"
    );
    for (n, (result, attempts)) in (0..CALLS).zip(&outcomes) {
        if result.is_ok() {
            assert_eq!(applied.get(&n), Some(&1), "call {n} succeeded");
        }
        if n < STUCK {
            // Committed before the server went down, never acknowledged: applied, and the
            // caller told it failed (the crate cannot know it was applied).
            assert_eq!(applied.get(&n), Some(&1), "stuck call {n}");
            assert!(
                result.is_err(),
                "stuck call {n} succeeded after {attempts} attempts"
            );
        }
    }
    // Every error that reached the caller is one whose outcome is unknown (not repeated on a
    // call that is not idempotent), or one that proved nothing was done and was retried until
    // the attempts ran out. And every unknown outcome reached the caller: none was retried.
    for (n, e, attempts) in &failed {
        assert!(
            e.effect() == Effect::Unknown || (e.effect() == Effect::NotDone && *attempts == 20),
            "call {n}: {e} ({}) after {attempts} attempts",
            e.effect()
        );
    }
    let unknown = failed
        .iter()
        .filter(|(_, e, _)| e.effect() == Effect::Unknown)
        .count();
    assert_eq!(
        failures.effects().get("unknown").copied().unwrap_or(0),
        unknown,
        "unknown outcomes retried: {:?}",
        failures.effects()
    );
    workers.close().await;
    stuck.close().await;
}

static IMMEDIATE_FAILURES: Seen = Seen::new();
static SAID_IDEMPOTENT_FAILURES: Seen = Seen::new();
static FAST_FAILURES: Seen = Seen::new();
static KEYED_FAILURES: Seen = Seen::new();

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_idempotent_increments_across_a_crash_like_restart_never_apply_twice() {
    non_idempotent_increments_across_a_restart(Stop::Immediate, &IMMEDIATE_FAILURES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_idempotent_increments_across_a_clean_restart_never_apply_twice() {
    non_idempotent_increments_across_a_restart(Stop::Fast, &FAST_FAILURES).await;
}

/// The check above can fail: the same increments wrongly said to be idempotent are repeated
/// after an unknown outcome, and the stuck calls (committed, then cut off) are applied twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_increments_said_idempotent_are_applied_twice_across_a_crash_like_restart() {
    let (cluster, workers, stuck) = increments_setup().await;
    let (outcomes, took) = across_a_restart(&cluster, &workers, Stop::Immediate, {
        let (workers, stuck) = (workers.clone(), stuck.clone());
        move |n, attempts| {
            let pool = if n < STUCK { &stuck } else { &workers }.clone();
            async move {
                increment_said_idempotent(&pool, row(n), n, &attempts, &SAID_IDEMPOTENT_FAILURES)
                    .await
            }
        }
    })
    .await;
    let twice: Vec<i32> = sqlx::query_scalar(
        "SELECT call_id FROM log GROUP BY call_id HAVING COUNT(*) > 1 ORDER BY 1",
    )
    .fetch_all(&workers)
    .await
    .unwrap();
    let v = counter(&workers).await;
    let errors = outcomes.iter().filter(|(r, _)| r.is_err()).count();
    eprintln!(
        "said idempotent: {CALLS} increments in {took:?}: v = {v}, {errors} errors, applied \
         twice: {twice:?}, attempts failed: {:?}",
        SAID_IDEMPOTENT_FAILURES.snapshot()
    );
    assert_eq!(errors, 0);
    assert_eq!(
        twice,
        (0..STUCK).collect::<Vec<_>>(),
        "the stuck calls, twice each"
    );
    assert_eq!(v, i64::from(CALLS + STUCK));
    workers.close().await;
    stuck.close().await;
}

/// Keyed increments across a crash-like restart: every call applied exactly once, none failed;
/// the stuck calls were retried after the restart, and their retries found their keys and added
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_increments_across_a_crash_like_restart_apply_exactly_once() {
    let failures = &KEYED_FAILURES;
    let (cluster, workers, stuck) = increments_setup().await;
    let (outcomes, took) = across_a_restart(&cluster, &workers, Stop::Immediate, {
        let (workers, stuck) = (workers.clone(), stuck.clone());
        move |n, attempts| {
            let pool = if n < STUCK { &stuck } else { &workers }.clone();
            async move { increment_once(&pool, row(n), &attempts, failures).await }
        }
    })
    .await;
    let errors: Vec<String> = outcomes
        .iter()
        .filter_map(|(r, _)| r.as_ref().err().map(label))
        .collect();
    let stuck_attempts: Vec<u32> = outcomes[..STUCK.unsigned_abs() as usize]
        .iter()
        .map(|(_, a)| *a)
        .collect();
    let keys: HashSet<String> = outcomes.into_iter().filter_map(|(r, _)| r.ok()).collect();
    let applied: HashSet<String> =
        sqlx::query_scalar::<_, String>("SELECT replace(key::text, '-', '') FROM applied")
            .fetch_all(&workers)
            .await
            .unwrap()
            .into_iter()
            .collect();
    let v = counter(&workers).await;
    eprintln!(
        "keyed: {CALLS} increments in {took:?}: v = {v}, {} keys applied, errors {errors:?}, \
         attempts failed: {:?}, the stuck calls' attempts: {stuck_attempts:?}",
        applied.len(),
        failures.snapshot(),
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(v, i64::from(CALLS), "every call applied once");
    assert_eq!(keys.len(), CALLS.unsigned_abs() as usize, "distinct keys");
    assert_eq!(applied, keys, "the keys applied are the calls' keys");
    assert!(
        stuck_attempts.iter().all(|a| *a >= 2),
        "the stuck calls were retried: {stuck_attempts:?}"
    );
    workers.close().await;
    stuck.close().await;
}

// ---------------------------------------------------------------------------------------------
// e. What a timed-out attempt leaves running on the server.

/// The attempts' timeout, as written in the attributes below.
const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(200);

static TIMEOUT_RETRIES: Seen = Seen::new();

fn count_timeout_retry(error: &sqlx::Error, _: &RetryContext, _: Duration) {
    TIMEOUT_RETRIES.add(error);
}

/// Logs the attempt (autocommit, so that a later failure does not undo it) under the pool's
/// name, then sleeps 1 s on the server: every attempt times out on the client. Idempotent (it
/// changes nothing), so that a timed-out attempt, whose outcome is unknown, is retried.
#[retryable(max_attempts = 3, timeout = "200ms", delay = "10ms", retry_if = reattempt::transient,
            idempotent = true, on_retry = count_timeout_retry)]
async fn sleep_unbounded(pool: &PgPool) -> Result<(), sqlx::Error> {
    log_and_sleep(pool).await
}

/// The same, not said to be idempotent: the timed-out attempt's outcome is unknown, so the
/// crate does not repeat it.
#[retryable(max_attempts = 3, timeout = "200ms", delay = "10ms", retry_if = reattempt::transient,
            on_retry = count_timeout_retry)]
async fn sleep_unbounded_once(pool: &PgPool) -> Result<(), sqlx::Error> {
    log_and_sleep(pool).await
}

/// One attempt of the unbounded sleeps: logged, then 1 s on the server.
async fn log_and_sleep(pool: &PgPool) -> Result<(), sqlx::Error> {
    let mut conn = pool.acquire().await?;
    log_attempt(&mut conn).await?;
    sqlx::query("SELECT pg_sleep(1)")
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The same as [`sleep_unbounded`], with the server's work bounded by the attempt's time left
/// (`statement_timeout` and `lock_timeout` for this transaction only, a little short of it): the
/// server cancels the sleep first (`57014`, rolled back: a timeout that did nothing).
#[retryable(max_attempts = 3, timeout = "200ms", delay = "10ms", retry_if = reattempt::transient,
            idempotent = true, on_retry = count_timeout_retry)]
async fn sleep_bounded(pool: &PgPool) -> Result<(), sqlx::Error> {
    let mut conn = pool.acquire().await?;
    log_attempt(&mut conn).await?;
    let mut tx = sqlx::Connection::begin(&mut *conn).await?;
    reattempt::sqlx::set_postgres_timeouts(&mut *tx).await?;
    sqlx::query("SELECT pg_sleep(1)").execute(&mut *tx).await?;
    tx.commit().await
}

async fn log_attempt(
    conn: &mut sqlx::pool::PoolConnection<sqlx::Postgres>,
) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO attempts (app) VALUES (current_setting('application_name'))")
        .execute(&mut **conn)
        .await?;
    Ok(())
}

/// Which of the sleeping functions a call runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sleep {
    Unbounded,
    UnboundedNotIdempotent,
    Bounded,
}

/// What one call left on the server.
#[derive(Debug)]
struct Left {
    /// Its attempts that reached the server (logged themselves).
    reached: i64,
    /// Its `pg_sleep`s still running when the call returned.
    running_at_return: i64,
    /// How long after the call returned none was running (`None`: not within 300 ms).
    none_running_after: Option<Duration>,
    /// The error the call returned: its SQLSTATE or its I/O kind.
    error: String,
    took: Duration,
}

/// Calls one of the sleeping functions through a pool of `size` connections (named after them
/// in `pg_stat_activity`), and watches `pg_stat_activity` from another connection.
async fn timed_out_call(cluster: &Cluster, watcher: &PgPool, size: u32, sleep: Sleep) -> Left {
    let name = format!("{sleep:?}-{size}");
    let pool = pool(cluster, size, &name).await;
    let start = Instant::now();
    let result = match sleep {
        Sleep::Unbounded => sleep_unbounded(&pool).await,
        Sleep::UnboundedNotIdempotent => sleep_unbounded_once(&pool).await,
        Sleep::Bounded => sleep_bounded(&pool).await,
    };
    let took = start.elapsed();
    let returned = Instant::now();
    let error = label(&result.expect_err("a 1 s sleep in 200 ms attempts"));
    let running = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM pg_stat_activity
             WHERE application_name = $1 AND state = 'active' AND query LIKE '%pg_sleep%'",
        )
        .bind(&name)
        .fetch_one(watcher)
        .await
        .unwrap()
    };
    let running_at_return = running().await;
    let mut none_running_after = None;
    while returned.elapsed() < Duration::from_millis(300) {
        if running().await == 0 {
            none_running_after = Some(returned.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let reached = sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM attempts WHERE app = $1")
        .bind(&name)
        .fetch_one(watcher)
        .await
        .unwrap();
    let left = Left {
        reached,
        running_at_return,
        none_running_after,
        error,
        took,
    };
    eprintln!("{name}: {left:?}");
    // The pool is dropped without waiting: its connections finish their sleeps on their own.
    left
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_attempt_leaves_its_query_running_unless_the_attempt_bounds_it() {
    let cluster = Cluster::start_new();
    let watcher = pool(&cluster, 1, "watcher").await;
    exec(&watcher, "CREATE TABLE attempts (app text NOT NULL)").await;
    let timed_out = "io:TimedOut";

    // Unbounded, a pool of several connections: each attempt takes a connection of its own and
    // its sleep goes on after the attempt is dropped; all three still sleep when the call
    // returns (the first until 1 s after it began).
    let left = timed_out_call(&cluster, &watcher, 4, Sleep::Unbounded).await;
    assert_eq!(
        (left.reached, left.error.as_str()),
        (3, timed_out),
        "{left:?}"
    );
    assert!(left.took >= 3 * ATTEMPT_TIMEOUT, "{left:?}");
    assert!(left.running_at_return >= 1, "{left:?}");
    assert_eq!(left.none_running_after, None, "{left:?}");

    // Unbounded, one connection: the pool tests a connection given back mid-query before it
    // lends it again (a ping, which waits out the sleep), so attempts 2 and 3 time out waiting
    // for it and never reach the server.
    let left = timed_out_call(&cluster, &watcher, 1, Sleep::Unbounded).await;
    assert_eq!(
        (left.reached, left.error.as_str()),
        (1, timed_out),
        "{left:?}"
    );
    assert_eq!(left.running_at_return, 1, "{left:?}");
    assert_eq!(left.none_running_after, None, "{left:?}");

    // Unbounded and not idempotent: the timed-out attempt's outcome is unknown, so it is the
    // only one; its sleep goes on.
    let left = timed_out_call(&cluster, &watcher, 4, Sleep::UnboundedNotIdempotent).await;
    assert_eq!(
        (left.reached, left.error.as_str()),
        (1, timed_out),
        "{left:?}"
    );
    assert!(left.took < 2 * ATTEMPT_TIMEOUT, "{left:?}");
    assert_eq!(left.running_at_return, 1, "{left:?}");

    // Bounded: the server cancels each attempt's sleep a little before the attempt's deadline
    // (`57014`: retried, as it did nothing). Nothing runs on the server when the call returns,
    // or very soon after (well before a 1 s sleep would end), with several connections or one:
    // a connection whose statement the server cancelled is free again at once, so every attempt
    // reaches the server. On a loaded machine the attempt's own timeout can still come first
    // (the margin is a tenth of the time left: 20 ms here); the server's cancel follows a few
    // milliseconds later.
    for size in [4, 1] {
        let left = timed_out_call(&cluster, &watcher, size, Sleep::Bounded).await;
        assert_eq!(left.reached, 3, "{left:?}");
        assert!(
            ["57014", timed_out].contains(&left.error.as_str()),
            "{left:?}"
        );
        assert!(
            left.none_running_after
                .is_some_and(|t| t < Duration::from_millis(100)),
            "{left:?}"
        );
    }

    let retries = TIMEOUT_RETRIES.snapshot();
    eprintln!("timeouts: retried {retries:?}");
    // Two retries in each of the four calls that were retried: the idempotent unbounded calls'
    // timeouts, the bounded calls' cancels (mostly).
    assert_eq!(TIMEOUT_RETRIES.total(), 8, "{retries:?}");
    assert!(
        TIMEOUT_RETRIES.get("57014") >= 1,
        "the server never cancelled first: {retries:?}"
    );
    assert_eq!(
        TIMEOUT_RETRIES.get("57014") + TIMEOUT_RETRIES.get(timed_out),
        8,
        "{retries:?}"
    );
}

// ------------------------------------------------------------------ a bound per statement

/// Two statements, each well within the attempt's 1 s, together past it; bounded once, at the
/// transaction's start (each statement gets the whole bound), or again before the second.
#[retryable(max_attempts = 1, timeout = "1s")]
async fn two_sleeps(pool: &PgPool, again: bool) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    reattempt::sqlx::set_postgres_timeouts(&mut *tx).await?;
    sqlx::query("SELECT pg_sleep(0.6)")
        .execute(&mut *tx)
        .await?;
    if again {
        reattempt::sqlx::set_postgres_timeouts(&mut *tx).await?;
    }
    sqlx::query("SELECT pg_sleep(0.6)")
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

/// Postgres bounds each statement, not the transaction (the review's finding): bounded once, the
/// attempt's own timeout ends the call (its outcome unknown); bounded again before the second
/// statement, the server cancels it first (57014: nothing done), as the rustdoc says to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bound_is_per_statement_and_set_again_before_a_later_one() {
    let cluster = Cluster::start_new();
    let pool = pool(&cluster, 2, "per-statement").await;
    let once = two_sleeps(&pool, false).await.unwrap_err();
    assert_eq!(once.effect(), Effect::Unknown, "{once}");
    let again = two_sleeps(&pool, true).await.unwrap_err();
    assert_eq!(sqlstate(&again).as_deref(), Some("57014"), "{again}");
    assert_eq!(again.effect(), Effect::NotDone, "{again}");
}
