//! The keys as darling reads them (every key except the two pattern lists), each value's type
//! telling a value of the wrong kind its fix.

use darling::FromMeta;
use proc_macro2::Span;
use syn::{Expr, Lit, LitStr, Path};

use super::literal::is_u32_max;

/// A duration argument: a string literal such as `"200ms"`.
pub(super) struct DurationArg(pub(super) LitStr);

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
pub(super) struct AttemptsArg(pub(super) u32, pub(super) Span);

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
pub(super) struct NameArg(pub(super) LitStr);

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
pub(super) struct RecoverArg(pub(super) Path);

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
pub(super) struct NumberArg(pub(super) f64, pub(super) Span);

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
pub(super) struct JitterArg(pub(super) String, pub(super) Span);

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
pub(super) struct RawArgs {
    pub(super) max_attempts: Option<AttemptsArg>,
    pub(super) delay: Option<DurationArg>,
    pub(super) throttling_delay: Option<DurationArg>,
    pub(super) backoff: Option<LitStr>,
    pub(super) multiplier: Option<NumberArg>,
    pub(super) max_delay: Option<DurationArg>,
    pub(super) jitter: Option<JitterArg>,
    pub(super) timeout: Option<DurationArg>,
    pub(super) max_elapsed: Option<DurationArg>,
    pub(super) log_error: Option<LitStr>,
    pub(super) hedge_after: Option<LitStr>,
    pub(super) retry_if: Option<Expr>,
    pub(super) retry_if_ok: Option<Expr>,
    pub(super) retry_after: Option<Expr>,
    pub(super) delay_for: Option<Expr>,
    pub(super) on_retry: Option<Expr>,
    pub(super) recover: Option<RecoverArg>,
    pub(super) name: Option<NameArg>,
    #[darling(rename = "crate")]
    pub(super) krate: Option<LitStr>,
    pub(super) circuit_breaker: Option<Expr>,
    pub(super) budget: Option<Expr>,
    pub(super) policy: Option<Expr>,
    pub(super) one_layer: Option<syn::LitBool>,
    pub(super) idempotent: Option<syn::LitBool>,
    pub(super) throttle: Option<Expr>,
    pub(super) bulkhead: Option<Expr>,
    pub(super) timeout_into: Option<Expr>,
    pub(super) breaker_open_into: Option<Expr>,
    pub(super) throttled_into: Option<Expr>,
    pub(super) bulkhead_full_into: Option<Expr>,
    pub(super) resume: Option<Expr>,
    pub(super) checkpoint: Option<Expr>,
    pub(super) idle_timeout: Option<DurationArg>,
    pub(super) progress_resets: Option<syn::LitBool>,
}
