//! The breaker, the budget, the throttle and the bulkhead around each attempt: each evaluated
//! once per call, asked before each attempt, its rejection the attempt's error.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::conversions::conversion;
use crate::args::RetryArgs;
use crate::item;

/// An attempt under the breaker and budget, if the attribute names them.
pub(super) struct Guarded {
    /// Evaluates the `circuit_breaker` and `budget` expressions, once per call.
    pub(super) bind: TokenStream,
    /// Asks the breaker for a permit before the attempt.
    pub(super) admit: TokenStream,
    /// Runs the attempt, or yields the breaker's rejection as its error.
    pub(super) run: TokenStream,
    /// The `Guards` handed to `decide`.
    pub(super) guards: TokenStream,
    /// Takes the bulkhead's slot, once the call is made (its wait ends by the call's deadline).
    pub(super) slot: TokenStream,
    /// Frees the bulkhead's slot once the attempts are over, before a `#[recover]` fallback
    /// runs (as the closure driver frees it when its future is done).
    pub(super) release: TokenStream,
}

/// The breaker and budget, each evaluated once per call and bound before the loop (`name` is the
/// call's name, as `decide` takes it). Except an
/// expression naming what the attempts borrow mutably (`circuit_breaker = self.breaker` in a
/// `&mut self` method, `conn.breaker` with `conn: &mut Conn`): each attempt reborrows it
/// mutably, so no borrow of it can live across attempts; such an expression is evaluated where
/// it is used (before and after each attempt). The throttle follows the breaker; the bulkhead's
/// slot is taken before the loop (an expression naming what the attempts borrow mutably cannot
/// name a bulkhead: its slot borrows it for the whole call).
pub(super) fn guarded(
    args: &RetryArgs,
    run: TokenStream,
    name: &TokenStream,
    p: &TokenStream,
    mutably: &[String],
    timed: bool,
    is_async: bool,
) -> Guarded {
    let permit = format_ident!("__reattempt_permit", span = Span::mixed_site());
    let call = format_ident!("__reattempt_call", span = Span::mixed_site());
    let budget_ident = format_ident!("__reattempt_budget", span = Span::mixed_site());
    let mut guards = quote!(#p::Guards::NONE);
    let mut bind = quote!();
    // Each guard's rejection as the function's error, spanned at its key's expression, so that
    // a missing `From` is reported there.
    let mut rejections = Vec::new();
    let breaker = breaker(args, p, mutably, &mut bind, &mut rejections);
    if let Some(g) = &args.budget {
        let budget = if per_use(mutably, g) {
            quote_spanned!(g.span()=> #p::budget_ref(&#g))
        } else {
            bind.extend(quote_spanned!(g.span()=> let #budget_ident: &#p::RetryBudget = &#g;));
            quote!(#budget_ident)
        };
        guards = quote!(#p::Guards::budget(#guards, #budget));
    }
    let throttle = throttle(args, p, mutably, &mut bind, &mut rejections);
    let (take_slot, release, full) = bulkhead(args, p, timed, is_async, &mut rejections);
    if rejections.is_empty() {
        return Guarded {
            bind,
            admit: quote!(),
            run,
            guards,
            slot: take_slot,
            release,
        };
    }
    // The engine asks the guards, in its order (`steps::admit`): the bulkhead, the time left,
    // the breaker, the throttle; a rejection is the attempt's error, never made, and ends the
    // call where it is found (`decide_rejected`: with the last outcome kept, if there is one),
    // so that the hooks and the sleep stay off the path of a call that succeeds.
    let reason = format_ident!("__reattempt_reason", span = Span::mixed_site());
    let arms = rejections
        .iter()
        .map(|(variant, error)| quote!(#p::GiveUpReason::#variant => #error,));
    let admit = quote! {
        let #permit = #p::Call::admit(&#call, #breaker, #throttle, #full, #timed);
    };
    let guards = quote!(#p::Guards::admitted(#guards, #breaker, #throttle, #permit));
    // The outcome kept across the sleep, with a breaker or a throttle (see `decision`).
    let last = if args.circuit_breaker.is_some() || args.throttle.is_some() {
        let last = format_ident!("__reattempt_last", span = Span::mixed_site());
        quote!(&mut #last)
    } else {
        quote!(&mut ::core::option::Option::None)
    };
    let run = quote! {
        match #p::Admitted::rejection(&#permit) {
            ::core::option::Option::None => #run,
            ::core::option::Option::Some(#reason) => break #p::Call::decide_rejected(
                &mut #call,
                #name,
                match #reason {
                    #(#arms)*
                    _ => ::core::unreachable!("reattempt: a rejection without its guard"),
                },
                #guards,
                #last,
            ),
        }
    };
    Guarded {
        bind,
        admit,
        run,
        guards,
        slot: take_slot,
        release,
    }
}

/// Whether `e` names what the attempts borrow mutably: then it is evaluated at each use.
fn per_use(mutably: &[String], e: &syn::Expr) -> bool {
    mutably.iter().any(|n| item::mentions(quote!(#e), n))
}

/// A guard's rejection: the `GiveUpReason` variant, and the function's error it becomes.
type Rejection = (TokenStream, TokenStream);

/// The breaker as `admit` takes it (`None` without one), bound in `bind` unless it is evaluated
/// at each use.
fn breaker(
    args: &RetryArgs,
    p: &TokenStream,
    mutably: &[String],
    bind: &mut TokenStream,
    rejections: &mut Vec<Rejection>,
) -> TokenStream {
    let breaker_ident = format_ident!("__reattempt_breaker", span = Span::mixed_site());
    let Some(b) = &args.circuit_breaker else {
        return quote!(::core::option::Option::None);
    };
    // Spanned at the expression, so that a wrong type is reported there.
    let breaker = if per_use(mutably, b) {
        quote_spanned!(b.span()=> #p::breaker_ref(&#b))
    } else {
        bind.extend(quote_spanned!(b.span()=> let #breaker_ident: &#p::CircuitBreaker = &#b;));
        quote!(#breaker_ident)
    };
    let into = conversion(
        args.into.breaker_open.as_ref(),
        quote!(#p::from_breaker_open),
        args.key_span("circuit_breaker"),
        p,
    );
    rejections.push((
        quote!(BreakerOpen),
        quote!(#p::convert(#p::BreakerOpen::new(), #into)),
    ));
    quote!(::core::option::Option::Some(#breaker))
}

/// The throttle as `admit` takes it (`None` without one), as the breaker.
fn throttle(
    args: &RetryArgs,
    p: &TokenStream,
    mutably: &[String],
    bind: &mut TokenStream,
    rejections: &mut Vec<Rejection>,
) -> TokenStream {
    let Some(t) = &args.throttle else {
        return quote!(::core::option::Option::None);
    };
    let throttle_ident = format_ident!("__reattempt_throttle", span = Span::mixed_site());
    let throttle = if per_use(mutably, t) {
        quote_spanned!(t.span()=> #p::throttle_ref(&#t))
    } else {
        bind.extend(quote_spanned!(t.span()=> let #throttle_ident: &#p::AdaptiveThrottle = &#t;));
        quote!(#throttle_ident)
    };
    let into = conversion(
        args.into.throttled.as_ref(),
        quote!(#p::from_throttled),
        args.key_span("throttle"),
        p,
    );
    rejections.push((
        quote!(Throttled),
        quote!(#p::convert(#p::Throttled::new(), #into)),
    ));
    quote!(::core::option::Option::Some(#throttle))
}

/// The bulkhead's slot: the statements taking it, the one freeing it, and whether it is full
/// (`false` without a bulkhead).
///
/// The slot is taken once, before the first attempt, and held to the call's end (an async
/// function waits for one up to its `max_wait`, as `steps::poll_slot` does). The wait ends by
/// the call's deadline (its own `max_elapsed`, an enclosing call's): then, if the attempt can no
/// longer be made, the call holds no slot and ends as `DeadlineReached`
/// (`Call::slot_or_deadline`), as the other drivers' `steps::poll_slot`.
fn bulkhead(
    args: &RetryArgs,
    p: &TokenStream,
    timed: bool,
    is_async: bool,
    rejections: &mut Vec<Rejection>,
) -> (TokenStream, TokenStream, TokenStream) {
    let Some(b) = &args.bulkhead else {
        return (quote!(), quote!(), quote!(false));
    };
    let call = format_ident!("__reattempt_call", span = Span::mixed_site());
    let slot = format_ident!("__reattempt_slot", span = Span::mixed_site());
    let release = quote!(::core::mem::drop(#slot););
    let bulkhead = format_ident!("__reattempt_bulkhead", span = Span::mixed_site());
    // The expression evaluated once: the slot's wait and what its end means both read it.
    let mut take_slot = quote_spanned!(b.span()=> let #bulkhead = #p::bulkhead_ref(&#b););
    let acquire = if is_async {
        quote!(#p::Call::acquire_slot(&#call, #bulkhead).await)
    } else {
        quote!(#p::Bulkhead::try_acquire(#bulkhead))
    };
    take_slot.extend(quote! {
        let #slot = #acquire;
        let #slot = #p::Call::slot_or_deadline(&#call, #bulkhead, #slot, #timed);
    });
    let into = conversion(
        args.into.bulkhead_full.as_ref(),
        quote!(#p::from_bulkhead_full),
        args.key_span("bulkhead"),
        p,
    );
    rejections.push((
        quote!(BulkheadFull),
        quote!(#p::convert(#p::BulkheadFull::new(), #into)),
    ));
    (
        take_slot,
        release,
        quote!(::core::result::Result::is_err(&#slot)),
    )
}
