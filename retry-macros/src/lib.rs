//! Proc macros of [reattempt](https://docs.rs/reattempt): `#[retryable]` and `#[recover]`.
//!
//! Use them through the `reattempt` crate, which documents every key. This crate only writes
//! syntax: `args` parses and checks the attribute, `item` models the function, `expand` writes
//! the retry loop, `recover` marks fallbacks. Every decision is made by `retry-runtime`.

mod args;
mod expand;
#[cfg(test)]
mod fuzz;
mod item;
mod item_checks;
mod known_keys;
mod patterns;
mod recover;
mod rename;
mod util;

use proc_macro::TokenStream;

/// Retries an `async fn` (or a blocking `fn`) that returns `Result`. Documented in `reattempt`.
#[proc_macro_attribute]
pub fn retryable(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::retryable(args.into(), item.into()).into()
}

/// Marks a fallback for `#[retryable(recover = ...)]`. Documented in `reattempt`.
#[proc_macro_attribute]
pub fn recover(args: TokenStream, item: TokenStream) -> TokenStream {
    recover::recover(args.into(), item.into()).into()
}
