//! Rules for a known key's value written by a habit that reads another way here, each checked
//! before darling reads the value, each message at the value:
//!
//! - **A function called instead of named.** The keys that take a function (`retry_if`,
//!   `retry_after`, `recover`, the `…_into` conversions) take its path; a call of a path with no
//!   arguments (`retry_if = reattempt::transient()`), with only the name its argument would
//!   have (`is_transient(&e)`), or with one borrowed value (`is_retryable(&status)`), calls it
//!   once, in the expansion, where it lacks its argument. A call that builds a predicate
//!   (`reattempt::tonic::codes(&[Code::Aborted])`, `status_in(&RETRYABLE)`) is left alone.
//!   Otherwise rustc reports two errors, the first at the attribute.
//! - **A duration written as a number** (`timeout = 2.5`, `hedge_after = 50ms`): the unit goes
//!   in a string, and the number keeps its digits (`timeout = "2.5s"`, `"50ms"`), an exponent
//!   written out; every suggestion is one the runtime's parser reads.
//!
//! Beside them, `duration_call` reads a duration written as a `Duration` call
//! (`Duration::from_millis(200)`) as the string it stands for, for these messages and those of
//! `known_keys`.

use syn::{Expr, Lit};

use crate::render::render;

/// The keys whose value is a function (or a closure), named by its path.
pub(crate) const FN_KEYS: &[&str] = &[
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

/// The keys whose function takes one argument, the error (or the `Ok` value): a closure that
/// calls the written function is one of them.
const ONE_ARGUMENT_KEYS: &[&str] = &["retry_if", "retry_if_ok", "retry_after"];

/// `is_retryable(&status)`, `is_transient(&E)`, `check(&resp.status)`: one argument that
/// borrows a value, which is what a predicate is called with, and not what builds one. A
/// builder's borrowed argument is a list or a constant (`codes(&[Code::Aborted])`,
/// `status_in(&RETRYABLE)`, `&Self::CODES`), not flagged.
fn borrows_the_argument(key: &str, args: &[&Expr]) -> bool {
    if !matches!(
        key,
        "retry_if" | "retry_if_ok" | "retry_after" | "delay_for" | "on_retry"
    ) {
        return false;
    }
    let [Expr::Reference(r)] = args else {
        return false;
    };
    match &*r.expr {
        Expr::Path(p) => {
            p.qself.is_none()
                && p.path.get_ident().is_some_and(|i| {
                    let name = i.to_string();
                    // `RETRYABLE` is a constant; `E`, `e`, `status`, `Status` stand for a value.
                    let constant = name.len() > 1 && !name.chars().any(|c| c.is_ascii_lowercase());
                    !constant
                })
        }
        Expr::Field(_) | Expr::MethodCall(_) | Expr::Unary(_) | Expr::Paren(_) => true,
        _ => false,
    }
}

/// `key = path()` (or `path(&e)`, `path(&status)`): the function is called instead of named.
pub(crate) fn called_fn(key: &str, value: &Expr) -> Option<String> {
    if !FN_KEYS.contains(&key) {
        return None;
    }
    let Expr::Call(call) = value else { return None };
    let Expr::Path(f) = &*call.func else {
        return None;
    };
    let args: Vec<&Expr> = call.args.iter().collect();
    if !(args.iter().all(|a| stands_for_the_argument(a)) || borrows_the_argument(key, &args)) {
        return None;
    }
    let path = render(&f.path);
    let written = render(value);
    let param = if key == "retry_if_ok" { "v" } else { "e" };
    let closure = if ONE_ARGUMENT_KEYS.contains(&key) && !args.is_empty() {
        format!(", or write a closure: `{key} = |{param}| {path}({param})`")
    } else {
        String::new()
    };
    Some(format!(
        "`{key} = {written}` calls the function; name the \
         function, do not call it: write `{key} = {path}` (the retry calls it with each \
         {what}){closure}",
        what = match key {
            "retry_if_ok" => "`Ok` value",
            "recover" => "final error",
            k if k.ends_with("_into") => "failure it converts",
            _ => "error",
        }
    ))
}

/// Whether `text` is a duration the runtime's parser reads (every suggested duration is one).
fn reads(text: &str) -> bool {
    retry_rules::parse_duration(text).is_ok()
}

/// A number's digits as a plain decimal (`1e3` → `1000`, `1e-3` → `0.001`), since the
/// runtime's parser reads no exponent; the digits as written when they have none.
pub(crate) fn plain_decimal(digits: &str) -> Option<String> {
    if !digits.contains(['e', 'E']) {
        return Some(digits.to_owned());
    }
    let n: f64 = digits.parse().ok()?;
    // `f64`'s `Display` writes no exponent.
    n.is_finite().then(|| n.to_string())
}

/// The Rust type suffixes a number may carry (`2.5_f64`): not a unit.
const TYPE_SUFFIXES: &[&str] = &[
    "", "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64",
    "u128", "usize",
];

/// A number where a duration string is taken (`timeout = 2.5`, `delay = 200`, `hedge_after =
/// 50ms`, `timeout = -1`), told the string the runtime's parser reads: a unit written as the
/// literal's suffix is kept as written, a bare integer offered in ms and in s, a decimal in s
/// (and in ms when whole), each suggestion checked with that parser.
pub(crate) fn number_duration(key: &str, lit: &Lit) -> Option<String> {
    let (digits, suffix) = match lit {
        Lit::Int(i) => (i.base10_digits(), i.suffix()),
        Lit::Float(f) => (f.base10_digits(), f.suffix()),
        _ => return None,
    };
    if digits.starts_with('-') {
        let none = if matches!(key, "timeout" | "max_elapsed" | "max_delay") {
            format!("; for no limit, leave `{key}` out")
        } else {
            String::new()
        };
        return Some(format!(
            "`{key}` is a duration and cannot be negative: write a positive one with its unit, \
             such as `{key} = \"1s\"`{none}"
        ));
    }
    let written = format!("{digits}{suffix}");
    let plain = plain_decimal(digits)?;
    if !TYPE_SUFFIXES.contains(&suffix) {
        // `50ms`: the unit is there, outside the string.
        let text = format!("{plain}{suffix}");
        return Some(if reads(&text) {
            format!(
                "`{key}` takes a duration string: the unit goes inside the quotes: write \
                 `{key} = \"{text}\"`"
            )
        } else {
            format!(
                "`{written}` is not a duration the runtime reads: write a string with a unit of \
                 ns, us, ms, s, m or h, such as `{key} = \"{plain}ms\"`"
            )
        });
    }
    let mut offers: Vec<String> = Vec::new();
    if let Lit::Int(_) = lit {
        offers.push(format!("{plain}ms"));
        offers.push(format!("{plain}s"));
    } else {
        offers.push(format!("{plain}s"));
        let seconds: f64 = plain.parse().ok()?;
        let millis = seconds * 1000.0;
        if (millis - millis.round()).abs() < 1e-9 {
            offers.push(format!("{}ms", millis.round()));
        }
    }
    // `18446744073709551615` (`u64::MAX`, "no limit"): too large in ms, and meant as no limit.
    if !offers.first().is_some_and(|o| reads(o)) {
        let none = if matches!(key, "timeout" | "max_elapsed" | "max_delay") {
            format!(" for no limit, leave `{key}` out;")
        } else {
            String::new()
        };
        return Some(format!(
            "`{key} = {written}` is longer than any duration the runtime reads:{none} write a \
             duration string with its unit, such as `{key} = \"30s\"`"
        ));
    }
    offers.retain(|o| reads(o));
    let such_as = match offers.as_slice() {
        [] | [_] => format!("`{key} = \"{}\"`", offers[0]),
        [one, other, ..] => format!("`{key} = \"{one}\"` or `{key} = \"{other}\"`"),
    };
    Some(format!(
        "`{key}` takes a duration string, not a bare number: write it with its unit, such as \
         {such_as}"
    ))
}

/// An ISO-8601 duration (`PT2S`, `PT1M30S`, `PT0.5S`, `P1D`, Java's `Duration.toString()`),
/// as the runtime's parser reads it (`"2s"`, `"1m 30s"`); `None` when `text` is not one, or
/// has years, months or weeks (of no fixed length).
pub(crate) fn iso_duration(text: &str) -> Option<String> {
    let upper = text.trim().to_ascii_uppercase();
    let rest = upper.strip_prefix('P')?;
    let (days, time) = match rest.split_once('T') {
        Some((d, t)) => (d, t),
        None => (rest, ""),
    };
    let mut parts = Vec::new();
    let mut take = |mut s: &str, units: &[(char, &str)]| -> Option<()> {
        for (letter, unit) in units {
            if let Some((n, after)) = s.split_once(*letter) {
                let n = plain_decimal(n).filter(|n| !n.is_empty() && n.parse::<f64>().is_ok())?;
                if n.parse::<f64>().ok()? != 0.0 {
                    parts.push(format!("{n}{unit}"));
                }
                s = after;
            }
        }
        s.is_empty().then_some(())
    };
    take(days, &[('D', "d")])?;
    take(time, &[('H', "h"), ('M', "m"), ('S', "s")])?;
    if parts.is_empty() {
        return None;
    }
    let out = parts.join(" ");
    reads(&out).then_some(out)
}

/// Envoy's `retry_on` conditions (and its gRPC ones), each a kind of failure of an HTTP or
/// gRPC exchange rather than a pattern of the function's error type.
const ENVOY_CONDITIONS: &[&str] = &[
    "5xx",
    "4xx",
    "gateway-error",
    "reset",
    "reset-before-request",
    "connect-failure",
    "envoy-ratelimited",
    "retriable-4xx",
    "refused-stream",
    "retriable-status-codes",
    "retriable-headers",
    "http3-post-connect-failure",
];

/// gRPC's status codes, as gRPC's service config and Envoy's `retry_on` name them.
const GRPC_CODES: &[&str] = &[
    "cancelled",
    "unknown",
    "invalid-argument",
    "deadline-exceeded",
    "not-found",
    "already-exists",
    "permission-denied",
    "resource-exhausted",
    "failed-precondition",
    "aborted",
    "out-of-range",
    "unimplemented",
    "internal",
    "unavailable",
    "data-loss",
    "unauthenticated",
];

/// `retry_on = "5xx,reset,connect-failure"` (Envoy), `"UNAVAILABLE, DEADLINE_EXCEEDED"` (gRPC),
/// `"502,503"`: a list of an HTTP or gRPC exchange's failures, where `retry_on` takes patterns
/// of the function's error type. Says where each kind of condition is written here.
pub(crate) fn retry_conditions(key: &str, text: &str) -> Option<String> {
    let parts: Vec<String> = text
        .split([',', ' ', ';'])
        .filter(|p| !p.is_empty())
        .map(|p| p.trim().to_ascii_lowercase().replace('_', "-"))
        .collect();
    let is_status = |p: &str| {
        p.len() == 3 && (p.starts_with(['4', '5'])) && p.chars().all(|c| c.is_ascii_digit())
    };
    let known = |p: &String| {
        ENVOY_CONDITIONS.contains(&p.as_str()) || GRPC_CODES.contains(&p.as_str()) || is_status(p)
    };
    if parts.is_empty() || !parts.iter().all(known) {
        return None;
    }
    let grpc = parts.iter().any(|p| GRPC_CODES.contains(&p.as_str()));
    let grpc = if grpc {
        ", gRPC codes in `retry_if = reattempt::tonic::codes(&[Code::Unavailable])`"
    } else {
        ""
    };
    Some(format!(
        "`{text:?}` names retry conditions (Envoy's or gRPC's); `{key}` takes patterns of \
         the function's error type, as in `{key} = [ApiError::Unavailable]`. HTTP statuses go \
         in `retry_if = reattempt::transient` over an `http::StatusCode` error (or the tower \
         `.http()` layer){grpc}"
    ))
}

/// `Duration::from_millis(200)` → `"200ms"`, when the value is written that way.
pub(crate) fn duration_call(expr: &Expr) -> Option<String> {
    let Expr::Call(call) = expr else { return None };
    let Expr::Path(f) = &*call.func else {
        return None;
    };
    let unit = match f.path.segments.last()?.ident.to_string().as_str() {
        "from_millis" => "ms",
        "from_secs" => "s",
        "from_micros" => "us",
        "from_nanos" => "ns",
        "from_mins" => "m",
        _ => return None,
    };
    match call.args.first()? {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Int(i), ..
        }) if call.args.len() == 1 => Some(format!("\"{}{unit}\"", i.base10_digits())),
        _ => None,
    }
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
            ("retry_if", "reattempt::tonic::codes(&[Code::Aborted])"),
            ("retry_if", "status_in(&RETRYABLE)"),
            ("retry_if", "status_in(&Self::CODES)"),
            ("retry_if", "status_in(&[502, 503])"),
            ("recover", "fallback(&cache)"),
            ("circuit_breaker", "breaker()"),
            ("policy", "policy()"),
        ] {
            assert_eq!(called_fn(key, &expr(value)), None, "{key} = {value}");
        }
    }

    /// A predicate called with any borrowed value (`&status`, `&E`, `&resp.status`) is told to
    /// be named, or wrapped in a closure.
    #[test]
    fn a_predicate_called_with_a_borrowed_value_is_told_to_be_named() {
        for (key, value, fix) in [
            (
                "retry_if",
                "is_retryable(&status)",
                "`retry_if = is_retryable`",
            ),
            (
                "retry_if",
                "is_transient(&E)",
                "`retry_if = |e| is_transient(e)`",
            ),
            (
                "retry_if",
                "errors::is_transient(&failure)",
                "`retry_if = errors::is_transient`",
            ),
            ("retry_if", "check(&resp.status)", "`retry_if = check`"),
            (
                "retry_if_ok",
                "is_pending(&job)",
                "`retry_if_ok = |v| is_pending(v)`",
            ),
            ("retry_after", "hint_of(&reply)", "`retry_after = hint_of`"),
            ("on_retry", "log_attempt(&ctx)", "`on_retry = log_attempt`"),
            (
                "delay_for",
                "backoff_for(&Failure)",
                "`delay_for = backoff_for`",
            ),
        ] {
            let m = called_fn(key, &expr(value)).unwrap_or_else(|| panic!("{value}"));
            assert!(m.contains(fix) && m.contains("do not call it"), "{m}");
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
            let m = number_duration("timeout", &l.lit).unwrap_or_else(|| panic!("{written}"));
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

    /// Every suggested duration is read by the runtime's parser: an exponent is written out, a
    /// unit written as the literal's suffix is kept as written (not read as seconds), a
    /// negative number and a number too large for any duration get messages of their own.
    #[test]
    fn every_suggested_duration_is_read_by_the_runtime() {
        for (written, wants) in [
            ("1e3", &["\"1000s\"", "\"1000000ms\""][..]),
            ("1.5e2", &["\"150s\""]),
            ("1e-3", &["\"0.001s\"", "\"1ms\""]),
            ("50ms", &["\"50ms\""]),
            ("2.5ms", &["\"2.5ms\""]),
            ("10s", &["\"10s\""]),
            ("3m", &["\"3m\""]),
            ("1_000", &["\"1000ms\"", "\"1000s\""]),
            ("2.5_f64", &["\"2.5s\"", "\"2500ms\""]),
        ] {
            let lit: Lit = syn::parse_str(written).unwrap();
            let m = number_duration("timeout", &lit).unwrap_or_else(|| panic!("{written}"));
            for want in wants {
                assert!(m.contains(&format!("`timeout = {want}`")), "{written}: {m}");
            }
            for quoted in m.split('`').filter(|p| p.starts_with("timeout = \"")) {
                let text = quoted["timeout = ".len()..].trim_matches('"');
                assert!(reads(text), "{written}: suggests {text:?}: {m}");
            }
        }
        let m = number_duration("delay", &syn::parse_str("2.5ms").unwrap()).unwrap();
        assert!(!m.contains("2500ms") && !m.contains("2.5s"), "{m}");
        let m = number_duration("timeout", &syn::parse_str("-1").unwrap()).unwrap();
        assert!(
            m.contains("cannot be negative") && !m.contains("-1ms"),
            "{m}"
        );
        let m = number_duration("timeout", &syn::parse_str("18446744073709551615").unwrap());
        assert!(m.unwrap().contains("longer than any duration"));
        let m = number_duration("timeout", &syn::parse_str("5M").unwrap()).unwrap();
        assert!(m.contains("not a duration the runtime reads"), "{m}");
    }

    #[test]
    fn retry_conditions_are_told_where_they_belong() {
        for text in [
            "5xx,reset,connect-failure",
            "gateway-error, retriable-4xx",
            "refused-stream,retriable-status-codes",
            "UNAVAILABLE,DEADLINE_EXCEEDED",
            "cancelled,resource-exhausted",
            "502,503,504",
        ] {
            let m = retry_conditions("retry_on", text).unwrap_or_else(|| panic!("{text}"));
            assert!(
                m.contains("retry_if = reattempt::transient")
                    && m.contains("[ApiError::Unavailable]"),
                "{m}"
            );
        }
        assert!(
            retry_conditions("retry_on", "UNAVAILABLE")
                .unwrap()
                .contains("tonic::codes")
        );
        for text in ["ApiError::Timeout", "timeout", "5xx,ApiError::Timeout", ""] {
            assert_eq!(retry_conditions("retry_on", text), None, "{text}");
        }
    }

    #[test]
    fn an_iso_duration_is_told_as_the_runtime_reads_it() {
        for (iso, want) in [
            ("PT2S", "2s"),
            ("PT1M30S", "1m 30s"),
            ("PT0.5S", "0.5s"),
            ("pt100ms", ""),
            ("PT1H", "1h"),
            ("P1DT2H", "1d 2h"),
            ("P1M", ""),
            ("2s", ""),
            ("PT", ""),
        ] {
            let got = iso_duration(iso);
            if want.is_empty() {
                assert_eq!(got, None, "{iso}");
            } else {
                assert_eq!(got.as_deref(), Some(want), "{iso}");
                assert!(reads(want), "{want}");
            }
        }
    }
}
