//! The function's signature and body as the expansion emits them, written from the description
//! (`item`), which stays as the user wrote it.

use syn::{FnArg, Ident, Pat, PatIdent};

use crate::item::{Body, Param, Receiver, RetryFn};

/// The signature and body the expansion emits.
pub(crate) struct Rewritten {
    /// The signature, with each argument bound by a plain name the attempts copy from.
    pub(crate) sig: syn::Signature,
    /// The body, with `self` renamed `__self` if the function has a receiver.
    pub(crate) body: Body,
    /// Whether the body names the receiver (which then reaches the attempt as `__self`).
    pub(crate) uses_self: bool,
}

/// Rewrites the function: the receiver reaches the attempt as `__self`, if the body names it.
pub(crate) fn rewrite(f: &RetryFn) -> Rewritten {
    let mut body = f.body.clone();
    let uses_self = f.has_receiver() && crate::rename::rename_self(&mut body);
    let mut sig = f.item.sig.clone();
    bind_by_name(&mut sig, f);
    if uses_self {
        mut_receiver(&mut sig, f);
    }
    Rewritten {
        sig,
        body,
        uses_self,
    }
}

/// `bind_by_name`, for a signature that keeps its receiver as written.
pub(crate) fn bind_params(sig: &mut syn::Signature, f: &RetryFn) {
    bind_by_name(sig, f);
}

/// Binds each argument by a plain name: a pattern (or `_`) is renamed (each attempt destructures
/// its own copy), and a binding's `mut` is dropped (the signature's binding is only copied from,
/// so a `mut` there would be unused; the attempt's own binding carries it instead).
fn bind_by_name(sig: &mut syn::Signature, f: &RetryFn) {
    let typed = sig.inputs.iter_mut().filter_map(|arg| match arg {
        FnArg::Typed(t) => Some(t),
        FnArg::Receiver(_) => None,
    });
    for (typed, param) in typed.zip(&f.params) {
        match (param, &mut *typed.pat) {
            (Param::Owned { .. } | Param::Borrowed { .. }, Pat::Ident(p)) => p.mutability = None,
            (Param::Pattern { renamed, .. } | Param::Ignored { renamed, .. }, pat) => {
                *pat = ident_pat(renamed.clone());
            }
            _ => {}
        }
    }
}

/// Makes the signature's by-value receiver `mut` (each attempt borrows it mutably): a binding's
/// mutability is not part of the function's type.
fn mut_receiver(sig: &mut syn::Signature, f: &RetryFn) {
    if let Some((Receiver::Value { mutable } | Receiver::Pinned { mutable }, _)) = &f.receiver
        && !*mutable
        && let Some(FnArg::Receiver(r)) = sig.inputs.first_mut()
    {
        r.mutability = Some(syn::Token![mut](r.self_token.span));
    }
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
