//! Generics, const generics, lifetimes, `impl Trait` in and out.

use std::fmt::{Debug, Display};

use reattempt::retryable;

use crate::{Fail, assert_send, first_try};

// S14: a type parameter with bounds inline.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn generic<T: Clone + Send + Debug>(mut value: Vec<T>, extra: T) -> Result<usize, Fail> {
    value.push(extra);
    if first_try() {
        return Err(Fail);
    }
    Ok(value.len())
}

// S15: a `where` clause.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn with_where<K, V>(key: K, value: V) -> Result<String, Fail>
where
    K: Display + Clone + Send,
    V: Debug + Clone + Send,
{
    if first_try() {
        return Err(Fail);
    }
    Ok(format!("{key}={value:?}"))
}

// S16: a const generic.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn const_generic<const N: usize>(mut bytes: [u8; N]) -> Result<u8, Fail> {
    bytes[0] += 1;
    if first_try() {
        return Err(Fail);
    }
    Ok(bytes[0])
}

// S17: a lifetime, borrowed into the `Ok` value.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn lifetime<'a>(text: &'a str, sep: char) -> Result<&'a str, Fail> {
    if first_try() {
        return Err(Fail);
    }
    text.split(sep).next().ok_or(Fail)
}

// S18: `impl Trait` arguments (a closure among them).
#[retryable(max_attempts = 3, delay = "1ms")]
async fn impl_args(
    name: impl AsRef<str> + Clone + Send,
    f: impl Fn(usize) -> usize + Clone + Send,
) -> Result<usize, Fail> {
    if first_try() {
        return Err(Fail);
    }
    Ok(f(name.as_ref().len()))
}

// S19: `-> Result<impl Trait, E>`, async.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn impl_return(n: u32) -> Result<impl Display + Send, Fail> {
    if first_try() {
        return Err(Fail);
    }
    Ok(n * 2)
}

// S20: `-> Result<impl Iterator, E>`, blocking.
#[retryable(max_attempts = 3, delay = "1ms")]
fn impl_return_blocking(n: u32) -> Result<impl Iterator<Item = u32>, Fail> {
    if first_try() {
        return Err(Fail);
    }
    Ok(0..n)
}

// S21: a boxed trait object error, filled by `?`.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn boxed_error(text: &str) -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
    if first_try() {
        return Err("first".into());
    }
    Ok(text.parse::<u32>()?)
}

#[derive(Debug, Clone)]
struct Wrapper<T>(T);

impl<T: Clone + Send + Sync + Debug> Wrapper<T> {
    // S22: a generic method of a generic impl, with its own parameter.
    #[retryable(max_attempts = 3, delay = "1ms")]
    async fn pair<U: Clone + Send + Debug>(&self, other: U) -> Result<String, Fail> {
        if first_try() {
            return Err(Fail);
        }
        Ok(format!("{:?}{other:?}", self.0))
    }
}

// S23: a generic error type.
#[retryable(max_attempts = 3, delay = "1ms")]
async fn generic_error<E: From<Fail> + Debug + Send>(n: u32) -> Result<u32, E> {
    if first_try() {
        return Err(E::from(Fail));
    }
    Ok(n)
}

#[tokio::test(start_paused = true)]
async fn generics() {
    assert_eq!(assert_send(generic(vec![1u8], 2)).await, Ok(2));
    assert_eq!(
        assert_send(with_where("k", 1u8)).await,
        Ok("k=1".to_owned())
    );
    // The second attempt incremented the caller's array, not the first attempt's.
    assert_eq!(assert_send(const_generic([1u8, 2, 3])).await, Ok(2));
    let text = String::from("a,b");
    assert_eq!(assert_send(lifetime(&text, ',')).await, Ok("a"));
    assert_eq!(assert_send(impl_args("abc", |n| n * 10)).await, Ok(30));
    assert_eq!(
        assert_send(impl_return(21)).await.map(|d| d.to_string()),
        Ok("42".to_owned())
    );
    assert_eq!(impl_return_blocking(3).map(Iterator::sum::<u32>), Ok(3));
    assert_eq!(assert_send(boxed_error("5")).await.ok(), Some(5));
    assert_eq!(
        assert_send(Wrapper(1u8).pair("x")).await,
        Ok("1\"x\"".to_owned())
    );
    assert_eq!(assert_send(generic_error::<Fail>(9)).await, Ok(9));
}
