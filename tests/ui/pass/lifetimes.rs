#![deny(warnings, clippy::pedantic)]
//! Explicit and elided lifetimes in arguments and in the `Result`.

use reattempt::retryable;

#[retryable(max_attempts = 2, delay = "10ms")]
async fn first_word<'a>(text: &'a str, _sep: &str) -> Result<&'a str, &'a str> {
    text.split_whitespace().next().ok_or(text)
}

struct Cache {
    entries: Vec<String>,
}

impl Cache {
    #[retryable(max_attempts = 2, delay = "10ms")]
    async fn get(&self, i: usize) -> Result<&str, String> {
        self.entries
            .get(i)
            .map(String::as_str)
            .ok_or_else(|| format!("no entry {i}"))
    }

    #[retryable(max_attempts = 2, delay = "1ms")]
    fn longest<'s, 'o: 's>(&'s self, other: &'o str) -> Result<&'s str, String> {
        let mine = self
            .entries
            .iter()
            .map(String::as_str)
            .max_by_key(|s| s.len())
            .unwrap_or("");
        Ok(if other.len() > mine.len() {
            other
        } else {
            mine
        })
    }
}

struct Parser<'src> {
    src: &'src str,
}

impl<'src> Parser<'src> {
    #[retryable(max_attempts = 2, delay = "10ms")]
    async fn token(&mut self) -> Result<&'src str, String> {
        let (head, tail) = self.src.split_once(' ').unwrap_or((self.src, ""));
        self.src = tail;
        Ok(head)
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(first_word("hello world", " ").await, Ok("hello"));
    let cache = Cache {
        entries: vec!["a".to_owned(), "bcd".to_owned()],
    };
    assert_eq!(cache.get(1).await, Ok("bcd"));
    assert_eq!(cache.longest("xy"), Ok("bcd"));
    let mut parser = Parser { src: "let x" };
    assert_eq!(parser.token().await, Ok("let"));
    assert_eq!(parser.token().await, Ok("x"));
}
