//! The keys read as the macro expands, which take a literal: a named constant, a field or a
//! call is told why, and `policy = …`.

use syn::Expr;

use super::examples::example;

/// The keys whose value is read when the macro expands (and checked by the runtime's rules
/// then): each takes a literal.
const LITERAL_KEYS: &[&str] = &[
    "name",
    "max_attempts",
    "delay",
    "throttling_delay",
    "max_delay",
    "timeout",
    "max_elapsed",
    "multiplier",
    "jitter",
    "backoff",
    "hedge_after",
    "log_error",
    "one_layer",
    "idempotent",
    "idle_timeout",
    "progress_resets",
];

/// A named constant, a field, a call or arithmetic where a literal is required (`delay = DELAY`,
/// `max_attempts = config.retries`, `max_attempts = 2 + 1`): the macro reads and checks these
/// values as it expands, before any constant or configuration has a value, so it cannot read
/// them. The message says so and gives the two ways out: the literal, or `policy = …`.
pub(super) fn not_a_literal(key: &str, value: &Expr) -> Option<String> {
    if !LITERAL_KEYS.contains(&key) {
        return None;
    }
    let what = match value {
        // `max_attempts = u32::MAX`: "retry until the deadline", accepted (see `AttemptsArg`).
        _ if key == "max_attempts" && is_u32_max(value) => return None,
        // `usize::MAX`, `i32::MAX` (Java's `Integer.MAX_VALUE`), `Duration::MAX`: "no limit".
        _ if is_a_max(value) => {
            return Some(if key == "max_attempts" {
                format!(
                    "`max_attempts = {}`: for \"retry until the deadline\", write `max_attempts = u32::MAX` \
                     (with `max_elapsed`, or an enclosing call's deadline, to end it)",
                    crate::render::render(value)
                )
            } else if crate::known_keys::DURATION_KEYS.contains(&key) {
                format!("`{key}` has no limit unless it is set: for no limit, leave `{key}` out")
            } else {
                format!("`{key}` takes a literal such as `{key} = {}`", example(key))
            });
        }
        // `backoff = exponential`, `name = charge`: a word meant as a string (`word_for_string`).
        Expr::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?.ident.to_string();
            let constant = last.chars().any(|c| c.is_ascii_uppercase())
                && !last.chars().any(|c| c.is_ascii_lowercase());
            if !constant {
                return None;
            }
            "a named constant"
        }
        Expr::Field(_) => "a field",
        Expr::MethodCall(_) => "a method call",
        // `Duration::from_millis(200)`: `duration_fix` gives the string.
        Expr::Call(_) if crate::value_rules::duration_call(value).is_some() => return None,
        Expr::Call(_) => "a call",
        Expr::Binary(_) => "arithmetic",
        Expr::Macro(_) => "a macro call",
        Expr::Index(_) => "an index",
        _ => return None,
    };
    let written = crate::render::render(value);
    let example = example(key);
    if key == "name" {
        return Some(format!(
            "`name` takes a string literal such as `name = {example}`, not {what}: the macro writes \
             it into the function's events as it expands, before `{written}` has a value"
        ));
    }
    Some(format!(
        "`{key}` takes a literal such as `{key} = {example}`, not {what}: the macro reads and checks \
         the value when it expands, before `{written}` has one. For a schedule from constants or \
         configuration, build a `reattempt::RetryPolicy` (`RetryPolicy::builder().{key}(…).build()`) \
         and pass it with `policy = …` instead of the schedule's keys"
    ))
}

/// `T::MAX` for any `T` (`usize::MAX`, `i32::MAX`, `Duration::MAX`): a "no limit" habit.
fn is_a_max(value: &Expr) -> bool {
    matches!(value, Expr::Path(p) if p.path.segments.len() >= 2
        && p.path.segments.last().is_some_and(|s| s.ident == "MAX"))
}

/// `u32::MAX`, as written for "no limit" (`core::u32::MAX`, `std::u32::MAX` too).
pub(super) fn is_u32_max(value: &Expr) -> bool {
    let Expr::Path(p) = value else { return false };
    let names: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    matches!(
        names
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        ["u32", "MAX"] | ["core" | "std", "u32", "MAX"]
    )
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use crate::args::tests::errors_of;

    #[test]
    fn a_named_constant_or_config_value_is_told_why_and_policy() {
        for written in [
            quote!(max_attempts = MAX),
            quote!(delay = config::DELAY),
            quote!(timeout = self.timeout),
            quote!(max_elapsed = deadline()),
            quote!(multiplier = Self::FACTOR),
            quote!(hedge_after = HEDGE),
            quote!(one_layer = ONE_LAYER),
        ] {
            let m = errors_of(written.clone());
            assert!(
                m.len() == 1 && m[0].contains("takes a literal") && m[0].contains("policy = …"),
                "{written}: {m:?}"
            );
        }
        let m = errors_of(quote!(name = NAME));
        assert!(
            m[0].contains("string literal") && !m[0].contains("policy"),
            "{m:?}"
        );
        assert!(errors_of(quote!(max_attempts = u32::MAX)).is_empty());
        for written in [
            quote!(max_attempts = usize::MAX),
            quote!(max_attempts = i32::MAX),
        ] {
            let m = errors_of(written.clone());
            assert!(
                m.len() == 1 && m[0].contains("write `max_attempts = u32::MAX`"),
                "{written}: {m:?}"
            );
        }
        let m = errors_of(quote!(max_elapsed = Duration::MAX));
        assert!(m[0].contains("leave `max_elapsed` out"), "{m:?}");
        let m = errors_of(quote!(max_retries = u32::MAX));
        assert!(m[0].contains("write `max_attempts = u32::MAX`"), "{m:?}");
        let m = errors_of(quote!(max_retries = -1));
        assert!(m[0].contains("write `max_attempts = u32::MAX`"), "{m:?}");
        assert!(
            errors_of(quote!(delay = Duration::from_millis(200))).len() == 1,
            "told the string, not a literal rule"
        );
    }
}
