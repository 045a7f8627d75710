//! The macros never panic, whatever tokens they are given: a property test that feeds generated
//! attribute arguments and items, assembled from the pieces real attributes are made of (and
//! from arbitrary text), to the expansion functions as plain functions on `proc_macro2` tokens.
//! Every input must give tokens (code or `compile_error!`), never a panic.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::str::FromStr;

use proc_macro2::TokenStream;
use proptest::prelude::*;

/// Pieces of attribute arguments: keys, values of every kind, punctuation, groups.
const ARG_PIECES: &[&str] = &[
    "max_attempts",
    "delay",
    "backoff",
    "multiplier",
    "max_delay",
    "jitter",
    "retry_on",
    "no_retry_on",
    "retry_if",
    "retry_if_ok",
    "timeout",
    "max_elapsed",
    "retry_after",
    "on_retry",
    "recover",
    "name",
    "crate",
    "circuit_breaker",
    "budget",
    "throttle",
    "bulkhead",
    "policy",
    "max_atempts",
    "=",
    ",",
    "|",
    "|e|",
    "e",
    "@",
    "..",
    "..=",
    "::",
    "&",
    "-",
    "!",
    "0",
    "1",
    "3",
    "-1",
    "4294967295",
    "4294967296",
    "99999999999999999999",
    "0.0",
    "0.5",
    "1.5",
    "1e309",
    "2",
    "\"200ms\"",
    "\"0s\"",
    "\"2 parsecs\"",
    "\"\"",
    "\"full\"",
    "\"ful\"",
    "\"fixed\"",
    "\"584 years\"",
    "\"18446744073709551615s\"",
    "\"::reattempt\"",
    "\"not a path!\"",
    "[",
    "]",
    "[E::A]",
    "[E::A | E::B]",
    "[x @ E::Http(500..=599)]",
    "[_]",
    "[]",
    "(",
    ")",
    "{",
    "}",
    "E::A",
    "Self::fallback",
    "self.breaker",
    "if",
    "true",
    "r#type",
    "'a",
    "#",
];

/// Pieces of items: whole functions of many shapes, and fragments of them.
const ITEM_PIECES: &[&str] = &[
    "async fn f() -> Result<u8, E> { Ok(1) }",
    "fn f(x: u8) -> Result<u8, E> { Ok(x) }",
    "async fn f(&self, a: String, b: &str, (c, d): (u8, u8), _: u8) -> io::Result<u8> { todo!() }",
    "pub async fn f<T: Clone>(t: T) -> Result<T, E> where T: Send { Ok(t) }",
    "const fn f() -> Result<u8, E> { Ok(1) }",
    "fn f() {}",
    "fn f() -> Option<u8> { None }",
    "fn f(&self);",
    "struct S;",
    "impl S {}",
    "async fn f(self: Box<Self>) -> Result<(), E> { Ok(()) }",
    "fn f(mut a: u8, ref b: u8) -> Result<u8, E> { a += b; Ok(a) }",
    "async",
    "fn",
    "f",
    "(",
    ")",
    "->",
    "Result",
    "<",
    ">",
    "{",
    "}",
    ";",
    "#[doc = \"x\"]",
    "unsafe",
    "extern \"C\"",
    "fn f(...)",
    "impl Trait",
    "dyn Fn()",
];

fn assemble(pieces: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(pieces), 0..12).prop_map(|p| p.join(" "))
}

/// Text that lexes into tokens: generated pieces, or arbitrary printable text.
fn tokens(pieces: &'static [&'static str]) -> impl Strategy<Value = TokenStream> {
    prop_oneof![assemble(pieces), "[ -~]{0,60}"].prop_filter_map("lexes into tokens", |text| {
        TokenStream::from_str(&text).ok()
    })
}

fn no_panic(f: impl FnOnce() -> TokenStream) -> Result<(), TestCaseError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(_) => Ok(()),
        Err(_) => Err(TestCaseError::fail("the macro panicked")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn retryable_never_panics(args in tokens(ARG_PIECES), item in tokens(ITEM_PIECES)) {
        no_panic(|| crate::expand::retryable(args, item))?;
    }

    #[test]
    fn retryable_never_panics_on_a_valid_function(args in tokens(ARG_PIECES)) {
        let item = TokenStream::from_str(
            "async fn f(&self, a: String, b: &str, (c, d): (u8, u8)) -> Result<u8, E> { Ok(1) }",
        ).map_err(|e| TestCaseError::fail(e.to_string()))?;
        no_panic(|| crate::expand::retryable(args, item))?;
    }

    #[test]
    fn recover_never_panics(args in tokens(ARG_PIECES), item in tokens(ITEM_PIECES)) {
        no_panic(|| crate::recover::recover(args, item))?;
    }
}
