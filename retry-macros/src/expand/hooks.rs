//! The hooks `decide` takes: which errors and which `Ok`s are retried, the server's hint, the
//! callback before a sleep, and the error's class.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::spans::at;
use crate::args::RetryArgs;

/// The hooks `decide` takes, as one `FnHooks` value: which errors to retry, which `Ok`s to
/// retry, the server's hint, the callback before a sleep, and (with a breaker or a budget) which
/// errors say they were a timeout. Each hook the attribute does not set keeps its default.
/// A stream's hooks (`stream`) judge only failures: their outcome type is `()`.
pub(super) fn hooks(args: &RetryArgs, p: &TokenStream, ret: Span, stream: bool) -> TokenStream {
    // Typed by the function's return type (not by borrowing the outcome, which would keep it
    // alive across the sleep's `await` in the eyes of the `Send` analysis). Spanned at the
    // return type, so that a non-`Result` is reported once, there.
    // The return type's marker, under a name located at the return type: rustc blames an unmet
    // bound on the argument, and reports it once when it is where `result_type`'s error is.
    // (Not hygienic: rustc reports at a name of the macro's own context as at the attribute.)
    let typed = if stream {
        at(quote!(#p::stream_hooks), ret)
    } else {
        at(quote!(#p::hooks), ret)
    };
    let ty = syn::Ident::new("__reattempt_result_type", ret);
    let mut hooks = quote_spanned!(ret=> #typed(#ty));
    if let Some(retry_if) = retry_err(args, p) {
        if args.retry_if.is_none() {
            // Patterns only: the closure captures nothing, and is passed as a `fn` pointer (one
            // type for every function with this error type: the runtime's error path is then
            // compiled once per error type, not once per function).
            hooks = quote!(#p::retry_on(#hooks, #retry_if));
        } else {
            hooks.extend(quote!(.retry_if(#retry_if)));
        }
    }
    for (method, user) in [
        ("retry_if_ok", &args.retry_if_ok),
        ("retry_after", &args.retry_after),
        ("delay_for", &args.delay_for),
        ("on_retry", &args.on_retry),
    ] {
        if let Some(expr) = user {
            let method = format_ident!("{}", method);
            hooks.extend(quote!(.#method(#expr)));
        }
    }
    let class = class_probe(p);
    // Captures nothing: a `fn` pointer, as `retry_on`'s.
    hooks = quote!(#p::error_class(#hooks, #class));
    // A retried `Ok` (a 429 status) has a class too, where it changes something (a guard, a
    // `throttling_delay`, or a `policy`, which may hold one); elsewhere the class the predicate
    // noted, as the closure API's. (Not always: a `retry_if_ok` of the wrong type would then be
    // reported twice.)
    let class_matters = args.circuit_breaker.is_some()
        || args.budget.is_some()
        || args.throttle.is_some()
        || args.policy.is_some()
        || args.schedule.settings.throttling_delay.is_some();
    if args.retry_if_ok.is_some() && class_matters {
        hooks = quote!(#p::ok_class(#hooks, #class));
    }
    hooks
}

/// The class of the attempt's error (`Transient::class`, asked when the error type implements
/// `Transient`: see `__private::ClassProbe`), for the budget's cost, the breaker's count of
/// timeouts, the delay after throttling and the retry's event: the `error_class` hook, whatever
/// the keys, so that one function's class does not depend on which guards it has. Asked only
/// for a failed attempt: nothing on the success path.
fn class_probe(p: &TokenStream) -> TokenStream {
    let e = format_ident!("__reattempt_error", span = Span::mixed_site());
    quote! {
        |#e| {
            use #p::ProbeClass as _;
            #p::ClassProbe(#e).__reattempt_class()
        }
    }
}

/// The predicate deciding whether an error is retried: (`retry_on` or `retry_if`, or every
/// error when neither is given) and not `no_retry_on`.
fn retry_err(args: &RetryArgs, p: &TokenStream) -> Option<TokenStream> {
    let e = format_ident!("__reattempt_error", span = Span::mixed_site());
    // One `matches!` per item, bindings dropped (see `patterns`).
    let mut checks = TokenStream::new();
    let mut tests = |pats: &Vec<syn::Pat>| {
        let (test, names) = crate::patterns::matches(&e, pats, p);
        checks.extend(names);
        test
    };
    let on = args.retry_on.as_ref().map(&mut tests);
    let when = args.retry_if.as_ref().map(|pred| {
        if matches!(pred, syn::Expr::Path(_)) {
            // A path is called directly, so that an unmet bound of it is reported once, there.
            quote_spanned!(pred.span()=> #pred(#e))
        } else {
            // A closure goes through a helper, whose signature gives its parameter a type.
            quote_spanned!(pred.span()=> #p::call_pred(#pred, #e))
        }
    });
    let yes = match (on, when) {
        (None, None) => None,
        (Some(a), None) | (None, Some(a)) => Some(a),
        (Some(a), Some(b)) => Some(quote!(#a || #b)),
    };
    let no = args.no_retry_on.as_ref().map(&mut tests);
    let verdict = match (yes, no) {
        (None, None) => return None,
        (Some(yes), None) => yes,
        // No positive rule of the user's: every other error, by the crate's judgement (a timeout
        // on a call that is not idempotent is not repeated), as without the key. The exception
        // is asked first, so that it, not the judgement, is why an excepted error stops.
        (None, Some(no)) => quote!(!(#no) && #p::by_default()),
        (Some(yes), Some(no)) => quote!((#yes) && !(#no)),
    };
    Some(quote! {
        |#e| {
            #checks
            #verdict
        }
    })
}
