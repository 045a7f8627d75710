//! `#[recover]`: leaves the function as it is and adds a hidden marker beside it, which
//! `#[retryable(recover = f)]` names. The marker's type says whether `f` takes only the error or
//! also the retryable function's arguments; the call itself goes to `f`, checked by the runtime's
//! `RecoverMethod`/`RecoverFree` traits (whose messages name the expected signature).

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{FnArg, ItemFn, LitStr, Path};

/// The marker's name for a recover function named `ident`.
fn marker_ident(ident: &syn::Ident) -> syn::Ident {
    // Named so that, when `#[recover]` is missing, rustc's "cannot find value `…`" says what is.
    format_ident!(
        "{}_NEEDS_THE_RECOVER_ATTRIBUTE",
        ident.to_string().trim_start_matches("r#").to_uppercase(),
        span = ident.span()
    )
}

/// The second marker's name, looked up by a method's `recover = fallback` (one segment, no
/// `Self::`): when it is not found, rustc says "cannot find value
/// `FALLBACK_NEEDS_SELF_OR_THE_RECOVER_ATTRIBUTE`", and, when the fallback is a method of the
/// same impl, adds that "a method by that name is available on `Self`". Only free fns define it.
fn self_marker_ident(ident: &syn::Ident) -> syn::Ident {
    format_ident!(
        "{}_NEEDS_SELF_OR_THE_RECOVER_ATTRIBUTE",
        ident.to_string().trim_start_matches("r#").to_uppercase(),
        span = ident.span()
    )
}

/// `recover = Self::pending` → `Self::PENDING_NEEDS_THE_RECOVER_ATTRIBUTE`; for a method's
/// one-segment `recover = pending`, the marker whose name also mentions `Self`.
pub(crate) fn marker_path(path: &Path, has_receiver: bool) -> Path {
    let mut marker = path.clone();
    let single = marker.segments.len() == 1 && marker.leading_colon.is_none();
    if let Some(last) = marker.segments.last_mut() {
        last.ident = if has_receiver && single {
            self_marker_ident(&last.ident)
        } else {
            marker_ident(&last.ident)
        };
    }
    marker
}

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
    let krate: Path = match &args.krate {
        Some(path) => path.parse()?,
        None => syn::parse_quote!(::reattempt),
    };
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
    let kind = if params == 1 {
        quote!(ErrorOnly)
    } else {
        quote!(WithArgs)
    };
    let marker = marker_ident(&f.sig.ident);
    // A free fn (no receiver) may serve a method's one-segment `recover = fallback`; a method
    // is named `Self::fallback`, so it gets no second marker (nor, in a trait impl, an extra
    // "not a member of trait" error).
    let vis = &f.vis;
    let has_receiver = matches!(f.sig.inputs.first(), Some(FnArg::Receiver(_)));
    let self_marker = (!has_receiver).then(|| {
        let self_marker = self_marker_ident(&f.sig.ident);
        quote! {
            #[doc(hidden)]
            #[allow(dead_code, non_upper_case_globals)]
            #vis const #self_marker: #krate::__private::#kind = #krate::__private::#kind;
        }
    });
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
        #[doc(hidden)]
        #[allow(dead_code, non_upper_case_globals)]
        #vis const #marker: #krate::__private::#kind = #krate::__private::#kind;
        #self_marker
    })
}
