//! Database errors of [sqlx](https://docs.rs/sqlx) 0.9 (feature `sqlx`): which are worth
//! retrying, and the `sqlx::Error` that a timed-out attempt or a guard's rejection becomes.
//!
//! The classification reads what every driver gives through `DatabaseError::code()` (and, for
//! MySQL's error numbers, its message), so the runtime depends on sqlx's core alone, not on the
//! drivers.

use std::io;

use sqlx_core::error::{DatabaseError, Error};

use crate::classify::Transient;
use crate::convert::{FromBreakerOpen, FromBulkheadFull, FromElapsed, FromThrottled};
use crate::error::{BreakerOpen, BulkheadFull, Elapsed, Throttled};

/// SQLite's `SQLITE_BUSY` (another connection holds the lock) and `SQLITE_LOCKED` (a conflict
/// inside this connection or its shared cache), primary result codes: the low byte of an
/// extended code (`SQLITE_BUSY_SNAPSHOT` is 517 = 5 + 2 × 256).
const SQLITE_BUSY: u32 = 5;
const SQLITE_LOCKED: u32 = 6;

/// Which [`sqlx::Error`](https://docs.rs/sqlx/0.9/sqlx/enum.Error.html)s are transient (feature
/// `sqlx`), on every driver:
///
/// | error | transient | timeout |
/// |---|---|---|
/// | SQLite `SQLITE_BUSY` (5) and `SQLITE_LOCKED` (6), with any extended code (the code's low byte) | yes | no |
/// | SQLSTATE `40001` (Postgres `serialization_failure`, MySQL 1213 `ER_LOCK_DEADLOCK`) | yes | no |
/// | SQLSTATE `40P01` (Postgres `deadlock_detected`) | yes | no |
/// | SQLSTATE `55P03` (Postgres `lock_not_available`: `lock_timeout`, `NOWAIT`) | yes | no |
/// | MySQL 1205 `ER_LOCK_WAIT_TIMEOUT` (SQLSTATE `HY000`) | yes | yes |
/// | SQLSTATE class `08` (connection exception; not Postgres's `08P01` `protocol_violation`, nor `08007` `transaction_resolution_unknown`: a COMMIT that may have landed), `57P01` `admin_shutdown`, `57P02` `crash_shutdown`, `57P03` `cannot_connect_now` (a server restarting) | yes | no |
/// | `Error::PoolTimedOut` (no connection within the pool's `acquire_timeout`) | yes | yes |
/// | `Error::Io(e)` | as [`std::io::Error`]: reset, refused, aborted, timed out… | kind `TimedOut` |
/// | any other database error (a constraint violation, a syntax error…) and every other variant (`RowNotFound`, `PoolClosed`, `Protocol`, `Tls`, decoding…) | no | no |
///
/// The lock and serialization errors are the ones their databases' manuals say to answer by
/// running the transaction again; a retried `#[retryable]` function runs its whole body again, so
/// the transaction should be begun and committed inside it. An `SQLITE_BUSY` only comes back at
/// once with `busy_timeout(0)`; with SQLite's default wait it means the lock was held for all of it.
///
/// SQLite's codes are told from SQLSTATEs by their length (an SQLSTATE has five characters;
/// SQLite's extended codes are at most four digits). MySQL's 1205 shares SQLSTATE `HY000` with
/// unrelated errors, so its number is read where sqlx-mysql writes it, at the start of the
/// error's text (`1205 (HY000): Lock wait timeout exceeded; …`). The `Io` error of a timed-out
/// attempt ([`FromElapsed`]) is transient and a timeout; the `Io` error of a guard's rejection
/// (kind `Other`) is not transient.
///
/// ```
/// use reattempt::Transient;
///
/// assert!(sqlx::Error::PoolTimedOut.is_transient());
/// assert!(sqlx::Error::PoolTimedOut.is_timeout());
/// assert!(sqlx::Error::Io(std::io::ErrorKind::ConnectionReset.into()).is_transient());
/// assert!(!sqlx::Error::RowNotFound.is_transient());
/// assert!(!sqlx::Error::PoolClosed.is_transient());
/// ```
impl Transient for Error {
    fn is_transient(&self) -> bool {
        match self {
            Error::Database(error) => database_error_is_transient(&**error),
            Error::Io(error) => error.is_transient(),
            Error::PoolTimedOut => true,
            _ => false,
        }
    }

    fn is_timeout(&self) -> bool {
        match self {
            Error::Database(error) => mysql_number(&**error) == Some(1205),
            Error::Io(error) => error.is_timeout(),
            Error::PoolTimedOut => true,
            _ => false,
        }
    }
}

/// The table of [`Transient` for `Error`](Error) for one database error.
fn database_error_is_transient(error: &dyn DatabaseError) -> bool {
    let Some(code) = error.code() else {
        return false;
    };
    if code.len() == 5 {
        return matches!(
            &*code,
            "40001" | "40P01" | "55P03" | "57P01" | "57P02" | "57P03" // Class 08, connection exceptions, but a protocol violation (which repeats) and
                                                                      // `transaction_resolution_unknown` (08007: the connection broke during COMMIT, which
                                                                      // may have landed; a retry could apply the transaction twice).
        ) || (code.starts_with("08") && !matches!(&*code, "08P01" | "08007"))
            || matches!(mysql_number(error), Some(1205 | 1213));
    }
    code.parse::<u32>()
        .is_ok_and(|sqlite| matches!(sqlite & 0xff, SQLITE_BUSY | SQLITE_LOCKED))
}

/// A MySQL (or MariaDB) error's number, from the text sqlx-mysql writes for it:
/// `{number} ({sqlstate}): {message}`.
fn mysql_number(error: &dyn DatabaseError) -> Option<u16> {
    let code = error.code()?;
    let text = error.to_string();
    let (number, rest) = text.split_once(' ')?;
    let sqlstate = rest.strip_prefix('(')?.split_once("): ")?.0;
    (number.bytes().all(|b| b.is_ascii_digit()) && sqlstate == code)
        .then(|| number.parse().ok())
        .flatten()
}

/// `sqlx::Error::Io` over `source`, of `kind`.
fn io(kind: io::ErrorKind, source: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::Io(io::Error::new(kind, source))
}

/// A timed-out attempt is `sqlx::Error::Io` of kind `TimedOut` over the [`Elapsed`] (feature
/// `sqlx`), as tokio's own timeout becomes an I/O error: transient, and a timeout. Its text is
/// "error communicating with database: attempt timed out".
///
/// ```
/// use reattempt::{Elapsed, FromElapsed, Transient};
///
/// let error = sqlx::Error::from_elapsed(Elapsed::new());
/// let sqlx::Error::Io(io) = &error else { unreachable!() };
/// assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
/// assert!(io.get_ref().unwrap().is::<Elapsed>());
/// assert!(error.is_transient() && error.is_timeout());
/// assert_eq!(error.to_string(), "error communicating with database: attempt timed out");
/// ```
impl FromElapsed for Error {
    fn from_elapsed(elapsed: Elapsed) -> Self {
        io(io::ErrorKind::TimedOut, elapsed)
    }
}

/// A call an open breaker rejected is `sqlx::Error::Io` of kind `Other` over the
/// [`BreakerOpen`] (feature `sqlx`): nothing was sent. Not transient.
///
/// ```
/// use reattempt::{BreakerOpen, FromBreakerOpen, Transient};
///
/// let error = sqlx::Error::from_breaker_open(BreakerOpen::new());
/// let sqlx::Error::Io(io) = &error else { unreachable!() };
/// assert!(io.get_ref().unwrap().is::<BreakerOpen>());
/// assert!(!error.is_transient());
/// ```
impl FromBreakerOpen for Error {
    fn from_breaker_open(open: BreakerOpen) -> Self {
        io(io::ErrorKind::Other, open)
    }
}

/// An attempt the adaptive throttle shed is `sqlx::Error::Io` of kind `Other` over the
/// [`Throttled`] (feature `sqlx`). Not transient.
///
/// ```
/// use reattempt::{FromThrottled, Throttled, Transient};
///
/// let error = sqlx::Error::from_throttled(Throttled::new());
/// assert_eq!(error.to_string(), "error communicating with database: rejected by the adaptive throttle");
/// assert!(!error.is_transient());
/// ```
impl FromThrottled for Error {
    fn from_throttled(shed: Throttled) -> Self {
        io(io::ErrorKind::Other, shed)
    }
}

/// A call a full bulkhead turned away is `sqlx::Error::Io` of kind `Other` over the
/// [`BulkheadFull`] (feature `sqlx`). Not transient.
///
/// ```
/// use reattempt::{BulkheadFull, FromBulkheadFull, Transient};
///
/// let error = sqlx::Error::from_bulkhead_full(BulkheadFull::new());
/// assert_eq!(error.to_string(), "error communicating with database: bulkhead full");
/// assert!(!error.is_transient());
/// ```
impl FromBulkheadFull for Error {
    fn from_bulkhead_full(full: BulkheadFull) -> Self {
        io(io::ErrorKind::Other, full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::transient;
    use sqlx_core::error::ErrorKind;
    use std::borrow::Cow;
    use std::error::Error as StdError;
    use std::fmt;

    /// A driver's error as the drivers write them: SQLite's `code()` is its extended code in
    /// decimal and its text `(code: N) message`; Postgres's `code()` its SQLSTATE and its text the
    /// message; MySQL's `code()` its SQLSTATE and its text `number (SQLSTATE): message`.
    #[derive(Debug)]
    struct Fake {
        code: Option<Cow<'static, str>>,
        text: String,
    }

    impl fmt::Display for Fake {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(&self.text)
        }
    }

    impl StdError for Fake {}

    impl DatabaseError for Fake {
        fn message(&self) -> &str {
            &self.text
        }
        fn code(&self) -> Option<Cow<'_, str>> {
            self.code.clone()
        }
        fn as_error(&self) -> &(dyn StdError + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn StdError + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn StdError + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> ErrorKind {
            ErrorKind::Other
        }
    }

    fn sqlite(code: i32) -> Error {
        Error::from(Fake {
            code: Some(code.to_string().into()),
            text: format!("(code: {code}) database is locked"),
        })
    }

    fn postgres(sqlstate: &'static str) -> Error {
        Error::from(Fake {
            code: Some(sqlstate.into()),
            text: "could not serialize access due to concurrent update".into(),
        })
    }

    fn mysql(number: u16, sqlstate: &'static str, message: &str) -> Error {
        Error::from(Fake {
            code: Some(sqlstate.into()),
            text: format!("{number} ({sqlstate}): {message}"),
        })
    }

    #[test]
    fn sqlite_busy_and_locked_by_the_low_byte() {
        // BUSY, BUSY_RECOVERY, BUSY_SNAPSHOT, BUSY_TIMEOUT; LOCKED, LOCKED_SHAREDCACHE, LOCKED_VTAB.
        for code in [5, 261, 517, 773, 6, 262, 518] {
            assert!(transient(&sqlite(code)), "{code}");
            assert!(!sqlite(code).is_timeout(), "{code}");
        }
        // ERROR, CONSTRAINT_UNIQUE (2067), READONLY, IOERR_SHORT_READ (522: low byte 10), FULL.
        for code in [1, 2067, 8, 522, 13, 1555] {
            assert!(!transient(&sqlite(code)), "{code}");
        }
    }

    #[test]
    fn postgres_serialization_deadlock_lock_and_restart() {
        for sqlstate in [
            "40001", "40P01", "55P03", "57P01", "57P02", "57P03", "08006", "08001",
        ] {
            assert!(transient(&postgres(sqlstate)), "{sqlstate}");
            assert!(!postgres(sqlstate).is_timeout(), "{sqlstate}");
        }
        // unique_violation, syntax_error, query_canceled, division_by_zero, protocol_violation,
        // transaction_resolution_unknown (a COMMIT that may have landed),
        // and all-digit SQLSTATEs whose low byte would be SQLite's BUSY were they read as numbers
        // (40965 & 0xff = 5): an SQLSTATE is never read as SQLite's code.
        for sqlstate in [
            "23505", "42601", "57014", "22012", "08P01", "08007", "40965", "00005",
        ] {
            assert!(!transient(&postgres(sqlstate)), "{sqlstate}");
        }
    }

    #[test]
    fn mysql_deadlock_and_lock_wait_timeout() {
        let deadlock = mysql(
            1213,
            "40001",
            "Deadlock found when trying to get lock; try restarting transaction",
        );
        assert!(transient(&deadlock) && !deadlock.is_timeout());
        let lock_wait = mysql(
            1205,
            "HY000",
            "Lock wait timeout exceeded; try restarting transaction",
        );
        assert!(transient(&lock_wait) && lock_wait.is_timeout());
        // Other HY000 errors, a duplicate key, a syntax error.
        for error in [
            mysql(
                1206,
                "HY000",
                "The total number of locks exceeds the lock table size",
            ),
            mysql(1062, "23000", "Duplicate entry '1' for key 'PRIMARY'"),
            mysql(1064, "42000", "You have an error in your SQL syntax"),
        ] {
            assert!(!transient(&error), "{error}");
            assert!(!error.is_timeout(), "{error}");
        }
        // A Postgres message that happens to start like MySQL's text does not fool it: the
        // SQLSTATE in the text must be the error's code.
        let lookalike = Error::from(Fake {
            code: Some("XX000".into()),
            text: "1205 (HY000): quoted".into(),
        });
        assert!(!transient(&lookalike));
    }

    #[test]
    fn pool_io_and_other_variants() {
        assert!(transient(&Error::PoolTimedOut) && Error::PoolTimedOut.is_timeout());
        let reset = Error::Io(io::ErrorKind::ConnectionReset.into());
        assert!(transient(&reset) && !reset.is_timeout());
        let timed_out = Error::Io(io::ErrorKind::TimedOut.into());
        assert!(transient(&timed_out) && timed_out.is_timeout());
        for error in [
            Error::Io(io::ErrorKind::PermissionDenied.into()),
            Error::RowNotFound,
            Error::PoolClosed,
            Error::WorkerCrashed,
            Error::Protocol("bad packet".into()),
            Error::ColumnNotFound("id".into()),
            Error::from(Fake {
                code: None,
                text: "no code".into(),
            }),
        ] {
            assert!(!transient(&error), "{error}");
            assert!(!error.is_timeout(), "{error}");
        }
    }

    #[test]
    fn conversions() {
        let timed_out = Error::from_elapsed(Elapsed::new());
        assert!(transient(&timed_out) && timed_out.is_timeout());
        for error in [
            Error::from_breaker_open(BreakerOpen::new()),
            Error::from_throttled(Throttled::new()),
            Error::from_bulkhead_full(BulkheadFull::new()),
        ] {
            let Error::Io(io) = &error else {
                panic!("{error}")
            };
            assert_eq!(io.kind(), io::ErrorKind::Other);
            assert!(!transient(&error) && !error.is_timeout());
        }
    }

    /// A real `SQLITE_BUSY`: a second connection to a file whose write lock another holds, with
    /// `busy_timeout(0)`.
    #[tokio::test(flavor = "current_thread")]
    async fn a_real_sqlite_busy_is_transient() {
        use sqlx::ConnectOptions as _;
        use sqlx::Connection as _;
        use sqlx::sqlite::SqliteConnectOptions;

        let dir = tempfile::tempdir().unwrap();
        let options = SqliteConnectOptions::new()
            .filename(dir.path().join("busy.db"))
            .create_if_missing(true)
            .busy_timeout(std::time::Duration::ZERO);
        let mut holder = options.connect().await.unwrap();
        sqlx::query("CREATE TABLE t (k INTEGER PRIMARY KEY)")
            .execute(&mut holder)
            .await
            .unwrap();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut holder)
            .await
            .unwrap();

        let mut writer = options.connect().await.unwrap();
        let busy = sqlx::query("INSERT INTO t (k) VALUES (1)")
            .execute(&mut writer)
            .await
            .unwrap_err();
        let code = busy
            .as_database_error()
            .and_then(DatabaseError::code)
            .unwrap();
        assert_eq!(code.parse::<u32>().unwrap() & 0xff, SQLITE_BUSY, "{busy}");
        assert!(transient(&busy), "{busy}");
        assert!(!busy.is_timeout());

        sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
        sqlx::query("INSERT INTO t (k) VALUES (1)")
            .execute(&mut writer)
            .await
            .unwrap();
        writer.close().await.unwrap();
        holder.close().await.unwrap();
    }
}
