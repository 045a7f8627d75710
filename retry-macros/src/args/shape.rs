//! Each item's shape, checked before darling reads it: a key this attribute knows, written
//! `key = value`, with a value of the key's kind.

use darling::ast::NestedMeta;
use proc_macro2::{Span, TokenStream};
use syn::{Expr, Lit};

use super::examples::{example, expr_kind};
use super::jitter_range::jitter_range;
use super::literal::not_a_literal;
use super::wrong_kind::{lit_expr, word_for_string};

/// Spring's `@Backoff(delay = 100, multiplier = 2, maxDelay = 5000)` (milliseconds), or the
/// same in our own units, as the keys it stands for.
fn backoff_group(key: &str, inner: TokenStream, at: &dyn quote::ToTokens) -> syn::Error {
    let mut parts = Vec::new();
    if let Ok(metas) = NestedMeta::parse_meta_list(inner) {
        for meta in metas {
            let NestedMeta::Meta(syn::Meta::NameValue(nv)) = meta else {
                continue;
            };
            let Some(name) = nv.path.get_ident().map(ToString::to_string) else {
                continue;
            };
            let here = match name.as_str() {
                "delay" | "value" | "initialDelay" | "initial_delay" => "delay",
                "maxDelay" | "max_delay" => "max_delay",
                "multiplier" => "multiplier",
                _ => continue,
            };
            let text = match lit_expr(&nv.value) {
                // Spring's delays are milliseconds.
                Some(Lit::Int(i)) if here != "multiplier" => {
                    format!("{here} = \"{}ms\"", i.base10_digits())
                }
                _ => format!("{here} = {}", crate::render::render(&nv.value)),
            };
            parts.push(text);
        }
    }
    let fix = if parts.is_empty() {
        "`delay = \"200ms\", multiplier = 2, max_delay = \"10s\"`".to_owned()
    } else {
        format!("`{}`", parts.join(", "))
    };
    syn::Error::new_spanned(
        at,
        format!(
            "`{key}` is one word here, `backoff = \"fixed\" | \"linear\" | \"exponential\"`; \
             the settings of Spring's @Backoff are keys of their own: write {fix}"
        ),
    )
}

/// Checks each item's shape (a key this attribute knows, `key = value`, a value of the key's
/// kind) before darling reads it, so that each mistake gets a message with its fix, and so
/// that darling never parses a string as an expression (`circuit_breaker = "payments"`).
/// Returns the items that passed.
pub(super) fn check_items(items: Vec<NestedMeta>, errors: &mut Vec<syn::Error>) -> Vec<NestedMeta> {
    use crate::known_keys::{KEYS, unknown_key};
    use crate::render::render;
    let mut kept = Vec::new();
    for item in items {
        let error = match &item {
            NestedMeta::Lit(lit) => Some(syn::Error::new(
                lit.span(),
                match lit {
                    Lit::Int(i) => format!(
                        "#[retryable] takes `key = value` pairs: write `max_attempts = {}`",
                        i.base10_digits()
                    ),
                    _ => "#[retryable] takes `key = value` pairs, as in `max_attempts = 3, delay = \"200ms\"`".to_owned(),
                },
            )),
            NestedMeta::NameValueInvalidExpr(nv) => {
                let key = render(&nv.path);
                let value = nv.value.clone();
                let starts_at = value.clone().into_iter().next();
                if let (true, Some(proc_macro2::TokenTree::Punct(_))) =
                    (key == "backoff", &starts_at)
                {
                    // `backoff = @Backoff(delay = 100)`
                    let inner = value
                        .clone()
                        .into_iter()
                        .find_map(|t| match t {
                            proc_macro2::TokenTree::Group(g) => Some(g.stream()),
                            _ => None,
                        })
                        .unwrap_or_default();
                    Some(backoff_group(&key, inner, &value))
                } else if KEYS.contains(&key.as_str()) {
                    Some(syn::Error::new_spanned(
                        &nv.value,
                        format!(
                            "`{key}`'s value is not an expression: write it like `{key} = {}`",
                            example(&key)
                        ),
                    ))
                } else {
                    Some(syn::Error::new_spanned(&nv.path, unknown_key(&key, None)))
                }
            }
            NestedMeta::Meta(meta) => check_meta(meta),
        };
        match error {
            Some(e) => errors.push(e),
            None => kept.push(item),
        }
    }
    kept
}

/// The shape of one `key = value` item (see [`check_items`]).
fn check_meta(meta: &syn::Meta) -> Option<syn::Error> {
    use crate::known_keys::{DURATION_KEYS, KEYS, unknown_key};
    use crate::render::render;
    let path = meta.path();
    // A key is one word (rendered only when it is not, for the message).
    let key = path
        .get_ident()
        .map_or_else(|| render(path), ToString::to_string);
    let key_span = path
        .segments
        .first()
        .map_or_else(Span::call_site, |s| s.ident.span());
    if !KEYS.contains(&key.as_str()) {
        let value = match meta {
            syn::Meta::NameValue(nv) => Some(nv.value.clone()),
            // `stop_after_attempt(3)`, `max_retries(3)`: the one argument is the value.
            syn::Meta::List(l) => syn::parse2::<Expr>(l.tokens.clone()).ok(),
            syn::Meta::Path(_) => None,
        };
        return Some(syn::Error::new(key_span, unknown_key(&key, value.as_ref())));
    }
    let nv = match meta {
        syn::Meta::Path(_) => {
            return Some(syn::Error::new(
                key_span,
                format!("`{key}` needs a value: write `{key} = {}`", example(&key)),
            ));
        }
        syn::Meta::List(l) => {
            if key == "backoff" {
                return Some(backoff_group(&key, l.tokens.clone(), l));
            }
            let inner = render(&l.tokens);
            let fix = if matches!(key.as_str(), "retry_on" | "no_retry_on") {
                format!("`{key} = [{inner}]`")
            } else if inner.is_empty() || inner.contains('=') {
                format!("`{key} = {}`", example(&key))
            } else {
                format!("`{key} = {inner}`")
            };
            return Some(syn::Error::new(
                key_span,
                format!("`{key}` is written `{key} = value`, not `{key}(…)`: write {fix}"),
            ));
        }
        syn::Meta::NameValue(nv) => nv,
    };
    let value = &nv.value;
    if let Some(message) = crate::value_rules::called_fn(&key, value)
        .or_else(|| not_a_literal(&key, value))
        .or_else(|| jitter_range(&key, value))
    {
        return Some(syn::Error::new_spanned(value, message));
    }
    let lit = lit_expr(value);
    // `hedge_after` takes a duration too (or a quantile): a bare number is told the same.
    let numeric = matches!(lit, Some(Lit::Int(_) | Lit::Float(_)));
    let message = if DURATION_KEYS.contains(&key.as_str()) || (key == "hedge_after" && numeric) {
        match lit {
            Some(Lit::Str(_)) => return None,
            _ => Some(duration_message(&key, value, lit)),
        }
    } else if let Some(kind) = expr_kind(&key) {
        match lit {
            Some(Lit::Str(s)) if crate::known_keys::names_a_file(&s.value()) => {
                Some(crate::known_keys::file_message(&key, &s.value()))
            }
            Some(Lit::Str(s)) => {
                let text = s.value();
                let text = if key == "circuit_breaker"
                    || key == "throttle"
                    || key == "bulkhead"
                    || key == "budget"
                    || key == "policy"
                    || key == "recover"
                    || syn::parse_str::<Expr>(&text).is_ok()
                {
                    text
                } else {
                    example(&key).to_owned()
                };
                Some(format!(
                    "`{key}` takes {kind}, not a string: write `{key} = {text}`"
                ))
            }
            _ => None,
        }
    } else {
        word_for_string(&key, value)
    };
    message.map(|m| syn::Error::new_spanned(value, m))
}

/// A duration key's value that is not a string: a number is told its string with a unit (an
/// integer's digits with either unit, a decimal's in seconds and milliseconds), a
/// `Duration::from_millis(200)` its string, anything else an example.
fn duration_message(key: &str, value: &Expr, lit: Option<&Lit>) -> String {
    if let Some(message) = lit.and_then(|l| crate::value_rules::number_duration(key, l)) {
        return message;
    }
    crate::known_keys::duration_fix(key, value, None).map_or_else(
        || {
            format!(
                "`{key}` takes a duration string such as `{key} = {}` (units: ms, s, m, h)",
                example(key)
            )
        },
        |fix| format!("`{key}` takes a duration string: write `{fix}`"),
    )
}
