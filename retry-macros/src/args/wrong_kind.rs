//! A value of the wrong kind of literal: a bare word for a string, a string for a number or a
//! bool, a time for a count.

use syn::{Expr, Lit};

use super::examples::example;
use super::log_error::{LOG_ERROR_VALUES, log_error_name};

pub(super) fn lit_expr(expr: &Expr) -> Option<&Lit> {
    match expr {
        Expr::Lit(l) => Some(&l.lit),
        _ => None,
    }
}

/// A bare word where a string is expected (`backoff = exponential`, `name = charge`), or a
/// string where a number is (`max_attempts = "3"`).
pub(super) fn word_for_string(key: &str, value: &Expr) -> Option<String> {
    let word = match value {
        Expr::Path(p) if p.qself.is_none() => Some(p.path.segments.last()?.ident.to_string()),
        _ => None,
    };
    let lit = lit_expr(value);
    match key {
        "backoff" | "jitter" => shape_word(key, value, word, lit),
        "log_error" => match (lit, word) {
            (Some(Lit::Str(_)), _) => None,
            // `log_error = debug`, `log_error = LogError::Debug`
            (_, Some(word)) if log_error_name(&word).is_some() => Some(format!(
                "`log_error` takes a string: write `log_error = \"{}\"`",
                log_error_name(&word).unwrap_or_default()
            )),
            _ => Some(format!(
                "`log_error` takes {LOG_ERROR_VALUES} in a string, as in `log_error = \"debug\"`"
            )),
        },
        "name" => {
            let text = match value {
                Expr::Path(p) => crate::render::render(&p.path),
                _ => return None,
            };
            Some(format!("`name` takes a string: write `name = \"{text}\"`"))
        }
        "crate" => {
            let text = match value {
                Expr::Path(p) => crate::render::render(&p.path),
                _ => return None,
            };
            Some(format!(
                "`crate` takes the path in a string: write `crate = \"{text}\"`"
            ))
        }
        "one_layer" | "idempotent" | "progress_resets" => bool_fix(key, lit?),
        // `max_attempts = "5s"`, `max_attempts = 5s`: a time where a count goes.
        "max_attempts" if lit.is_some_and(|l| duration_text(l).is_some()) => time_for_a_count(lit?),
        "max_attempts" | "multiplier" => match lit {
            Some(Lit::Str(s)) if s.value().trim().parse::<f64>().is_ok() => Some(format!(
                "`{key}` takes a number, not a string: write `{key} = {}`",
                s.value().trim()
            )),
            _ => None,
        },
        _ => None,
    }
}

/// `backoff` or `jitter` written as a bare word, a bool or a call (`backoff = exponential`,
/// `jitter = true`, `backoff = ExponentialBackoff::from_millis(10)`): the name in a string.
fn shape_word(key: &str, value: &Expr, word: Option<String>, lit: Option<&Lit>) -> Option<String> {
    match lit {
        Some(Lit::Str(_)) => return None,
        Some(Lit::Int(_) | Lit::Float(_)) if key == "jitter" => return None,
        _ => {}
    }
    if let Some(Lit::Bool(b)) = lit {
        let v = if b.value { "full" } else { "none" };
        return Some(format!(
            "`{key}` takes a name in a string: write `{key} = \"{v}\"`"
        ));
    }
    let Some(word) = word.map(|w| w.to_lowercase()) else {
        // `backoff = ExponentialBackoff::from_millis(10)` (tokio-retry)
        let delay = match value {
            Expr::Call(c) => crate::value_rules::duration_call(value).or_else(|| {
                let Expr::Path(f) = &*c.func else { return None };
                let ty = f.path.segments.first()?.ident.to_string().to_lowercase();
                ty.contains("exponential").then(String::new)
            }),
            _ => None,
        };
        return Some(match (key, delay) {
            ("backoff", Some(d)) if !d.is_empty() => format!(
                "`backoff` takes the shape's name in a string; the first delay is `delay`: \
                     write `backoff = \"exponential\", delay = {d}`"
            ),
            _ => format!(
                "`{key}` takes one of {} in a string, as in `{key} = {}`",
                if key == "backoff" {
                    "\"fixed\", \"linear\", \"exponential\""
                } else {
                    "\"none\", \"full\", \"equal\", \"decorrelated\", or a factor in (0, 1]"
                },
                example(key)
            ),
        });
    };
    let known: &[&str] = if key == "backoff" {
        &["fixed", "linear", "exponential"]
    } else {
        &["none", "full", "equal", "decorrelated"]
    };
    Some(if known.contains(&word.as_str()) {
        format!("`{key}` takes a string: write `{key} = \"{word}\"`")
    } else {
        format!(
            "`{key}` takes one of {} in a string, as in `{key} = {}`",
            known
                .iter()
                .map(|k| format!("\"{k}\""))
                .collect::<Vec<_>>()
                .join(", "),
            example(key)
        )
    })
}

/// The duration a literal written for a count means, as the runtime's parser reads it: a string
/// that is a duration (`"5s"`, `"PT5S"`) or a number with a unit suffix (`5s`).
fn duration_text(lit: &Lit) -> Option<String> {
    let text = match lit {
        Lit::Str(s) => s.value(),
        Lit::Int(i) if !i.suffix().is_empty() => format!("{}{}", i.base10_digits(), i.suffix()),
        Lit::Float(f) if !f.suffix().is_empty() => {
            format!("{}{}", f.base10_digits(), f.suffix())
        }
        _ => return None,
    };
    let text = text.trim();
    // A bare number (`"5"`) is a count; `5u32` a typed one.
    if text.parse::<f64>().is_ok() {
        return None;
    }
    crate::value_rules::iso_duration(text).or_else(|| {
        retry_rules::parse_duration(text)
            .is_ok()
            .then(|| text.to_owned())
    })
}

/// `max_attempts = "5s"`: the count, and where a time limit goes.
fn time_for_a_count(lit: &Lit) -> Option<String> {
    Some(format!(
        "`max_attempts` is a count of attempts (the first included), not a time: write \
         `max_attempts = 3`; a time limit on the whole call is `max_elapsed = \"{}\"`",
        duration_text(lit)?
    ))
}

/// `idempotent = "yes"`, `one_layer = 1`: a bool key takes `true` or `false`, bare; `None` for a
/// bool.
fn bool_fix(key: &str, lit: &Lit) -> Option<String> {
    let yes = match lit {
        Lit::Bool(_) => return None,
        Lit::Str(s) => !matches!(
            s.value().trim().to_lowercase().as_str(),
            "false" | "no" | "off" | "0"
        ),
        Lit::Int(i) => i.base10_digits() != "0",
        _ => true,
    };
    Some(format!(
        "`{key}` takes `true` or `false`, bare: write `{key} = {yes}`"
    ))
}
