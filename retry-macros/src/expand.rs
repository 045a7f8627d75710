//! Writes the retry loop around the function's body. Every decision is a call into the runtime
//! (`Call::decide`); this module only arranges syntax.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Path, Type};

use crate::args::{self, RetryArgs};
use crate::item::{self, Param, Receiver, RetryFn};
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
    let checked_fn = item::parse(item.clone()).and_then(|f| valid::item(&f, attempts).map(|()| f));
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

/// The rewritten function.
#[allow(
    clippy::too_many_lines,
    reason = "one quote per driver (the loop, or the closure driver for a hedged call) over the same parts"
)]
fn expand(args: &RetryArgs, f: &RetryFn) -> TokenStream {
    let k = &args.krate;
    let p = quote!(#k::__private);
    let Rewritten {
        sig,
        body: block,
        uses_self,
    } = rewrite::rewrite(f);
    let body = quote::ToTokens::to_token_stream(&block);
    // What the attempts borrow mutably: an expression naming one of these cannot hold a borrow
    // of it across attempts.
    let mutably = mutably_borrowed(f);

    let call = format_ident!("__reattempt_call", span = Span::mixed_site());
    let out = format_ident!("__reattempt_out", span = Span::mixed_site());
    let res = format_ident!("__reattempt_res", span = Span::mixed_site());
    let ty = format_ident!("__reattempt_ty", span = Span::mixed_site());
    let delay = format_ident!("__reattempt_delay", span = Span::mixed_site());
    // The return type's span, taken once (a type's `span()` prints the type each time); the
    // `ret.span()` below are this span's own.
    let ret = f.output.span();
    let (policy_item, policy_ref) = policy_source(args, &p, &mutably);
    // The attribute's own policy without `max_elapsed`: the call need not test for it.
    let new = if args.policy.is_none() && args.schedule.settings.max_elapsed.is_none() {
        quote!(without_deadline)
    } else {
        quote!(new)
    };
    let (name_item, name) = event_name(args, &p);
    let per_attempt = per_attempt_bindings(f, uses_self, &body, &p);
    let ty_at_ret = syn::Ident::new("__reattempt_result_type", ret.span());
    let hooks = hooks(args, &p, ret.span());

    // Pins a block's output to the function's return type without writing the type (which may
    // mention `impl Trait`), so that `?` in the body knows what to convert into.
    let pin = quote_spanned! {ret.span()=>
        if #p::NEVER {
            return #p::TypeOf::value(#ty);
        }
    };
    let (attempt, sleep) = attempt_and_sleep(args, f, &block.stmts, &p, &pin, &call, &delay);
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

    let lending = crate::lent::lending(f).ok().flatten();
    let lent_var = format_ident!("__reattempt_lent", span = Span::mixed_site());
    let run = if let Some(lending) = &lending {
        lent_attempt(
            args,
            f,
            lending,
            (uses_self, &body, &block.stmts),
            &p,
            &call,
            &lent_var,
        )
    } else {
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
    let Guarded {
        bind,
        admit,
        run,
        guards,
        slot,
        release,
    } = guarded(args, run, &p, &mutably, timed(args, f), f.is_async());

    let as_result = at(quote!(#p::IsResult::into_result), ret.span());
    let from_result = at(quote!(#p::IsResult::from_result), ret.span());
    // Calls spanned wholly at the return type, so that a non-`Result` is one error there.
    // The attempt's outcome is bound first and passed as a name located at the return type, so
    // that a non-`Result` is reported once there, with `check`'s error (rustc drops an error of
    // the same predicate at the same span), not a second time at the attribute.
    // (Not hygienic: rustc reports at a name of the macro's own context as at the attribute.)
    let raw = syn::Ident::new("__reattempt_raw", ret.span());
    let run = quote_spanned!(ret.span()=> {
        let #raw = #run;
        #as_result(#raw)
    });
    let tail = quote_spanned!(ret.span()=> #from_result(#tail));
    let check = at(quote!(#p::result_type()), ret.span());
    let inner_attrs = &f.inner_attrs;
    // A run-time policy on a function whose attempts cannot overlap: its `hedge_after`, if it
    // has one, is ignored, and the first call says so (one WARN per function).
    let unhedged = (args.policy.is_some() && !hedged).then(|| {
        let warned = format_ident!("__REATTEMPT_WARNED", span = Span::mixed_site());
        quote! {
            static #warned: #p::Once = #p::Once::new();
            #p::hedge_ignored(#policy_ref, &#warned, #name);
        }
    });
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
    let contents = if hedged {
        // Hedged: attempts overlap, so they run through the closure driver, which keeps a set
        // of copies; the closure makes one attempt's future (by-value arguments cloned for each).
        // The future is pinned here, so that a fallback runs in its context (`recover_after`).
        let hedged = Hedged {
            per_attempt: &per_attempt,
            stmts: &block.stmts,
            pin: &pin,
            as_result: &as_result,
            hooks: &hooks,
            name: args
                .name
                .as_ref()
                .map_or_else(|| quote!((#name)()), |lit| quote!(#lit)),
            timed: timeout_into(args, &p).filter(|_| f.is_async()),
        };
        let retry = hedged_call(&hedged, &policy_ref, &p, &mut_guards(args, &p));
        quote! {
            #policy_item
            let #ty = #check;
            let #ty_at_ret = #ty;
            #pin
            let mut #call = ::core::pin::pin!(::core::future::IntoFuture::into_future(#retry));
            let #out = #call.as_mut().await;
            #consumed
            #tail
        }
    } else {
        quote! {
            #policy_item
            let #ty = #check;
            let #ty_at_ret = #ty;
            #pin
            #bind
            let mut #call = #p::Call::#new(#policy_ref);
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
            #consumed
            #tail
        }
    };
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

/// One attempt of a call lending its attempts a `&mut` input (`lent`): the body runs in a
/// closure higher-ranked over the reborrow's lifetime (`Call::attempt_lent`, which says why that
/// is sound), whose future is boxed; a failed attempt gives the input back for the next one.
fn lent_attempt(
    args: &RetryArgs,
    f: &RetryFn,
    lending: &crate::lent::Lending,
    (uses_self, body, stmts): (bool, &TokenStream, &[TokenStream]),
    p: &TokenStream,
    call: &syn::Ident,
    lent_var: &syn::Ident,
) -> TokenStream {
    let ty = format_ident!("__reattempt_ty", span = Span::mixed_site());
    let err = format_ident!("__reattempt_err", span = Span::mixed_site());
    let taken = format_ident!("__reattempt_taken", span = Span::mixed_site());
    let back = format_ident!("__reattempt_back", span = Span::mixed_site());
    let (param, named) = match &lending.arg {
        None => {
            let span = f.receiver.map_or_else(Span::call_site, |(_, s)| s);
            let name = if uses_self {
                quote_spanned!(span=> __self)
            } else {
                quote!(_)
            };
            (name, None)
        }
        Some(a) => {
            let lent = f
                .params
                .iter()
                .find(|p| matches!(p, Param::Borrowed { ident, .. } if ident == a));
            let used = lent.is_some_and(|p| named_by(p, body));
            let mutable = matches!(lent, Some(Param::Borrowed { mutable: true, .. }));
            let name = match (used, mutable) {
                (false, _) => quote!(_),
                (true, true) => quote!(mut #a),
                (true, false) => quote!(#a),
            };
            (name, Some(a.to_string()))
        }
    };
    let others = || {
        f.params
            .iter()
            .filter(|a| named_by(a, body))
            .filter(|a| named.as_deref() != Some(a.original().to_string().as_str()))
    };
    let bindings = others().filter_map(|a| per_attempt_binding(a, p));
    let r = crate::lent::lifetime();
    let output = &lending.output;
    let of =
        quote!(#p::Lends::<dyn for<#r> #p::WithLt<#r, Of = <#output as #p::IsResult>::Ok>>::new());
    // The body's error type, pinned as `pin` does for the whole return type (whose lifetime is
    // the lent one's, not the attempt's), so that `?` knows what to convert into.
    let err_pin =
        quote!(if #p::NEVER { return ::core::result::Result::Err(#p::ErrorOf::value(#err)); });
    // An async attempt's whole result, `Ok` at the attempt's lifetime (which `Lent` carries):
    // an async block's type is its body's, so without it the tail `Ok(&self.s)` is typed
    // `Result<&String, E>` before it meets the boxed future's `Result<&str, E>`, and the
    // coercion that the plain function had is lost (E0271).
    let lt = format_ident!("__reattempt_lt", span = Span::mixed_site());
    let result_pin = quote! {
        if #p::NEVER {
            return #p::TypeOf::value(#p::lent_result(&#lt, #of, #err));
        }
    };
    // The receiver, where the call lends an argument and the body names `self`.
    let receiver = f.receiver.filter(|_| uses_self && lending.arg.is_some());
    let attempt = if f.is_async() {
        let timed = timeout_into(args, p).map_or_else(
            || quote!(::core::option::Option::None),
            |into| quote!(::core::option::Option::Some(#p::timeout_fn(#into))),
        );
        let caps = format_ident!("__reattempt_captures", span = Span::mixed_site());
        let receiver = receiver.map(|(r, span)| lent_receiver(r, span, p));
        let entries = std::iter::once(Capture {
            lints: Vec::new(),
            value: quote!(#err),
            bind: quote!(#err),
        })
        .chain(receiver)
        .chain(others().filter_map(|a| lent_capture(a, p)));
        let (build, take) = captures(&entries.collect::<Vec<_>>(), &caps);
        quote! {{
            #build
            #p::Call::attempt_lent(&mut #call, #taken, #of, #timed, #caps, |#param, #caps, #lt| {
                let #caps = #p::Captures::into_inner(#caps);
                #take
                ::std::boxed::Box::pin(async move { #result_pin #(#stmts)* })
            }).await
        }}
    } else {
        let receiver = receiver.map(|(r, span)| receiver_binding(r, span, p));
        quote! {
            #p::Call::attempt_lent_blocking(&mut #call, #taken, #of, |#param, _| {
                #receiver
                #(#bindings)*
                #err_pin
                #(#stmts)*
            })
        }
    };
    quote! {{
        let #err = #p::error_of(#ty);
        let #taken = match ::core::option::Option::take(&mut #lent_var) {
            ::core::option::Option::Some(#taken) => #taken,
            ::core::option::Option::None => ::core::unreachable!("reattempt: a lent call retried after an `Ok`"),
        };
        match #attempt {
            ::core::result::Result::Ok(__reattempt_v) => ::core::result::Result::Ok(__reattempt_v),
            ::core::result::Result::Err((__reattempt_e, #back)) => {
                #lent_var = ::core::option::Option::Some(#back);
                ::core::result::Result::Err(__reattempt_e)
            }
        }
    }}
}

/// One value a lent call's attempt takes in its `Captures`: how it is made for the attempt, and
/// how the attempt binds it.
struct Capture {
    lints: Vec<syn::Attribute>,
    value: TokenStream,
    bind: TokenStream,
}

/// A lent call's `Captures` (its attempt's future outlives none of them, whatever their
/// lifetimes: see `Call::attempt_lent`): the list built outside the attempt's closure, and taken
/// apart inside it, last first (a list, so that each entry keeps its argument's `#[cfg]`).
fn captures(entries: &[Capture], caps: &syn::Ident) -> (TokenStream, TokenStream) {
    let build = entries.iter().map(|c| {
        let (lints, value) = (&c.lints, &c.value);
        quote!(#(#lints)* let #caps = (#value, #caps);)
    });
    let take = entries.iter().rev().map(|c| {
        let (lints, bind) = (&c.lints, &c.bind);
        quote!(#(#lints)* let (#bind, #caps) = #caps;)
    });
    (
        quote!(let #caps = (); #(#build)*),
        quote!(#(#take)* let () = #caps;),
    )
}

/// The attempt's copy, reborrow or clone of an argument its body names (as
/// `per_attempt_binding`), for a lent call's `Captures`.
fn lent_capture(param: &Param, p: &TokenStream) -> Option<Capture> {
    let lints = param.lints().to_vec();
    let (value, bind) = match param {
        Param::Owned {
            ident, mutable, ty, ..
        } => {
            let mutability = mutable.then(|| quote!(mut));
            // Spanned at the type, so that a missing `Clone` is reported at this argument.
            let value = quote_spanned!(ty.span()=> #p::clone_arg(&#ident));
            (value, quote!(#mutability #ident))
        }
        Param::Borrowed {
            ident,
            mutable,
            unique,
            ..
        } => {
            let mutability = mutable.then(|| quote!(mut));
            let value = if *unique {
                quote!(&mut *#ident)
            } else {
                quote!(#ident)
            };
            (value, quote!(#mutability #ident))
        }
        Param::Pattern {
            pat, renamed, ty, ..
        } => {
            let value = match crate::item::ungroup(ty) {
                Type::Reference(r) if r.mutability.is_some() => quote!(&mut *#renamed),
                Type::Reference(_) => quote!(#renamed),
                _ => quote_spanned!(ty.span()=> #p::clone_arg(&#renamed)),
            };
            (value, quote!(#pat))
        }
        Param::Ignored { .. } => return None,
    };
    Some(Capture { lints, value, bind })
}

/// The receiver, for a lent call's `Captures` where the call lends an argument and the body
/// names `self` (as `receiver_binding`).
fn lent_receiver(receiver: Receiver, span: Span, p: &TokenStream) -> Capture {
    let this = quote_spanned!(span=> __self);
    let slf = quote_spanned!(span=> self);
    let (value, bind) = match receiver {
        Receiver::Shared => (quote!(#slf), quote!(#this)),
        Receiver::Unique => (quote!(&mut *#slf), quote!(#this)),
        Receiver::Value { mutable } => {
            let value = quote! {{
                use #p::ReceiveByValue as _;
                #p::ByValueReceiver(::core::option::Option::Some(&mut #slf)).__reattempt_receiver()
            }};
            (
                value,
                if mutable {
                    quote!(mut #this)
                } else {
                    quote!(#this)
                },
            )
        }
        Receiver::Pinned { .. } => (quote!(::core::pin::Pin::as_mut(&mut #slf)), quote!(#this)),
    };
    Capture {
        lints: Vec::new(),
        value,
        bind,
    }
}

/// The parts of a hedged call's expansion.
struct Hedged<'a> {
    per_attempt: &'a [TokenStream],
    stmts: &'a [TokenStream],
    pin: &'a TokenStream,
    as_result: &'a TokenStream,
    hooks: &'a TokenStream,
    name: TokenStream,
    /// A timed-out attempt's conversion, when attempts are timed.
    timed: Option<TokenStream>,
}

/// The breaker and budget expressions of a hedged call (its arguments are never borrowed
/// mutably, so each is evaluated once), as closure-API settings.
fn mut_guards(args: &RetryArgs, p: &TokenStream) -> TokenStream {
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
fn hedged_call(
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

/// How a timed-out attempt becomes the function's error, when attempts are timed (an `async
/// fn` with `timeout`, or with `policy`, which may hold one): `timeout_into`'s conversion, or
/// the error type's own (`FromElapsed`), named at the key that times the attempts (`timeout`,
/// or `policy`), so that a type without one is one error there.
fn timeout_into(args: &RetryArgs, p: &TokenStream) -> Option<TokenStream> {
    let key = if args.policy.is_some() {
        "policy"
    } else if args.schedule.settings.timeout.is_some() {
        "timeout"
    } else {
        return None;
    };
    Some(conversion(
        args.into.timeout.as_ref(),
        quote!(#p::from_elapsed),
        args.key_span(key),
        p,
    ))
}

/// A failure's conversion into the function's error: the `…_into` key's value, or `default`
/// (the error type's own, `__private::from_…`) located at `key` (the key whose failure it
/// converts).
///
/// A given conversion is typed by the function's return type first (`__private::into_error_of`),
/// so that one of the wrong type is reported at its own value ("expected `E`, found …"), not
/// over the attribute where the rejection meets the function's error.
fn conversion(
    given: Option<&syn::Expr>,
    default: TokenStream,
    key: Span,
    p: &TokenStream,
) -> TokenStream {
    let ty = format_ident!("__reattempt_ty", span = Span::mixed_site());
    given.map_or_else(
        || at(default, key),
        |expr| {
            let typed = at(quote!(#p::into_error_of), expr.span());
            quote_spanned!(expr.span()=> #typed(#ty, #expr))
        },
    )
}

/// Whether the attempts are timed: those of an `async fn` with a `timeout`, or with a `policy`
/// (which may hold one).
fn timed(args: &RetryArgs, f: &RetryFn) -> bool {
    f.is_async() && (args.policy.is_some() || args.schedule.settings.timeout.is_some())
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

/// The receiver's per-attempt binding, `__self` (the body's `self`, renamed): a copy of `&self`,
/// a reborrow of `&mut self` or `Pin<&mut Self>`; for a receiver taken by value, a copy when
/// `Self: Copy` (so that the body may use it as a value: `match self`, `f(self)`), else a mutable
/// borrow (not cloned; `&mut T` is `Send` when `T` is, where `&T` would need `T: Sync`), chosen
/// by method lookup (`__private::ByValueReceiver`). A `mut self` that is copied needs a `mut`
/// binding, which a borrow does not use: it is used once (`&mut`), so that neither warns.
fn receiver_binding(receiver: Receiver, span: Span, p: &TokenStream) -> TokenStream {
    let this = quote_spanned!(span=> __self);
    let slf = quote_spanned!(span=> self);
    match receiver {
        Receiver::Shared => quote!(let #this = #slf;),
        Receiver::Unique => quote!(let #this = &mut *#slf;),
        Receiver::Value { mutable } => {
            let value = quote! {{
                use #p::ReceiveByValue as _;
                #p::ByValueReceiver(::core::option::Option::Some(&mut #slf)).__reattempt_receiver()
            }};
            if mutable {
                quote!(let mut #this = #value; let _ = &mut #this;)
            } else {
                quote!(let #this = #value;)
            }
        }
        Receiver::Pinned { .. } => quote!(let #this = ::core::pin::Pin::as_mut(&mut #slf);),
    }
}

/// The names the attempts borrow mutably: `self` unless it is `&self`, and `&mut` arguments.
fn mutably_borrowed(f: &RetryFn) -> Vec<String> {
    let receiver = f
        .receiver
        .filter(|(r, _)| *r != Receiver::Shared)
        .map(|_| "self".to_owned());
    let args = f.params.iter().filter_map(|a| match a {
        Param::Borrowed {
            ident,
            unique: true,
            ..
        } => Some(ident.to_string()),
        _ => None,
    });
    receiver.into_iter().chain(args).collect()
}

/// Whether the body names the argument (else no attempt needs a copy of it: it may be there
/// for the attribute's expressions only, as `circuit_breaker = breaker`).
fn named_by(param: &Param, body: &TokenStream) -> bool {
    match param {
        Param::Owned { ident, .. } | Param::Borrowed { ident, .. } => {
            item::mentions(body.clone(), &ident.to_string())
        }
        Param::Pattern { pat, .. } => quote!(#pat).into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => item::mentions(body.clone(), &i.to_string()),
            _ => true,
        }),
        Param::Ignored { .. } => false,
    }
}

/// Without `recover` (which takes them), by-value arguments, only cloned from, are consumed once
/// the attempts are over: clippy's `needless_pass_by_value` then has nothing to say, and no
/// `#[allow]` of it (which a crate's `forbid(clippy::pedantic)` would refuse) is needed.
fn consumed(args: &RetryArgs, f: &RetryFn, p: &TokenStream) -> TokenStream {
    if args.recover.is_some() {
        return quote!();
    }
    f.params.iter().filter_map(|a| consume(a, p)).collect()
}

/// The statement consuming a by-value argument.
fn consume(param: &Param, p: &TokenStream) -> Option<TokenStream> {
    // clippy leaves `_name` arguments alone, and would call consuming one a use of it.
    let underscore =
        matches!(param, Param::Owned { ident, .. } if ident.to_string().starts_with('_'));
    if underscore
        || matches!(param, Param::Borrowed { .. })
        || matches!(item::ungroup(param.ty()), Type::Reference(_))
    {
        return None;
    }
    let cfg = param.lints().iter().filter(|a| item::is_cfg(a));
    let original = param.original();
    Some(quote!(#(#cfg)* #p::consume(#original);))
}

/// What one attempt binds before running the body: the receiver (if the body names it), then
/// each argument the body names.
fn per_attempt_bindings(
    f: &RetryFn,
    uses_self: bool,
    body: &TokenStream,
    p: &TokenStream,
) -> Vec<TokenStream> {
    let receiver = f.receiver.filter(|_| uses_self);
    let receiver = receiver.map(|(receiver, span)| receiver_binding(receiver, span, p));
    let named = f.params.iter().filter(|a| named_by(a, body));
    receiver
        .into_iter()
        .chain(named.filter_map(|a| per_attempt_binding(a, p)))
        .collect()
}

/// The hooks `decide` takes, as one `FnHooks` value: which errors to retry, which `Ok`s to
/// retry, the server's hint, the callback before a sleep, and (with a breaker or a budget) which
/// errors say they were a timeout. Each hook the attribute does not set keeps its default.
fn hooks(args: &RetryArgs, p: &TokenStream, ret: Span) -> TokenStream {
    // Typed by the function's return type (not by borrowing the outcome, which would keep it
    // alive across the sleep's `await` in the eyes of the `Send` analysis). Spanned at the
    // return type, so that a non-`Result` is reported once, there.
    // The return type's marker, under a name located at the return type: rustc blames an unmet
    // bound on the argument, and reports it once when it is where `result_type`'s error is.
    // (Not hygienic: rustc reports at a name of the macro's own context as at the attribute.)
    let typed = at(quote!(#p::hooks), ret);
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

/// The policy: a `static` built from the keys (checked already), or the `policy` expression.
/// Gives the item to declare (if any) and the expression of a `&RetryPolicy`. An expression
/// naming what the attempts borrow mutably (`self.policy` in a `&mut self` method) is copied
/// into a local first (a `RetryPolicy` is a few plain fields), as the call holds it throughout.
fn policy_source(
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

/// An attempt under the breaker and budget, if the attribute names them.
struct Guarded {
    /// Evaluates the `circuit_breaker` and `budget` expressions, once per call.
    bind: TokenStream,
    /// Asks the breaker for a permit before the attempt.
    admit: TokenStream,
    /// Runs the attempt, or yields the breaker's rejection as its error.
    run: TokenStream,
    /// The `Guards` handed to `decide`.
    guards: TokenStream,
    /// Takes the bulkhead's slot, once the call is made (its wait ends by the call's deadline).
    slot: TokenStream,
    /// Frees the bulkhead's slot once the attempts are over, before a `#[recover]` fallback
    /// runs (as the closure driver frees it when its future is done).
    release: TokenStream,
}

/// The breaker and budget, each evaluated once per call and bound before the loop. Except an
/// expression naming what the attempts borrow mutably (`circuit_breaker = self.breaker` in a
/// `&mut self` method, `conn.breaker` with `conn: &mut Conn`): each attempt reborrows it
/// mutably, so no borrow of it can live across attempts; such an expression is evaluated where
/// it is used (before and after each attempt). The throttle follows the breaker; the bulkhead's
/// slot is taken before the loop (an expression naming what the attempts borrow mutably cannot
/// name a bulkhead: its slot borrows it for the whole call).
#[allow(clippy::too_many_lines, reason = "one guard after another")]
fn guarded(
    args: &RetryArgs,
    run: TokenStream,
    p: &TokenStream,
    mutably: &[String],
    timed: bool,
    is_async: bool,
) -> Guarded {
    let permit = format_ident!("__reattempt_permit", span = Span::mixed_site());
    let call = format_ident!("__reattempt_call", span = Span::mixed_site());
    let breaker_ident = format_ident!("__reattempt_breaker", span = Span::mixed_site());
    let budget_ident = format_ident!("__reattempt_budget", span = Span::mixed_site());
    let per_use = |e: &syn::Expr| mutably.iter().any(|n| item::mentions(quote!(#e), n));
    let mut guards = quote!(#p::Guards::NONE);
    let mut bind = quote!();
    let none = quote!(::core::option::Option::None);
    // Each guard's rejection as the function's error, spanned at its key's expression, so that
    // a missing `From` is reported there.
    let mut rejections = Vec::new();
    let breaker = if let Some(b) = &args.circuit_breaker {
        // Spanned at the expression, so that a wrong type is reported there.
        let breaker = if per_use(b) {
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
    } else {
        none.clone()
    };
    if let Some(g) = &args.budget {
        let budget = if per_use(g) {
            quote_spanned!(g.span()=> #p::budget_ref(&#g))
        } else {
            bind.extend(quote_spanned!(g.span()=> let #budget_ident: &#p::RetryBudget = &#g;));
            quote!(#budget_ident)
        };
        guards = quote!(#p::Guards::budget(#guards, #budget));
    }
    let throttle = if let Some(t) = &args.throttle {
        let throttle_ident = format_ident!("__reattempt_throttle", span = Span::mixed_site());
        let throttle = if per_use(t) {
            quote_spanned!(t.span()=> #p::throttle_ref(&#t))
        } else {
            bind.extend(
                quote_spanned!(t.span()=> let #throttle_ident: &#p::AdaptiveThrottle = &#t;),
            );
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
    } else {
        none.clone()
    };
    // The bulkhead's slot is taken once, before the first attempt, and held to the call's end
    // (an async function waits for one up to its `max_wait`, as `steps::poll_slot` does).
    // The wait ends by the call's deadline (its own `max_elapsed`, an enclosing call's): then,
    // if the attempt can no longer be made, the call holds no slot and ends as
    // `DeadlineReached` (`Call::slot_or_deadline`), as the other drivers' `steps::poll_slot`.
    let mut take_slot = quote!();
    let mut release = quote!();
    let full = if let Some(b) = &args.bulkhead {
        let slot = format_ident!("__reattempt_slot", span = Span::mixed_site());
        release = quote!(::core::mem::drop(#slot););
        let bulkhead = format_ident!("__reattempt_bulkhead", span = Span::mixed_site());
        // The expression evaluated once: the slot's wait and what its end means both read it.
        take_slot.extend(quote_spanned!(b.span()=> let #bulkhead = #p::bulkhead_ref(&#b);));
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
        quote!(::core::result::Result::is_err(&#slot))
    } else {
        quote!(false)
    };
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
    // the breaker, the throttle; a rejection is the attempt's error, never made.
    let reason = format_ident!("__reattempt_reason", span = Span::mixed_site());
    let arms = rejections
        .iter()
        .map(|(variant, error)| quote!(#p::GiveUpReason::#variant => #error,));
    let admit = quote! {
        let #permit = #p::Call::admit(&#call, #breaker, #throttle, #full, #timed);
    };
    let run = quote! {
        match #p::Admitted::rejection(&#permit) {
            ::core::option::Option::None => #run,
            ::core::option::Option::Some(#reason) => ::core::result::Result::Err(match #reason {
                #(#arms)*
                _ => ::core::unreachable!("reattempt: a rejection without its guard"),
            }),
        }
    };
    let guards = quote!(#p::Guards::admitted(#guards, #breaker, #throttle, #permit));
    Guarded {
        bind,
        admit,
        run,
        guards,
        slot: take_slot,
        release,
    }
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

/// What one attempt binds before running the body: a clone of a by-value argument, a copy or a
/// reborrow of a reference (so that a `mut` binding starts afresh each attempt).
fn per_attempt_binding(param: &Param, p: &TokenStream) -> Option<TokenStream> {
    match param {
        Param::Owned {
            ident,
            mutable,
            ty,
            lints,
        } => {
            let mutability = mutable.then(|| quote!(mut));
            // Spanned at the type, so that a missing `Clone` is reported at this argument.
            Some(quote_spanned! {ty.span()=>
                #(#lints)*
                let #mutability #ident = #p::clone_arg(&#ident);
            })
        }
        Param::Borrowed {
            ident,
            mutable,
            unique,
            lints,
            ..
        } => match (unique, mutable) {
            (true, true) => Some(quote!(#(#lints)* let mut #ident = &mut *#ident;)),
            (true, false) => Some(quote!(#(#lints)* let #ident = &mut *#ident;)),
            (false, true) => Some(quote!(#(#lints)* let mut #ident = #ident;)),
            // A shared reference is copied into the attempt as it is.
            (false, false) => None,
        },
        Param::Pattern {
            pat,
            renamed,
            ty,
            lints,
        } => Some(match crate::item::ungroup(ty) {
            Type::Reference(r) if r.mutability.is_some() => {
                quote!(#(#lints)* let #pat = &mut *#renamed;)
            }
            Type::Reference(_) => quote!(#(#lints)* let #pat = #renamed;),
            _ => quote_spanned! {ty.span()=> #(#lints)* let #pat = #p::clone_arg(&#renamed);},
        }),
        Param::Ignored { .. } => None,
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

/// `#[recover]` call after the loop: the final `Err` goes to the recover function with the
/// receiver and the original arguments, inside the call's context.
///
/// The fallback is called through a trait declared here, for this call site only, whose
/// `#[diagnostic::on_unimplemented]` message writes out the signature the fallback must have
/// (from this function's own types). Its impls accept the two shapes (the error only, or the
/// error and every argument), returning the function's `Result` (for an `async fn`, a future of
/// it); a third impl never applies, so that rustc always weighs the candidates and reports an
/// unfit fallback as this trait unimplemented: one error, at the `recover = …` value. The types
/// the fallback is checked against come first in the call (`ty`, the arguments, the receiver, the
/// error), so that they are known before the fallback is; its own signature then cannot steer
/// inference into a mismatch reported elsewhere.
fn recover_call(
    path: &Path,
    f: &RetryFn,
    out: &syn::Ident,
    call: &syn::Ident,
    hedged: bool,
    p: &TokenStream,
) -> TokenStream {
    let span = path.span();
    let name_span = path.segments.last().map_or(span, |s| s.ident.span());
    let originals = f.params.iter().map(Param::original);
    let args = quote!((#(#originals,)*));
    let err = syn::Ident::new("__reattempt_error", span.resolved_at(Span::mixed_site()));
    let ty = format_ident!("__reattempt_ty", span = Span::mixed_site());
    let tr = format_ident!("__ReattemptRecover");
    let declare = recover_trait(&tr, path, f, p);
    let recv_in = f.has_receiver().then(|| quote!(self,));
    // The fallback is bound first, and passed as a name located at its last segment: the
    // error is then reported at `fallback` (of `Self::fallback`), with no second label.
    // (Not hygienic: rustc reports at a name of the macro's own context as at the attribute.)
    let fallback = syn::Ident::new("__reattempt_fallback", name_span);
    let method = at(quote!(#tr::call), name_span);
    let invoke = quote_spanned!(name_span=> #method(#ty, #args, #recv_in #err, #fallback));
    let recover = respan(quote!(#p::Call::recover), name_span);
    let recover_blocking = respan(quote!(#p::Call::recover_blocking), name_span);
    let call = if hedged {
        // The closure driver's pinned future, whose engine holds the call's context.
        let recover_after = respan(quote!(#p::Call::recover_after), name_span);
        quote_spanned!(name_span=> #recover_after(#call.as_mut(), #invoke).await)
    } else if f.is_async() {
        quote_spanned!(name_span=> #recover(&mut #call, #invoke).await)
    } else {
        quote_spanned!(name_span=> #recover_blocking(&mut #call, || #invoke))
    };
    quote! {
        match #out {
            ::core::result::Result::Err(#err) => {
                // Named outside the block that declares the trait, where rustc still offers
                // `Self::fallback` for a method named without `Self::`.
                let #fallback = #path;
                {
                    #declare
                    #p::IsResult::into_result(#call)
                }
            }
            __reattempt_ok => __reattempt_ok,
        }
    }
}

/// The trait the fallback is called through, declared for this call site only, with its impls
/// for the two shapes of fallback (and, for a function without arguments, one that never
/// applies in place of the second).
fn recover_trait(tr: &syn::Ident, path: &Path, f: &RetryFn, p: &TokenStream) -> TokenStream {
    let message = Literal::string(&recover_message(path, f));
    let label = Literal::string(&recover_label(f));
    let note = Literal::string(&recover_note(f));
    let arity = f.params.len();
    let types: Vec<_> = (1..=arity).map(|i| format_ident!("A{}", i)).collect();
    let values: Vec<_> = (1..=arity).map(|i| format_ident!("a{}", i)).collect();
    let receiver = f.has_receiver();
    let recv_param = receiver.then(|| quote!(Recv,));
    let recv_decl = receiver.then(|| quote!(recv: Recv,));
    let recv_pass = receiver.then(|| quote!(recv,));
    let recv_unused = receiver.then(|| quote!(_: Recv,));
    // The fallback's output: `R` itself, or (async) a future of `R`.
    let (fut_param, output, fut_bound) = if f.is_async() {
        (
            Some(quote!(Fut,)),
            quote!(Fut),
            Some(quote!(Fut: ::core::future::Future<Output = R>,)),
        )
    } else {
        (None, quote!(R), None)
    };
    let impl_for = |kind: TokenStream, with_args: bool| {
        let (fn_args, bind, pass) = if with_args {
            (
                quote!(#(#types,)*),
                quote!((#(#values,)*)),
                quote!(#(#values,)*),
            )
        } else {
            (quote!(), quote!(_), quote!())
        };
        quote! {
            impl<F, #recv_param E, #(#types,)* R, #fut_param> #tr<#p::#kind, #recv_param E, (#(#types,)*), R> for F
            where
                F: ::core::ops::FnOnce(#recv_param E, #fn_args) -> #output,
                #fut_bound
            {
                type Out = #output;
                #[inline]
                fn call(_: #p::TypeOf<R>, #bind: (#(#types,)*), #recv_decl error: E, f: Self) -> #output {
                    f(#recv_pass error, #pass)
                }
            }
        }
    };
    let error_only = impl_for(quote!(ErrorOnly), false);
    let with_args = if arity == 0 {
        // The same shape as the error only: a candidate that never applies instead.
        quote! {
            impl<F, #recv_param E, R> #tr<(), #recv_param E, (), R> for F
            where
                F: #p::NeverFits,
            {
                type Out = R;
                #[inline]
                fn call(_: #p::TypeOf<R>, (): (), #recv_unused _: E, f: Self) -> R {
                    #p::NeverFits::absurd(f)
                }
            }
        }
    } else {
        impl_for(quote!(WithArgs), true)
    };
    quote! {
        #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
        trait #tr<Kind, #recv_param E, Args, R> {
            type Out;
            fn call(ty: #p::TypeOf<R>, args: Args, #recv_decl error: E, f: Self) -> Self::Out;
        }
        #error_only
        #with_args
    }
}

/// The fallback's name, as the message shows it: the path's last segment.
fn fallback_name(path: &Path) -> String {
    path.segments
        .last()
        .map_or_else(|| "fallback".to_owned(), |s| s.ident.to_string())
}

/// Text as written, for a diagnostic message: `#[async_trait]`'s lifetimes removed, and braces
/// doubled (a message is a format string).
fn shown(tokens: &impl quote::ToTokens) -> String {
    let mut text = crate::known_keys::render(tokens);
    for generated in ["'async_trait"]
        .into_iter()
        .map(str::to_owned)
        .chain((0..16).rev().map(|i| format!("'life{i}")))
    {
        text = text.replace(&format!("{generated} "), "");
        text = text.replace(&generated, "'_");
    }
    text.replace('{', "{{").replace('}', "}}")
}

/// The receiver as the fallback takes it (`self` for `mut self`).
fn shown_receiver(f: &RetryFn) -> Option<String> {
    f.item.sig.inputs.iter().find_map(|arg| match arg {
        syn::FnArg::Receiver(r) => Some(match &r.kind {
            syn::ReceiverKind::Reference(_, lifetime, mutability) => {
                let lifetime = lifetime
                    .as_ref()
                    .map(|l| format!("{} ", shown(l)))
                    .filter(|l| l != "'_ ")
                    .unwrap_or_default();
                let mutability = if mutability.is_some() { "mut " } else { "" };
                format!("&{lifetime}{mutability}self")
            }
            syn::ReceiverKind::Typed(_, ty) => format!("self: {}", shown(ty)),
            _ => "self".to_owned(),
        }),
        syn::FnArg::Typed(_) => None,
    })
}

/// The error type as written in `Result<T, E>`, or (for an alias) the type rustc resolves.
fn shown_error(f: &RetryFn) -> String {
    // Else the trait's `E`, filled in by rustc.
    item::error_type(&f.output).map_or_else(|| "{E}".to_owned(), shown)
}

/// `fn fallback(&self, err: E, id: u32) -> R`, with the arguments or without.
fn expected_signature(path: &Path, f: &RetryFn, with_args: bool) -> String {
    let mut params: Vec<String> = shown_receiver(f).into_iter().collect();
    params.push(format!("err: {}", shown_error(f)));
    if with_args {
        params.extend(f.params.iter().map(|a| {
            let name = match a {
                Param::Owned { ident, .. } | Param::Borrowed { ident, .. } => ident.to_string(),
                Param::Pattern { pat, .. } => shown(pat),
                Param::Ignored { .. } => "_".to_owned(),
            };
            format!("{name}: {}", shown(a.ty()))
        }));
    }
    format!(
        "{}fn {}({}) -> {}",
        if f.is_async() { "async " } else { "" },
        fallback_name(path),
        params.join(", "),
        shown(&f.output)
    )
}

/// The headline: the fallback, the retryable function, and the signatures that fit.
fn recover_message(path: &Path, f: &RetryFn) -> String {
    let head = format!(
        "`{}` does not fit as the `recover` fn of `{}`: write `{}`",
        fallback_name(path),
        f.item.sig.ident,
        expected_signature(path, f, false)
    );
    if f.params.is_empty() {
        head
    } else {
        format!("{head} or `{}`", expected_signature(path, f, true))
    }
}

/// Under the `recover = …` value: the rule the signatures follow.
fn recover_label(f: &RetryFn) -> String {
    let first = if f.has_receiver() {
        "the receiver, then the final error"
    } else {
        "the final error"
    };
    let rest = if f.params.is_empty() {
        String::new()
    } else {
        format!(
            ", then nothing or all the arguments of `{}`",
            f.item.sig.ident
        )
    };
    format!("takes {first} by value{rest}; returns the same `Result`")
}

/// The note: whether the fallback is awaited (which the signatures show only by `async`).
fn recover_note(f: &RetryFn) -> String {
    let name = &f.item.sig.ident;
    if f.is_async() {
        format!("`{name}` is `async` and awaits its fallback: the recover fn is an `async fn` too")
    } else {
        format!(
            "`{name}` is blocking and does not await its fallback: the recover fn is a plain `fn`, not `async`"
        )
    }
}

/// The tokens (a path to a runtime item), every one at `span` (hygiene included: such a path
/// is absolute), so that an error about the expression they start is reported at `span`.
fn at(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect()
}

/// The tokens, every one located at `span` (hygiene kept), so that an error about the path they
/// form is reported at `span` rather than at the attribute.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            t.set_span(t.span().located_at(span));
            t
        })
        .collect()
}

#[cfg(test)]
mod recover_message_tests {
    use super::*;

    fn message(path: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> String {
        let path: Path = syn::parse2(path).unwrap_or_else(|e| panic!("{e}"));
        let f = item::parse(item).unwrap_or_else(|e| panic!("{e}"));
        recover_message(&path, &f)
    }

    #[test]
    fn writes_both_signatures_from_the_retryable_fns_types() {
        let m = message(
            quote!(Self::mark_pending),
            quote!(
                async fn charge(&self, req: &ChargeRequest) -> Result<Receipt, PayError> {
                    todo!()
                }
            ),
        );
        assert_eq!(
            m,
            "`mark_pending` does not fit as the `recover` fn of `charge`: write \
             `async fn mark_pending(&self, err: PayError) -> Result<Receipt, PayError>` or \
             `async fn mark_pending(&self, err: PayError, req: &ChargeRequest) -> Result<Receipt, PayError>`"
        );
    }

    #[test]
    fn without_arguments_there_is_one_signature() {
        let m = message(
            quote!(fallback::<u32>),
            quote!(
                fn fetch(mut self: Box<Self>) -> Result<u32, E> {
                    todo!()
                }
            ),
        );
        assert!(
            m.ends_with("write `fn fallback(self: Box<Self>, err: E) -> Result<u32, E>`"),
            "{m}"
        );
    }

    #[test]
    fn an_alias_leaves_the_error_type_to_rustc_and_patterns_are_shown() {
        let m = message(
            quote!(fallback),
            quote!(
                fn read(&mut self, (a, b): (u8, u8), _: &str, mut n: u32) -> io::Result<u8> {
                    todo!()
                }
            ),
        );
        assert!(
            m.contains(
                "`fn fallback(&mut self, err: {E}, (a, b): (u8, u8), _: &str, n: u32) -> io::Result<u8>`"
            ),
            "{m}"
        );
    }

    #[test]
    fn braces_are_escaped_and_async_trait_lifetimes_dropped() {
        let m = message(
            quote!(fallback),
            quote!(
                fn get<'life0, 'async_trait>(
                    &'life0 self,
                    n: Arr<{ 1 + 1 }>,
                ) -> ::core::pin::Pin<
                    Box<dyn ::core::future::Future<Output = Result<u8, E>> + Send + 'async_trait>,
                > {
                    Box::pin(async move { todo!() })
                }
            ),
        );
        assert!(
            m.contains("`async fn fallback(&self, err: E, n: Arr<{{ 1 + 1 }}>) -> Result<u8, E>`"),
            "{m}"
        );
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
