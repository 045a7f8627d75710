//! Scripted outcomes: a value a test hands the code under test, which answers each attempt from
//! a script and says afterwards what was asked of it.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::IdempotencyKey;

/// One step of a [`Script`]: an outcome, after a latency.
#[derive(Debug)]
struct Step<T, E> {
    latency: Duration,
    outcome: Outcome<T, E>,
}

#[derive(Debug, Clone)]
enum Outcome<T, E> {
    Ok(T),
    Err(E),
    /// Never answers (an attempt that hangs until its timeout cuts it).
    Hang,
}

/// What the script was asked, once per call of [`Script::next`] (or
/// [`next_blocking`](Script::next_blocking)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked {
    /// When it was asked (tokio's clock: the paused clock in a paused test).
    pub at: Instant,
    /// The attempt of the retrying call it was asked from (1 for the first), from
    /// [`context()`](crate::context()); `None` outside a retrying call.
    pub attempt: Option<u32>,
    /// The retrying call's idempotency key (the same on every attempt of one call).
    pub idempotency_key: Option<IdempotencyKey>,
}

/// Makes the step played once the script ran out (`then_always_…`).
type After<T, E> = Box<dyn FnMut() -> Outcome<T, E> + Send>;

struct State<T, E> {
    steps: VecDeque<Step<T, E>>,
    /// The step played once the script ran out, if `then_always_…` gave one.
    after: Option<After<T, E>>,
    asked: Vec<Asked>,
}

/// Scripted outcomes, one per attempt: errors, successes, latencies and hangs, played in order,
/// and what was asked of them. Cloning shares the script (hand a clone to the code under test,
/// keep one to assert on).
///
/// Past its last step, a script answers as [`then_always_ok`](Self::then_always_ok),
/// [`then_always_err`](Self::then_always_err) or [`then_always_err_with`](Self::then_always_err_with)
/// said, or panics with the calls it saw (a test that asked more than it scripted fails there,
/// saying so). Outcomes need not be `Clone` (an `io::Error` is not).
///
/// ```
/// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     use std::time::Duration;
///     use reattempt::RetryPolicy;
///     use reattempt::testing::Script;
///
///     #[derive(Debug, Clone, PartialEq)]
///     enum ApiError { Unavailable, BadRequest }
///
///     let script = Script::new()
///         .err(ApiError::Unavailable)
///         .err_after(Duration::from_millis(300), ApiError::Unavailable)
///         .ok(42);
///     let policy = RetryPolicy::builder().max_attempts(4).build().unwrap();
///     let answer = policy
///         .retry(|| script.next())
///         .retry_if(|e: &ApiError| *e == ApiError::Unavailable)
///         .without_timeout()
///         .await;
///     assert_eq!(answer, Ok(42));
///     assert_eq!(script.calls(), 3);
///     let attempts: Vec<_> = script.asked().iter().map(|a| a.attempt).collect();
///     assert_eq!(attempts, [Some(1), Some(2), Some(3)]);
///     assert!(script.is_done());
/// # let _ = ApiError::BadRequest;
/// }
/// ```
pub struct Script<T, E> {
    state: Arc<Mutex<State<T, E>>>,
}

impl<T, E> Clone for Script<T, E> {
    fn clone(&self) -> Self {
        Script {
            state: Arc::clone(&self.state),
        }
    }
}

impl<T, E> fmt::Debug for Script<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("Script")
            .field("steps_left", &state.steps.len())
            .field("calls", &state.asked.len())
            .finish_non_exhaustive()
    }
}

impl<T, E> Default for Script<T, E> {
    fn default() -> Self {
        Script::new()
    }
}

impl<T, E> Script<T, E> {
    /// An empty script (add steps with [`ok`](Self::ok), [`err`](Self::err)…).
    ///
    /// ```
    /// use reattempt::testing::Script;
    ///
    /// let script: Script<u32, String> = Script::new().ok(1);
    /// assert_eq!(script.calls(), 0);
    /// ```
    pub fn new() -> Self {
        Script {
            state: Arc::new(Mutex::new(State {
                steps: VecDeque::new(),
                after: None,
                asked: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T, E>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(self, latency: Duration, outcome: Outcome<T, E>) -> Self {
        self.lock().steps.push_back(Step { latency, outcome });
        self
    }

    /// Then a success, at once.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     use reattempt::testing::Script;
    ///
    ///     let script: Script<u32, ()> = Script::new().ok(7);
    ///     assert_eq!(script.next().await, Ok(7));
    /// }
    /// ```
    #[must_use]
    pub fn ok(self, value: T) -> Self {
        self.push(Duration::ZERO, Outcome::Ok(value))
    }

    /// Then an error, at once.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     use reattempt::testing::Script;
    ///
    ///     let script: Script<(), &str> = Script::new().err("unavailable");
    ///     assert_eq!(script.next().await, Err("unavailable"));
    /// }
    /// ```
    #[must_use]
    pub fn err(self, error: E) -> Self {
        self.push(Duration::ZERO, Outcome::Err(error))
    }

    /// Then a success after `latency` (slept on tokio's clock, or the [test
    /// clock](super::with_test_clock) for [`next_blocking`](Self::next_blocking)).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::testing::Script;
    ///
    ///     let script: Script<u32, ()> = Script::new().ok_after(Duration::from_secs(2), 7);
    ///     let t0 = tokio::time::Instant::now();
    ///     assert_eq!(script.next().await, Ok(7));
    ///     assert_eq!(t0.elapsed(), Duration::from_secs(2));
    /// }
    /// ```
    #[must_use]
    pub fn ok_after(self, latency: Duration, value: T) -> Self {
        self.push(latency, Outcome::Ok(value))
    }

    /// Then an error after `latency`.
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::testing::Script;
    ///
    ///     let script: Script<(), &str> = Script::new().err_after(Duration::from_millis(300), "slow");
    ///     assert_eq!(script.next().await, Err("slow"));
    /// }
    /// ```
    #[must_use]
    pub fn err_after(self, latency: Duration, error: E) -> Self {
        self.push(latency, Outcome::Err(error))
    }

    /// Then an attempt that never answers (until a `timeout` cuts it, or the call is dropped).
    ///
    /// ```
    /// // Needs tokio's "test-util" feature: on its paused clock, sleeps are exact and take no time.
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     use std::time::Duration;
    ///     use reattempt::testing::Script;
    ///
    ///     let script: Script<(), ()> = Script::new().hang();
    ///     let cut = tokio::time::timeout(Duration::from_secs(1), script.next()).await;
    ///     assert!(cut.is_err());
    /// }
    /// ```
    #[must_use]
    pub fn hang(self) -> Self {
        self.push(Duration::ZERO, Outcome::Hang)
    }

    /// How many times the script was asked.
    ///
    /// ```
    /// use reattempt::testing::Script;
    ///
    /// let script: Script<u32, ()> = Script::new().ok(1);
    /// assert_eq!(script.calls(), 0);
    /// ```
    pub fn calls(&self) -> usize {
        self.lock().asked.len()
    }

    /// What was asked of the script, call by call.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     use reattempt::testing::Script;
    ///
    ///     let script: Script<u32, ()> = Script::new().ok(1);
    ///     let _ = script.next().await;
    ///     assert_eq!(script.asked()[0].attempt, None, "not from a retrying call");
    /// }
    /// ```
    pub fn asked(&self) -> Vec<Asked> {
        self.lock().asked.clone()
    }

    /// Whether every scripted step was played.
    ///
    /// ```
    /// use reattempt::testing::Script;
    ///
    /// let script: Script<u32, ()> = Script::new();
    /// assert!(script.is_done());
    /// ```
    pub fn is_done(&self) -> bool {
        self.lock().steps.is_empty()
    }

    /// The steps not played yet.
    ///
    /// ```
    /// use reattempt::testing::Script;
    ///
    /// let script: Script<u32, ()> = Script::new().ok(1).err(());
    /// assert_eq!(script.steps_left(), 2);
    /// ```
    pub fn steps_left(&self) -> usize {
        self.lock().steps.len()
    }

    /// The next step, and a record of the call.
    fn take(&self) -> Step<T, E> {
        let context = crate::context();
        let mut state = self.lock();
        state.asked.push(Asked {
            at: Instant::now(),
            attempt: context.map(|c| c.attempt()),
            idempotency_key: context.map(|c| c.idempotency_key()),
        });
        if let Some(step) = state.steps.pop_front() {
            return step;
        }
        if let Some(after) = &mut state.after {
            return Step {
                latency: Duration::ZERO,
                outcome: after(),
            };
        }
        let calls = state.asked.len();
        drop(state);
        panic!(
            "reattempt::testing::Script: asked {calls} times, but only {} steps were scripted; \
             script more steps, or say what follows with `then_always_ok` or `then_always_err`",
            calls - 1
        );
    }

    /// Plays the next step: sleeps its latency on tokio's clock, then answers with its outcome.
    ///
    /// # Errors
    ///
    /// The step's error, when the script says so.
    ///
    /// # Panics
    ///
    /// Past the script's end without a `then_always_…` answer: the panic names the calls (an
    /// unscripted call is a test's mistake).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     use reattempt::testing::Script;
    ///
    ///     let script: Script<u32, &str> = Script::new().err("busy").ok(1);
    ///     assert_eq!(script.next().await, Err("busy"));
    ///     assert_eq!(script.next().await, Ok(1));
    /// }
    /// ```
    pub async fn next(&self) -> Result<T, E> {
        let step = self.take();
        if !step.latency.is_zero() {
            tokio::time::sleep(step.latency).await;
        }
        match step.outcome {
            Outcome::Ok(value) => Ok(value),
            Outcome::Err(error) => Err(error),
            Outcome::Hang => std::future::pending().await,
        }
    }

    /// As [`next`](Self::next), for a blocking function: the latency is slept on the [test
    /// clock](super::with_test_clock) when one is running, else on the thread. A hang blocks
    /// the thread forever: script it only for async code.
    ///
    /// # Errors
    ///
    /// The step's error, when the script says so.
    ///
    /// # Panics
    ///
    /// Past the script's end without a `then_always_…` answer, as [`next`](Self::next).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::testing::{Script, with_test_clock};
    ///
    /// let script: Script<u32, &str> = Script::new().err_after(Duration::from_secs(30), "slow").ok(1);
    /// let started = std::time::Instant::now();
    /// with_test_clock(|| {
    ///     assert_eq!(script.next_blocking(), Err("slow"));
    ///     assert_eq!(script.next_blocking(), Ok(1));
    /// });
    /// assert!(started.elapsed() < Duration::from_secs(5), "30 s of latency on the test clock");
    /// ```
    pub fn next_blocking(&self) -> Result<T, E> {
        let step = self.take();
        if !step.latency.is_zero() {
            super::clock::sleep_blocking(step.latency);
        }
        match step.outcome {
            Outcome::Ok(value) => Ok(value),
            Outcome::Err(error) => Err(error),
            Outcome::Hang => loop {
                std::thread::park();
            },
        }
    }
}

impl<T, E> Script<T, E> {
    /// Past the scripted steps, answers every call with an error made by `make` (for an error
    /// type that is not `Clone`, such as `io::Error`).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     use reattempt::testing::Script;
    ///
    ///     let script: Script<u32, std::io::Error> =
    ///         Script::new().then_always_err_with(|| std::io::Error::other("down"));
    ///     assert_eq!(script.next().await.unwrap_err().to_string(), "down");
    /// }
    /// ```
    #[must_use]
    pub fn then_always_err_with(self, make: impl FnMut() -> E + Send + 'static) -> Self
    where
        T: 'static,
        E: 'static,
    {
        let mut make = make;
        self.lock().after = Some(Box::new(move || Outcome::Err(make())));
        self
    }
}

impl<T: Clone + Send + 'static, E: Clone + Send + 'static> Script<T, E> {
    /// Past the scripted steps, answers every call with `Ok(value)`.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     use reattempt::testing::Script;
    ///
    ///     let script: Script<u32, &str> = Script::new().err("cold start").then_always_ok(1);
    ///     assert_eq!(script.next().await, Err("cold start"));
    ///     assert_eq!(script.next().await, Ok(1));
    ///     assert_eq!(script.next().await, Ok(1));
    /// }
    /// ```
    #[must_use]
    pub fn then_always_ok(self, value: T) -> Self {
        self.lock().after = Some(Box::new(move || Outcome::Ok(value.clone())));
        self
    }

    /// Past the scripted steps, answers every call with `Err(error)` (a dependency that stays
    /// down).
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     use reattempt::testing::Script;
    ///
    ///     let script: Script<u32, &str> = Script::new().then_always_err("down");
    ///     assert_eq!(script.next().await, Err("down"));
    ///     assert_eq!(script.calls(), 1);
    /// }
    /// ```
    #[must_use]
    pub fn then_always_err(self, error: E) -> Self {
        self.lock().after = Some(Box::new(move || Outcome::Err(error.clone())));
        self
    }

    /// Past the scripted steps, answers every call as the last step did (without its latency);
    /// an empty script stays empty.
    ///
    /// ```
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() {
    ///     use reattempt::testing::Script;
    ///
    ///     let script: Script<u32, &str> = [Err("busy"), Ok(1)].into_iter().collect();
    ///     let script = script.then_repeat_last();
    ///     assert_eq!(script.next().await, Err("busy"));
    ///     assert_eq!(script.next().await, Ok(1));
    ///     assert_eq!(script.next().await, Ok(1));
    /// }
    /// ```
    #[must_use]
    pub fn then_repeat_last(self) -> Self {
        let last = self.lock().steps.back().map(|step| step.outcome.clone());
        if let Some(last) = last {
            self.lock().after = Some(Box::new(move || last.clone()));
        }
        self
    }
}

/// A script of these outcomes, in order, each at once.
///
/// ```
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     use reattempt::testing::Script;
///
///     let script: Script<u32, &str> = [Err("busy"), Ok(7)].into_iter().collect();
///     assert_eq!(script.next().await, Err("busy"));
///     assert_eq!(script.next().await, Ok(7));
/// }
/// ```
impl<T, E> FromIterator<Result<T, E>> for Script<T, E> {
    fn from_iter<I: IntoIterator<Item = Result<T, E>>>(outcomes: I) -> Self {
        outcomes
            .into_iter()
            .fold(Script::new(), |script, outcome| match outcome {
                Ok(value) => script.ok(value),
                Err(error) => script.err(error),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn steps_play_in_order_with_their_latencies() {
        let script: Script<u32, &str> = Script::new()
            .err("a")
            .err_after(Duration::from_millis(250), "b")
            .ok_after(Duration::from_secs(1), 3);
        let t0 = Instant::now();
        assert_eq!(script.next().await, Err("a"));
        assert_eq!(script.next().await, Err("b"));
        assert_eq!(t0.elapsed(), Duration::from_millis(250));
        assert_eq!(script.next().await, Ok(3));
        assert_eq!(t0.elapsed(), Duration::from_millis(1250));
        assert!(script.is_done());
        let at: Vec<Duration> = script.asked().iter().map(|a| a.at - t0).collect();
        assert_eq!(
            at,
            [Duration::ZERO, Duration::ZERO, Duration::from_millis(250)]
        );
    }

    #[tokio::test]
    #[should_panic(expected = "asked 2 times, but only 1 steps were scripted")]
    async fn an_unscripted_call_panics_naming_the_calls() {
        let script: Script<u32, ()> = Script::new().ok(1);
        let _ = script.next().await;
        let _ = script.next().await;
    }

    #[tokio::test(start_paused = true)]
    async fn clones_share_the_script() {
        let script: Script<u32, ()> = Script::new().ok(1).ok(2);
        let other = script.clone();
        assert_eq!(other.next().await, Ok(1));
        assert_eq!(script.next().await, Ok(2));
        assert_eq!(script.calls(), 2);
    }
}
