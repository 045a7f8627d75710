//! Bounding a database's own work by the attempt's time (feature `sqlx`): a per-attempt
//! `timeout` drops the attempt's future, but a query already sent keeps running on the server
//! (and its pooled connection stays busy) until the server finishes it. Postgres can stop it
//! itself: [`set_postgres_timeouts`] sets `statement_timeout` and `lock_timeout` for the rest
//! of the attempt's transaction from the time the attempt has left when it is called, less a
//! tenth (at most 50 ms), so that the server usually cancels a statement first, and the attempt
//! fails with Postgres's `57014` `query_canceled` (which [`Transient`](crate::Transient)
//! classifies as a timeout that did nothing: the statement and its transaction were rolled
//! back) rather than with an outcome the caller cannot know. On a loaded machine the attempt's
//! own timeout may still come first (an unknown outcome); the server's cancel then follows
//! within milliseconds, and nothing is left running.
//!
//! Postgres bounds each statement, not the transaction (`transaction_timeout` is Postgres 17's):
//! the bound is what remained when it was set, for every statement after it. A transaction
//! whose statements together may outlast the attempt calls it again before each long one (each
//! call sends the time left then); one whose only long statement is its first, or that has one
//! statement, calls it once.
//!
//! ```no_run
//! # async fn demo(pool: sqlx::PgPool) -> Result<(), sqlx::Error> {
//! use reattempt::retryable;
//!
//! #[retryable(timeout = "200ms", retry_if = reattempt::transient)]
//! async fn bump(pool: &sqlx::PgPool, id: i32) -> Result<(), sqlx::Error> {
//!     let mut tx = pool.begin().await?;
//!     // The server stops the statement before the attempt's 200 ms are up.
//!     reattempt::sqlx::set_postgres_timeouts(&mut *tx).await?;
//!     sqlx::query("UPDATE counters SET v = v + 1 WHERE id = $1").bind(id).execute(&mut *tx).await?;
//!     tx.commit().await
//! }
//! # bump(&pool, 1).await
//! # }
//! ```

use std::time::Duration;

use sqlx_core::database::Database;
use sqlx_core::executor::Executor;

/// The share of the attempt's remaining time kept back from the server's bound (at most
/// [`MAX_MARGIN`]): the server's timer starts when the statement arrives, a little after the
/// attempt's own, and must end first.
const MARGIN_DIVISOR: u32 = 10;

/// The most kept back from the server's bound.
const MAX_MARGIN: Duration = Duration::from_millis(50);

/// The bound a server should put on the attempt's work: the attempt's remaining time
/// ([`RetryContext::remaining`](crate::RetryContext::remaining)) less a margin (a tenth, at most
/// 50 ms), so that the server stops first; at least 1 ms (Postgres reads 0 as "no limit").
/// `None` outside an attempt, or when nothing limits it (no `timeout`, no `max_elapsed`).
///
/// ```
/// use std::time::Duration;
/// use reattempt::sqlx::server_bound;
///
/// assert_eq!(server_bound(Duration::from_millis(200)), Duration::from_millis(180));
/// assert_eq!(server_bound(Duration::from_secs(10)), Duration::from_millis(9_950));
/// assert_eq!(server_bound(Duration::ZERO), Duration::from_millis(1));
/// ```
pub fn server_bound(remaining: Duration) -> Duration {
    let margin = (remaining / MARGIN_DIVISOR).min(MAX_MARGIN);
    remaining
        .saturating_sub(margin)
        .max(Duration::from_millis(1))
}

/// The `SET LOCAL` statements that bound a Postgres transaction by the attempt being run on
/// this thread ([`server_bound`] of its remaining time, in whole milliseconds): `None` outside
/// an attempt or when nothing limits it. What [`set_postgres_timeouts`] sends; for a driver of
/// your own, or for `sqlx::raw_sql` before a statement in one implicit transaction.
///
/// ```
/// assert_eq!(reattempt::sqlx::postgres_timeouts(), None); // outside an attempt
/// ```
pub fn postgres_timeouts() -> Option<String> {
    let remaining = crate::context()?.remaining()?;
    let ms = server_bound(remaining).as_millis().max(1);
    Some(format!(
        "SET LOCAL statement_timeout = {ms}; SET LOCAL lock_timeout = {ms}"
    ))
}

/// Bounds each statement that follows in the current Postgres transaction by the attempt's
/// remaining time now: `statement_timeout` and `lock_timeout` ([`postgres_timeouts`]),
/// `SET LOCAL`, so that they end with the transaction and never reach the next user of the
/// pooled connection. Call it first in the transaction (`&mut *tx`), and again before a later
/// long statement (each statement gets the whole bound: see the [module](self)); outside a
/// transaction Postgres ignores `SET LOCAL` with a warning.
/// Outside an attempt, or when nothing limits it, it sends nothing.
///
/// A statement the server cancels for it fails with SQLSTATE `57014` "canceling statement due
/// to statement timeout", which the crate's classification takes as a timeout that did nothing
/// (the statement and its transaction were rolled back): retried by
/// [`transient`](crate::transient) whether or not the call is idempotent. Without the bound, the
/// attempt's own timeout fires instead, its outcome is unknown, and the query goes on running
/// on the server.
///
/// # Errors
/// The database's error, if it refuses the statements (a database that is not Postgres).
pub async fn set_postgres_timeouts<'e, E, DB>(executor: E) -> Result<(), sqlx_core::Error>
where
    DB: Database,
    E: Executor<'e, Database = DB>,
{
    let Some(sql) = postgres_timeouts() else {
        return Ok(());
    };
    sqlx_core::raw_sql::raw_sql(sqlx_core::sql_str::AssertSqlSafe(sql))
        .execute(executor)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_bound_keeps_a_margin_and_never_reaches_zero() {
        assert_eq!(server_bound(200 * MS), 180 * MS);
        assert_eq!(server_bound(1000 * MS), 950 * MS);
        assert_eq!(
            server_bound(Duration::from_secs(3600)),
            Duration::from_millis(3_599_950)
        );
        assert_eq!(server_bound(MS), MS);
        assert_eq!(server_bound(Duration::ZERO), MS);
        assert_eq!(
            server_bound(Duration::MAX),
            Duration::MAX.saturating_sub(50 * MS)
        );
        for ms in 1..2_000 {
            let bound = server_bound(ms * MS);
            assert!(bound >= MS && bound <= (ms * MS).max(MS), "{ms}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_statements_carry_the_attempts_remaining_time() {
        let policy = crate::RetryPolicy::builder()
            .timeout(200 * MS)
            .build()
            .unwrap();
        let sql = policy
            .retry(|| async {
                tokio::time::sleep(100 * MS).await;
                Ok::<_, std::io::Error>(postgres_timeouts())
            })
            .await
            .unwrap();
        assert_eq!(
            sql.as_deref(),
            Some("SET LOCAL statement_timeout = 90; SET LOCAL lock_timeout = 90")
        );
        let untimed = crate::RetryPolicy::builder().build().unwrap();
        let sql = untimed
            .retry(|| async { Ok::<_, std::io::Error>(postgres_timeouts()) })
            .await
            .unwrap();
        assert_eq!(sql, None);
    }
}
