//! A function whose `Ok` borrows from what it was lent mutably (`async fn conn(&mut self) ->
//! Result<&mut Connection, E>`, `fn get<'a>(conn: &'a mut Conn) -> Result<&'a mut Row, E>`):
//! which input it lends, and its return type at the attempt's own lifetime. The attempts then
//! run through `Call::attempt_lent` (retry-runtime's `drivers/lent.rs`, which says why that is
//! sound), each higher-ranked over its reborrow's lifetime.

use proc_macro2::{Ident, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::{FnArg, ReceiverKind, Type};

use crate::item::{Param, Receiver, RetryFn, ungroup};

/// The lifetime an attempt's `Ok` is written with (`'__reattempt_r`).
pub(crate) const LIFETIME: &str = "__reattempt_r";

/// The input a call lends each attempt, and its return type at the attempt's lifetime.
pub(crate) struct Lending {
    /// The argument's name, or `None` for the receiver.
    pub(crate) arg: Option<Ident>,
    /// The return type with the lent lifetime written `'__reattempt_r`.
    pub(crate) output: TokenStream,
}

/// A `&mut` input (the receiver or an argument) and its lifetime, `None` when elided.
struct Unique {
    arg: Option<Ident>,
    lifetime: Option<String>,
}

/// Where the function's return type names the lifetime of exactly one `&mut` input: that one.
/// Two such inputs are an error (an attempt can be lent one of them); none, `None`.
pub(crate) fn lending(f: &RetryFn) -> syn::Result<Option<Lending>> {
    let uniques = uniques(f);
    let output = f.output.to_token_stream();
    let receiver_elided = matches!(f.receiver, Some((Receiver::Unique, _)));
    let mut found: Vec<(Unique, TokenStream)> = Vec::new();
    // Without a receiver, elided output lifetimes are the one input lifetime's, if there is one.
    let one_input = f.receiver.is_none() && {
        let with_lifetimes = f.params.iter().filter(|p| {
            let ty = p.ty().to_token_stream().to_string();
            ty.contains('&') || ty.contains('\'')
        });
        with_lifetimes.count() == 1
    };
    for u in uniques {
        // Elided output lifetimes are the receiver's (`&self` too, but that one is not lent).
        let elided = (u.arg.is_none() && receiver_elided) || (u.arg.is_some() && one_input);
        let (rewritten, n) = rewrite(output.clone(), u.lifetime.as_deref(), elided);
        if n > 0 {
            found.push((u, rewritten));
        }
    }
    match found.len() {
        0 => Ok(None),
        1 => {
            let (u, output) = found.remove(0);
            Ok(Some(Lending { arg: u.arg, output }))
        }
        _ => {
            let names: Vec<String> = found
                .iter()
                .map(|(u, _)| {
                    u.arg
                        .as_ref()
                        .map_or_else(|| "self".to_owned(), Ident::to_string)
                })
                .collect();
            Err(syn::Error::new_spanned(
                &f.output,
                format!(
                    "`#[retryable]`: the returned value borrows from two `&mut` inputs ({}); each attempt can lend it one: return a borrow of one of them (give the others their own lifetime)",
                    names.join(", ")
                ),
            ))
        }
    }
}

/// The `&mut` inputs whose lifetime the output may name: `&mut self`, `&'a mut self`, `self: &'a
/// mut Self`, and `name: &'a mut T` arguments (with a named lifetime: an elided one is never the
/// output's, which elision gives the receiver's or refuses).
fn uniques(f: &RetryFn) -> Vec<Unique> {
    let mut out = Vec::new();
    if let Some(FnArg::Receiver(r)) = f.item.sig.inputs.first() {
        match &r.kind {
            ReceiverKind::Reference(_, lt, Some(_)) => out.push(Unique {
                arg: None,
                lifetime: lt.as_ref().map(|l| l.ident.to_string()),
            }),
            ReceiverKind::Typed(_, ty) => {
                if let Type::Reference(t) = ungroup(ty)
                    && t.mutability.is_some()
                {
                    out.push(Unique {
                        arg: None,
                        lifetime: t.lifetime.as_ref().map(|l| l.ident.to_string()),
                    });
                }
            }
            _ => {}
        }
    }
    for p in &f.params {
        if let Param::Borrowed {
            ident,
            unique: true,
            ty,
            ..
        } = p
            && let Type::Reference(t) = ungroup(ty)
        {
            out.push(Unique {
                arg: Some(ident.clone()),
                lifetime: t.lifetime.as_ref().map(|lt| lt.ident.to_string()),
            });
        }
    }
    out
}

/// `tokens` with `'name` (and, if `elided`, each elided reference lifetime and `'_`) written
/// `'__reattempt_r`, and how many were.
fn rewrite(tokens: TokenStream, name: Option<&str>, elided: bool) -> (TokenStream, usize) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(trees.len());
    let mut n = 0;
    let lifetime = |span: Span| -> [TokenTree; 2] {
        let mut q = Punct::new('\'', Spacing::Joint);
        q.set_span(span);
        [q.into(), Ident::new(LIFETIME, span).into()]
    };
    let mut i = 0;
    while i < trees.len() {
        match &trees[i] {
            TokenTree::Punct(p) if p.as_char() == '\'' => {
                if let Some(TokenTree::Ident(id)) = trees.get(i + 1)
                    && (name.is_some_and(|name| id == name) || (elided && id == "_"))
                {
                    out.extend(lifetime(id.span()));
                    n += 1;
                    i += 2;
                    continue;
                }
                out.push(trees[i].clone());
            }
            TokenTree::Punct(p) if p.as_char() == '&' => {
                out.push(trees[i].clone());
                let named =
                    matches!(trees.get(i + 1), Some(TokenTree::Punct(q)) if q.as_char() == '\'');
                if elided && !named {
                    out.extend(lifetime(p.span()));
                    n += 1;
                }
            }
            TokenTree::Group(g) => {
                let (inner, m) = rewrite(g.stream(), name, elided);
                n += m;
                let mut group = proc_macro2::Group::new(g.delimiter(), inner);
                group.set_span(g.span());
                out.push(group.into());
            }
            other => out.push(other.clone()),
        }
        i += 1;
    }
    (out.into_iter().collect(), n)
}

/// Why a key cannot be used with a lent call (`None`: it can).
pub(crate) fn unsupported_key(key: &str) -> Option<&'static str> {
    Some(match key {
        "retry_if_ok" => {
            "`retry_if_ok` cannot retry an `Ok` that borrows from what the call lends its attempts: the next attempt needs that borrow back; decide in the body (return an error to retry)"
        }
        "recover" => {
            "`recover` is not supported yet where the `Ok` borrows from what the call lends its attempts; handle the error at the call site"
        }
        _ => return None,
    })
}

/// The tokens of a `'__reattempt_r` lifetime.
pub(crate) fn lifetime() -> TokenStream {
    let l = syn::Lifetime::new(&format!("'{LIFETIME}"), Span::call_site());
    quote!(#l)
}

#[cfg(test)]
mod tests {
    fn lends(item: &str) -> Option<String> {
        let f = crate::item::parse(item.parse().unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
        super::lending(&f)
            .unwrap_or_else(|e| panic!("{e}"))
            .map(|l| {
                format!(
                    "{}: {}",
                    l.arg.map_or_else(|| "self".to_owned(), |a| a.to_string()),
                    l.output
                )
            })
    }

    #[test]
    fn only_a_borrow_of_one_mut_input() {
        for (item, lent) in [
            (
                "async fn conn(&mut self) -> Result<&mut Conn, E> { todo!() }",
                "self: Result < & '__reattempt_r mut Conn , E >",
            ),
            (
                "fn conn(&mut self) -> Result<&Conn, E> { todo!() }",
                "self: Result < & '__reattempt_r Conn , E >",
            ),
            (
                "async fn lease<'a>(&'a mut self) -> Result<Lease<'a>, E> { todo!() }",
                "self: Result < Lease < '__reattempt_r > , E >",
            ),
            (
                "async fn lease(self: &mut Self) -> Result<Lease<'_>, E> { todo!() }",
                "self: Result < Lease < '__reattempt_r > , E >",
            ),
            (
                "async fn get<'a>(pool: &'a mut Pool, n: u32) -> Result<&'a mut Conn, E> { todo!() }",
                "pool: Result < & '__reattempt_r mut Conn , E >",
            ),
        ] {
            assert_eq!(lends(item).as_deref(), Some(lent), "{item}");
        }
        for other in [
            "async fn get(&self) -> Result<&Conn, E> { todo!() }",
            "async fn get(&mut self) -> Result<u32, E> { todo!() }",
            "async fn get<'a>(&mut self, s: &'a Pool) -> Result<&'a u8, E> { todo!() }",
            "fn get<'a>(self: Box<Self>, s: &'a Pool) -> Result<&'a u8, E> { todo!() }",
            "fn get(pool: &mut Pool) -> Result<&'static u8, E> { todo!() }",
        ] {
            assert_eq!(lends(other), None, "{other}");
        }
    }
}
