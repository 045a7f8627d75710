//! Rules for a known key's value written by a habit that reads another way here, each checked
//! before darling reads the value, each message at the value:
//!
//! - **A function called instead of named.** The keys that take a function (`retry_if`,
//!   `retry_after`, `recover`, the `…_into` conversions) take its path; a call of a path with no
//!   arguments (`retry_if = reattempt::transient()`), or with only the name its argument would
//!   have (`is_transient(&e)`), calls it once, in the expansion, where it lacks its argument.
//!   Otherwise rustc reports two errors, the first at the attribute.
//! - **A duration written as a decimal number** (`timeout = 2.5`): the unit goes in a string,
//!   and the number keeps its digits (`timeout = "2.5s"`), as an integer's does.

use syn::{Expr, Lit};

use crate::known_keys::render;

/// The keys whose value is a function (or a closure), named by its path.
const FN_KEYS: &[&str] = &[
    "retry_if",
    "retry_if_ok",
    "retry_after",
    "delay_for",
    "on_retry",
    "recover",
    "timeout_into",
    "breaker_open_into",
    "throttled_into",
    "bulkhead_full_into",
];

/// The names a predicate's argument is given where it is written out (`transient(&e)`): a call
/// with only these as arguments passes what the retry would, which is not in scope here. (A
/// call with other arguments may build the predicate: `status_in(RETRYABLE)`.)
const ARGUMENT_NAMES: &[&str] = &[
    "e",
    "err",
    "error",
    "ex",
    "exc",
    "exception",
    "v",
    "value",
    "ok",
    "res",
    "resp",
    "response",
];

/// Whether `arg` is one of [`ARGUMENT_NAMES`], or a reference to one.
fn stands_for_the_argument(arg: &Expr) -> bool {
    match arg {
        Expr::Reference(r) => stands_for_the_argument(&r.expr),
        Expr::Path(p) => p
            .path
            .get_ident()
            .is_some_and(|i| ARGUMENT_NAMES.iter().any(|n| i == n)),
        _ => false,
    }
}

/// `key = path()` (or `path(&e)`): the function is called instead of named.
pub(crate) fn called_fn(key: &str, value: &Expr) -> Option<String> {
    if !FN_KEYS.contains(&key) {
        return None;
    }
    let Expr::Call(call) = value else { return None };
    let Expr::Path(f) = &*call.func else {
        return None;
    };
    if !call.args.iter().all(stands_for_the_argument) {
        return None;
    }
    let path = render(&f.path);
    let written = render(value);
    Some(format!(
        "`{key} = {written}` calls the function; name the function, do not call it: write \
         `{key} = {path}` (the retry calls it with each {what})",
        what = match key {
            "retry_if_ok" => "`Ok` value",
            "recover" => "final error",
            k if k.ends_with("_into") => "failure it converts",
            _ => "error",
        }
    ))
}

/// `timeout = 2.5`: a decimal number where a duration string is taken, told the string with
/// its unit, in seconds and in milliseconds (each one the runtime's parser reads).
pub(crate) fn decimal_duration(key: &str, lit: &Lit) -> Option<String> {
    let Lit::Float(f) = lit else { return None };
    let digits = f.base10_digits();
    let seconds: f64 = digits
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s > 0.0)?;
    let millis = seconds * 1000.0;
    let ms = if (millis - millis.round()).abs() < 1e-9 {
        format!(" or `{key} = \"{}ms\"`", millis.round())
    } else {
        String::new()
    };
    Some(format!(
        "`{key}` takes a duration string, not a bare number: write it with its unit, such as \
         `{key} = \"{digits}s\"`{ms}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(s: &str) -> Expr {
        syn::parse_str(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_called_function_is_told_to_be_named() {
        for (key, value, fix) in [
            (
                "retry_if",
                "reattempt::transient()",
                "`retry_if = reattempt::transient`",
            ),
            ("retry_after", "hint()", "`retry_after = hint`"),
            ("recover", "Self::fallback()", "`recover = Self::fallback`"),
            ("on_retry", "log::<E>()", "`on_retry = log::<E>`"),
            (
                "timeout_into",
                "Status::cancelled()",
                "`timeout_into = Status::cancelled`",
            ),
        ] {
            let m = called_fn(key, &expr(value)).unwrap_or_else(|| panic!("{value}"));
            assert!(m.contains(fix) && m.contains("do not call it"), "{m}");
        }
        // A call with other arguments builds a predicate; a path or a closure is one; other
        // keys are not functions.
        for (key, value) in [
            ("retry_if", "status_in(500..600)"),
            ("retry_if", "transient_in(region)"),
            ("retry_if", "transient_for(&e, 3)"),
            ("retry_if", "reattempt::transient"),
            ("retry_if", "|e| transient(e)"),
            ("circuit_breaker", "breaker()"),
            ("policy", "policy()"),
        ] {
            assert_eq!(called_fn(key, &expr(value)), None, "{key} = {value}");
        }
    }

    #[test]
    fn a_decimal_duration_keeps_its_digits_in_a_string_the_runtime_reads() {
        for (written, secs, ms) in [
            ("2.5", "\"2.5s\"", Some("\"2500ms\"")),
            ("0.25", "\"0.25s\"", Some("\"250ms\"")),
            ("1.0", "\"1.0s\"", Some("\"1000ms\"")),
            ("0.0001", "\"0.0001s\"", None),
        ] {
            let Expr::Lit(l) = expr(written) else {
                panic!("{written}")
            };
            let m = decimal_duration("timeout", &l.lit).unwrap_or_else(|| panic!("{written}"));
            assert!(m.contains(&format!("`timeout = {secs}`")), "{m}");
            let parse = |s: &str| retry_rules::parse_duration(s.trim_matches('"'));
            assert!(parse(secs).is_ok(), "{secs}");
            match ms {
                Some(ms) => {
                    assert!(m.contains(&format!("`timeout = {ms}`")), "{m}");
                    assert_eq!(parse(ms).ok(), parse(secs).ok(), "{ms}");
                }
                None => assert!(!m.contains("ms\""), "{m}"),
            }
        }
    }
}
