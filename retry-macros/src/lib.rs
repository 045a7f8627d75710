//! Proc macros of [reattempt](https://docs.rs/reattempt): `#[retryable]` and `#[recover]`.
//!
//! Use them through the `reattempt` crate, which documents every key. This crate only writes
//! syntax; every decision is made by `retry-runtime`. `#[retryable]` runs three passes, in order
//! (`expand::retryable` drives them):
//!
//! 1. parse: `args` reads the attribute's keys; `item` describes the function, unchanged;
//! 2. validate: `valid` checks the keys against each other, the function's shape, and the keys
//!    against the function;
//! 3. expand: `expand` writes the retry loop around the signature and body that `rewrite`
//!    writes from the description.
//!
//! `recover` is `#[recover]`, which marks fallbacks. Beside the passes: `known_keys` (what an
//! unknown key is, by meaning, for messages), `key_shapes` (a key in another syntax, as a config
//! file writes it), `value_rules` (a known key's value written by another habit), `patterns`
//! (`retry_on`'s matches), `rename` (`self` in the body), `render` (code as it reads in a
//! message, below every other module), `util`.

#![forbid(unsafe_code)]

mod args;
#[cfg(test)]
mod call_start_tests;
mod expand;
#[cfg(test)]
mod expansion_bench;
#[cfg(test)]
mod fuzz;
mod item;
mod key_shapes;
mod known_keys;
mod lent;
mod no_effect;
mod patterns;
mod recover;
mod rename;
mod render;
mod rewrite;
mod stream;
mod util;
mod valid;
mod value_rules;

use proc_macro::TokenStream;

// Documented where users read it, on the `reattempt` crate's re-export: rustdoc appends an
// item's own doc to its re-export's, where a line here would read as a stray footnote.
#[allow(missing_docs, reason = "documented on the `reattempt` re-export")]
#[proc_macro_attribute]
pub fn retryable(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::retryable(args.into(), item.into()).into()
}

#[allow(missing_docs, reason = "documented on the `reattempt` re-export")]
#[proc_macro_attribute]
pub fn recover(args: TokenStream, item: TokenStream) -> TokenStream {
    recover::recover(args.into(), item.into()).into()
}
