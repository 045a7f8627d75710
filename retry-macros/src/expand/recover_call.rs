//! The `#[recover]` fallback's call after the attempts, through a trait declared for the call
//! site whose `on_unimplemented` message writes out the signature that fits.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Path;
use syn::spanned::Spanned;

use super::recover_message::{recover_label, recover_message, recover_note};
use super::spans::{at, respan};
use crate::item::{Param, RetryFn};

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
pub(super) fn recover_call(
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
pub(super) fn recover_trait(
    tr: &syn::Ident,
    path: &Path,
    f: &RetryFn,
    p: &TokenStream,
) -> TokenStream {
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
