//! The arguments of `#[retryable(...)]`: parsed with darling (the two pattern lists by hand, since
//! patterns are not expressions), then checked. The schedule's rules are the runtime's own
//! (`RetryPolicyBuilder::build`), run here at expansion time; each error is spanned at its token.

use std::collections::HashMap;
use std::time::Duration;

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::{Span, TokenStream};
use retry_runtime::{Backoff, Jitter, PolicySettings};
use syn::parse::{ParseStream, Parser};
use syn::{Expr, Lit, LitStr, Pat, Path, Token};

/// The checked arguments.
pub(crate) struct RetryArgs {
    pub(crate) schedule: Schedule,
    pub(crate) retry_on: Option<Vec<Pat>>,
    pub(crate) no_retry_on: Option<Vec<Pat>>,
    pub(crate) retry_if: Option<Expr>,
    pub(crate) retry_if_ok: Option<Expr>,
    pub(crate) retry_after: Option<Expr>,
    pub(crate) on_retry: Option<Expr>,
    pub(crate) recover: Option<Path>,
    pub(crate) name: Option<LitStr>,
    pub(crate) krate: Path,
    pub(crate) circuit_breaker: Option<Expr>,
    pub(crate) budget: Option<Expr>,
    pub(crate) policy: Option<Expr>,
}

/// The schedule keys that were given, with the span of each value.
#[derive(Default)]
pub(crate) struct Schedule {
    pub(crate) settings: PolicySettings,
    /// Where each key's value was written, for errors found later (a `timeout` on a blocking fn).
    pub(crate) spans: HashMap<&'static str, Span>,
}

impl Schedule {
    /// Drops a key found invalid, so the remaining keys can still be checked.
    fn forget(&mut self, field: &str) {
        let s = &mut self.settings;
        match field {
            "max_attempts" => s.max_attempts = None,
            "delay" => s.delay = None,
            "multiplier" => s.multiplier = None,
            "max_delay" => s.max_delay = None,
            "jitter" => s.jitter = None,
            "timeout" => s.timeout = None,
            "max_elapsed" => s.max_elapsed = None,
            _ => s.backoff = None,
        }
    }

    /// Runs the runtime's rules, reporting every broken one at its key's value.
    fn check(&mut self, errors: &mut Vec<syn::Error>) {
        // Each pass drops the key at fault; there are only eight keys.
        for _ in 0..8 {
            let Err(e) = self.settings.builder().build() else {
                return;
            };
            let span = self
                .spans
                .get(e.field())
                .copied()
                .unwrap_or_else(Span::call_site);
            errors.push(syn::Error::new(span, fix_hint(&e)));
            self.forget(e.field());
        }
    }

    pub(crate) fn span_of(&self, key: &str) -> Span {
        self.spans.get(key).copied().unwrap_or_else(Span::call_site)
    }
}

/// The runtime's message, plus how to fix it where that is not obvious.
fn fix_hint(e: &retry_runtime::PolicyError) -> String {
    use retry_runtime::PolicyError as P;
    match e {
        P::ZeroAttempts => format!("{e}; use `max_attempts = 1` for no retries"),
        P::ZeroDuration { .. } => format!("{e}; write a positive duration such as \"100ms\""),
        P::DelayAboveMaxDelay { .. } => format!("{e}; lower `delay` or raise `max_delay`"),
        _ => e.to_string(),
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
        let message = "`max_attempts` is a whole number of attempts, the first included, from 1 to 4294967295";
        match expr {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Int(i), ..
            }) => i
                .base10_parse::<u32>()
                .map(|n| AttemptsArg(n, i.span()))
                .map_err(|_| darling::Error::custom(message).with_span(i)),
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
    backoff: Option<LitStr>,
    multiplier: Option<NumberArg>,
    max_delay: Option<DurationArg>,
    jitter: Option<JitterArg>,
    timeout: Option<DurationArg>,
    max_elapsed: Option<DurationArg>,
    retry_if: Option<Expr>,
    retry_if_ok: Option<Expr>,
    retry_after: Option<Expr>,
    on_retry: Option<Expr>,
    recover: Option<RecoverArg>,
    name: Option<NameArg>,
    #[darling(rename = "crate")]
    krate: Option<LitStr>,
    circuit_breaker: Option<Expr>,
    budget: Option<Expr>,
    policy: Option<Expr>,
}

const PATTERN_KEYS: [&str; 2] = ["retry_on", "no_retry_on"];

/// The attribute's items, split: pattern lists parsed here, the rest left for darling.
#[derive(Default)]
struct Split {
    retry_on: Option<Vec<Pat>>,
    no_retry_on: Option<Vec<Pat>>,
    rest: Vec<NestedMeta>,
}

fn split(args: TokenStream) -> syn::Result<Split> {
    let parser = |input: ParseStream<'_>| {
        let mut out = Split::default();
        while !input.is_empty() {
            let fork = input.fork();
            let key = fork
                .parse::<syn::Ident>()
                .ok()
                .filter(|k| fork.peek(Token![=]) && PATTERN_KEYS.iter().any(|p| k == p));
            if let Some(key) = key {
                input.parse::<syn::Ident>()?;
                input.parse::<Token![=]>()?;
                if !input.peek(syn::token::Bracket) {
                    return Err(input.error(format!(
                        "`{key}` takes a list of patterns in brackets, as in `{key} = [MyError::Unavailable, MyError::Http(500..=599)]`"
                    )));
                }
                let content;
                syn::bracketed!(content in input);
                let mut pats = Vec::new();
                while !content.is_empty() {
                    pats.push(Pat::parse_multi(&content)?);
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
            } else {
                out.rest.push(input.parse::<NestedMeta>()?);
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

fn parse_duration(
    arg: Option<DurationArg>,
    key: &'static str,
    spans: &mut HashMap<&'static str, Span>,
    errors: &mut Vec<syn::Error>,
) -> Option<Duration> {
    let DurationArg(lit) = arg?;
    spans.insert(key, lit.span());
    match humantime::parse_duration(&lit.value()) {
        Ok(d) => Some(d),
        Err(e) => {
            errors.push(syn::Error::new(
                lit.span(),
                format!(
                    "invalid duration {:?} for `{key}`: {e}; write it like \"250ms\", \"2s\" or \"1m 30s\"",
                    lit.value()
                ),
            ));
            None
        }
    }
}

/// `policy = …` sets the whole schedule at run time: no schedule key may stand beside it.
fn exclude_schedule_keys(schedule: &Schedule, errors: &mut Vec<syn::Error>) {
    let mut keys: Vec<_> = schedule.spans.iter().collect();
    keys.sort_by_key(|(key, _)| **key);
    for (key, span) in keys {
        errors.push(syn::Error::new(
            *span,
            format!("`{key}` cannot be combined with `policy`, which sets the whole schedule; set it in the policy instead"),
        ));
    }
}

impl RetryArgs {
    /// Parses and checks the attribute's arguments, reporting every error found.
    pub(crate) fn parse(args: TokenStream) -> Result<Self, syn::Error> {
        let split = split(args)?;
        let raw = RawArgs::from_list(&split.rest)
            .map_err(|e| e.add_sibling_alts_for_unknown_field(&PATTERN_KEYS))?;

        let mut errors = Vec::new();
        let mut s = Schedule::default();
        if let Some(AttemptsArg(n, span)) = raw.max_attempts {
            s.spans.insert("max_attempts", span);
            s.settings.max_attempts = Some(n);
        }
        let spans = &mut s.spans;
        let settings = &mut s.settings;
        settings.delay = parse_duration(raw.delay, "delay", spans, &mut errors);
        settings.max_delay = parse_duration(raw.max_delay, "max_delay", spans, &mut errors);
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
        if raw.policy.is_some() {
            exclude_schedule_keys(&s, &mut errors);
        } else {
            s.check(&mut errors);
        }

        let krate = raw.krate.as_ref().map_or_else(
            || syn::parse_quote!(::reattempt),
            |lit| {
                lit.parse::<Path>().unwrap_or_else(|_| {
                    errors.push(syn::Error::new(
                        lit.span(),
                        "`crate` must be a path to the reattempt facade, such as \"::reattempt\"",
                    ));
                    syn::parse_quote!(::reattempt)
                })
            },
        );

        if let Some(e) = combine(errors) {
            return Err(e);
        }

        Ok(RetryArgs {
            schedule: s,
            retry_on: split.retry_on,
            no_retry_on: split.no_retry_on,
            retry_if: raw.retry_if,
            retry_if_ok: raw.retry_if_ok,
            retry_after: raw.retry_after,
            on_retry: raw.on_retry,
            recover: raw.recover.map(|r| r.0),
            name: raw.name.map(|n| n.0),
            krate,
            circuit_breaker: raw.circuit_breaker,
            budget: raw.budget,
            policy: raw.policy,
        })
    }
}

/// Joins errors into one, keeping each one's span; `None` when there are none.
pub(crate) fn combine(errors: impl IntoIterator<Item = syn::Error>) -> Option<syn::Error> {
    errors.into_iter().reduce(|mut a, e| {
        a.combine(e);
        a
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn errors_of(args: TokenStream) -> Vec<String> {
        match RetryArgs::parse(args) {
            Ok(_) => vec![],
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn accepts_every_key() {
        let a = RetryArgs::parse(quote!(
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
            crate = "::my_reattempt"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.schedule.settings.max_attempts, Some(4));
        assert_eq!(a.schedule.settings.max_delay, Some(Duration::from_secs(2)));
        assert_eq!(a.retry_on.as_ref().map(Vec::len), Some(2));
        assert!(a.recover.is_some());
    }

    #[test]
    fn reports_all_errors_at_once() {
        let errs = errors_of(quote!(
            max_attempts = 0,
            delay = "2 parsecs",
            jitter = "ful"
        ));
        assert_eq!(errs.len(), 3, "{errs:?}");
    }

    #[test]
    fn suggests_close_keys() {
        let errs = errors_of(quote!(max_atempts = 3));
        assert!(errs[0].contains("max_attempts"), "{errs:?}");
        let errs = errors_of(quote!(retry_onn = [E::A]));
        assert!(errs[0].contains("retry_on"), "{errs:?}");
    }

    #[test]
    fn runtime_rules_apply() {
        let errs = errors_of(quote!(delay = "3s", max_delay = "2s"));
        assert!(errs[0].contains("max_delay"), "{errs:?}");
        let errs = errors_of(quote!(backoff = "fixed", multiplier = 3));
        assert!(errs[0].contains("exponential"), "{errs:?}");
        let errs = errors_of(quote!(multiplier = 0.5, timeout = "0s"));
        assert_eq!(errs.len(), 2, "{errs:?}");
    }
}
