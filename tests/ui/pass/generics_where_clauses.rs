#![deny(warnings, clippy::pedantic)]
//! Generic functions and methods, with bounds inline and in where-clauses.

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;

use reattempt::retryable;

#[retryable(max_attempts = 2, delay = "10ms")]
async fn lookup<K, V, E>(map: &HashMap<K, V>, key: K, missing: E) -> Result<V, E>
where
    K: Hash + Eq + Clone,
    V: Clone,
    E: Debug + Clone,
{
    map.get(&key).cloned().ok_or(missing)
}

#[retryable(max_attempts = 2, delay = "1ms")]
fn first<T: Clone + Debug, const N: usize>(items: [T; N]) -> Result<T, String> {
    items
        .first()
        .cloned()
        .ok_or_else(|| format!("empty array of {N}"))
}

struct Repo<T> {
    rows: Vec<T>,
}

impl<T> Repo<T>
where
    T: Clone + PartialEq,
{
    #[retryable(max_attempts = 2, delay = "10ms")]
    async fn find<P>(&self, pred: P) -> Result<T, &'static str>
    where
        P: Fn(&T) -> bool + Clone,
    {
        self.rows
            .iter()
            .find(|r| pred(r))
            .cloned()
            .ok_or("not found")
    }
}

struct Typed<T>(PhantomData<T>);

impl<T: Default + Debug> Typed<T> {
    #[retryable(max_attempts = 2, delay = "1ms")]
    fn make() -> Result<T, String> {
        Ok(T::default())
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let map = HashMap::from([("a", 1)]);
    assert_eq!(lookup(&map, "a", "gone").await, Ok(1));
    assert_eq!(lookup(&map, "b", "gone").await, Err("gone"));
    assert_eq!(first([3, 4]), Ok(3));
    let repo = Repo {
        rows: vec![1, 2, 3],
    };
    assert_eq!(repo.find(|r| *r > 1).await, Ok(2));
    assert_eq!(Typed::<u8>::make(), Ok(0));
    let _ = Typed::<u8>(PhantomData);
}
