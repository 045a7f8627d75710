//! Database errors of [sqlx](https://docs.rs/sqlx) 0.9 (feature `sqlx`): which are worth
//! retrying, and the `sqlx::Error` that a timed-out attempt or a guard's rejection becomes.
//!
//! The classification reads what every driver gives through `DatabaseError::code()` (and, for
//! MySQL's error numbers, its message), so the runtime depends on sqlx's core alone, not on the
//! drivers.

use std::io;

use sqlx_core::error::{DatabaseError, Error};

use crate::classify::{Effect, Transient, may_repeat};
use crate::convert::{FromBreakerOpen, FromBulkheadFull, FromElapsed, FromThrottled};
use crate::error::{BreakerOpen, BulkheadFull, Elapsed, Throttled};

/// SQLite's `SQLITE_BUSY` (another connection holds the lock) and `SQLITE_LOCKED` (a conflict
/// inside this connection or its shared cache), primary result codes: the low byte of an
/// extended code (`SQLITE_BUSY_SNAPSHOT` is 517 = 5 + 2 × 256).
const SQLITE_BUSY: u32 = 5;
const SQLITE_LOCKED: u32 = 6;

/// Which [`sqlx::Error`](https://docs.rs/sqlx/0.9/sqlx/enum.Error.html)s are transient (feature
/// `sqlx`), on every driver, and what each says of the statement in flight
/// ([`Effect`]: `not done` proves it did not take effect; `unknown` means it may have committed):
///
/// | error | transient | effect | timeout |
/// |---|---|---|---|
/// | SQLite `SQLITE_BUSY` (5) and `SQLITE_LOCKED` (6), with any extended code (the code's low byte) | yes | not done | no |
/// | SQLSTATE `40001` (Postgres `serialization_failure`, MySQL 1213 `ER_LOCK_DEADLOCK`): the transaction was rolled back | yes | not done | no |
/// | SQLSTATE `40P01` (Postgres `deadlock_detected`): rolled back | yes | not done | no |
/// | SQLSTATE `55P03` (Postgres `lock_not_available`: `lock_timeout`, `NOWAIT`): the statement failed | yes | not done | no |
/// | MySQL 1205 `ER_LOCK_WAIT_TIMEOUT` (SQLSTATE `HY000`): the statement was rolled back | yes | not done | yes |
/// | SQLSTATE `57014` "canceling statement due to statement timeout" (Postgres `query_canceled` by `statement_timeout`, as [`set_postgres_timeouts`](crate::sqlx::set_postgres_timeouts) sets it): rolled back; a cancel by an operator is not retried | yes | not done | yes |
/// | SQLSTATE `57P03` (Postgres `cannot_connect_now`: a server starting or stopping), `08001` (unable to connect), `08004` (connection rejected; MySQL's too many connections): refused at connection, nothing sent | yes | not done | no |
/// | SQLSTATE `57P01` `admin_shutdown` (a fast stop, `pg_terminate_backend`: Postgres answers a statement with it only after aborting its transaction; a COMMIT that had already landed ends with a warning and no error instead, which the client sees as an EOF) | yes | not done | no |
/// | SQLSTATE `57P02` `crash_shutdown` (the server went down hard: a COMMIT whose record was written may have landed), and every other class-`08` code but `08P01`: `08000`, `08003`, `08006` (the connection broke), `08007` `transaction_resolution_unknown` (it broke during COMMIT), MySQL's `08S01` | yes, on an idempotent call | unknown | no |
/// | `Error::PoolTimedOut` (no connection within the pool's `acquire_timeout`: nothing sent) | yes | not done | yes |
/// | `Error::Io(e)`: connection refused, unreachable | yes | not done | no |
/// | `Error::Io(e)`: reset, broken pipe, EOF, aborted (a server crash, a restart, a failover, an OOM kill: the statement may have committed), timed out | yes, on an idempotent call | unknown | kind `TimedOut` |
/// | any other database error (a constraint violation, a syntax error, Postgres's `08P01` `protocol_violation`) and every other variant (`RowNotFound`, `PoolClosed`, `Protocol`, `Tls`, decoding…) | no | unstated | no |
///
/// "On an idempotent call": the crate's judgement ([`transient`](crate::transient)) repeats an
/// unknown outcome only on a call that says it is safe to repeat (see [`Effect`]): a plain
/// `UPDATE … SET v = v + 1` cut by a server's crash is not run again, since it may have
/// committed. An `INSERT … ON CONFLICT DO NOTHING` keyed by the request, or a transaction that
/// records the call's idempotency key beside its effect (the guide's *exactly once* recipe), is
/// safe to repeat: say `idempotent = true`.
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
/// attempt ([`FromElapsed`](crate::FromElapsed)) is transient and a timeout, with an unknown effect; the `Io` error
/// of a guard's rejection (kind `Other`) is not transient.
///
/// ```
/// use reattempt::{Effect, Transient};
///
/// assert!(sqlx::Error::PoolTimedOut.is_transient());
/// assert!(sqlx::Error::PoolTimedOut.is_timeout());
/// assert_eq!(sqlx::Error::PoolTimedOut.effect(), Effect::NotDone);
/// let eof = sqlx::Error::Io(std::io::ErrorKind::UnexpectedEof.into());
/// assert!(eof.is_transient());
/// assert_eq!(eof.effect(), Effect::Unknown);
/// assert!(!sqlx::Error::RowNotFound.is_transient());
/// assert!(!sqlx::Error::PoolClosed.is_transient());
/// ```
impl Transient for Error {
    fn is_transient(&self) -> bool {
        let transient = transient_effect(self).is_some_and(may_repeat);
        crate::classify::effect::noting_class(self, || self.class(), transient)
    }

    fn is_timeout(&self) -> bool {
        match self {
            Error::Database(error) => {
                mysql_number(&**error) == Some(1205)
                    || (error.code().as_deref() == Some("57014") && is_statement_timeout(&**error))
            }
            Error::Io(error) => error.is_timeout(),
            Error::PoolTimedOut => true,
            _ => false,
        }
    }

    fn effect(&self) -> Effect {
        transient_effect(self).unwrap_or(Effect::Unstated)
    }
}

/// The table of [`Transient` for `Error`](Error): the effect of a transient error, `None` for
/// one that is not transient.
fn transient_effect(error: &Error) -> Option<Effect> {
    match error {
        Error::Database(error) => database_error_effect(&**error),
        Error::Io(error) => Some(error.effect()).filter(|e| *e != Effect::Unstated),
        Error::PoolTimedOut => Some(Effect::NotDone),
        _ => None,
    }
}

/// The table of [`Transient` for `Error`](Error) for one database error.
fn database_error_effect(error: &dyn DatabaseError) -> Option<Effect> {
    let code = error.code()?;
    if code.len() == 5 {
        if matches!(mysql_number(error), Some(1205 | 1213)) {
            return Some(Effect::NotDone);
        }
        return match &*code {
            // Rolled back, or refused before anything ran. `57P01` `admin_shutdown` (a fast
            // stop, `pg_terminate_backend`): the server answers a statement with it only when
            // it aborted the statement's transaction (a COMMIT already made while waiting for a
            // standby ends with a warning and no error, which the client sees as an EOF).
            // Measured: postgres_e2e's clean restart.
            "40001" | "40P01" | "55P03" | "57P01" | "57P03" | "08001" | "08004" => {
                Some(Effect::NotDone)
            }
            // Cancelled by `statement_timeout` (`reattempt::sqlx::set_postgres_timeouts`), and
            // so rolled back; a cancel by an operator (`pg_cancel_backend`) is not retried.
            "57014" if is_statement_timeout(error) => Some(Effect::NotDone),
            // A protocol violation repeats.
            "08P01" => None,
            // `crash_shutdown`: the server went down hard; a COMMIT whose record was written may
            // have landed.
            "57P02" => Some(Effect::Unknown),
            c if c.starts_with("08") => Some(Effect::Unknown),
            _ => None,
        };
    }
    code.parse::<u32>()
        .is_ok_and(|sqlite| matches!(sqlite & 0xff, SQLITE_BUSY | SQLITE_LOCKED))
        .then_some(Effect::NotDone)
}

/// A Postgres `query_canceled` that says it was the statement timeout (its English text: a
/// server whose `lc_messages` is another language is not recognised, and not retried).
fn is_statement_timeout(error: &dyn DatabaseError) -> bool {
    error.message().contains("statement timeout")
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
        // Rolled back, or refused before anything ran: nothing done.
        for sqlstate in [
            "40001", "40P01", "55P03", "57P01", "57P03", "08001", "08004",
        ] {
            assert!(transient(&postgres(sqlstate)), "{sqlstate}");
            assert_eq!(postgres(sqlstate).effect(), Effect::NotDone, "{sqlstate}");
            assert!(!postgres(sqlstate).is_timeout(), "{sqlstate}");
        }
        // The session or its connection ended mid-statement (or mid-COMMIT): it may have
        // committed. Transient, with an unknown effect (repeated only on an idempotent call).
        for sqlstate in ["57P02", "08000", "08003", "08006", "08007"] {
            assert!(postgres(sqlstate).is_transient(), "{sqlstate}");
            assert_eq!(postgres(sqlstate).effect(), Effect::Unknown, "{sqlstate}");
        }
        // unique_violation, syntax_error, query_canceled, division_by_zero, protocol_violation,
        // and all-digit SQLSTATEs whose low byte would be SQLite's BUSY were they read as numbers
        // (40965 & 0xff = 5): an SQLSTATE is never read as SQLite's code.
        for sqlstate in [
            "23505", "42601", "57014", "22012", "08P01", "40965", "00005",
        ] {
            assert!(!transient(&postgres(sqlstate)), "{sqlstate}");
            assert_eq!(postgres(sqlstate).effect(), Effect::Unstated, "{sqlstate}");
        }
    }

    /// `statement_timeout`'s cancel (as `set_postgres_timeouts` sets it) rolled the statement
    /// back: a timeout that did nothing. An operator's cancel is not retried.
    #[test]
    fn a_statement_timeout_is_a_timeout_that_did_nothing() {
        let timed_out = Error::from(Fake {
            code: Some("57014".into()),
            text: "canceling statement due to statement timeout".into(),
        });
        assert!(transient(&timed_out) && timed_out.is_timeout());
        assert_eq!(timed_out.effect(), Effect::NotDone);
        let (yes, _) = crate::classify::effect::judging(false, false, || transient(&timed_out));
        assert!(
            yes,
            "repeated on a call that is not idempotent: nothing was done"
        );
        let cancelled = Error::from(Fake {
            code: Some("57014".into()),
            text: "canceling statement due to user request".into(),
        });
        assert!(!transient(&cancelled) && !cancelled.is_timeout());
    }

    /// The rule, through the judgement a retrying call makes: an unknown outcome is repeated
    /// only on an idempotent call; a rolled-back one always.
    #[test]
    fn an_unknown_outcome_is_repeated_only_on_an_idempotent_call() {
        use crate::classify::effect::judging;
        let unknown = [
            Error::Io(io::ErrorKind::UnexpectedEof.into()),
            Error::Io(io::ErrorKind::ConnectionReset.into()),
            Error::Io(io::ErrorKind::BrokenPipe.into()),
            Error::Io(io::ErrorKind::ConnectionAborted.into()),
            postgres("57P02"),
            postgres("08006"),
            Error::from_elapsed(Elapsed::new()),
        ];
        for error in &unknown {
            assert_eq!(error.effect(), Effect::Unknown, "{error}");
            let (yes, verdict) = judging(false, false, || transient(error));
            assert!(!yes && verdict.refused, "{error}");
            let (yes, _) = judging(true, false, || transient(error));
            assert!(yes, "{error}");
        }
        for error in [postgres("40001"), sqlite(5), Error::PoolTimedOut] {
            let (yes, verdict) = judging(false, false, || transient(&error));
            assert!(yes && !verdict.refused, "{error}");
            // Unless the policy's timeout cut the attempt: then it may have acted.
            let (yes, _) = judging(false, true, || transient(&error));
            assert!(!yes, "{error}");
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
        assert_eq!(deadlock.effect(), Effect::NotDone);
        let lock_wait = mysql(
            1205,
            "HY000",
            "Lock wait timeout exceeded; try restarting transaction",
        );
        assert!(transient(&lock_wait) && lock_wait.is_timeout());
        assert_eq!(lock_wait.effect(), Effect::NotDone);
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
        // Reset, broken pipe and EOF alike: transient, effect unknown.
        for kind in [
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::BrokenPipe,
            io::ErrorKind::UnexpectedEof,
        ] {
            let error = Error::Io(kind.into());
            assert!(transient(&error) && !error.is_timeout(), "{error}");
            assert_eq!(error.effect(), Effect::Unknown, "{error}");
        }
        let refused = Error::Io(io::ErrorKind::ConnectionRefused.into());
        assert!(transient(&refused));
        assert_eq!(refused.effect(), Effect::NotDone);
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
