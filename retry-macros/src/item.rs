//! The function under `#[retryable]`: its signature, how each argument reaches an attempt, and
//! the `Result` it returns.

use proc_macro2::{Span, TokenStream};
use quote::format_ident;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, Pat, PatIdent, ReturnType, Type};

/// How one argument reaches each attempt.
pub(crate) enum Param {
    /// `name: T` taken by value: each attempt gets a clone; the original stays for `#[recover]`.
    Owned {
        ident: Ident,
        mutable: bool,
        ty: Type,
    },
    /// `name: &T` or `name: &mut T`: passed to each attempt as it is.
    Borrowed { ident: Ident, ty: Type },
    /// A destructuring pattern (`(a, b): (u32, u32)`): renamed in the signature; each attempt
    /// destructures a clone (or, for a reference, a copy) of it.
    Pattern { pat: Pat, renamed: Ident, ty: Type },
    /// `_: T`: nothing reaches the attempt.
    Ignored { renamed: Ident, ty: Type },
}

impl Param {
    /// The expression that passes the original argument on (to `#[recover]`).
    pub(crate) fn original(&self) -> &Ident {
        match self {
            Param::Owned { ident, .. } | Param::Borrowed { ident, .. } => ident,
            Param::Pattern { renamed, .. } | Param::Ignored { renamed, .. } => renamed,
        }
    }

    /// The argument's declared type.
    pub(crate) fn ty(&self) -> &Type {
        match self {
            Param::Owned { ty, .. }
            | Param::Borrowed { ty, .. }
            | Param::Pattern { ty, .. }
            | Param::Ignored { ty, .. } => ty,
        }
    }
}

/// The function, with its arguments classified and its signature adjusted where needed.
pub(crate) struct RetryFn {
    pub(crate) item: ItemFn,
    pub(crate) params: Vec<Param>,
    pub(crate) has_receiver: bool,
    pub(crate) output: Type,
}

impl RetryFn {
    pub(crate) fn is_async(&self) -> bool {
        self.item.sig.asyncness.is_some()
    }
}

/// Parses the item under the attribute.
pub(crate) fn parse(item: TokenStream) -> syn::Result<RetryFn> {
    let Ok(mut item) = syn::parse2::<ItemFn>(item.clone()) else {
        return Err(not_a_function(item));
    };
    if let Some(constness) = &item.sig.constness {
        return Err(syn::Error::new(
            constness.span,
            "#[retryable] cannot apply to a `const fn`: retrying sleeps and reads the clock; remove `const`",
        ));
    }
    crate::item_checks::check(&item)?;
    let output = result_type(&item.sig)?;
    let mut params = Vec::new();
    let mut has_receiver = false;
    for (i, arg) in item.sig.inputs.iter_mut().enumerate() {
        let typed = match arg {
            FnArg::Receiver(_) => {
                has_receiver = true;
                continue;
            }
            FnArg::Typed(t) => t,
        };
        let renamed = format_ident!("__reattempt_arg{}", i, span = Span::mixed_site());
        let is_ref = matches!(*typed.ty, Type::Reference(_));
        let param = match &mut *typed.pat {
            Pat::Ident(PatIdent {
                by_ref: None,
                subpat: None,
                ident,
                mutability,
                ..
            }) => {
                if is_ref {
                    Param::Borrowed {
                        ident: ident.clone(),
                        ty: (*typed.ty).clone(),
                    }
                } else {
                    // The signature's binding is only cloned from, so a `mut` there would be
                    // unused; the attempt's own binding carries it instead.
                    let mutable = mutability.take().is_some();
                    Param::Owned {
                        ident: ident.clone(),
                        mutable,
                        ty: (*typed.ty).clone(),
                    }
                }
            }
            Pat::Wild(_) => {
                *typed.pat = ident_pat(renamed.clone());
                Param::Ignored {
                    renamed,
                    ty: (*typed.ty).clone(),
                }
            }
            pat => {
                let original = pat.clone();
                *pat = ident_pat(renamed.clone());
                Param::Pattern {
                    pat: original,
                    renamed,
                    ty: (*typed.ty).clone(),
                }
            }
        };
        params.push(param);
    }
    Ok(RetryFn {
        item,
        params,
        has_receiver,
        output,
    })
}

fn ident_pat(ident: Ident) -> Pat {
    Pat::Ident(PatIdent {
        attrs: Vec::new(),
        by_ref: None,
        mutability: None,
        ident,
        subpat: None,
    })
}

/// The return type, which must be a `Result` (any path whose last segment is `Result`, so that
/// `io::Result<T>` and crate aliases work).
fn result_type(sig: &syn::Signature) -> syn::Result<Type> {
    let ReturnType::Type(_, ty) = &sig.output else {
        return Err(syn::Error::new(
            sig.paren_token.span.close(),
            "#[retryable] needs a function that returns `Result<T, E>`: add a return type",
        ));
    };
    let is_result = match &**ty {
        Type::Path(p) if p.qself.is_none() => {
            p.path.segments.last().is_some_and(|s| s.ident == "Result")
        }
        _ => false,
    };
    if is_result {
        Ok((**ty).clone())
    } else {
        Err(syn::Error::new(
            ty.span(),
            "#[retryable] needs a function that returns `Result<T, E>`: retries are decided on its `Err` values",
        ))
    }
}

/// The error for an attribute placed on something other than a function with a body.
fn not_a_function(item: TokenStream) -> syn::Error {
    if let Ok(f) = syn::parse2::<syn::TraitItemFn>(item.clone()) {
        return syn::Error::new(
            f.sig.ident.span(),
            "#[retryable] needs a function body: put it on the function in the `impl`, not on the trait's declaration",
        );
    }
    let span = item
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span());
    syn::Error::new(
        span,
        "#[retryable] applies to functions (`async fn` or `fn`) that return `Result`",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn classifies_arguments() {
        let f = parse(quote!(
            async fn f(&self, mut a: String, b: &str, (x, y): (u8, u8), _: u8) -> Result<(), E> {}
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(f.has_receiver);
        assert!(matches!(f.params[0], Param::Owned { mutable: true, .. }));
        assert!(matches!(f.params[1], Param::Borrowed { .. }));
        assert!(matches!(f.params[2], Param::Pattern { .. }));
        assert!(matches!(f.params[3], Param::Ignored { .. }));
    }

    #[test]
    fn accepts_result_aliases_and_rejects_others() {
        assert!(
            parse(quote!(
                fn f() -> io::Result<u8> {
                    todo!()
                }
            ))
            .is_ok()
        );
        assert!(
            parse(quote!(
                fn f() -> Option<u8> {
                    None
                }
            ))
            .is_err()
        );
        assert!(
            parse(quote!(
                fn f() {}
            ))
            .is_err()
        );
        assert!(
            parse(quote!(
                struct S;
            ))
            .is_err()
        );
    }
}
