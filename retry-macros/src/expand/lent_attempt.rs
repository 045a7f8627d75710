//! One attempt of a call that lends its attempts a `&mut` input (see `lent`): the body in a
//! closure higher-ranked over the reborrow's lifetime, and what it captures.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Type;
use syn::spanned::Spanned;

use super::bindings::{named_by, per_attempt_binding, receiver_binding};
use super::conversions::timeout_into;
use crate::args::RetryArgs;
use crate::item::{Param, Receiver, RetryFn};

/// One attempt of a call lending its attempts a `&mut` input (`lent`): the body runs in a
/// closure higher-ranked over the reborrow's lifetime (`Call::attempt_lent`, which says why that
/// is sound), whose future is boxed; a failed attempt gives the input back for the next one.
pub(super) fn lent_attempt(
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
    let (param, named) = lent_param(f, lending, uses_self, body);
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

/// The attempt closure's parameter for the lent input (`__self`, the argument's name, or `_` when
/// the body does not name it), and the name of the lent argument (`None` for the receiver).
fn lent_param(
    f: &RetryFn,
    lending: &crate::lent::Lending,
    uses_self: bool,
    body: &TokenStream,
) -> (TokenStream, Option<String>) {
    match &lending.arg {
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
    }
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
