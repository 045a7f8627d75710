//! Checks of the function under `#[retryable]` for shapes that would compile into something
//! other than what was meant: a second `#[retryable]` (two nested loops: 3 × 5 = 15 attempts),
//! and a non-`async` fn returning a future (each attempt would only build the future).

use syn::{ItemFn, ReturnType, Type, TypeParamBound};

/// Whether an attribute is `#[retryable]` or `#[retryable(...)]` under a path this macro can
/// recognise: `retryable`, `reattempt::retryable`, `::reattempt::retryable`, or any path ending
/// in `::retryable`. A `use reattempt::retryable as retry;` rename cannot be recognised.
fn is_retryable(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "retryable")
}

/// Rejects a second `#[retryable]` on the function.
pub(crate) fn check_single(item: &ItemFn) -> syn::Result<()> {
    if let Some(second) = item.attrs.iter().find(|a| is_retryable(a)) {
        return Err(syn::Error::new_spanned(
            second,
            "a second #[retryable] on the same function would nest two retry loops and multiply \
             the attempts (3 × 5 = 15); keep one #[retryable] with all the keys in it",
        ));
    }
    Ok(())
}

/// Rejects a non-`async` fn returning a future (except async-trait's own boxed future, which the
/// caller recognises first).
pub(crate) fn check_not_a_future(item: &ItemFn) -> syn::Result<()> {
    if item.sig.asyncness.is_none()
        && let Some(output) = future_output(&item.sig.output)
    {
        let sig = &item.sig;
        let args = crate::known_keys::render(&sig.inputs);
        let output = crate::known_keys::render(&output);
        let span: &dyn quote::ToTokens = match &sig.output {
            ReturnType::Type(_, ty) => ty,
            ReturnType::Default => &sig.ident,
        };
        return Err(syn::Error::new_spanned(
            span,
            format!(
                "#[retryable] retries an `async fn`, not a fn that returns a future (each \
                 attempt must run the body again): write `async fn {}({args}) -> {output}`",
                sig.ident
            ),
        ));
    }
    Ok(())
}

/// `Some(output)` when the return type is a future: `impl Future<Output = X>`,
/// `Pin<Box<dyn Future<Output = X>>>`, `BoxFuture<'_, X>` give `X`; `Result<T, E>` when the
/// output cannot be read off.
fn future_output(output: &ReturnType) -> Option<Type> {
    let ReturnType::Type(_, ty) = output else {
        return None;
    };
    match &**ty {
        Type::ImplTrait(t) => bounds_output(&t.bounds),
        Type::Path(p) => {
            let last = p.path.segments.last()?;
            let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
                return None;
            };
            if last.ident == "BoxFuture" || last.ident == "LocalBoxFuture" {
                return Some(
                    args.args
                        .iter()
                        .find_map(|a| match a {
                            syn::GenericArgument::Type(t) => Some(t.clone()),
                            _ => None,
                        })
                        .unwrap_or_else(unknown_output),
                );
            }
            if last.ident != "Pin" {
                return None;
            }
            // Pin<Box<dyn Future<Output = X> + Send>>
            let Some(syn::GenericArgument::Type(Type::Path(boxed))) = args.args.first() else {
                return None;
            };
            let inner = boxed.path.segments.last()?;
            let syn::PathArguments::AngleBracketed(inner) = &inner.arguments else {
                return None;
            };
            match inner.args.first()? {
                syn::GenericArgument::Type(Type::TraitObject(t)) => bounds_output(&t.bounds),
                _ => None,
            }
        }
        _ => None,
    }
}

fn unknown_output() -> Type {
    syn::parse_quote!(Result<T, E>)
}

fn bounds_output(
    bounds: &syn::punctuated::Punctuated<TypeParamBound, syn::Token![+]>,
) -> Option<Type> {
    bounds.iter().find_map(|b| {
        let TypeParamBound::Trait(t) = b else {
            return None;
        };
        let last = t.path.segments.last()?;
        if last.ident != "Future" {
            return None;
        }
        let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
            return Some(unknown_output());
        };
        Some(
            args.args
                .iter()
                .find_map(|a| match a {
                    syn::GenericArgument::AssocType(at) if at.ident == "Output" => {
                        Some(at.ty.clone())
                    }
                    _ => None,
                })
                .unwrap_or_else(unknown_output),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(item: proc_macro2::TokenStream) -> String {
        let f: ItemFn = syn::parse2(item).unwrap_or_else(|e| panic!("{e}"));
        check_single(&f)
            .and_then(|()| check_not_a_future(&f))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn second_retryable_is_rejected_under_both_paths() {
        assert!(
            err(quote::quote!(
                #[retryable(max_attempts = 5)]
                fn f() -> Result<(), E> {
                    Ok(())
                }
            ))
            .contains("second #[retryable]")
        );
        assert!(
            err(quote::quote!(
                #[reattempt::retryable]
                fn f() -> Result<(), E> {
                    Ok(())
                }
            ))
            .contains("second #[retryable]")
        );
        assert!(
            err(quote::quote!(
                #[inline]
                fn f() -> Result<(), E> {
                    Ok(())
                }
            ))
            .is_empty()
        );
    }

    #[test]
    fn future_returning_fns_are_told_to_be_async() {
        let m = err(quote::quote!(
            fn f(x: u8) -> impl Future<Output = Result<u8, E>> {
                async { Ok(x) }
            }
        ));
        assert!(
            m.contains("write `async fn f(x: u8) -> Result<u8, E>`"),
            "{m}"
        );
        let m = err(quote::quote!(
            fn f() -> Pin<Box<dyn Future<Output = Result<u8, E>> + Send>> {
                todo!()
            }
        ));
        assert!(m.contains("-> Result<u8, E>`"), "{m}");
        let m = err(quote::quote!(
            fn f() -> BoxFuture<'static, Result<u8, E>> {
                todo!()
            }
        ));
        assert!(m.contains("-> Result<u8, E>`"), "{m}");
        assert!(
            err(quote::quote!(
                async fn f() -> Result<u8, E> {
                    Ok(1)
                }
            ))
            .is_empty()
        );
    }
}
