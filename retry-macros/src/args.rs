//! The arguments of `#[retryable(...)]`, parsed: with darling (the two pattern lists by hand, since
//! patterns are not expressions), each item's shape checked first so that a mistake gets its
//! fix; each error is spanned at its token. `valid` then checks the values against each other
//! and against the function.

use std::collections::HashMap;
use std::time::Duration;

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::{Span, TokenStream};
use retry_rules::{Backoff, HedgeAfter, Jitter, LogError, PolicySettings};
use syn::parse::{ParseStream, Parser};
use syn::{Expr, Lit, LitStr, Pat, Path, Token};

use crate::key_shapes::{self, rest_of_item};
use crate::util::combine;

/// The arguments, as read (`valid` checks them against each other and against the function).
pub(crate) struct RetryArgs {
    pub(crate) schedule: Schedule,
    pub(crate) retry_on: Option<Vec<Pat>>,
    pub(crate) no_retry_on: Option<Vec<Pat>>,
    pub(crate) retry_if: Option<Expr>,
    pub(crate) retry_if_ok: Option<Expr>,
    pub(crate) retry_after: Option<Expr>,
    pub(crate) delay_for: Option<Expr>,
    pub(crate) on_retry: Option<Expr>,
    pub(crate) recover: Option<Path>,
    pub(crate) name: Option<LitStr>,
    pub(crate) krate: Path,
    pub(crate) circuit_breaker: Option<Expr>,
    pub(crate) budget: Option<Expr>,
    pub(crate) policy: Option<Expr>,
    pub(crate) throttle: Option<Expr>,
    pub(crate) bulkhead: Option<Expr>,
    /// How the library's own failures become the function's error, when the error type has no
    /// conversion of its own (another crate's type): see `convert` in the runtime.
    pub(crate) into: Conversions,
    /// Where each key was written (its name), for errors about the key as a whole.
    pub(crate) key_spans: HashMap<String, Span>,
}

/// The `…_into` keys: each a path or a closure that captures nothing, `fn(Failure) -> E`.
#[derive(Default)]
pub(crate) struct Conversions {
    pub(crate) timeout: Option<Expr>,
    pub(crate) breaker_open: Option<Expr>,
    pub(crate) throttled: Option<Expr>,
    pub(crate) bulkhead_full: Option<Expr>,
}

impl RetryArgs {
    /// Where `key` was written (the attribute, if it was not).
    pub(crate) fn key_span(&self, key: &str) -> Span {
        self.key_spans
            .get(key)
            .copied()
            .unwrap_or_else(Span::call_site)
    }
}

/// The schedule keys that were given, with the span of each value.
#[derive(Default)]
pub(crate) struct Schedule {
    pub(crate) settings: PolicySettings,
    /// Where each key's value was written, for errors found later (a `timeout` on a blocking fn).
    pub(crate) spans: HashMap<&'static str, Span>,
}

impl Schedule {
    pub(crate) fn span_of(&self, key: &str) -> Span {
        self.spans.get(key).copied().unwrap_or_else(Span::call_site)
    }
}

/// A duration argument: a string literal such as `"200ms"`.
struct DurationArg(LitStr);

impl FromMeta for DurationArg {
    fn from_value(lit: &Lit) -> darling::Result<Self> {
        match lit {
            Lit::Str(s) => Ok(DurationArg(s.clone())),
            _ => Err(darling::Error::custom(
                "a duration is a string such as \"250ms\", \"2s\" or \"1m 30s\"",
            )
            .with_span(lit)),
        }
    }
}

/// `max_attempts = 4`: a whole number that fits in `u32` (its lower bound is the runtime's rule).
struct AttemptsArg(u32, Span);

impl FromMeta for AttemptsArg {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        let message = format!(
            "`max_attempts` is a whole number of attempts, the first included, from 1 to {}",
            retry_rules::PolicySettings::MAX_ATTEMPTS
        );
        match expr {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Int(i), ..
            }) => i
                .base10_parse::<u32>()
                .map(|n| AttemptsArg(n, i.span()))
                .map_err(|_| darling::Error::custom(message).with_span(i)),
            // "Retry until the deadline": the runtime reads it as its most attempts.
            other if is_u32_max(other) => {
                Ok(AttemptsArg(u32::MAX, syn::spanned::Spanned::span(other)))
            }
            other => Err(darling::Error::custom(message).with_span(other)),
        }
    }
}

/// `name = "charge"`.
struct NameArg(LitStr);

impl FromMeta for NameArg {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        match expr {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(s), ..
            }) => Ok(NameArg(s.clone())),
            other => Err(darling::Error::custom(
                "`name` is a string literal, as in `name = \"charge\"`",
            )
            .with_span(other)),
        }
    }
}

/// `recover = Self::fallback`.
struct RecoverArg(Path);

impl FromMeta for RecoverArg {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        match expr {
            Expr::Path(p) if p.qself.is_none() => Ok(RecoverArg(p.path.clone())),
            other => Err(darling::Error::custom(
                "`recover` takes the path of a #[recover] function, as in `recover = Self::fallback` or `recover = fallback`",
            )
            .with_span(other)),
        }
    }
}

/// A number argument that may be written `2` or `1.5`.
struct NumberArg(f64, Span);

impl FromMeta for NumberArg {
    fn from_value(lit: &Lit) -> darling::Result<Self> {
        let value = match lit {
            Lit::Float(f) => f.base10_parse::<f64>(),
            Lit::Int(i) => i.base10_parse::<f64>(),
            _ => {
                return Err(
                    darling::Error::custom("expected a number such as `2` or `1.5`").with_span(lit),
                );
            }
        };
        value
            .map(|v| NumberArg(v, lit.span()))
            .map_err(|e| darling::Error::from(e).with_span(lit))
    }
}

/// `jitter = "full"` or `jitter = 0.5`.
struct JitterArg(String, Span);

impl FromMeta for JitterArg {
    fn from_value(lit: &Lit) -> darling::Result<Self> {
        match lit {
            Lit::Str(s) => Ok(JitterArg(s.value(), s.span())),
            Lit::Float(f) => Ok(JitterArg(f.base10_digits().to_owned(), f.span())),
            Lit::Int(i) => Ok(JitterArg(i.base10_digits().to_owned(), i.span())),
            _ => Err(darling::Error::custom(
                "expected \"none\", \"full\", \"equal\", \"decorrelated\" or a factor in (0, 1]",
            )
            .with_span(lit)),
        }
    }
}

/// Every key except the two pattern lists, as darling sees them.
#[derive(FromMeta)]
struct RawArgs {
    max_attempts: Option<AttemptsArg>,
    delay: Option<DurationArg>,
    throttling_delay: Option<DurationArg>,
    backoff: Option<LitStr>,
    multiplier: Option<NumberArg>,
    max_delay: Option<DurationArg>,
    jitter: Option<JitterArg>,
    timeout: Option<DurationArg>,
    max_elapsed: Option<DurationArg>,
    log_error: Option<LitStr>,
    hedge_after: Option<LitStr>,
    retry_if: Option<Expr>,
    retry_if_ok: Option<Expr>,
    retry_after: Option<Expr>,
    delay_for: Option<Expr>,
    on_retry: Option<Expr>,
    recover: Option<RecoverArg>,
    name: Option<NameArg>,
    #[darling(rename = "crate")]
    krate: Option<LitStr>,
    circuit_breaker: Option<Expr>,
    budget: Option<Expr>,
    policy: Option<Expr>,
    one_layer: Option<syn::LitBool>,
    idempotent: Option<syn::LitBool>,
    throttle: Option<Expr>,
    bulkhead: Option<Expr>,
    timeout_into: Option<Expr>,
    breaker_open_into: Option<Expr>,
    throttled_into: Option<Expr>,
    bulkhead_full_into: Option<Expr>,
}

const PATTERN_KEYS: [&str; 2] = ["retry_on", "no_retry_on"];

/// The attribute's items, split: pattern lists parsed here, the rest left for darling.
#[derive(Default)]
struct Split {
    retry_on: Option<Vec<Pat>>,
    no_retry_on: Option<Vec<Pat>>,
    /// Where each pattern list's key was written.
    key_spans: Vec<(String, Span)>,
    rest: Vec<NestedMeta>,
}

fn split(args: TokenStream) -> syn::Result<Split> {
    let parser = |input: ParseStream<'_>| {
        let mut out = Split::default();
        while !input.is_empty() {
            key_shapes::colon_for_equals(input)?;
            key_shapes::kebab_case_key(input)?;
            key_shapes::config_file_key(input)?;
            let fork = input.fork();
            let key = fork
                .parse::<syn::Ident>()
                .ok()
                .filter(|k| fork.peek(Token![=]) && PATTERN_KEYS.iter().any(|p| k == p));
            if let Some(key) = key {
                input.parse::<syn::Ident>()?;
                input.parse::<Token![=]>()?;
                if !input.peek(syn::token::Bracket) {
                    return Err(not_bracketed(&key, input));
                }
                let content;
                syn::bracketed!(content in input);
                let mut pats = Vec::new();
                while !content.is_empty() {
                    let pat = Pat::parse_multi(&content)?;
                    if let Some(e) = catch_all(&key, &pat) {
                        return Err(e);
                    }
                    pats.push(pat);
                    if content.peek(Token![if]) {
                        return Err(content.error(format!(
                            "patterns in `{key}` take no `if` guard; for a condition, use `retry_if = |e| …`"
                        )));
                    }
                    if content.is_empty() {
                        break;
                    }
                    content.parse::<Token![,]>()?;
                }
                let slot = if key == "retry_on" {
                    &mut out.retry_on
                } else {
                    &mut out.no_retry_on
                };
                if slot.is_some() {
                    return Err(syn::Error::new(
                        key.span(),
                        format!("duplicate `{key}`: list every pattern in one `{key} = [..]`"),
                    ));
                }
                if pats.is_empty() {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "`{key}` needs at least one pattern, as in `{key} = [MyError::Unavailable]`"
                        ),
                    ));
                }
                *slot = Some(pats);
                out.key_spans.push((key.to_string(), key.span()));
            } else {
                out.rest.push(ungrouped(input.parse::<NestedMeta>()?));
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(out)
    };
    parser.parse2(args)
}

/// The item with its value out of the invisible groups a `macro_rules!` fragment puts around
/// it (`$d:literal`, `$e:expr`, `$r:path` are each one `Group` with `Delimiter::None`). syn reads
/// such a value as `Expr::Group` unless it is a lone literal at the end of the list, and every
/// check here (and darling) looks for an `Expr::Lit` or an `Expr::Path`: without this, the same
/// tokens were the wrong kind of value as soon as another key followed them.
fn ungrouped(item: NestedMeta) -> NestedMeta {
    match item {
        NestedMeta::Meta(syn::Meta::NameValue(mut nv)) => {
            while let Expr::Group(g) = nv.value {
                nv.value = *g.expr;
            }
            NestedMeta::Meta(syn::Meta::NameValue(nv))
        }
        other => other,
    }
}

/// `retry_on = E::A` or `retry_on = "E::A"` or `retry_on = is_transient`: the brackets are
/// missing, or a predicate was meant.
fn not_bracketed(key: &syn::Ident, input: ParseStream<'_>) -> syn::Error {
    let span = input.span();
    let value = rest_of_item(input);
    let text = match syn::parse2::<LitStr>(value.clone()) {
        Ok(s) => s.value(),
        Err(_) => crate::known_keys::render(&value),
    };
    if let Some(message) = crate::value_rules::retry_conditions(&key.to_string(), &text) {
        return syn::Error::new(span, message);
    }
    let fix = match syn::parse2::<Expr>(value) {
        Ok(Expr::Closure(_)) => format!("for a predicate, write `retry_if = {text}`"),
        Ok(Expr::Path(p)) if p.path.get_ident().is_some_and(is_lowercase) => {
            format!("for a predicate fn, write `retry_if = {text}`")
        }
        _ => format!("write `{key} = [{text}]`"),
    };
    syn::Error::new(
        span,
        format!("`{key}` takes a list of patterns in brackets: {fix}"),
    )
}

fn is_lowercase(ident: &syn::Ident) -> bool {
    let name = ident.to_string();
    name.trim_start_matches("r#")
        .chars()
        .next()
        .is_some_and(|c| c.is_lowercase() || c == '_')
}

/// A pattern that matches every error, which in `retry_on`/`no_retry_on` is a mistake: `_`, or
/// a lone lowercase name (`is_transient`, `e`), which Rust reads as a binding, not as a
/// function or a constant, or either under `&` or in a tuple of such. Upper-case names
/// (`Unavailable` after `use PayError::*`, `TIMEOUT`) are left to the compiler, which resolves
/// them as variants or constants; the expansion names them as values too, so that one that
/// resolves to nothing is an error, not a binding (see `patterns`).
fn catch_all(key: &syn::Ident, pat: &Pat) -> Option<syn::Error> {
    let every = if key == "retry_on" {
        "every error is retried by default: remove `retry_on` to retry every error"
    } else {
        "to retry nothing, write `max_attempts = 1`"
    };
    match pat {
        // `retry_on = ["5xx", "reset"]`: Envoy's conditions, not the error's patterns.
        Pat::Lit(syn::PatLit {
            lit: Lit::Str(s), ..
        }) => crate::value_rules::retry_conditions(&key.to_string(), &s.value())
            .map(|m| syn::Error::new(s.span(), m)),
        Pat::Wild(w) => Some(syn::Error::new(
            w.underscore_token.span,
            format!("`_` in `{key}` matches every error; {every}"),
        )),
        Pat::Ident(p) => match &p.subpat {
            Some((_, sub)) => catch_all(key, sub),
            None if p.by_ref.is_some() || p.mutability.is_some() || is_lowercase(&p.ident) => {
                let name = &p.ident;
                let fix = if key == "retry_on" {
                    format!("for a predicate fn, write `retry_if = {name}`")
                } else {
                    format!("for a predicate fn, write `retry_if = |e| !{name}(e)`")
                };
                Some(syn::Error::new(
                    name.span(),
                    format!(
                        "`{name}` in `{key}` is a binding that matches every error, not a function or a constant: \
                         {fix}; for a constant, name it by its path (`Self::{upper}`)",
                        upper = name.to_string().to_uppercase()
                    ),
                ))
            }
            None => None,
        },
        Pat::Or(or) => or.cases.iter().find_map(|p| catch_all(key, p)),
        Pat::Paren(p) => catch_all(key, &p.pat),
        Pat::Reference(r) => catch_all(key, &r.pat),
        Pat::Tuple(t)
            if t.elems
                .iter()
                .all(|p| matches!(p, Pat::Rest(_)) || catch_all(key, p).is_some()) =>
        {
            Some(syn::Error::new(
                t.paren_token.span.join(),
                format!("this tuple pattern in `{key}` matches every error; {every}"),
            ))
        }
        _ => None,
    }
}

fn parse_duration(
    arg: Option<DurationArg>,
    key: &'static str,
    spans: &mut HashMap<&'static str, Span>,
    errors: &mut Vec<syn::Error>,
) -> Option<Duration> {
    let DurationArg(lit) = arg?;
    spans.insert(key, lit.span());
    // The runtime's reader, as config files use: both refuse what a person most likely
    // mistyped (a capital `M`, a unit written twice).
    match retry_rules::parse_duration(&lit.value()) {
        Ok(d) => Some(d),
        // `timeout = "PT2S"` (Java's `Duration`, ISO-8601): the same duration as written here.
        Err(_) if crate::value_rules::iso_duration(&lit.value()).is_some() => {
            let text = crate::value_rules::iso_duration(&lit.value()).unwrap_or_default();
            errors.push(syn::Error::new(
                lit.span(),
                format!(
                    "{:?} is an ISO-8601 duration, which `{key}` does not read: write `{key} = \"{text}\"`",
                    lit.value()
                ),
            ));
            None
        }
        Err(e) => {
            let e = e.to_string();
            // Its advice, where it gives one; otherwise the forms to write.
            let hint = if e.contains("write ") {
                ""
            } else {
                "; write it like \"250ms\", \"2s\" or \"1m 30s\""
            };
            errors.push(syn::Error::new(
                lit.span(),
                format!("invalid duration {:?} for `{key}`: {e}{hint}", lit.value()),
            ));
            None
        }
    }
}

/// An example value of each key, for messages.
fn example(key: &str) -> &'static str {
    match key {
        "max_attempts" => "3",
        "delay" => "\"200ms\"",
        "backoff" => "\"exponential\"",
        "multiplier" => "2",
        "max_delay" => "\"10s\"",
        "throttling_delay" => "\"2s\"",
        "jitter" => "\"full\"",
        "timeout" => "\"1s\"",
        "max_elapsed" => "\"30s\"",
        "log_error" => "\"debug\"",
        "hedge_after" => "\"50ms\"",
        "retry_on" => "[MyError::Unavailable]",
        "no_retry_on" => "[MyError::Declined]",
        "retry_if" => "reattempt::transient",
        "retry_if_ok" => "|v| v.is_pending()",
        "retry_after" => "retry_after_hint",
        "delay_for" => "|e, attempt, computed| e.wait().or(Some(computed))",
        "on_retry" => "log_retry",
        "recover" => "fallback",
        "name" => "\"charge\"",
        "crate" => "\"::reattempt\"",
        "circuit_breaker" => "BREAKER",
        "budget" => "BUDGET",
        "one_layer" | "idempotent" => "true",
        "throttle" => "THROTTLE",
        "bulkhead" => "BULKHEAD",
        "timeout_into" => "|elapsed| Status::deadline_exceeded(elapsed.to_string())",
        "breaker_open_into" => "|open| Status::unavailable(open.to_string())",
        "throttled_into" => "|shed| Status::unavailable(shed.to_string())",
        "bulkhead_full_into" => "|full| Status::resource_exhausted(full.to_string())",
        _ => "POLICY",
    }
}

/// What an expression-valued key's value must give, for messages.
fn expr_kind(key: &str) -> Option<&'static str> {
    Some(match key {
        "retry_if" => "a path or closure, `Fn(&E) -> bool`",
        "retry_if_ok" => "a path or closure, `Fn(&T) -> bool`",
        "retry_after" => "a path or closure, `Fn(&E) -> Option<Duration>`",
        "delay_for" => "a path or closure, `Fn(&E, u32, Duration) -> Option<Duration>`",
        "on_retry" => "a path or closure, `Fn(&E, &reattempt::RetryContext, Duration)`",
        "circuit_breaker" => {
            "a `CircuitBreaker` the call borrows (a `static`, `self.breaker`, an `Arc<CircuitBreaker>`)"
        }
        "budget" => {
            "a `RetryBudget` the call borrows (a `static`, `self.budget`, an `Arc<RetryBudget>`)"
        }
        "throttle" => {
            "an `AdaptiveThrottle` the call borrows (a `static`, `self.throttle`, an `Arc<AdaptiveThrottle>`)"
        }
        "bulkhead" => {
            "a `Bulkhead` the call borrows (a `static`, `self.bulkhead`, an `Arc<Bulkhead>`)"
        }
        "policy" => "a `RetryPolicy` the call borrows (a `static`, a `LazyLock`, `self.policy`)",
        "recover" => "the path of a #[recover] fn (`fallback`, `Self::fallback`)",
        "timeout_into" => {
            "a path or a closure that captures nothing, `fn(reattempt::Elapsed) -> E`"
        }
        "breaker_open_into" => {
            "a path or a closure that captures nothing, `fn(reattempt::BreakerOpen) -> E`"
        }
        "throttled_into" => {
            "a path or a closure that captures nothing, `fn(reattempt::Throttled) -> E`"
        }
        "bulkhead_full_into" => {
            "a path or a closure that captures nothing, `fn(reattempt::BulkheadFull) -> E`"
        }
        _ => return None,
    })
}

fn lit_expr(expr: &Expr) -> Option<&Lit> {
    match expr {
        Expr::Lit(l) => Some(&l.lit),
        _ => None,
    }
}

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
                _ => format!("{here} = {}", crate::known_keys::render(&nv.value)),
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
fn check_items(items: Vec<NestedMeta>, errors: &mut Vec<syn::Error>) -> Vec<NestedMeta> {
    use crate::known_keys::{KEYS, render, unknown_key};
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
    use crate::known_keys::{DURATION_KEYS, KEYS, render, unknown_key};
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
];

/// A named constant, a field, a call or arithmetic where a literal is required (`delay = DELAY`,
/// `max_attempts = config.retries`, `max_attempts = 2 + 1`): the macro reads and checks these
/// values as it expands, before any constant or configuration has a value, so it cannot read
/// them. The message says so and gives the two ways out: the literal, or `policy = …`.
fn not_a_literal(key: &str, value: &Expr) -> Option<String> {
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
                    crate::known_keys::render(value)
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
        Expr::Call(_) if crate::known_keys::duration_call(value).is_some() => return None,
        Expr::Call(_) => "a call",
        Expr::Binary(_) => "arithmetic",
        Expr::Macro(_) => "a macro call",
        Expr::Index(_) => "an index",
        _ => return None,
    };
    let written = crate::known_keys::render(value);
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
pub(crate) fn is_u32_max(value: &Expr) -> bool {
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

/// `jitter` written as a range of multipliers (`0.5..1.5`, `"0.5-1.5"`, `"±50%"`): the jitter
/// kind, or the factor, that draws the same range, when there is one.
fn jitter_range(key: &str, value: &Expr) -> Option<String> {
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
    let written = crate::known_keys::render(value)
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
pub(crate) fn range_text(text: &str) -> Option<(f64, f64)> {
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
pub(crate) fn jitter_range_fix(written: &str, low: f64, high: f64) -> String {
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

/// A bare word where a string is expected (`backoff = exponential`, `name = charge`), or a
/// string where a number is (`max_attempts = "3"`).
fn word_for_string(key: &str, value: &Expr) -> Option<String> {
    let word = match value {
        Expr::Path(p) if p.qself.is_none() => Some(p.path.segments.last()?.ident.to_string()),
        _ => None,
    };
    let lit = lit_expr(value);
    match key {
        "backoff" | "jitter" => {
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
                    Expr::Call(c) => crate::known_keys::duration_call(value).or_else(|| {
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
                Expr::Path(p) => crate::known_keys::render(&p.path),
                _ => return None,
            };
            Some(format!("`name` takes a string: write `name = \"{text}\"`"))
        }
        "crate" => {
            let text = match value {
                Expr::Path(p) => crate::known_keys::render(&p.path),
                _ => return None,
            };
            Some(format!(
                "`crate` takes the path in a string: write `crate = \"{text}\"`"
            ))
        }
        "one_layer" | "idempotent" => bool_fix(key, lit?),
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

/// The values of `log_error`, for messages.
const LOG_ERROR_VALUES: &str = "one of \"none\" (nothing), \"type\" (the error type's name; the default) or \"debug\" (its `Debug` text, secrets included)";

/// The value of `log_error` that a word most likely means (`Debug`, `LogError::TypeName`, `off`).
fn log_error_name(word: &str) -> Option<&'static str> {
    let lower = word.trim().to_lowercase().replace(['-', ' '], "_");
    Some(match lower.as_str() {
        "debug" | "full" | "all" | "verbose" | "whole" | "error" => "debug",
        "type" | "typename" | "type_name" | "name" | "kind" | "default" => "type",
        "none" | "off" | "no" | "false" | "never" | "nothing" | "silent" | "hidden" | "redact"
        | "redacted" => "none",
        _ => {
            return ["none", "type", "debug"]
                .into_iter()
                .map(|v| (crate::known_keys::edit_distance(&lower, v), v))
                .filter(|(d, _)| *d <= 2)
                .min()
                .map(|(_, v)| v);
        }
    })
}

/// An unknown `log_error` value: the runtime's message, the values, and the likely one.
fn log_error_fix(text: &str, e: &retry_rules::ParseLogError) -> String {
    let near = log_error_name(text);
    let mut message = format!("{e}");
    if text.trim().eq_ignore_ascii_case("display") {
        message.push_str(
            "; there is no \"display\": an error's `Display` can carry a secret as its `Debug` does \
             (a `reqwest::Error` shows its URL); to log chosen parts of an error, do it in `on_retry`",
        );
    }
    match near {
        Some(v) => format!("{message}; did you mean `log_error = \"{v}\"`?"),
        None => format!("{message}; `log_error` takes {LOG_ERROR_VALUES}"),
    }
}

/// The arguments as read, and the errors of the values that could not be read: each such key is
/// left unset, so that `valid` still checks the others (and reports them all together).
pub(crate) struct Parsed {
    pub(crate) args: RetryArgs,
    /// The values that could not be read (a duration, a name), in the order the keys are read.
    pub(crate) unread: Vec<syn::Error>,
    /// `crate`'s value, when it is not a path (read last: reported after the keys' checks).
    pub(crate) unread_crate: Option<syn::Error>,
}

/// The settings beside the schedule's numbers, as written.
struct OtherSettings<'a> {
    log_error: Option<&'a LitStr>,
    hedge_after: Option<&'a LitStr>,
    one_layer: Option<&'a syn::LitBool>,
    idempotent: Option<&'a syn::LitBool>,
}

/// The settings beside the schedule's numbers: `log_error`, `hedge_after`, `one_layer`,
/// `idempotent`.
fn read_other_settings(raw: &OtherSettings<'_>, s: &mut Schedule, errors: &mut Vec<syn::Error>) {
    if let Some(lit) = raw.log_error {
        s.spans.insert("log_error", lit.span());
        match lit.value().parse::<LogError>() {
            Ok(log) => s.settings.log_error = Some(log),
            Err(e) => errors.push(syn::Error::new(lit.span(), log_error_fix(&lit.value(), &e))),
        }
    }
    if let Some(lit) = raw.hedge_after {
        s.spans.insert("hedge_after", lit.span());
        match lit.value().parse::<HedgeAfter>() {
            Ok(h) => s.settings.hedge_after = Some(h),
            Err(e) => errors.push(syn::Error::new(
                lit.span(),
                format!("invalid `hedge_after`: {e}; write a duration such as \"50ms\" or a quantile such as \"p95\""),
            )),
        }
    }
    if let Some(lit) = raw.one_layer {
        s.spans.insert("one_layer", lit.span());
        s.settings.one_layer = Some(lit.value);
    }
    if let Some(lit) = raw.idempotent {
        s.spans.insert("idempotent", lit.span());
        s.settings.idempotent = Some(lit.value);
    }
}

/// Parses the attribute's arguments. A mistake in an item's shape (an unknown key, a value of
/// the wrong kind) fails the parse, with every such mistake reported; a value that cannot be read
/// is reported in [`Parsed`], beside the others.
/// Where each key of `items` is written (its name).
fn key_spans(items: &[NestedMeta]) -> HashMap<String, Span> {
    items
        .iter()
        .filter_map(|item| match item {
            NestedMeta::Meta(m) => m.path().get_ident().map(|i| (i.to_string(), i.span())),
            NestedMeta::Lit(_) | NestedMeta::NameValueInvalidExpr(_) => None,
        })
        .collect()
}

pub(crate) fn parse(args: TokenStream) -> syn::Result<Parsed> {
    let mut split = split(args)?;
    let mut errors = Vec::new();
    let items = std::mem::take(&mut split.rest);
    let items = check_items(items, &mut errors);
    let mut key_spans = key_spans(&items);
    key_spans.extend(std::mem::take(&mut split.key_spans));
    let raw = match RawArgs::from_list(&items) {
        Ok(raw) => raw,
        Err(e) => {
            errors.push(e.into());
            return Err(combine(errors).unwrap_or_else(|| unreachable!("one error at least")));
        }
    };
    if let Some(e) = combine(std::mem::take(&mut errors)) {
        return Err(e);
    }
    let mut s = Schedule::default();
    if let Some(AttemptsArg(n, span)) = raw.max_attempts {
        s.spans.insert("max_attempts", span);
        s.settings.max_attempts = Some(n);
    }
    let spans = &mut s.spans;
    let settings = &mut s.settings;
    settings.delay = parse_duration(raw.delay, "delay", spans, &mut errors);
    settings.max_delay = parse_duration(raw.max_delay, "max_delay", spans, &mut errors);
    settings.throttling_delay =
        parse_duration(raw.throttling_delay, "throttling_delay", spans, &mut errors);
    settings.timeout = parse_duration(raw.timeout, "timeout", spans, &mut errors);
    settings.max_elapsed = parse_duration(raw.max_elapsed, "max_elapsed", spans, &mut errors);
    if let Some(lit) = &raw.backoff {
        s.spans.insert("backoff", lit.span());
        match lit.value().parse::<Backoff>() {
            Ok(b) => s.settings.backoff = Some(b),
            Err(msg) => errors.push(syn::Error::new(lit.span(), msg)),
        }
    }
    if let Some(NumberArg(m, span)) = raw.multiplier {
        s.spans.insert("multiplier", span);
        s.settings.multiplier = Some(m);
    }
    if let Some(JitterArg(text, span)) = &raw.jitter {
        s.spans.insert("jitter", *span);
        // A number is a proportional factor, whose range the runtime's rules check.
        match text
            .parse::<f64>()
            .map_or_else(|_| text.parse::<Jitter>(), |f| Ok(Jitter::Proportional(f)))
        {
            Ok(j) => s.settings.jitter = Some(j),
            Err(e) => errors.push(syn::Error::new(*span, e.to_string())),
        }
    }
    let others = OtherSettings {
        log_error: raw.log_error.as_ref(),
        hedge_after: raw.hedge_after.as_ref(),
        one_layer: raw.one_layer.as_ref(),
        idempotent: raw.idempotent.as_ref(),
    };
    read_other_settings(&others, &mut s, &mut errors);
    let mut unread_crate = None;
    let krate = raw.krate.as_ref().map_or_else(
        || syn::parse_quote!(::reattempt),
        |lit| {
            lit.parse::<Path>().unwrap_or_else(|_| {
                unread_crate = Some(syn::Error::new(
                    lit.span(),
                    "`crate` must be a path to the reattempt facade, such as \"::reattempt\"",
                ));
                syn::parse_quote!(::reattempt)
            })
        },
    );

    let args = RetryArgs {
        schedule: s,
        retry_on: split.retry_on,
        no_retry_on: split.no_retry_on,
        retry_if: raw.retry_if,
        retry_if_ok: raw.retry_if_ok,
        retry_after: raw.retry_after,
        delay_for: raw.delay_for,
        on_retry: raw.on_retry,
        recover: raw.recover.map(|r| r.0),
        name: raw.name.map(|n| n.0),
        krate,
        circuit_breaker: raw.circuit_breaker,
        budget: raw.budget,
        policy: raw.policy,
        throttle: raw.throttle,
        bulkhead: raw.bulkhead,
        into: Conversions {
            timeout: raw.timeout_into,
            breaker_open: raw.breaker_open_into,
            throttled: raw.throttled_into,
            bulkhead_full: raw.bulkhead_full_into,
        },
        key_spans,
    };
    Ok(Parsed {
        args,
        unread: errors,
        unread_crate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    /// The parse's errors: those of the shapes, else those of the values it could not read.
    /// A time where a count goes is told the count and where a time limit goes; an ISO-8601
    /// duration is told as the runtime reads it.
    #[test]
    fn a_time_for_a_count_and_an_iso_duration_are_told_their_fix() {
        for (args, says) in [
            (quote!(max_attempts = "5s"), "`max_elapsed = \"5s\"`"),
            (quote!(max_attempts = "500ms"), "`max_elapsed = \"500ms\"`"),
            (quote!(max_attempts = 5s), "`max_elapsed = \"5s\"`"),
            (quote!(max_attempts = "PT5S"), "`max_elapsed = \"5s\"`"),
            (quote!(timeout = "PT2S"), "write `timeout = \"2s\"`"),
            (
                quote!(max_elapsed = "PT1M30S"),
                "write `max_elapsed = \"1m 30s\"`",
            ),
            (quote!(delay = "pt0.5s"), "write `delay = \"0.5s\"`"),
        ] {
            let errs = errors_of(args.clone());
            assert!(
                errs.len() == 1 && errs[0].contains(says),
                "{args}: {errs:?}"
            );
        }
        assert!(errors_of(quote!(max_attempts = 5)).is_empty());
    }

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

    fn parsed(args: TokenStream) -> RetryArgs {
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
        let (delay, attempts, multiplier) =
            (none(quote!("250ms")), none(quote!(4)), none(quote!(1.5)));
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
    fn log_error_takes_one_of_three_names() {
        for (text, log) in [
            ("none", LogError::None),
            ("type", LogError::TypeName),
            ("debug", LogError::Debug),
        ] {
            let a = parsed(quote!(log_error = #text));
            assert_eq!(a.schedule.settings.log_error, Some(log));
        }
        for (args, expected) in [
            (
                quote!(log_error = "Debug"),
                "did you mean `log_error = \"debug\"`?",
            ),
            (
                quote!(log_error = "dbug"),
                "did you mean `log_error = \"debug\"`?",
            ),
            (
                quote!(log_error = "type_name"),
                "did you mean `log_error = \"type\"`?",
            ),
            (
                quote!(log_error = "off"),
                "did you mean `log_error = \"none\"`?",
            ),
            (quote!(log_error = "display"), "there is no \"display\""),
            (quote!(log_error = "xyz"), "\"none\" (nothing), \"type\""),
            (quote!(log_error = debug), "write `log_error = \"debug\"`"),
            (
                quote!(log_error = LogError::TypeName),
                "write `log_error = \"type\"`",
            ),
            (
                quote!(log_error = true),
                "in a string, as in `log_error = \"debug\"`",
            ),
            (quote!(log_eror = "debug"), "did you mean `log_error`?"),
        ] {
            let errs = errors_of(args.clone());
            assert_eq!(errs.len(), 1, "{args}: {errs:?}");
            assert!(errs[0].contains(expected), "{args}: {errs:?}");
        }
        let errs = errors_of(quote!(log_error = "xyz"));
        assert!(errs[0].starts_with("unknown log_error `xyz`"), "{errs:?}");
    }

    #[test]
    fn durations_are_read_by_the_runtimes_parser() {
        let errs = errors_of(quote!(delay = "1M"));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("`delay`"), "{errs:?}");
        assert!(errs[0].contains(r#"write "1m" for minutes"#), "{errs:?}");
        let errs = errors_of(quote!(max_elapsed = "1m 1m"));
        assert!(errs[0].contains("more than once"), "{errs:?}");
        let errs = errors_of(quote!(timeout = "2 parsecs"));
        assert!(errs[0].contains("write it like"), "{errs:?}");
        assert!(errors_of(quote!(delay = "1m 30s", max_delay = "1month")).is_empty());
    }
}

#[cfg(test)]
mod habit_tests {
    use super::tests::errors_of;
    use quote::quote;

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

#[cfg(test)]
mod aws_2026_keys {
    use quote::quote;

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
            let errs = super::tests::errors_of(args.clone());
            let first = errs.first().cloned().unwrap_or_default();
            bad.extend(
                (!(first.contains("policy =") || first.contains("budget =")))
                    .then(|| format!("{args} => {}", &first[..first.len().min(60)])),
            );
        }
        assert!(bad.is_empty(), "{bad:#?}");
    }
}
