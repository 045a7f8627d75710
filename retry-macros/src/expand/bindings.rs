//! What each attempt binds before the body runs: the receiver and the arguments it names, each
//! a copy, a reborrow or a clone, so that the attempt's future owns them (and is `Send` when they
//! are); and the by-value arguments consumed once the attempts are over.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Type;
use syn::spanned::Spanned;

use crate::args::RetryArgs;
use crate::item::{self, Param, Receiver, RetryFn};

/// The receiver's per-attempt binding, `__self` (the body's `self`, renamed): a copy of `&self`,
/// a reborrow of `&mut self` or `Pin<&mut Self>`; for a receiver taken by value, a copy when
/// `Self: Copy` (so that the body may use it as a value: `match self`, `f(self)`), else a mutable
/// borrow (not cloned; `&mut T` is `Send` when `T` is, where `&T` would need `T: Sync`), chosen
/// by method lookup (`__private::ByValueReceiver`). A `mut self` that is copied needs a `mut`
/// binding, which a borrow does not use: it is used once (`&mut`), so that neither warns.
pub(super) fn receiver_binding(receiver: Receiver, span: Span, p: &TokenStream) -> TokenStream {
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
pub(super) fn mutably_borrowed(f: &RetryFn) -> Vec<String> {
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
pub(super) fn named_by(param: &Param, body: &TokenStream) -> bool {
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
pub(super) fn consumed(args: &RetryArgs, f: &RetryFn, p: &TokenStream) -> TokenStream {
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
pub(super) fn per_attempt_bindings(
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

/// What one attempt binds before running the body: a clone of a by-value argument, a copy or a
/// reborrow of a reference (so that a `mut` binding starts afresh each attempt).
pub(super) fn per_attempt_binding(param: &Param, p: &TokenStream) -> Option<TokenStream> {
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
