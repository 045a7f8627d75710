//! A harness for the cost of one expansion (issue 14, build cost): `#[retryable]` on realistic
//! functions, expanded N times in this (unoptimized, as cargo builds proc macros) test binary.
//!
//! ```text
//! EXPANSIONS=2000 cargo test -p retry-macros --lib expansion_bench -- --exact --nocapture
//! EXPANSIONS=30 EXPANSION_CASE=0 valgrind --tool=callgrind target/debug/deps/retry_macros-HASH \
//!     expansion_bench::expansion_bench --exact --nocapture
//! ```
//!
//! (The test binary of a proc-macro crate links std dynamically: run it directly with
//! `LD_LIBRARY_PATH=$(rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-gnu/lib`.)
//!
//! Outside a compiler, `proc_macro2` runs on its fallback token types: the time per expansion
//! here is the macro's own work, not the compiler bridge's (each token operation is a call into
//! rustc there, so that fewer token operations save more in a real build).

use std::time::Instant;

use proc_macro2::TokenStream;

/// `(args, item)`: the functions of `bench/benches/build_cost.sh` (`attr`, `attr_full`), a method
/// with a longer body, and a blocking function.
pub(crate) const CASES: &[(&str, &str)] = &[
    (
        r#"max_attempts = 3, delay = "10ms""#,
        "pub async fn f7(x: u32) -> Result<u32, Error> { call(x + 7).await }",
    ),
    (
        r#"max_attempts = 3, delay = "10ms", timeout = "1s",
           retry_on = [Error::Busy | Error::Timeout], on_retry = log_retry"#,
        "pub async fn f7(x: u32) -> Result<u32, Error> { call(x + 7).await }",
    ),
    (
        r#"max_attempts = 4, delay = "100ms", backoff = "exponential", jitter = "full",
           retry_on = [PayError::Unavailable, PayError::RateLimited { .. }]"#,
        r#"
        /// Charges a card.
        #[tracing::instrument(skip(self, req))]
        pub async fn charge(&self, req: &ChargeRequest, idempotency_key: String, _trace: u64) -> Result<Receipt, PayError> {
            let url = format!("{}/v1/charges/{}", self.base, req.account);
            let body = serde_json::to_vec(&req).map_err(PayError::Encode)?;
            let resp = self
                .http
                .post(&url)
                .header("Idempotency-Key", &idempotency_key)
                .body(body)
                .send()
                .await
                .map_err(|e| if e.is_timeout() { PayError::Unavailable } else { PayError::Network(e) })?;
            match resp.status().as_u16() {
                200..=299 => Ok(resp.json::<Receipt>().await.map_err(PayError::Decode)?),
                429 => Err(PayError::RateLimited { retry_after: resp.headers().get("retry-after").cloned() }),
                500..=599 => Err(PayError::Unavailable),
                code => {
                    tracing::warn!(code, "{self:?} rejected the charge");
                    Err(PayError::Rejected(code))
                }
            }
        }
        "#,
    ),
    (
        r#"max_attempts = 5, delay = "1s""#,
        "fn read_config(path: &std::path::Path, (a, b): (u8, u8)) -> std::io::Result<String> { let s = std::fs::read_to_string(path)?; Ok(format!(\"{s}{a}{b}\")) }",
    ),
];

/// Every case, expanded: the text of each expansion (what the tests compare).
pub(crate) fn expansions() -> Vec<String> {
    CASES
        .iter()
        .map(|(args, item)| {
            let args: TokenStream = args.parse().unwrap_or_else(|e| panic!("{e}"));
            let item: TokenStream = item.parse().unwrap_or_else(|e| panic!("{e}"));
            crate::expand::retryable(args, item).to_string()
        })
        .collect()
}

#[test]
fn expansion_bench() {
    // `EXPANSION_DUMP=FILE`: the expansions' text, to compare before and after a change.
    if let Ok(path) = std::env::var("EXPANSION_DUMP") {
        std::fs::write(path, expansions().join("\n\n")).unwrap_or_else(|e| panic!("{e}"));
    }
    let n: usize = std::env::var("EXPANSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let inputs: Vec<(TokenStream, TokenStream)> = CASES
        .iter()
        .map(|(args, item)| {
            (
                args.parse().unwrap_or_else(|e| panic!("{e}")),
                item.parse().unwrap_or_else(|e| panic!("{e}")),
            )
        })
        .collect();
    // `EXPANSION_CASE=I`: that case only (one profile per case).
    let only: Option<usize> = std::env::var("EXPANSION_CASE")
        .ok()
        .and_then(|n| n.parse().ok());
    for (i, (args, item)) in inputs.iter().enumerate() {
        if only.is_some_and(|only| only != i) {
            continue;
        }
        let start = Instant::now();
        let mut size = 0;
        for _ in 0..n {
            let out = crate::expand::retryable(args.clone(), item.clone());
            size += out.into_iter().count();
        }
        let per = start.elapsed() / u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        println!(
            "case {i}: {per:?} per expansion ({} top-level trees)",
            size / n.max(1)
        );
        assert!(size > 0);
    }
}
