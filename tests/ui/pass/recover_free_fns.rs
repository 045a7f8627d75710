#![deny(warnings, clippy::pedantic)]
//! `#[recover]` for free functions: taking only the error, or the error and the arguments;
//! async and blocking.

use reattempt::{recover, retryable};

#[derive(Debug, PartialEq)]
enum PriceError {
    Down(String),
}

#[retryable(max_attempts = 2, delay = "10ms", recover = default_price)]
async fn price(sku: &str) -> Result<u32, PriceError> {
    Err(PriceError::Down(sku.to_owned()))
}

#[recover]
async fn default_price(err: PriceError) -> Result<u32, PriceError> {
    match err {
        PriceError::Down(sku) if sku == "tea" => Ok(3),
        down @ PriceError::Down(_) => Err(down),
    }
}

#[retryable(max_attempts = 2, delay = "10ms", recover = cached_price)]
async fn price_in(
    sku: String,
    currency: &str,
    (lo, hi): (u32, u32),
    _: bool,
) -> Result<u32, PriceError> {
    Err(PriceError::Down(format!("{sku}/{currency}/{lo}-{hi}")))
}

#[recover]
async fn cached_price(
    _err: PriceError,
    sku: String,
    currency: &str,
    range: (u32, u32),
    _flag: bool,
) -> Result<u32, PriceError> {
    Ok(u32::try_from(sku.len() + currency.len()).unwrap_or(0) + range.0)
}

#[retryable(max_attempts = 2, delay = "1ms", recover = blocking_fallback)]
fn blocking(sku: &str) -> Result<u32, PriceError> {
    Err(PriceError::Down(sku.to_owned()))
}

#[recover]
fn blocking_fallback(err: PriceError, sku: &str) -> Result<u32, PriceError> {
    u32::try_from(sku.len()).map_err(|_| err)
}

mod fallbacks {
    use super::PriceError;

    #[reattempt::recover]
    pub fn zero(err: PriceError) -> Result<u32, PriceError> {
        match err {
            PriceError::Down(sku) if sku.is_empty() => Ok(0),
            down @ PriceError::Down(_) => Err(down),
        }
    }
}

#[retryable(max_attempts = 2, delay = "1ms", recover = fallbacks::zero)]
fn by_path() -> Result<u32, PriceError> {
    Err(PriceError::Down(String::new()))
}

#[retryable(max_attempts = 2, delay = "1ms", recover = r#loop)]
fn raw_ident() -> Result<u32, PriceError> {
    Err(PriceError::Down(String::new()))
}

#[recover]
fn r#loop(err: PriceError) -> Result<u32, PriceError> {
    if matches!(&err, PriceError::Down(sku) if sku.is_empty()) {
        Ok(7)
    } else {
        Err(err)
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    assert_eq!(price("tea").await, Ok(3));
    assert_eq!(
        price("cake").await,
        Err(PriceError::Down("cake".to_owned()))
    );
    assert_eq!(
        price_in("ab".to_owned(), "EUR", (10, 20), true).await,
        Ok(15)
    );
    assert_eq!(blocking("abcd"), Ok(4));
    assert_eq!(by_path(), Ok(0));
    assert_eq!(raw_ident(), Ok(7));
    // A recover function stays an ordinary function.
    assert_eq!(
        default_price(PriceError::Down("tea".to_owned())).await,
        Ok(3)
    );
}
