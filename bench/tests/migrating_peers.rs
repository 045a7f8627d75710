//! The backon and tokio-retry snippets of the migration guide (`docs/guide/migrating.md`), compiled
//! and run against those libraries. The guide shows them as `rust,ignore` (the facade's doc
//! tests have neither library): here each one sits verbatim in a function, and
//! `the_guide_shows_these_snippets` fails if the guide's text and this file's drift apart.

use std::cell::Cell;
use std::fmt;
use std::io;
use std::time::Duration;

/// The guide's blocks marked `rust,ignore`, in order.
fn ignored_blocks(guide: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut rest = guide;
    while let Some(start) = rest.find("```rust,ignore\n") {
        let body = &rest[start + "```rust,ignore\n".len()..];
        let end = body.find("```").expect("a closed block");
        blocks.push(body[..end].to_owned());
        rest = &body[end..];
    }
    blocks
}

#[test]
fn the_guide_shows_these_snippets() {
    let guide = include_str!("../../docs/guide/migrating.md");
    let this_file = include_str!("migrating_peers.rs");
    let blocks = ignored_blocks(guide);
    assert_eq!(blocks.len(), 2, "backon's and tokio-retry's: {blocks:#?}");
    for block in blocks {
        // Each snippet is a function's body here (in a module): the same lines, indented twice.
        let indented: String = block
            .lines()
            .map(|l| {
                if l.is_empty() {
                    "\n".to_owned()
                } else {
                    format!("        {l}\n")
                }
            })
            .collect();
        assert!(
            this_file.contains(&indented),
            "the guide's snippet is not in bench/tests/migrating_peers.rs as written:\n{block}"
        );
    }
}

mod with_backon {
    use super::{Cell, Duration, fmt};

    #[derive(Debug)]
    pub struct FetchError {
        transient: bool,
    }
    impl FetchError {
        fn is_transient(&self) -> bool {
            self.transient
        }
    }
    impl fmt::Display for FetchError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "transient: {}", self.transient)
        }
    }

    thread_local! {
        static CALLS: Cell<u32> = const { Cell::new(0) };
    }

    /// Fails three times (transiently), then answers with the URL.
    async fn fetch(url: &str) -> Result<String, FetchError> {
        tokio::task::yield_now().await; // a remote call suspends
        let n = CALLS.with(|c| {
            c.set(c.get() + 1);
            c.get()
        });
        if n <= 3 {
            Err(FetchError { transient: true })
        } else {
            Ok(format!("content of {url}"))
        }
    }

    // As the guide prints it (rustfmt would realign its comments).
    #[rustfmt::skip]
    pub async fn snippet(url: String) -> Result<String, FetchError> {
        use backon::{ExponentialBuilder, Retryable};

        let content = (|| async { fetch(&url).await })
            .retry(
                ExponentialBuilder::default()
                    .with_min_delay(Duration::from_millis(100))
                    .with_max_delay(Duration::from_secs(2))
                    .with_max_times(3)   // 3 retries: 4 attempts
                    .with_jitter(),      // adds U[0, d) to each delay d
            )
            .when(|e: &FetchError| e.is_transient())
            .notify(|e: &FetchError, d: Duration| eprintln!("retrying in {d:?}: {e}"))
            .await?;
        Ok(content)
    }

    pub fn calls() -> u32 {
        CALLS.with(Cell::get)
    }
}

mod with_tokio_retry {
    use super::{Cell, Duration, io};

    thread_local! {
        static CALLS: Cell<u32> = const { Cell::new(0) };
    }

    /// Times out three times, then answers with the URL.
    async fn fetch(url: &str) -> io::Result<String> {
        tokio::task::yield_now().await; // a remote call suspends
        let n = CALLS.with(|c| {
            c.set(c.get() + 1);
            c.get()
        });
        if n <= 3 {
            Err(io::ErrorKind::TimedOut.into())
        } else {
            Ok(format!("content of {url}"))
        }
    }

    // As the guide prints it (rustfmt would realign its comments).
    #[rustfmt::skip]
    pub async fn snippet(url: String) -> io::Result<String> {
        use tokio_retry::RetryIf;
        use tokio_retry::strategy::{ExponentialBackoff, jitter};

        let strategy = ExponentialBackoff::from_millis(2)
            .factor(50)                       // 100 ms, 200 ms, 400 ms
            .max_delay(Duration::from_secs(2))
            .map(jitter)                      // each delay × U[0, 1)
            .take(3);                         // 3 retries: 4 attempts
        let body = RetryIf::start(strategy, || fetch(&url), |e: &io::Error| e.kind() == io::ErrorKind::TimedOut).await?;
        Ok(body)
    }

    pub fn calls() -> u32 {
        CALLS.with(Cell::get)
    }
}

/// backon's snippet makes 4 attempts (3 retries) and sleeps between them: on the paused clock,
/// the whole schedule runs at once, and at least the three minimum delays pass.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn backons_snippet_makes_four_attempts() {
    let start = tokio::time::Instant::now();
    let content = with_backon::snippet("u".into()).await.unwrap();
    assert_eq!(content, "content of u");
    assert_eq!(with_backon::calls(), 4);
    assert!(start.elapsed() >= Duration::from_millis(100 + 200 + 400));
}

/// tokio-retry's snippet doubles from 100 ms as the guide says (`from_millis(2).factor(50)`),
/// jittered down: at most 100 + 200 + 400 ms in all.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn tokio_retrys_snippet_makes_four_attempts() {
    let start = tokio::time::Instant::now();
    let content = with_tokio_retry::snippet("u".into()).await.unwrap();
    assert_eq!(content, "content of u");
    assert_eq!(with_tokio_retry::calls(), 4);
    assert!(start.elapsed() <= Duration::from_millis(100 + 200 + 400));
}
