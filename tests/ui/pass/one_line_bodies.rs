#![deny(warnings, clippy::pedantic)]
//! One-line bodies, an always-`Ok` recover and a binding in one `retry_on` item stay lint-clean.

use reattempt::{recover, retryable};

#[derive(Debug)]
enum ApiError {
    Http(u16),
    Timeout,
}

#[retryable(max_attempts = 2, delay = "1ms", recover = fallback)]
async fn one_line(id: u32) -> Result<u32, ApiError> { Ok(id) }

#[recover]
async fn fallback(_err: ApiError, id: u32) -> Result<u32, ApiError> { Ok(id) }

#[retryable(max_attempts = 2, delay = "1ms",
            retry_on = [ApiError::Http(code @ 500..=599), ApiError::Timeout])]
async fn bound(code: u16) -> Result<u32, ApiError> {
    Err(if code == 0 { ApiError::Timeout } else { ApiError::Http(code) })
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(one_line(3).await.ok(), Some(3));
    assert!(bound(503).await.is_err());
}
