//! The message of a fallback that does not fit: the signatures that would, written from the
//! retryable function's own types.

use syn::Path;

use crate::item::{self, Param, RetryFn};

/// The fallback's name, as the message shows it: the path's last segment.
fn fallback_name(path: &Path) -> String {
    path.segments
        .last()
        .map_or_else(|| "fallback".to_owned(), |s| s.ident.to_string())
}

/// Text as written, for a diagnostic message: `#[async_trait]`'s lifetimes removed, and braces
/// doubled (a message is a format string).
fn shown(tokens: &impl quote::ToTokens) -> String {
    let mut text = crate::render::render(tokens);
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
pub(super) fn recover_message(path: &Path, f: &RetryFn) -> String {
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
pub(super) fn recover_label(f: &RetryFn) -> String {
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
pub(super) fn recover_note(f: &RetryFn) -> String {
    let name = &f.item.sig.ident;
    if f.is_async() {
        format!("`{name}` is `async` and awaits its fallback: the recover fn is an `async fn` too")
    } else {
        format!(
            "`{name}` is blocking and does not await its fallback: the recover fn is a plain `fn`, not `async`"
        )
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

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
