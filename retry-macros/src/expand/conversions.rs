//! How the library's own failures (a timeout, a guard's rejection) become the function's error,
//! and whether the attempts are timed.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::spans::at;
use crate::args::RetryArgs;
use crate::item::RetryFn;

/// How a timed-out attempt becomes the function's error, when attempts are timed (an `async
/// fn` with `timeout`, or with `policy`, which may hold one): `timeout_into`'s conversion, or
/// the error type's own (`FromElapsed`), named at the key that times the attempts (`timeout`,
/// or `policy`), so that a type without one is one error there.
pub(super) fn timeout_into(args: &RetryArgs, p: &TokenStream) -> Option<TokenStream> {
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
pub(super) fn conversion(
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
pub(super) fn timed(args: &RetryArgs, f: &RetryFn) -> bool {
    f.is_async() && (args.policy.is_some() || args.schedule.settings.timeout.is_some())
}
