//! # reattempt
//!
//! Retrying a remote call as a one-line, compile-checked declaration: per-attempt timeouts,
//! capped exponential backoff with jitter, retrying only what is transient, a total deadline,
//! idempotency keys and a `#[recover]` fallback.
//!
//! ```
//! use reattempt::{recover, retryable};
//!
//! #[derive(Debug)]
//! enum PayError { Unavailable, Declined, Timeout }
//! impl From<reattempt::Elapsed> for PayError {
//!     fn from(_: reattempt::Elapsed) -> Self { PayError::Timeout }
//! }
//!
//! struct Gateway { outages: std::sync::atomic::AtomicU32 }
//!
//! impl Gateway {
//!     #[retryable(max_attempts = 4, delay = "200ms", max_delay = "2s", timeout = "1s",
//!                 retry_on = [PayError::Unavailable | PayError::Timeout],
//!                 recover = Self::mark_pending)]
//!     async fn charge(&self, order: &str) -> Result<String, PayError> {
//!         let key = reattempt::context().unwrap().idempotency_key();
//!         if self.outages.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) > 0 {
//!             return Err(PayError::Unavailable);
//!         }
//!         Ok(format!("charged {order} once, key {key}"))
//!     }
//!
//!     #[recover]
//!     async fn mark_pending(&self, err: PayError, order: &str) -> Result<String, PayError> {
//!         Ok(format!("{order} pending after {err:?}"))
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() {
//!     let gateway = Gateway { outages: 2.into() };
//!     assert!(gateway.charge("order-1").await.unwrap().starts_with("charged order-1"));
//!     let down = Gateway { outages: 9.into() };
//!     assert_eq!(down.charge("order-2").await.unwrap(), "order-2 pending after Unavailable");
//! }
//! ```
//!
//! The same schedule is available without the attribute, from [`RetryPolicy`]:
//! `policy.retry(|| async { … }).retry_if(transient).await`.
//!
//! **Where to go next.** The [`guide`] walks through the tasks (a first retry, classifying
//! errors, schedules, deadlines, guards, hedging, HTTP, gRPC, configuration, observability,
//! testing, migrating); [`macro@retryable`] lists every key. Optional integrations are features:
//! `http` (default), `reqwest`, `reqwest-middleware`, `tower`, `tonic`, `sqlx`, `serde`,
//! `metrics`, `testing`, `testing-http`; an item that needs one says so.

#![forbid(unsafe_code)]
// docs.rs (`--cfg docsrs`): feature badges, but none for the runtime's loom model build (a test
// build) on the items re-exported from it.
#![cfg_attr(docsrs, feature(doc_cfg), doc(auto_cfg(hide(loom))))]

#[doc(hidden)]
pub mod __private;

/// Retries a function that returns `Result`, per a schedule written in the attribute.
///
/// Applies to `async fn` (free functions; inherent and trait-impl methods with any receiver,
/// `#[async_trait]` impls included; generics; `impl Trait`, reference and pattern arguments;
/// `-> Result<impl Trait, E>`; any alias of `Result`) and to blocking `fn` (which sleeps with
/// `std::thread::sleep`, under `block_in_place` on a tokio multi-thread worker; on a
/// current-thread runtime it sleeps anyway and logs one `WARN` event: call such a function from
/// `spawn_blocking`, or make it `async`). The function keeps its signature, visibility, attributes and
/// `Send`-ness, under other attribute macros (`#[tracing::instrument]`) above or below. Each
/// attempt re-runs the body; `return` and `?` end the attempt. By-value arguments are cloned for
/// each attempt (they must be `Clone`; the compiler says so at the argument otherwise); references
/// are copied and `&mut` references reborrowed, so `mut` bindings start afresh each attempt. In
/// the body, `self` is renamed `__self` (as async-trait does) and bound to a copy of `&self`, a
/// reborrow of `&mut self` (`self.as_mut()` for `self: Pin<&mut Self>`), or, for a `self` taken
/// by value, a copy when `Self: Copy` (used as a value, as a `Copy` argument is: each attempt
/// starts from the caller's value) and otherwise a mutable borrow (not cloned: the body may use
/// it, but not move out of it). A `&mut self` method or a `&'a mut` argument may return a borrow
/// of it (`async fn conn(&mut self) -> Result<&mut Connection, E>`, `Result<Guard<'a>, E>`): each
/// attempt is lent a reborrow, higher-ranked over its lifetime, so the compiler checks that the
/// `Ok` borrows only from it (or from what outlives it); the other arguments, whatever their
/// lifetimes (`url: &str`, a second `&mut`), are copied or reborrowed for each attempt as above;
/// the attempt's future is boxed and must be `Send`; not with `retry_if_ok` or `recover` (see the
/// guide's [shapes chapter](crate::guide::shapes)).
/// An argument the body never names (read only by the attribute, as `circuit_breaker = breaker`)
/// is not copied. Inside macros, `{self}` is rewritten only in the format string of a known
/// formatting macro (std's, `tracing`'s, `log`'s, `anyhow`'s, `eyre!`); other string literals are data. The error type must be `Debug` (the policy's `log_error`
/// may log it; by default events name only its type). Not for `const fn`, nor `#[track_caller]` (the body runs in a closure or an async
/// block, which cannot forward the caller's location on stable Rust). The shapes that are tested
/// are listed in [`guide::shapes`].
///
/// The `circuit_breaker` and `budget` expressions are evaluated once per call, before the first
/// attempt; except one that names what the attempts borrow mutably (`self` in a method not taking
/// `&self`, a `&mut` argument), which is evaluated before and after each attempt (the attempts
/// reborrow it mutably in between). Such a `policy` expression is copied once per call.
///
/// The default `name` is the function's path, with the `Self` type of a method
/// (`crate::module::Client::get`, in a trait impl too; generic parameters print as `_`); it is a
/// constant, computed with no allocation (a trait impl's is shortened once, on its first call).
///
/// A panic inside an attempt is a bug, not a transient failure: it propagates to the caller at
/// once, is not retried, and is not counted by a circuit breaker or a budget. Dropping the call's
/// future (a caller's timeout, a cancelled task) stops it where it is: no further attempt starts.
///
/// | key | value | default |
/// |---|---|---|
/// | `max_attempts` | integer ≥ 1, the first attempt included | 3 |
/// | `delay` | the first delay, `"250ms"`, `"2s"`, `"1m 30s"` | `"100ms"` |
/// | `throttling_delay` | the first delay after a throttling error ([`ErrorClass::Throttling`], from [`Transient::class`]: a 429, gRPC `RESOURCE_EXHAUSTED`), growing as `delay` does | `delay` |
/// | `backoff` | `"fixed"`, `"linear"`, `"exponential"` | exponential |
/// | `multiplier` | exponential growth, ≥ 1 | 2 |
/// | `max_delay` | ceiling of one delay before jitter | `"20s"` (or `delay` if larger) |
/// | `jitter` | `"none"`, `"full"`, `"equal"`, `"decorrelated"`, or a factor in (0, 1] | `"full"` |
/// | `retry_on` | `[pattern, …]`: retry only matching errors (`[A, B]` is `[A \| B]`) | every `Err` (a timed-out attempt only on an `idempotent` call) |
/// | `no_retry_on` | `[pattern, …]`: never retry these | none |
/// | `retry_if` | path or closure `Fn(&E) -> bool` (`reattempt::transient`) | none |
/// | `retry_if_ok` | path or closure `Fn(&T) -> bool`: retry some `Ok` values; the last is returned | none |
/// | `timeout` | per-attempt limit (`async fn` only); needs `E:` [`FromElapsed`] (a `From<Elapsed>` impl, `String`, a crate's error with its feature) or `timeout_into`; an attempt it cuts may have acted, so it is retried only on an `idempotent` call (or by a `retry_on`/`retry_if` of yours that matches it; `no_retry_on` alone chooses nothing) | none |
/// | `idempotent` | `true` or `false`: the call is safe to repeat after an attempt whose outcome is unknown (a reset after the request was written, a timeout after sending, a 500: see [`Effect`]). The crate's own judgement (`reattempt::transient`, no `retry_on`/`retry_if`, `timeout`) repeats such a failure only on an idempotent call; your own `retry_on`/`retry_if` is obeyed as written. Not given: not idempotent, the safe default (a write done twice costs more than a read not retried). Needed, `true`, by `hedge_after` | not idempotent |
/// | `max_elapsed` | limit on all attempts and sleeps | none |
/// | `log_error` | what events show of an error: `"none"`, `"type"` (its type's name), `"debug"` (its `Debug` text too, secrets included); see [`LogError`] | `"type"` |
/// | `hedge_after` | `async fn` only: a duration (`"50ms"`) or a quantile of recent latencies (`"p95"`); when no attempt has answered within it, the next starts alongside; the first accepted `Ok` wins, the other copies are dropped; copies share the idempotency key; hedges are paid from `budget`; needs `idempotent = true` (copies overlap, and each may act); by-value arguments are borrowed for the whole call (each copy gets a clone), so the future is `Send` only if they are also `Sync` | none |
/// | `retry_after` | path or closure `Fn(&E) -> Option<Duration>`: a server's hint, a floor under the computed delay (beyond `max_delay` or the deadline, the call ends) | none |
/// | `delay_for` | path or closure `Fn(&E, u32, Duration) -> Option<Duration>`: the delay before the retry of this error, chosen from it, the attempt that failed and the schedule's delay (`None` keeps it); bounded by `max_delay`, with `retry_after` still a floor (Resilience4j's `IntervalBiFunction`, Polly's `DelayGenerator`) | none |
/// | `on_retry` | path or closure `Fn(&E, &RetryContext, Duration)`, called before each sleep | none |
/// | `recover` | path to a [`macro@recover`] function: the fallback for the final error | none |
/// | `name` | label in events | the function's path |
/// | `crate` | path of this crate, if renamed | `"::reattempt"` |
/// | `circuit_breaker` | a `CircuitBreaker` the call borrows: a `static`, a field (`self.breaker`), or anything that derefs to one (`Arc<CircuitBreaker>`, `&CircuitBreaker`); needs `E:` [`FromBreakerOpen`] or `breaker_open_into`; a retry it (or `throttle`) turns away ends the call with the last outcome, kept during each sleep (the future is then `Send` only if `T` and `E` are) | none |
/// | `budget` | a `RetryBudget` the call borrows (a `static`, a field, an `Arc<RetryBudget>`, as `circuit_breaker`); with `policy` too (a run-time policy may be [long-polling](crate::RetryPolicyBuilder::long_polling)), a call the budget alone ends keeps its last outcome during the long-polling wait (the future is then `Send` only if `T` and `E` are); without `policy`, nothing is kept | none |
/// | `one_layer` | `true` or `false`: retry at one layer (see `RetryPolicyBuilder::one_layer`; across HTTP, `http::OUTER_ATTEMPTS_LEFT` and `tower::OuterRetryLayer`) | `false` |
/// | `throttle` | an `AdaptiveThrottle` the call borrows (as `circuit_breaker`); needs `E:` [`FromThrottled`] or `throttled_into` | none |
/// | `bulkhead` | a `Bulkhead` the call borrows (as `circuit_breaker`), its slot held from before the first attempt until the attempts are over (sleeps included; freed before a `recover` fallback runs); needs `E:` [`FromBulkheadFull`] or `bulkhead_full_into` | none |
/// | `timeout_into` | path or closure capturing nothing, `fn(Elapsed) -> E`: a timed-out attempt as `E`, for another crate's error type | the type's own |
/// | `breaker_open_into` | `fn(BreakerOpen) -> E`, for `circuit_breaker` | the type's own |
/// | `throttled_into` | `fn(Throttled) -> E`, for `throttle` | the type's own |
/// | `bulkhead_full_into` | `fn(BulkheadFull) -> E`, for `bulkhead` | the type's own |
/// | `resume` | makes the function a stream's: `async fn f(…, after: C) -> Result<impl Stream<Item = Result<T, E>>, E>`, whose body opens the stream. A closure `\|after, item: &T\| …` whose first parameter names the argument the stream resumes from (owned and `Clone`: the checkpoint) and which advances it with each item delivered (`*after = Some(item.seq)`), or a path `fn(&mut C, &T)` with `checkpoint`. The open is retried under the schedule; a retryable failure mid-stream (an `Err` item, an `idle_timeout`) opens it again from the checkpoint of the last item delivered, so each item reaches the consumer once and in order; `max_elapsed`, `circuit_breaker`, `budget` and `recover` span the whole stream; `timeout` bounds each open; `idempotent` defaults to `true`. Not with `hedge_after`, `retry_if_ok`, `throttle` or `bulkhead`, nor `&mut` receivers or arguments; a by-value `self` (`mut self` too) is cloned for each open. Refused too: a key the stream keeps (`circuit_breaker`, `budget`, `policy`, `retry_if`, `retry_after`, `delay_for`, `on_retry`, `resume`) reading a by-value `self` or a by-value argument, which the stream owns (take `&self` or a reference, make the guard a `static`, or read the argument in the body); a return type that is an alias of the whole `Result` (write `Result<impl Stream<…>, E>` or `Result<BoxStream<…>, E>` out); a checkpoint of an `impl Trait` type. See [`RetryPolicy::retry_stream`] | none |
/// | `checkpoint` | beside a `resume` path: the name of the argument the stream resumes from (`checkpoint = after`) | none |
/// | `idle_timeout` | with `resume`: no item for this long fails the attempt, retried as a timeout is (needs `E:` [`FromElapsed`] or `timeout_into`); shorter than `max_elapsed` | none |
/// | `progress_resets` | with `resume`: `true` or `false`, whether a failure after items were delivered since the last one starts the schedule again (its attempts and backoff) | `true` |
/// | `policy` | expression naming a `RetryPolicy` (a `static`, a `LazyLock`, a field, a `&RetryPolicy` argument): the whole schedule at run time; no schedule key nor `log_error` beside it; an `async fn` needs a timeout conversion (see below); the policy's `hedge_after` is honoured by an `async fn` whose arguments are all shared references (`&self`, `&T`), and ignored elsewhere (`&mut self`, `self`, `&mut` or by-value arguments) with one `WARN` event at the function's first call | none |
///
/// With `policy = …`, the attempts of an `async fn` are always timed, since a policy chosen at run
/// time may hold a `timeout`: the error type needs a conversion ([`FromElapsed`]: a
/// `From<reattempt::Elapsed>` impl, `String`, `io::Error`, or with their features
/// `tonic::Status`, `sqlx::Error`, `reqwest::Error`) whether or not the policy has one (a
/// blocking `fn` ignores the policy's `timeout` and needs none). Another crate's type takes
/// `timeout_into = |elapsed| …` beside `policy`, as the closure API takes
/// [`RetryPolicy::retry`]`(…).timeout_into(|elapsed| …)` or `.without_timeout()`.
///
/// With a `circuit_breaker` or a `budget`, an error whose type implements [`Transient`] (a
/// concrete type, or a type parameter bounded by `Transient`) is asked [`Transient::class`]:
/// a retry after a timeout costs the budget's `timeout_cost` (a throttling error's, its
/// `throttling_cost`), and the breaker counts a timeout as a failure, retried or not. An error of
/// another type has the class its `retry_if` told (`reattempt::transient` on an error it wraps),
/// as in every driver (see [which drivers honour the class](Transient#which-drivers-honour-it-and-when)).
///
/// **What the macro refuses, by rule.** Every misuse is a compile error at the key, saying what
/// to write:
/// - *No setting that another setting makes dead.* `max_attempts = 1` beside a key of the
///   retries' schedule (`delay`, `jitter`, `on_retry`, `retry_after`, `hedge_after`, …), or
///   beside `retry_on`, `no_retry_on`, `retry_if` or `retry_if_ok` with no `circuit_breaker` or
///   `throttle` to count failures by them (not `budget`, which a first-try success pays into);
///   a `max_elapsed` no longer than
///   the shortest first sleep (`delay` shortened only by jitter: no retry could ever start); a
///   `hedge_after` the deadline always comes before; an `…_into` without its guard. Each would
///   compile into a call that silently does less than it says.
/// - *No guard built per call.* `circuit_breaker`, `budget`, `throttle` and `bulkhead` are
///   evaluated once per call; an expression that builds one (`CircuitBreaker::builder()…build()`,
///   `RetryBudget::default()`, a struct literal) would give every call a fresh guard that never
///   sees a second call. Keep it in a `static` (`LazyLock`) or a field and name it.
/// - *Literals where the value is checked at compile time.* The schedule's keys are read when
///   the macro expands, before a `const` or a configuration has a value: `max_attempts =
///   MAX_ATTEMPTS` or `delay = self.config.delay` is an error that points to `policy = …`, a
///   [`RetryPolicy`] built at run time. (`max_attempts = u32::MAX` is accepted: until the
///   deadline, see [`RetryPolicy::MAX_ATTEMPTS`].)
/// - *Other libraries' names.* A key is looked up by its normalised spelling (any case style,
///   separators and unit suffixes dropped): `MaxRetryAttempts = 3` (Polly) is told
///   `max_attempts = 4`, `timeoutMs = 500` is told `timeout = "500ms"`, `WaitDuration` is told
///   `delay`. A jitter written as a range of multipliers (`jitter = 0.5..1.5`) is told the
///   factor that draws it (`jitter = 0.5`).
/// - *Other objects' settings and configuration.* A breaker's, a budget's, a bulkhead's or a
///   throttle's setting (`failure_threshold`, Resilience4j's `waitDurationInOpenState`, Polly's
///   `FailureRatio`) is told the guard's builder method and its key (`circuit_breaker = …`); a
///   rate limiter's or an HTTP client's, where it belongs. A config file's key (`preset =
///   "aws-2026"`) or a config file named (`config = "retry.toml"`) is told `policy = …` with the
///   policy built at run time ([`Preset::policy`]).
/// - *Values of another habit.* A function called where it is named (`retry_if =
///   reattempt::transient()`) is told its path; a duration written as a number (`timeout = 2.5`)
///   is told its string (`timeout = "2.5s"`); the attribute on a closure is told
///   [`RetryPolicy::retry`].
/// - *Patterns of the wrong shape.* `retry_on` patterns match the error itself: a pattern of the
///   `Result` (`Err(E::Busy)`) or of what an opaque error's method returns (`ErrorKind::TimedOut`
///   on `std::io::Error`) is told the `retry_if` closure to write.
///
/// `retry_on` and `retry_if` together retry an error that either accepts; `no_retry_on` wins over
/// both. Without `max_elapsed`, the call's clock starts at its first failure (or its first
/// [`context()`] call), so that a call that succeeds reads no clock unless it has a `timeout` (each
/// timed attempt reads one); with `max_elapsed`, `timeout` is
/// clipped to the time that remains, and no sleep starts that would end past the deadline.
///
/// ```
/// use std::time::Duration;
/// use reattempt::retryable;
///
/// #[derive(Debug, PartialEq)]
/// enum ApiError { Http(u16), Timeout }
/// impl From<reattempt::Elapsed> for ApiError {
///     fn from(_: reattempt::Elapsed) -> Self { ApiError::Timeout }
/// }
///
/// #[retryable(max_attempts = 3, delay = "100ms", jitter = "none", timeout = "500ms",
///             retry_on = [ApiError::Http(500..=599) | ApiError::Timeout],
///             no_retry_on = [ApiError::Http(501)])]
/// async fn fetch(calls: &std::cell::Cell<u32>) -> Result<u32, ApiError> {
///     calls.set(calls.get() + 1);
///     if calls.get() < 3 { Err(ApiError::Http(503)) } else { Ok(calls.get()) }
/// }
///
/// // On tokio's paused clock (its `test-util` feature; in a test, `#[tokio::test(start_paused =
/// // true)]`), the sleeps take no time and the clock reads exactly the schedule.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     let calls = std::cell::Cell::new(0);
///     let start = tokio::time::Instant::now();
///     assert_eq!(fetch(&calls).await, Ok(3));
///     assert_eq!(start.elapsed(), Duration::from_millis(300)); // 100 ms, then 200 ms
/// }
/// ```
#[doc(inline)]
pub use retry_macros::retryable;

/// Marks the fallback of a [`macro@retryable`] function, as Spring Retry's `@Recover`.
///
/// Its parameters are the receiver (if the retryable function has one, of the same type: `&self`,
/// `&mut self`, `self`…), the final error by value, then either nothing or exactly the retryable
/// function's arguments; it returns the same `Result`, and is an `async fn` when the retryable
/// function is one. It is called once: after the last attempt failed, after a non-retryable
/// error, or when `max_elapsed` ran out; never on success. It runs inside the call's context:
/// [`context()`] gives the idempotency key the attempts saw, the attempts made and the time
/// elapsed. Its result is the call's result. It stays an ordinary function that can be called
/// directly, imported with `use` (or `use … as`), named with a turbofish (`recover =
/// fallback::<u32>`), or be a method of a trait impl.
///
/// **What is checked, and where.** `recover = f` checks `f`'s whole signature where the
/// retryable function calls it, against that function's own types: a fallback that does not fit
/// (the error after the arguments, a wrong error or return type, missing or extra arguments, no
/// receiver, a blocking fallback for an `async fn` or the reverse) is one error at the `recover =
/// …` value that writes out the signatures that fit:
///
/// ```compile_fail,E0277
/// use reattempt::{recover, retryable};
///
/// #[retryable(max_attempts = 2, recover = fallback)]
/// fn fetch(id: u32) -> Result<u32, String> {
///     Err(format!("{id} is down"))
/// }
///
/// // error[E0277]: `fallback` does not fit as the `recover` fn of `fetch`: write
/// // `fn fallback(err: String) -> Result<u32, String>` or
/// // `fn fallback(err: String, id: u32) -> Result<u32, String>`
/// #[recover]
/// fn fallback(id: u32, err: String) -> Result<u32, String> {
///     Err(format!("{id}: {err}"))
/// }
/// ```
///
/// The attribute itself links nothing and is not required: `recover = f` accepts any function
/// of a fitting signature, with or without it (a mark on the fallback could not follow it through
/// a `use … as` import or into a trait impl). On the fallback alone, it rejects a function that
/// takes no error (with the signature to write, at its parameter list) and `#[recover(fetch)]`
/// (the link is written on the retryable side), and it silences the lints a fallback trips by
/// design (`clippy::unused_async`, `clippy::unnecessary_wraps`).
///
/// ```
/// use reattempt::{recover, retryable};
///
/// #[retryable(max_attempts = 2, delay = "10ms", recover = cached)]
/// fn price(sku: &str) -> Result<u32, String> {
///     Err(format!("{sku}: pricing service down"))
/// }
///
/// #[recover]
/// fn cached(err: String, sku: &str) -> Result<u32, String> {
///     if sku == "tea" { Ok(3) } else { Err(err) }
/// }
///
/// assert_eq!(price("tea"), Ok(3));
/// assert_eq!(price("cake"), Err("cake: pricing service down".to_string()));
/// ```
#[doc(inline)]
pub use retry_macros::recover;

// The runtime's items users name, with their modules (`http`, `tower`, …) and `runtime` (the
// building blocks that public signatures mention): the one list is `retry_runtime::api`, so that
// this surface follows the runtime's features (each feature here turns on the runtime's feature
// of the same name) and the runtime's doc examples, written `reattempt::…`, compile against this
// crate. `docs/public-api.txt` pins it (`.ci/public-api.sh`).
pub use retry_runtime::api::*;

/// The guide: one chapter per task, each example a test that runs against this crate.
///
/// Read in this order, or jump to the task at hand (chapters marked with a feature need it):
///
/// 1. [A first retry](first_retry/index.html): the attribute, its defaults, `recover`, blocking
///    functions, the closure API.
/// 2. [Classifying errors](errors/index.html) (`reqwest`, `tonic`, `sqlx`): your own types and
///    other crates', what is transient, what a timeout becomes.
/// 3. [Schedules and jitter](schedules/index.html): the delays, exactly, and why jitter.
/// 4. [Deadlines and cancellation](deadlines/index.html): what a timeout cancels, and what it
///    does not, client by client.
/// 5. [Unknown outcomes](unknown_outcomes/index.html) (`sqlx`): an action that may already have
///    happened is repeated only on a call that says it is safe; exactly once for a write.
/// 6. [Guards](guards/index.html): circuit breaker, retry budget, adaptive throttle, bulkhead,
///    retrying at one layer.
/// 7. [At fleet scale](fleet/index.html): which budget and throttle settings for 10 to 2,000
///    instances, and why the guards stay per instance.
/// 8. [Hedging](hedging/index.html): a second copy of a slow call.
/// 9. [Streams](streams/index.html) (`reqwest`, `testing-http`): a watch, a feed or a download
///    resumed from a checkpoint, each item once and in order.
/// 10. [HTTP](http/index.html) (`http`, `tower`, `reqwest-middleware`, `testing-http`): reqwest,
///     tower and reqwest-middleware, `Retry-After`, HTTP's safety rule.
/// 11. [gRPC](grpc/index.html) (`tonic`): tonic clients, and gRFC A6 on a `Channel`.
/// 12. [Configuration](configuration/index.html) (`serde`): policies, breakers and budgets from
///     files.
/// 13. [Observability](observability/index.html) (`metrics`, `spans`): events, metrics, spans, hooks.
/// 14. [Testing](testing/index.html) (`testing`): scripted outcomes, traces, no real waiting.
/// 15. [Function shapes](shapes/index.html): every shape the attribute takes.
/// 16. [Migrating](migrating/index.html): from backon, tokio-retry, Spring Retry and
///     Resilience4j.
/// 17. [Guarantees](guarantees/index.html): each promise, with the test that holds it.
pub mod guide {
    #[doc = include_str!("../docs/guide/first_retry.md")]
    pub mod first_retry {}
    #[cfg(all(feature = "reqwest", feature = "tonic", feature = "sqlx"))]
    // Its examples need crates this package does not depend on (they would be built for every
    // example here): they run as doctests of reattempt-e2e, against this crate.
    #[cfg_attr(not(doctest), doc = include_str!("../docs/guide/errors.md"))]
    #[cfg_attr(doctest, doc = "Doctested in reattempt-e2e.")]
    pub mod errors {}
    #[doc = include_str!("../docs/guide/schedules.md")]
    pub mod schedules {}
    #[doc = include_str!("../docs/guide/deadlines.md")]
    pub mod deadlines {}
    #[cfg(feature = "sqlx")]
    // Its examples need crates this package does not depend on (they would be built for every
    // example here): they run as doctests of reattempt-e2e, against this crate.
    #[cfg_attr(not(doctest), doc = include_str!("../docs/guide/unknown_outcomes.md"))]
    #[cfg_attr(doctest, doc = "Doctested in reattempt-e2e.")]
    pub mod unknown_outcomes {}
    #[doc = include_str!("../docs/guide/guards.md")]
    pub mod guards {}
    #[doc = include_str!("../docs/guide/fleet.md")]
    pub mod fleet {}
    #[doc = include_str!("../docs/guide/hedging.md")]
    pub mod hedging {}
    // Its download example runs against the fault-injecting service, over reqwest.
    #[cfg(all(feature = "reqwest", feature = "testing-http"))]
    #[doc = include_str!("../docs/guide/streams.md")]
    pub mod streams {}
    #[cfg(all(
        feature = "http",
        feature = "tower",
        feature = "reqwest-middleware",
        feature = "testing-http"
    ))]
    #[doc = include_str!("../docs/guide/http.md")]
    pub mod http {}
    #[cfg(feature = "tonic")]
    // Its examples need crates this package does not depend on (they would be built for every
    // example here): they run as doctests of reattempt-e2e, against this crate.
    #[cfg_attr(not(doctest), doc = include_str!("../docs/guide/grpc.md"))]
    #[cfg_attr(doctest, doc = "Doctested in reattempt-e2e.")]
    pub mod grpc {}
    #[cfg(feature = "serde")]
    #[doc = include_str!("../docs/guide/configuration.md")]
    pub mod configuration {}
    #[cfg(feature = "metrics")]
    // Its examples need crates this package does not depend on (they would be built for every
    // example here): they run as doctests of reattempt-e2e, against this crate.
    #[cfg_attr(not(doctest), doc = include_str!("../docs/guide/observability.md"))]
    #[cfg_attr(doctest, doc = "Doctested in reattempt-e2e.")]
    pub mod observability {}
    #[cfg(feature = "testing")]
    #[doc = include_str!("../docs/guide/testing.md")]
    pub mod testing {}
    #[doc = include_str!("../docs/guide/shapes.md")]
    pub mod shapes {}
    #[doc = include_str!("../docs/guide/migrating.md")]
    pub mod migrating {}
    #[doc = include_str!("../docs/guide/guarantees.md")]
    pub mod guarantees {}
}
