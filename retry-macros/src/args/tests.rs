//! The parse as a whole: every key read, and each mistake in an item's shape told its fix.
//! `errors_of` and `parsed` serve the tests beside each part too.

use std::time::Duration;

use proc_macro2::TokenStream;
use quote::quote;
use retry_rules::Jitter;

use super::{RetryArgs, parse};
use crate::util::combine;

pub(super) fn errors_of(args: TokenStream) -> Vec<String> {
    match parse(args) {
        Ok(parsed) => parsed
            .unread
            .into_iter()
            .chain(parsed.unread_crate)
            .map(|e| e.to_string())
            .collect(),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
    }
}

pub(super) fn parsed(args: TokenStream) -> RetryArgs {
    let parsed = parse(args).unwrap_or_else(|e| panic!("{e}"));
    if let Some(e) = combine(parsed.unread) {
        panic!("{e}");
    }
    parsed.args
}

#[test]
fn values_in_invisible_groups_are_read_as_written() {
    // What `macro_rules!` passes for `$d:literal`, `$e:expr`, `$r:path`: each value in a
    // `Group` with `Delimiter::None`, another key after it (issue 25, finding 12).
    let none = |tokens: TokenStream| {
        proc_macro2::TokenTree::Group(proc_macro2::Group::new(
            proc_macro2::Delimiter::None,
            tokens,
        ))
    };
    let (delay, attempts, multiplier) = (none(quote!("250ms")), none(quote!(4)), none(quote!(1.5)));
    let (jitter, recover, label, nested) = (
        none(quote!(0.5)),
        none(quote!(Self::fallback)),
        none(quote!("charge")),
        none(none(quote!("2s")).into()),
    );
    let args = parsed(quote!(
        delay = #delay, max_attempts = #attempts, multiplier = #multiplier, jitter = #jitter,
        recover = #recover, name = #label, max_delay = #nested, backoff = "exponential"
    ));
    let settings = &args.schedule.settings;
    assert_eq!(settings.delay, Some(Duration::from_millis(250)));
    assert_eq!(settings.max_attempts, Some(4));
    assert_eq!(settings.multiplier, Some(1.5));
    assert_eq!(settings.jitter, Some(Jitter::Proportional(0.5)));
    assert_eq!(settings.max_delay, Some(Duration::from_secs(2)));
    assert!(args.recover.is_some_and(|p| p.segments.len() == 2));
    assert_eq!(args.name.map(|n| n.value()), Some("charge".to_owned()));
}

#[test]
fn accepts_every_key() {
    let a = parsed(quote!(
        max_attempts = 4,
        delay = "200ms",
        multiplier = 2,
        max_delay = "2s",
        jitter = "full",
        timeout = "1s",
        max_elapsed = "10s",
        retry_on = [E::A | E::B, E::Http(500..=599)],
        no_retry_on = [E::Http(501)],
        retry_if = |e| e.is_transient(),
        retry_if_ok = is_503,
        retry_after = hint,
        on_retry = log,
        recover = Self::pending,
        name = "charge",
        log_error = "debug",
        crate = "::my_reattempt"
    ));
    assert_eq!(a.schedule.settings.max_attempts, Some(4));
    assert_eq!(a.schedule.settings.max_delay, Some(Duration::from_secs(2)));
    assert_eq!(a.retry_on.as_ref().map(Vec::len), Some(2));
    assert!(a.recover.is_some());
}

#[test]
fn suggests_close_keys() {
    let errs = errors_of(quote!(max_atempts = 3));
    assert!(errs[0].contains("max_attempts"), "{errs:?}");
    let errs = errors_of(quote!(retry_onn = [E::A]));
    assert!(errs[0].contains("retry_on"), "{errs:?}");
}

#[test]
fn shapes_that_used_to_compile_are_rejected() {
    for (args, expected) in [
        (
            quote!(retry_on = [is_transient]),
            "write `retry_if = is_transient`",
        ),
        (quote!(retry_on = [_]), "remove `retry_on`"),
        (quote!(retry_on = [e @ _]), "remove `retry_on`"),
        (
            quote!(retry_on = [E::A | other]),
            "`other` in `retry_on` is a binding",
        ),
        (quote!(no_retry_on = [ref e]), "binding"),
        (quote!(retry_on = [&transient]), "`transient` in `retry_on`"),
        (quote!(retry_on = [(code, _, ..)]), "tuple pattern"),
        (
            quote!(circuit_breaker = "payments"),
            "write `circuit_breaker = payments`",
        ),
        (quote!(budget = "BUDGET"), "write `budget = BUDGET`"),
        (quote!(policy = "POLICY"), "write `policy = POLICY`"),
        (quote!(recover = "fallback"), "write `recover = fallback`"),
        (quote!(retry_if = "f"), "write `retry_if = f`"),
        (quote!(retry_if_ok = "f"), "write `retry_if_ok = f`"),
        (quote!(on_retry = "f"), "write `on_retry = f`"),
        (quote!(retry_after = "f"), "write `retry_after = f`"),
    ] {
        let errs = errors_of(args.clone());
        assert_eq!(errs.len(), 1, "{args}: {errs:?}");
        assert!(errs[0].contains(expected), "{args}: {errs:?}");
    }
}

#[test]
fn upper_case_names_and_bound_subpatterns_stay_patterns() {
    for args in [
        quote!(retry_on = [Unavailable, TIMEOUT]),
        quote!(retry_on = [e @ E::Io(_)], no_retry_on = [E::Http(status) ]),
        quote!(
            backoff = "fixed",
            jitter = 0.5,
            name = "x",
            crate = "::reattempt"
        ),
    ] {
        assert!(errors_of(args.clone()).is_empty(), "{args}");
    }
}

#[test]
fn shapes_get_their_fix() {
    for (args, expected) in [
        (quote!(max_attempts: 3), "write `max_attempts = 3`"),
        (
            quote!(backoff = exponential),
            "write `backoff = \"exponential\"`",
        ),
        (quote!(delay = 200), "such as `delay = \"200ms\"`"),
        (quote!(max_retries = 3), "`max_attempts = 4`"),
        (quote!(maxAttempts = 3), "`max_attempts = 3`"),
        // Issue 38: a value written by another habit, each at its value.
        (
            quote!(retry_if = reattempt::transient()),
            "name the function, do not call it: write `retry_if = reattempt::transient`",
        ),
        (
            quote!(timeout = 2.5),
            "`timeout = \"2.5s\"` or `timeout = \"2500ms\"`",
        ),
        (
            quote!(hedge_after = 0.05),
            "`hedge_after = \"0.05s\"` or `hedge_after = \"50ms\"`",
        ),
        (quote!(hedge_after = 50), "`hedge_after = \"50ms\"`"),
        (quote!(policy = "retry.toml"), "names a config file"),
        (quote!(failure_threshold = 5), "`circuit_breaker = BREAKER`"),
        (quote!(preset = "aws-2026"), "Preset::Aws2026"),
        (
            quote!(retry.max_attempts = 3),
            "`retry.max_attempts` is a dotted key of a config file; the attribute's key is the name alone: write `max_attempts = 3`",
        ),
        (
            quote!(resilience4j.retry.instances.backend.maxAttempts = 3),
            "of its name: `maxAttempts` is not a key of #[retryable]",
        ),
        (
            quote!(breaker.failure_threshold = 5),
            "`CircuitBreaker::builder().failure_threshold(5)`",
        ),
        (
            quote!("max_attempts" = 3),
            "`\"max_attempts\"` is a quoted key, as JSON or YAML writes it; the attribute's key is the name alone: write `max_attempts = 3`",
        ),
        (
            quote!(delay = "1s", "initialBackoff" = "2s"),
            "`delay = \"2s\"`",
        ),
    ] {
        let errs = errors_of(args.clone());
        assert!(
            errs.first().is_some_and(|e| e.contains(expected)),
            "{args}: {errs:?}"
        );
    }
}

#[test]
fn a_config_files_property_name_is_told_the_key() {
    assert_eq!(
        errors_of(quote!(max - attempts = 3)),
        [
            "`max-attempts` is not a key of #[retryable]: the key is `max_attempts` (keys are snake_case): write `max_attempts = 3`"
        ]
    );
    let m = errors_of(quote!(wait - duration = "500ms", max_attempts = 3));
    assert!(m[0].contains("write `delay = \"500ms\"`"), "{m:?}");
    let m = errors_of(quote!(exponential - backoff - multiplier = 2));
    assert!(m[0].contains("`multiplier = 2`"), "{m:?}");
}

/// The AWS 2026 settings and the budget's written in the attribute: each message says they
/// are a run-time policy's (or a budget's) settings, given with `policy = …` / `budget = …`,
/// not the bare list of known keys.
#[test]
fn aws_2026_keys_in_the_attribute_name_the_policy_or_budget() {
    let mut bad = Vec::new();
    for args in [
        quote!(long_polling = true),
        quote!(hint_mode = "clamp 5s"),
        quote!(initial_tokens = 0),
        quote!(max_tokens = 100),
        quote!(success_deposit = 2),
        quote!(throttling_cost = 5),
    ] {
        let errs = errors_of(args.clone());
        let first = errs.first().cloned().unwrap_or_default();
        bad.extend(
            (!(first.contains("policy =") || first.contains("budget =")))
                .then(|| format!("{args} => {}", &first[..first.len().min(60)])),
        );
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
