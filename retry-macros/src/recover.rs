//! `#[recover]`: checks the fallback's shape and leaves the function as it is (with the lints
//! that a fallback trips by design silenced). `#[retryable(recover = f)]` calls `f` through the
//! runtime's `RecoverMethod`/`RecoverFree` traits, which infer from `f`'s arity whether it takes
//! only the error or also the arguments; no item is added beside `f`, so it can be imported with
//! `use` (or `use … as`), named with a turbofish, or live in a trait impl.

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{FnArg, ItemFn, LitStr, Path};

/// `#[recover(fetch)]`: the link is written on the #[retryable] side.
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
        NestedMeta::Meta(syn::Meta::Path(p)) => format!("`{}`", crate::known_keys::render(p)),
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
        Err(e) => crate::expand::with_errors(item, &e),
    }
}

fn expand(args: TokenStream, item: &TokenStream) -> syn::Result<TokenStream> {
    let metas = NestedMeta::parse_meta_list(args)?;
    if let Some(e) = linked_from_recover_side(&metas, item) {
        return Err(e);
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
        return Err(syn::Error::new(
            f.sig.ident.span(),
            "a #[recover] function takes the final error as its first argument (after `self`), \
             then nothing or exactly the #[retryable] function's arguments",
        ));
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
