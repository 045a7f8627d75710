//! `#[recover]`: checks what can be checked of a fallback alone (it takes the error; it is not
//! linked from its own side, as in `#[recover(fetch)]`) and leaves the function as it is, with
//! the lints that a fallback trips by design silenced. It links nothing: `#[retryable(recover =
//! f)]` checks `f`'s whole signature against the retryable function's own types where it calls
//! `f` (see `expand::recover_call`), so `f` may be imported with `use` (or `use … as`), named
//! with a turbofish, or live in a trait impl, and needs no item beside it.

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{FnArg, ItemFn, LitStr, Path};

/// `#[recover(fetch)]`: the link is written on the `#[retryable]` side.
fn linked_from_recover_side(metas: &[NestedMeta], item: &TokenStream) -> Option<syn::Error> {
    let other = metas.iter().find(
        |m| !matches!(m, NestedMeta::Meta(syn::Meta::NameValue(nv)) if nv.path.is_ident("crate")),
    )?;
    let f = syn::parse2::<ItemFn>(item.clone()).ok();
    let name = f
        .as_ref()
        .map_or_else(|| "this_fn".to_owned(), |f| f.sig.ident.to_string());
    let is_method = f.as_ref().is_some_and(|f| {
        f.sig
            .inputs
            .first()
            .is_some_and(|a| matches!(a, FnArg::Receiver(_)))
    });
    let path = if is_method {
        format!("Self::{name}")
    } else {
        name
    };
    let target = match other {
        NestedMeta::Meta(syn::Meta::Path(p)) => format!("`{}`", crate::render::render(p)),
        _ => "the #[retryable] fn".to_owned(),
    };
    Some(syn::Error::new_spanned(
        other,
        format!(
            "#[recover] takes no arguments: the link is written on the retryable side. \
             Put `recover = {path}` in the #[retryable(...)] of {target}, and a bare #[recover] here"
        ),
    ))
}

#[derive(FromMeta, Default)]
struct RecoverArgs {
    #[darling(rename = "crate")]
    krate: Option<LitStr>,
}

/// `#[recover(args)] item`, as tokens; never panics.
pub fn recover(args: TokenStream, item: TokenStream) -> TokenStream {
    match expand(args, &item) {
        Ok(tokens) => tokens,
        Err(Refused::Error(e)) => crate::util::with_errors(item, &e),
        Err(Refused::NoErrorParameter(f, e)) => {
            crate::util::with_errors(error_parameter_added(*f), &e)
        }
    }
}

/// Why the attribute refused the item.
enum Refused {
    Error(syn::Error),
    /// A fallback without the error parameter: the function (emitted with one added) and the error.
    NoErrorParameter(Box<ItemFn>, syn::Error),
}

impl From<syn::Error> for Refused {
    fn from(e: syn::Error) -> Self {
        Refused::Error(e)
    }
}

impl From<darling::Error> for Refused {
    fn from(e: darling::Error) -> Self {
        Refused::Error(e.into())
    }
}

/// The error for a fallback that takes no error: the signature to write, from its own types.
fn no_error_parameter(f: &ItemFn) -> Refused {
    let sig = &f.sig;
    let error = match &sig.output {
        syn::ReturnType::Type(_, ty) => result_error(ty),
        syn::ReturnType::Default => None,
    }
    .unwrap_or_else(|| "E".to_owned());
    let mut params: Vec<String> = sig.inputs.iter().map(crate::render::render).collect();
    params.push(format!("err: {error}"));
    let output = match &sig.output {
        syn::ReturnType::Type(_, ty) => format!(" -> {}", crate::render::render(ty)),
        syn::ReturnType::Default => String::new(),
    };
    let written = format!(
        "{}fn {}({}){output}",
        if sig.asyncness.is_some() {
            "async "
        } else {
            ""
        },
        sig.ident,
        params.join(", ")
    );
    let e = syn::Error::new(
        sig.paren_token.span.join(),
        format!(
            "a #[recover] fn takes the final error, by value, as its first argument (after `self`): \
             write `{written}`, then add nothing or exactly the #[retryable] fn's arguments after `err`"
        ),
    );
    Refused::NoErrorParameter(Box::new(f.clone()), e)
}

/// `E` of a return type written `Result<T, E>`.
fn result_error(ty: &syn::Type) -> Option<String> {
    let syn::Type::Path(tp) = ty else {
        return None;
    };
    let last = tp.path.segments.last()?;
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match (last.ident == "Result", args.args.len(), args.args.last()) {
        (true, 2, Some(syn::GenericArgument::Type(e))) => Some(crate::render::render(e)),
        _ => None,
    }
}

/// The fallback with a parameter of a type of its own added after the receiver, once its
/// missing error is reported: the `recover = …` call site then accepts it, so the mistake is
/// reported once, here, and not again where the fallback is named.
fn error_parameter_added(mut f: ItemFn) -> TokenStream {
    let ty = syn::Ident::new("__ReattemptUnusedError", proc_macro2::Span::mixed_site());
    f.sig.generics.params.push(syn::parse_quote!(#ty));
    let at = usize::from(matches!(f.sig.inputs.first(), Some(FnArg::Receiver(_))));
    f.sig.inputs.insert(at, syn::parse_quote!(_: #ty));
    quote!(#f)
}

fn expand(args: TokenStream, item: &TokenStream) -> Result<TokenStream, Refused> {
    let metas = NestedMeta::parse_meta_list(args)?;
    if let Some(e) = linked_from_recover_side(&metas, item) {
        return Err(e.into());
    }
    let args = RecoverArgs::from_list(&metas)?;
    // `crate = "…"` is still accepted (and checked to be a path), though nothing names it now.
    if let Some(path) = &args.krate {
        path.parse::<Path>()?;
    }
    let f: ItemFn = syn::parse2(item.clone()).map_err(|_| {
        syn::Error::new(
            proc_macro2::Span::call_site(),
            "#[recover] applies to a function with a body: the fallback of a #[retryable] function",
        )
    })?;
    let params = f
        .sig
        .inputs
        .iter()
        .filter(|a| matches!(a, FnArg::Typed(_)))
        .count();
    if params == 0 {
        return Err(no_error_parameter(&f));
    }
    // An async retryable function awaits its fallback, so the fallback is async even when its
    // body awaits nothing; and it returns the retryable function's `Result` even when it always
    // succeeds.
    let allow_async = f
        .sig
        .asyncness
        .is_some()
        .then(|| quote!(clippy::unused_async,));
    Ok(quote! {
        #[allow(#allow_async clippy::unnecessary_wraps)]
        #item
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fallback_without_the_error_is_told_the_signature_and_emitted_with_one() {
        let out = recover(
            quote!(),
            quote!(
                async fn fallback(&self) -> Result<u32, String> {
                    Ok(0)
                }
            ),
        )
        .to_string();
        assert!(
            out.contains(
                "write `async fn fallback(&self, err: String) -> Result<u32, String>`, then add"
            ),
            "{out}"
        );
        // Emitted with a parameter of its own type after `self`, so that the `recover = …` call
        // site accepts it and the mistake is reported once.
        let f: ItemFn = syn::parse2(error_parameter_added(syn::parse_quote!(
            async fn fallback(&self) -> Result<u32, String> {
                Ok(0)
            }
        )))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.sig.inputs.len(), 2);
        assert_eq!(f.sig.generics.params.len(), 1);
        assert!(matches!(f.sig.inputs[0], FnArg::Receiver(_)));
    }

    #[test]
    fn a_fallback_with_the_error_is_left_as_it_is() {
        let out = recover(
            quote!(),
            quote!(
                fn fallback(err: String) -> Result<u32, String> {
                    Err(err)
                }
            ),
        )
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("fn fallback (err : String)"), "{out}");
    }
}
