//! A hedged call: attempts that overlap run through the closure driver
//! (`RetryPolicy::retry`), with the attribute's guards as its settings.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::conversions::conversion;
use crate::args::RetryArgs;

/// The parts of a hedged call's expansion.
pub(super) struct Hedged<'a> {
    pub(super) per_attempt: &'a [TokenStream],
    pub(super) stmts: &'a [TokenStream],
    pub(super) pin: &'a TokenStream,
    pub(super) as_result: &'a TokenStream,
    pub(super) hooks: &'a TokenStream,
    pub(super) name: TokenStream,
    /// A timed-out attempt's conversion, when attempts are timed.
    pub(super) timed: Option<TokenStream>,
}

/// The breaker and budget expressions of a hedged call (its arguments are never borrowed
/// mutably, so each is evaluated once), as closure-API settings.
pub(super) fn mut_guards(args: &RetryArgs, p: &TokenStream) -> TokenStream {
    let mut settings = quote!();
    // Each conversion first, so that the guard added after it uses it (see `conversion`).
    if let Some(b) = &args.circuit_breaker {
        let into = conversion(
            args.into.breaker_open.as_ref(),
            quote!(#p::from_breaker_open),
            args.key_span("circuit_breaker"),
            p,
        );
        let breaker = quote_spanned!(b.span()=> #p::breaker_ref(&#b));
        settings.extend(quote!(.breaker_open_into(#into).circuit_breaker(#breaker)));
    }
    if let Some(g) = &args.budget {
        let budget = quote_spanned!(g.span()=> #p::budget_ref(&#g));
        settings.extend(quote!(.budget(#budget)));
        // A run-time policy may be long-polling: the call then keeps its outcome for the wait
        // (as the loop does: see `expand`). A literal schedule never long-polls.
        if args.policy.is_some() {
            settings.extend(quote!(.long_polling_wait()));
        }
    }
    if let Some(t) = &args.throttle {
        let into = conversion(
            args.into.throttled.as_ref(),
            quote!(#p::from_throttled),
            args.key_span("throttle"),
            p,
        );
        let throttle = quote_spanned!(t.span()=> #p::throttle_ref(&#t));
        settings.extend(quote!(.throttled_into(#into).throttle(#throttle)));
    }
    if let Some(b) = &args.bulkhead {
        let into = conversion(
            args.into.bulkhead_full.as_ref(),
            quote!(#p::from_bulkhead_full),
            args.key_span("bulkhead"),
            p,
        );
        let bulkhead = quote_spanned!(b.span()=> #p::bulkhead_ref(&#b));
        settings.extend(quote!(.bulkhead_full_into(#into).bulkhead(#bulkhead)));
    }
    settings
}

/// `policy.retry(|| { per-attempt bindings; async move { body } })` with the hooks, the name,
/// the guards and the timeout's conversion, awaited.
pub(super) fn hedged_call(
    h: &Hedged<'_>,
    policy_ref: &TokenStream,
    p: &TokenStream,
    guards: &TokenStream,
) -> TokenStream {
    let Hedged {
        per_attempt,
        stmts,
        pin,
        as_result,
        hooks,
        name,
        timed,
    } = h;
    // With a timeout, its conversion (see `timeout_into`).
    let timeout = timed.as_ref().map_or_else(
        || quote!(.without_timeout()),
        |into| quote!(.timeout_into(#p::timeout_fn(#into))),
    );
    quote! {
        #p::RetryPolicy::retry(#policy_ref, || {
            #(#per_attempt)*
            async move {
                #as_result(async move { #pin #(#stmts)* }.await)
            }
        })
        .hooks(#hooks)
        .name(#name)
        #guards
        #timeout
    }
}
