//! Writes the retry loop around the function's body. Every decision is a call into the runtime
//! (`Call::decide`); this module only arranges syntax: the loop here, and beside it the parts it
//! is made of (`bindings`, `hooks`, `policy`, `guards`, `conversions`), the hedged call's driver
//! (`hedged`), a lent call's attempt (`lent_attempt`) and the `#[recover]` fallback's call
//! (`recover_call`, `recover_message`).

mod bindings;
mod conversions;
mod guards;
mod hedged;
mod hooks;
mod lent_attempt;
mod policy;
mod recover_call;
mod recover_message;
mod spans;
mod stream;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use self::bindings::{consumed, mutably_borrowed, per_attempt_bindings};
use self::conversions::{timed, timeout_into};
use self::guards::{Guarded, guarded};
use self::hedged::{Hedged, hedged_call, mut_guards};
use self::hooks::hooks;
use self::lent_attempt::lent_attempt;
use self::policy::policy_source;
use self::recover_call::recover_call;
use self::spans::at;
use crate::args::{self, RetryArgs};
use crate::item::{self, RetryFn};
use crate::rewrite::{self, Rewritten};
use crate::util::{combine, with_errors};
use crate::valid;

/// `#[retryable(args)] item`, as tokens. Never panics: any problem becomes a `compile_error!`
/// emitted beside the unchanged function, so that its callers still compile.
///
/// The passes: parse (`args`, `item`), validate (`valid`), then expand (here, with `rewrite`).
/// The attribute and the function are parsed and validated each on its own, so that the errors
/// of both are reported; then they are validated together.
pub fn retryable(args: TokenStream, item: TokenStream) -> TokenStream {
    let checked_args =
        args::parse(args).and_then(|parsed| valid::args(&parsed).map(|()| parsed.args));
    // The attempts this attribute makes, for the message of a second #[retryable] beneath it.
    let attempts = checked_args.as_ref().ok().map(valid::attempts);
    let streamed = checked_args
        .as_ref()
        .is_ok_and(|a| a.stream.resume.is_some());
    let checked_fn =
        item::parse(item.clone()).and_then(|f| valid::item(&f, attempts, streamed).map(|()| f));
    match (checked_args, checked_fn) {
        (Ok(args), Ok(f)) => match valid::together(&args, &f)
            .and_then(|()| lent_keys(&args, &f))
            .map(|()| expand(&args, &f))
        {
            Ok(tokens) => tokens,
            Err(e) => with_errors(item, &e),
        },
        (args, f) => {
            let errors = combine(args.err().into_iter().chain(f.err()));
            with_errors(
                item,
                &errors.unwrap_or_else(|| unreachable!("one side failed")),
            )
        }
    }
}

/// The keys a call that lends its attempts a `&mut` input cannot take (see `lent`), and the
/// shapes it cannot lend (two `&mut` inputs borrowed by the output).
fn lent_keys(args: &RetryArgs, f: &RetryFn) -> syn::Result<()> {
    if crate::lent::lending(f)?.is_none() {
        return Ok(());
    }
    let given = [
        ("retry_if_ok", args.retry_if_ok.is_some()),
        ("recover", args.recover.is_some()),
    ];
    let errors = given
        .into_iter()
        .filter(|(_, on)| *on)
        .filter_map(|(key, _)| {
            crate::lent::unsupported_key(key).map(|why| syn::Error::new(args.key_span(key), why))
        });
    combine(errors).map_or(Ok(()), Err)
}

/// The parts both drivers (the loop, the closure driver of a hedged call) are written from.
struct Parts<'a> {
    args: &'a RetryArgs,
    f: &'a RetryFn,
    /// The runtime's hidden module, `krate::__private`.
    p: TokenStream,
    /// The return type's span, taken once (a type's `span()` prints the type each time).
    ret: Span,
    /// The body's statements.
    stmts: &'a [TokenStream],
    /// What the attempts borrow mutably: an expression naming one of these cannot hold a borrow
    /// of it across attempts.
    mutably: Vec<String>,
    policy_ref: TokenStream,
    /// The event name's expression.
    name: TokenStream,
    hooks: TokenStream,
    per_attempt: Vec<TokenStream>,
    pin: TokenStream,
    as_result: TokenStream,
    /// What every call starts with: the policy's item, the return type's markers, the pin.
    head: TokenStream,
    /// What every call ends with: the arguments consumed, the outcome (through the fallback).
    end: TokenStream,
}

/// The rewritten function.
fn expand(args: &RetryArgs, f: &RetryFn) -> TokenStream {
    let k = &args.krate;
    let p = quote!(#k::__private);
    let Rewritten {
        mut sig,
        body: block,
        uses_self,
    } = rewrite::rewrite(f);
    // A stream's open clones a by-value `self` (`stream`): the signature's binding stays as
    // written.
    let resumed = crate::stream::resumed(args, f).ok().flatten();
    if resumed.is_some() {
        sig.inputs.clone_from(&f.item.sig.inputs);
        // Only cloned from there: the open's clone is `mut` instead (`stream`).
        if let Some(syn::FnArg::Receiver(r)) = sig.inputs.first_mut() {
            r.mutability = None;
        }
        rewrite::bind_params(&mut sig, f);
    }
    let body = quote::ToTokens::to_token_stream(&block);
    let mutably = mutably_borrowed(f);

    let call = format_ident!("__reattempt_call", span = Span::mixed_site());
    let out = format_ident!("__reattempt_out", span = Span::mixed_site());
    let ty = format_ident!("__reattempt_ty", span = Span::mixed_site());
    // The return type's span, taken once (a type's `span()` prints the type each time); the
    // `ret.span()` below are this span's own.
    let ret = f.output.span();
    let (policy_item, policy_ref) = policy_source(args, &p, &mutably);
    let (name_item, name) = event_name(args, &p);
    let per_attempt = per_attempt_bindings(f, uses_self, &body, &p);
    let ty_at_ret = syn::Ident::new("__reattempt_result_type", ret.span());
    let hooks = hooks(args, &p, ret.span(), resumed.is_some());

    // Pins a block's output to the function's return type without writing the type (which may
    // mention `impl Trait`), so that `?` in the body knows what to convert into.
    let pin = quote_spanned! {ret.span()=>
        if #p::NEVER {
            return #p::TypeOf::value(#ty);
        }
    };
    // Through the closure driver: a `hedge_after` key, or a run-time `policy` (which may hedge)
    // on a function whose attempts may overlap. The driver branches on the policy's
    // `hedge_after` at run time, so the body is expanded once either way.
    // A `policy` fn with a by-value argument keeps the loop: the driver's closure would borrow
    // the argument across the call, and a `Send` but not `Sync` one would make it not `Send`.
    let hedged = args.schedule.settings.hedge_after.is_some()
        || (args.policy.is_some() && valid::can_overlap(f) && valid::borrows_only(f));
    let tail = if let Some(path) = &args.recover {
        recover_call(path, f, &out, &call, hedged, &p)
    } else {
        quote!(#out)
    };
    let consumed = consumed(args, f, &p);

    let as_result = at(quote!(#p::IsResult::into_result), ret.span());
    let from_result = at(quote!(#p::IsResult::from_result), ret.span());
    // Calls spanned wholly at the return type, so that a non-`Result` is one error there.
    let tail = quote_spanned!(ret.span()=> #from_result(#tail));
    let check = at(quote!(#p::result_type()), ret.span());
    let parts = Parts {
        head: quote! {
            #policy_item
            let #ty = #check;
            let #ty_at_ret = #ty;
            #pin
        },
        end: quote!(#consumed #tail),
        args,
        f,
        p,
        ret,
        stmts: &block.stmts,
        mutably,
        policy_ref,
        name,
        hooks,
        per_attempt,
        pin,
        as_result,
    };
    let contents = if let Some(resumed) = &resumed {
        let streamed = stream::Parts {
            args,
            f,
            p: &parts.p,
            ret,
            stmts: parts.stmts,
            policy_ref: &parts.policy_ref,
            name: &parts.name,
            hooks: &parts.hooks,
            head: &parts.head,
        };
        stream::stream_contents(&streamed, resumed, uses_self, &body)
    } else if hedged {
        hedged_contents(&parts)
    } else {
        loop_contents(&parts, uses_self, &body)
    };
    with_body(f, &sig, &name_item, &contents)
}

/// A hedged call: attempts overlap, so they run through the closure driver, which keeps a set
/// of copies; the closure makes one attempt's future (by-value arguments cloned for each).
/// The future is pinned here, so that a fallback runs in its context (`recover_after`).
fn hedged_contents(parts: &Parts<'_>) -> TokenStream {
    let Parts { args, f, p, .. } = parts;
    let call = format_ident!("__reattempt_call", span = Span::mixed_site());
    let out = format_ident!("__reattempt_out", span = Span::mixed_site());
    let name = &parts.name;
    let hedged = Hedged {
        per_attempt: &parts.per_attempt,
        stmts: parts.stmts,
        pin: &parts.pin,
        as_result: &parts.as_result,
        hooks: &parts.hooks,
        name: args
            .name
            .as_ref()
            .map_or_else(|| quote!((#name)()), |lit| quote!(#lit)),
        timed: timeout_into(args, p).filter(|_| f.is_async()),
    };
    let retry = hedged_call(&hedged, &parts.policy_ref, p, &mut_guards(args, p));
    let (head, end) = (&parts.head, &parts.end);
    quote! {
        #head
        let mut #call = ::core::pin::pin!(::core::future::IntoFuture::into_future(#retry));
        let #out = #call.as_mut().await;
        #end
    }
}

/// The retry loop: each attempt under the guards, the runtime's decision, the sleep.
fn loop_contents(parts: &Parts<'_>, uses_self: bool, body: &TokenStream) -> TokenStream {
    let Parts { args, f, p, .. } = parts;
    let ret = parts.ret;
    let call = format_ident!("__reattempt_call", span = Span::mixed_site());
    let out = format_ident!("__reattempt_out", span = Span::mixed_site());
    let res = format_ident!("__reattempt_res", span = Span::mixed_site());
    let delay = format_ident!("__reattempt_delay", span = Span::mixed_site());
    // The attribute's own policy without `max_elapsed`: the call need not test for it.
    let new = if args.policy.is_none() && args.schedule.settings.max_elapsed.is_none() {
        quote!(without_deadline)
    } else {
        quote!(new)
    };
    let (attempt, sleep) = attempt_and_sleep(args, f, parts.stmts, p, &parts.pin, &call, &delay);
    let (run, lend) = run_and_lend(parts, uses_self, body, &attempt, &call);
    let Guarded {
        bind,
        admit,
        run,
        guards,
        slot,
        release,
    } = guarded(
        args,
        run,
        &parts.name,
        p,
        &parts.mutably,
        timed(args, f),
        f.is_async(),
    );
    // The attempt's outcome is bound first and passed as a name located at the return type, so
    // that a non-`Result` is reported once there, with `check`'s error (rustc drops an error of
    // the same predicate at the same span), not a second time at the attribute.
    // (Not hygienic: rustc reports at a name of the macro's own context as at the attribute.)
    let raw = syn::Ident::new("__reattempt_raw", ret.span());
    let as_result = &parts.as_result;
    let run = quote_spanned!(ret.span()=> {
        let #raw = #run;
        #as_result(#raw)
    });
    // A run-time policy on a function whose attempts cannot overlap: its `hedge_after`, if it
    // has one, is ignored, and the first call says so (one WARN per function).
    let unhedged = args.policy.is_some().then(|| {
        let warned = format_ident!("__REATTEMPT_WARNED", span = Span::mixed_site());
        let (policy_ref, name) = (&parts.policy_ref, &parts.name);
        quote! {
            static #warned: #p::Once = #p::Once::new();
            #p::hedge_ignored(#policy_ref, &#warned, #name);
        }
    });
    let (keep_decl, decide, stop) = decision(parts, &res, &guards, &sleep);
    let (head, end, policy_ref) = (&parts.head, &parts.end, &parts.policy_ref);
    let call_name = &parts.name;
    quote! {
        #head
        #bind
        let mut #call = #p::Call::#new(#policy_ref);
        // The call's span (feature `spans`) is named before its first attempt's.
        #p::Call::named(&mut #call, #call_name);
        #slot
        #unhedged
        #keep_decl
        #lend
        let #out = loop {
            #admit
            let #res = #run;
            // Only the delay crosses the sleep's `await`, not the decision (whose outcome may be
            // neither `Send` nor small); with a breaker or a throttle, the last outcome too
            // (a retry they turn away ends the call with it).
            let #delay = match #decide {
                #stop
                #p::Decision::Retry(__reattempt_delay) => __reattempt_delay,
            };
            #sleep
        };
        #release
        #end
    }
}

/// One attempt as the loop runs it, and the statement lending the input first when the call
/// lends its attempts a `&mut` input (`lent`); else the per-attempt bindings, then the attempt.
fn run_and_lend(
    parts: &Parts<'_>,
    uses_self: bool,
    body: &TokenStream,
    attempt: &TokenStream,
    call: &syn::Ident,
) -> (TokenStream, Option<TokenStream>) {
    let Parts { args, f, p, .. } = parts;
    let lending = crate::lent::lending(f).ok().flatten();
    let lent_var = format_ident!("__reattempt_lent", span = Span::mixed_site());
    let run = if let Some(lending) = &lending {
        lent_attempt(
            args,
            f,
            lending,
            (uses_self, body, parts.stmts),
            p,
            call,
            &lent_var,
        )
    } else {
        let per_attempt = &parts.per_attempt;
        quote! {{
            #(#per_attempt)*
            #attempt
        }}
    };
    // The input the attempts are lent, taken back after each failed one.
    let lend = lending.as_ref().map(|l| {
        let input = l.arg.as_ref().map_or_else(
            || {
                let span = f.receiver.map_or_else(Span::call_site, |(_, s)| s);
                quote_spanned!(span=> self)
            },
            |a| quote!(#a),
        );
        quote!(let mut #lent_var = ::core::option::Option::Some(#input);)
    });
    (run, lend)
}

/// The runtime's decision after an attempt, and what it needs kept: the declaration before the
/// loop, the call to `decide`, and the arm that ends the loop.
fn decision(
    parts: &Parts<'_>,
    res: &syn::Ident,
    guards: &TokenStream,
    sleep: &TokenStream,
) -> (TokenStream, TokenStream, TokenStream) {
    let Parts {
        args,
        p,
        name,
        hooks,
        ..
    } = parts;
    let call = format_ident!("__reattempt_call", span = Span::mixed_site());
    let delay = format_ident!("__reattempt_delay", span = Span::mixed_site());
    // A breaker or a throttle may turn a retry away: the call then ends with the last outcome,
    // kept across the sleep (`decide_keeping`).
    let last = format_ident!("__reattempt_last", span = Span::mixed_site());
    let (keep_decl, decide) = if args.circuit_breaker.is_some() || args.throttle.is_some() {
        (
            quote!(let mut #last = ::core::option::Option::None;),
            quote!(#p::Call::decide_keeping(&mut #call, #name, &mut #hooks, #res, #guards, &mut #last)),
        )
    } else {
        (
            quote!(),
            quote!(#p::Call::decide(&mut #call, #name, &mut #hooks, #res, #guards)),
        )
    };
    // A run-time policy may be long-polling, and with a budget its call may give up and still
    // wait before it returns (`Call::linger`): the outcome is then held across that sleep.
    let stop = if args.policy.is_some() && args.budget.is_some() {
        quote! {
            #p::Decision::Stop(__reattempt_outcome) => {
                if let ::core::option::Option::Some(#delay) = #p::Call::linger(&#call) {
                    #sleep
                }
                break __reattempt_outcome
            }
        }
    } else {
        quote!(#p::Decision::Stop(__reattempt_outcome) => break __reattempt_outcome,)
    };
    (keep_decl, decide, stop)
}

/// The function with its new body: its inner attributes, the default name's item, then the
/// call; boxed where `#[async_trait]` boxed the body's future.
fn with_body(
    f: &RetryFn,
    sig: &syn::Signature,
    name_item: &TokenStream,
    contents: &TokenStream,
) -> TokenStream {
    let inner_attrs = &f.inner_attrs;
    let new_body = if let Some(boxing) = &f.boxed {
        // `#[async_trait]` boxed the body's future: box the retrying one instead.
        quote!({
            #(#inner_attrs)*
            #name_item
            #boxing(async move { #contents })
        })
    } else {
        quote!({
            #(#inner_attrs)*
            #name_item
            #contents
        })
    };

    let attrs = &f.attrs;
    let vis = &f.item.vis;
    quote! {
        #(#attrs)*
        #vis #sig #new_body
    }
}

/// One attempt (the body's statements in an `async move` block or a `move` closure), and the
/// sleep before the next.
fn attempt_and_sleep(
    args: &RetryArgs,
    f: &RetryFn,
    stmts: &[TokenStream],
    p: &TokenStream,
    pin: &TokenStream,
    call: &syn::Ident,
    delay: &syn::Ident,
) -> (TokenStream, TokenStream) {
    // The body's statements, not its block: a block as the tail would trip `unused_braces`.
    if f.is_async() {
        // `move`: the attempt owns its copies and reborrows, so the future is `Send` whenever
        // the arguments are (a borrowed copy would need `Sync`).
        let attempt = if let Some(into) = timeout_into(args, p) {
            quote!(#p::Call::attempt_timed_into(&mut #call, async move { #pin #(#stmts)* }, #into).await)
        } else {
            quote!(#p::Call::attempt(&mut #call, async move { #pin #(#stmts)* }).await)
        };
        (attempt, quote!(#p::Call::sleep(&#call, #delay).await;))
    } else {
        (
            quote!(#p::Call::attempt_blocking(&mut #call, move || { #pin #(#stmts)* })),
            quote!(#p::Call::sleep_blocking(&#call, #delay);),
        )
    }
}

/// The item to declare for the default event name (if any), and the name's expression.
fn event_name(args: &RetryArgs, p: &TokenStream) -> (TokenStream, TokenStream) {
    if let Some(lit) = &args.name {
        (quote!(), quote!(#lit))
    } else {
        // The path of an item declared here is this function's path, `Self` type included
        // (`crate::module::Type::method::__reattempt_name`): a constant (a trait impl's
        // `<Type as Trait>::method` is shortened to `Type::method` once, see `EventName`).
        // The item is the function giving the name, called only when an event names the call
        // (nothing on the success path); passed as a `fn` pointer, one type for every function,
        // so that the runtime's `decide` is compiled once per outcome type, not once per function.
        (
            quote!(
                fn __reattempt_name() -> &'static str {
                    static __REATTEMPT_NAME: #p::EventName = #p::EventName::new();
                    #p::EventName::get(&__REATTEMPT_NAME, #p::type_name_of_val(&__reattempt_name))
                }
            ),
            quote!((__reattempt_name as fn() -> &'static str)),
        )
    }
}

#[cfg(test)]
mod shared_types_tests {
    //! What the runtime is instantiated with must not be a type of this function's own (a
    //! closure), or every function compiles its own copy of the engine's generic steps.

    fn expansion(args: &str) -> String {
        let args = args.parse().unwrap_or_else(|e| panic!("{e}"));
        let item = "async fn f(x: u32) -> Result<u32, E> { call(x).await }"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        super::retryable(args, item).to_string()
    }

    #[test]
    fn the_default_name_is_passed_as_a_fn_pointer() {
        let out = expansion("max_attempts = 3");
        assert!(
            out.contains("__reattempt_name as fn () -> & 'static str"),
            "{out}"
        );
        assert!(
            !out.contains("|| :: reattempt :: __private :: EventName"),
            "{out}"
        );
    }

    #[test]
    fn patterns_and_the_class_probe_are_fn_pointers() {
        let out = expansion("retry_on = [E::Busy], budget = BUDGET");
        assert!(
            out.contains(":: reattempt :: __private :: retry_on ("),
            "{out}"
        );
        assert!(
            out.contains(":: reattempt :: __private :: error_class ("),
            "{out}"
        );
        assert!(!out.contains(". retry_if ("), "{out}");
    }

    #[test]
    fn a_user_predicate_stays_a_closure() {
        // It may capture (an argument, a local): it cannot always be a `fn` pointer.
        let out = expansion("retry_on = [E::Busy], retry_if = |e| e.code() == x");
        assert!(out.contains(". retry_if ("), "{out}");
        assert!(!out.contains("__private :: retry_on ("), "{out}");
    }
}
