//! The default event name of a method names its `Self` type (S60, S61, S77 of the shape matrix in
//! `tests/shapes/`). A test binary of its own: tracing caches each callsite's interest, and a
//! test on another thread hitting the same runtime callsites with no subscriber could make this
//! one miss events.

use std::io::Write;
use std::sync::{Arc, Mutex};

use reattempt::retryable;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Fail;

/// Whether this is the first attempt of the call being made (which then fails).
fn first_try() -> bool {
    reattempt::context().is_some_and(|c| c.attempt() < 2)
}

struct A;
struct B;

impl A {
    // S60: `A::get` and `B::get` in one module have different default names.
    #[retryable(max_attempts = 2, delay = "1ms", jitter = "none")]
    fn get(&self) -> Result<u8, Fail> {
        if first_try() { Err(Fail) } else { Ok(1) }
    }
}

impl B {
    #[retryable(max_attempts = 2, delay = "1ms", jitter = "none")]
    fn get(&self) -> Result<u8, Fail> {
        if first_try() { Err(Fail) } else { Ok(2) }
    }
}

// S77: a trait-impl method is named `module::Type::method` too, not
// `<module::Type as module::Trait>::method`.
trait Api {
    fn fetch(&self) -> Result<u8, Fail>;
}

impl Api for A {
    #[retryable(max_attempts = 2, delay = "1ms", jitter = "none")]
    fn fetch(&self) -> Result<u8, Fail> {
        if first_try() { Err(Fail) } else { Ok(4) }
    }
}

// S61: a free fn keeps its `module::fn` name.
#[retryable(max_attempts = 2, delay = "1ms", jitter = "none")]
fn free_get() -> Result<u8, Fail> {
    if first_try() { Err(Fail) } else { Ok(3) }
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What `f` logs at `DEBUG` and above, as text.
fn logged(f: impl FnOnce()) -> String {
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8")
}

#[test]
fn default_names_include_the_self_type() {
    let text = logged(|| {
        assert_eq!(A.get(), Ok(1));
        assert_eq!(B.get(), Ok(2));
        assert_eq!(free_get(), Ok(3));
        assert_eq!(A.fetch(), Ok(4));
    });
    assert!(text.contains("name=\"event_names::A::get\""), "{text}");
    assert!(text.contains("name=\"event_names::B::get\""), "{text}");
    assert!(text.contains("name=\"event_names::free_get\""), "{text}");
    assert!(text.contains("name=\"event_names::A::fetch\""), "{text}");
}

// The same names for async fns (an `async fn`'s body is a closure to `type_name`), generic
// ones included.
impl A {
    #[retryable(max_attempts = 2, delay = "1ms", jitter = "none")]
    async fn get_async(&self, n: u8) -> Result<u8, Fail> {
        if first_try() { Err(Fail) } else { Ok(n) }
    }
}

trait AsyncApi {
    async fn fetch_async(&self) -> Result<u8, Fail>;
}

impl AsyncApi for B {
    #[retryable(max_attempts = 2, delay = "1ms", jitter = "none")]
    async fn fetch_async(&self) -> Result<u8, Fail> {
        if first_try() { Err(Fail) } else { Ok(6) }
    }
}

#[retryable(max_attempts = 2, delay = "1ms", jitter = "none")]
async fn free_async<T: Clone + Send>(value: T) -> Result<T, Fail> {
    if first_try() { Err(Fail) } else { Ok(value) }
}

#[test]
fn async_fns_are_named_like_blocking_ones() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let text = logged(|| {
        rt.block_on(async {
            assert_eq!(A.get_async(5).await, Ok(5));
            assert_eq!(B.fetch_async().await, Ok(6));
            assert_eq!(free_async(7_u8).await, Ok(7));
        });
    });
    assert!(
        text.contains("name=\"event_names::A::get_async\""),
        "{text}"
    );
    assert!(
        text.contains("name=\"event_names::B::fetch_async\""),
        "{text}"
    );
    assert!(text.contains("name=\"event_names::free_async\""), "{text}");
}

// Issue 25, finding 14: generic parameters print as `_` in a default name, const ones too
// (`type_name` prints a const parameter by its name).
struct Ring<const N: usize>;

impl<const N: usize> Ring<N> {
    #[retryable(max_attempts = 2, delay = "1ms", jitter = "none")]
    fn cap(&self) -> Result<usize, Fail> {
        if first_try() { Err(Fail) } else { Ok(N) }
    }
}

struct Pair<T, const M: bool>(T);

impl<T: Clone, const M: bool> Pair<T, M> {
    #[retryable(max_attempts = 2, delay = "1ms", jitter = "none")]
    fn first(&self) -> Result<T, Fail> {
        if first_try() {
            Err(Fail)
        } else {
            Ok(self.0.clone())
        }
    }
}

impl Ring<4> {
    #[retryable(max_attempts = 2, delay = "1ms", jitter = "none")]
    fn four(&self) -> Result<usize, Fail> {
        if first_try() { Err(Fail) } else { Ok(4) }
    }
}

#[test]
fn const_parameters_print_as_underscores() {
    let text = logged(|| {
        assert_eq!(Ring::<8>.cap(), Ok(8));
        assert_eq!(Pair::<u8, true>(3).first(), Ok(3));
        assert_eq!(Ring::<4>.four(), Ok(4));
    });
    assert!(
        text.contains("name=\"event_names::Ring<_>::cap\""),
        "{text}"
    );
    assert!(
        text.contains("name=\"event_names::Pair<_, _>::first\""),
        "{text}"
    );
    // A concrete argument is kept.
    assert!(
        text.contains("name=\"event_names::Ring<4>::four\""),
        "{text}"
    );
}

// A function returning a stream (`resume = …`): its resumes are named as its calls' failures.
impl A {
    #[retryable(max_attempts = 2, delay = "1ms", jitter = "none",
                resume = |after, n: &u8| *after = *n)]
    async fn numbers(
        &self,
        after: u8,
    ) -> Result<impl futures_util::Stream<Item = Result<u8, Fail>>, Fail> {
        // The first open breaks after one number; the resume gives the rest.
        let broken = after == 0;
        let numbers = (after + 1..=3).take(if broken { 1 } else { 3 }).map(Ok);
        Ok(futures_util::stream::iter(
            numbers.chain(broken.then_some(Err(Fail))),
        ))
    }
}

#[test]
fn a_streams_resumes_are_named_by_its_function() {
    use futures_util::StreamExt;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let text = logged(|| {
        rt.block_on(async {
            let numbers = A.numbers(0).await.expect("opened");
            let got: Vec<_> = numbers.collect().await;
            assert_eq!(got, [Ok(1), Ok(2), Ok(3)]);
        });
    });
    let resumed = text
        .lines()
        .find(|l| l.contains("stream resumed"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        resumed.contains("name=\"event_names::A::numbers\"") && resumed.contains("resumes=1"),
        "{text}"
    );
}
