//! `jitter` written as a range of multipliers, told the kind or factor that draws it.

use syn::{Expr, Lit};

/// `jitter` written as a range of multipliers (`0.5..1.5`, `"0.5-1.5"`, `"±50%"`): the jitter
/// kind, or the factor, that draws the same range, when there is one.
pub(super) fn jitter_range(key: &str, value: &Expr) -> Option<String> {
    if key != "jitter" {
        return None;
    }
    let (low, high) = match value {
        Expr::Range(r) => (
            r.start.as_deref().and_then(number_of)?,
            r.end.as_deref().and_then(number_of)?,
        ),
        Expr::Tuple(t) if t.elems.len() == 2 => (number_of(&t.elems[0])?, number_of(&t.elems[1])?),
        Expr::Array(t) if t.elems.len() == 2 => (number_of(&t.elems[0])?, number_of(&t.elems[1])?),
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => range_text(&s.value())?,
        _ => return None,
    };
    // A range as written, without the spaces tokens print around `..` and `..=`.
    let written = crate::render::render(value)
        .replace(" ..= ", "..=")
        .replace("..= ", "..=")
        .replace(" .. ", "..");
    Some(jitter_range_fix(&written, low, high))
}

/// A number written in an expression (`0.5`, `1`).
fn number_of(e: &Expr) -> Option<f64> {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Float(f), ..
        }) => f.base10_parse().ok(),
        Expr::Lit(syn::ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse().ok(),
        _ => None,
    }
}

/// A range of multipliers written as text: `"0.5..1.5"`, `"0.5-1.5"`, `"0.5 to 1.5"`,
/// `"±50%"` / `"+-0.5"` (1 ± the value).
fn range_text(text: &str) -> Option<(f64, f64)> {
    let t = text.trim();
    let percent = |x: &str| -> Option<f64> {
        // `0.5x`, `1.5×`: a multiplier written as one.
        let x = x.trim().trim_end_matches(['x', '×']).trim();
        x.strip_suffix('%').map_or_else(
            || x.parse().ok(),
            |p| p.trim().parse::<f64>().ok().map(|p| p / 100.0),
        )
    };
    if let Some(rest) = t
        .strip_prefix('±')
        .or_else(|| t.strip_prefix("+-"))
        .or_else(|| t.strip_prefix("+/-"))
    {
        let f = percent(rest)?;
        return Some((1.0 - f, 1.0 + f));
    }
    // `50%`: a spread either side of the delay.
    if let Some(p) = t
        .strip_suffix('%')
        .and_then(|p| p.trim().parse::<f64>().ok())
    {
        return Some((1.0 - p / 100.0, 1.0 + p / 100.0));
    }
    for sep in ["..=", "..", " to ", "–", "-", ","] {
        if let Some((a, b)) = t.split_once(sep)
            && let (Some(a), Some(b)) = (percent(a), percent(b))
        {
            return Some((a, b));
        }
    }
    None
}

/// The message for a jitter range of multipliers `[low, high]`: the kind or factor drawing
/// the same range, else the nearest (ranges here are centred on the delay).
fn jitter_range_fix(written: &str, low: f64, high: f64) -> String {
    let head = format!(
        "`jitter` takes a kind or a factor, not a range of multipliers (`{written}`, each delay times a random {low}–{high})"
    );
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    // `-0.5..0.5`: an addition to a multiplier of 1, written around 0.
    if low < 0.0 && close(low, -high) && high <= 1.0 {
        return format!(
            "{head}: a range around 0 is 1 ± {high}, and a factor f draws from 1 − f to 1 + f, so write `jitter = {high}`"
        );
    }
    if !(low.is_finite() && high.is_finite()) || low < 0.0 || high <= low {
        return format!(
            "{head}: write `jitter = \"full\"` (0–1), `jitter = \"equal\"` (0.5–1) or a factor f in (0, 1] for 1 − f to 1 + f, such as `jitter = 0.5` (0.5–1.5)"
        );
    }
    if close(low, 0.0) && close(high, 1.0) {
        return format!("{head}: that is full jitter, write `jitter = \"full\"`");
    }
    if close(low, 0.5) && close(high, 1.0) {
        return format!("{head}: that is equal jitter, write `jitter = \"equal\"`");
    }
    let f = (high - low) / 2.0;
    let f_text = format!("{}", (f * 1000.0).round() / 1000.0);
    if close(low + high, 2.0) && f > 0.0 && f <= 1.0 {
        return format!(
            "{head}: a factor f draws from 1 − f to 1 + f, so write `jitter = {f_text}`"
        );
    }
    let f = f.min(1.0);
    let f_text = format!("{}", (f * 1000.0).round() / 1000.0);
    format!(
        "{head}: a factor f draws from 1 − f to 1 + f, centred on the delay, so the nearest is `jitter = {f_text}` ({}–{}); or `jitter = \"full\"` (0–1), `jitter = \"equal\"` (0.5–1)",
        (1.0 - f).max(0.0),
        1.0 + f
    )
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use crate::args::tests::errors_of;

    #[test]
    fn a_jitter_percentage_or_multiplier_range_is_told_the_factor() {
        for (written, factor) in [
            (quote!(jitter = "50%"), "0.5"),
            (quote!(jitter = "0.5x-1.5x"), "0.5"),
            (quote!(jitter = "±10%"), "0.1"),
            (quote!(jitter = [0.75, 1.25]), "0.25"),
        ] {
            let m = errors_of(written.clone());
            assert!(
                m.len() == 1 && m[0].contains(&format!("write `jitter = {factor}`")),
                "{written}: {m:?}"
            );
        }
        let m = errors_of(quote!(jitter = 0.5..=1.0));
        assert!(m[0].contains("`jitter = \"equal\"`"), "{m:?}");
        let m = errors_of(quote!(jitter = "-0.5..0.5"));
        assert!(m[0].contains("write `jitter = 0.5`"), "{m:?}");
        let m = errors_of(quote!(jitter = 0.8..1.0));
        assert!(m[0].contains("the nearest is `jitter = 0.1`"), "{m:?}");
    }
}
