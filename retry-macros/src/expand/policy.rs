//! The call's `RetryPolicy`: a `static` built from the schedule's keys, or the `policy`
//! expression.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::args::RetryArgs;
use crate::item;

/// The policy: a `static` built from the keys (checked already), or the `policy` expression.
/// Gives the item to declare (if any) and the expression of a `&RetryPolicy`. An expression
/// naming what the attempts borrow mutably (`self.policy` in a `&mut self` method) is copied
/// into a local first (a `RetryPolicy` is a few plain fields), as the call holds it throughout.
pub(super) fn policy_source(
    args: &RetryArgs,
    p: &TokenStream,
    mutably: &[String],
) -> (TokenStream, TokenStream) {
    if let Some(expr) = &args.policy {
        if mutably.iter().any(|n| item::mentions(quote!(#expr), n)) {
            let local = format_ident!("__reattempt_policy", span = Span::mixed_site());
            let copy = quote_spanned!(expr.span()=>
                ::core::clone::Clone::clone(#p::policy_ref(&#expr))
            );
            return (
                quote!(let #local: #p::RetryPolicy = #copy;),
                quote!(&#local),
            );
        }
        (
            quote!(),
            quote_spanned!(expr.span()=> #p::policy_ref(&#expr)),
        )
    } else {
        let policy = format_ident!("__REATTEMPT_POLICY", span = Span::mixed_site());
        let builder = policy_builder(args, p);
        (
            quote!(static #policy: #p::RetryPolicy = #p::policy(#builder);),
            quote!(&#policy),
        )
    }
}

/// `RetryPolicy::builder()` with each key that was given; validated already by the same rules.
fn policy_builder(args: &RetryArgs, p: &TokenStream) -> TokenStream {
    let s = &args.schedule.settings;
    let duration = |d: std::time::Duration| {
        let (secs, nanos) = (d.as_secs(), d.subsec_nanos());
        quote!(#p::Duration::new(#secs, #nanos))
    };
    let mut calls = Vec::new();
    if let Some(n) = s.max_attempts {
        calls.push(quote!(.max_attempts(#n)));
    }
    if let Some(d) = s.delay {
        let d = duration(d);
        calls.push(quote!(.delay(#d)));
    }
    if let Some(b) = s.backoff {
        let variant = format_ident!("{}", format!("{b:?}"));
        calls.push(quote!(.backoff(#p::Backoff::#variant)));
    }
    if let Some(m) = s.multiplier {
        let m = Literal::f64_suffixed(m);
        calls.push(quote!(.multiplier(#m)));
    }
    if let Some(d) = s.max_delay {
        let d = duration(d);
        calls.push(quote!(.max_delay(#d)));
    }
    if let Some(d) = s.throttling_delay {
        let d = duration(d);
        calls.push(quote!(.throttling_delay(#d)));
    }
    if let Some(j) = s.jitter {
        let j = match j {
            retry_rules::Jitter::Proportional(f) => {
                let f = Literal::f64_suffixed(f);
                quote!(Proportional(#f))
            }
            other => {
                let variant = format_ident!("{}", format!("{other:?}"));
                quote!(#variant)
            }
        };
        calls.push(quote!(.jitter(#p::Jitter::#j)));
    }
    if let Some(d) = s.timeout {
        let d = duration(d);
        calls.push(quote!(.timeout(#d)));
    }
    if let Some(d) = s.max_elapsed {
        let d = duration(d);
        calls.push(quote!(.max_elapsed(#d)));
    }
    if let Some(log) = s.log_error {
        let variant = format_ident!("{}", format!("{log:?}"));
        calls.push(quote!(.log_error(#p::LogError::#variant)));
    }
    match s.hedge_after {
        Some(retry_rules::HedgeAfter::Fixed(d)) => {
            let d = duration(d);
            calls.push(quote!(.hedge_after(#p::HedgeAfter::Fixed(#d))));
        }
        Some(retry_rules::HedgeAfter::Quantile {
            percentile,
            floor,
            start,
        }) => {
            let percentile = Literal::f64_suffixed(percentile);
            let (floor, start) = (duration(floor), duration(start));
            calls.push(quote!(.hedge_after(#p::HedgeAfter::Quantile {
                percentile: #percentile,
                floor: #floor,
                start: #start,
            })));
        }
        None => {}
    }
    if let Some(idempotent) = s.idempotent {
        calls.push(quote!(.idempotent(#idempotent)));
    }
    if let Some(on) = s.one_layer {
        calls.push(quote!(.one_layer(#on)));
    }
    quote!(#p::RetryPolicy::builder() #(#calls)*)
}
