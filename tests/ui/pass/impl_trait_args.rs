#![deny(warnings, clippy::pedantic)]
//! `impl Trait` arguments: by value with `+ Clone`, and behind references.

use std::fmt::Display;
use std::io::Write;

use reattempt::retryable;

#[retryable(max_attempts = 2, delay = "10ms")]
async fn greet(name: impl AsRef<str> + Clone, out: &mut impl Write) -> std::io::Result<usize> {
    writeln!(out, "hello {}", name.as_ref())?;
    Ok(name.as_ref().len())
}

#[retryable(max_attempts = 2, delay = "1ms")]
fn render(
    item: &impl Display,
    items: impl IntoIterator<Item = u8> + Clone,
) -> Result<String, String> {
    let total: u32 = items.into_iter().map(u32::from).sum();
    Ok(format!("{item}: {total}"))
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let mut out = Vec::new();
    assert_eq!(greet("ann", &mut out).await.unwrap(), 3);
    assert_eq!(out, b"hello ann\n");
    assert_eq!(render(&7, vec![1, 2]), Ok("7: 3".to_owned()));
}
