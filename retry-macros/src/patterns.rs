//! The `retry_on`/`no_retry_on` patterns as they are matched: the error is only compared, so
//! every binding in a pattern is dropped (`code @ 500..=599` → `500..=599`, `Io(kind)` →
//! `Io(_)`), and the pattern is matched against `&E` as `&(pattern)`, so that constants and
//! paths (`BUSY`, `Self::BUSY`) compare and nothing moves out of the borrowed error. A lone
//! upper-case name (`Unavailable`, `TIMEOUT`) is also named as a value, so that a name that
//! resolves to nothing is a compile error at the pattern instead of a binding that matches
//! every error.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::visit_mut::{self, VisitMut};
use syn::{Ident, Pat};

/// The pattern with its bindings dropped, and the upper-case lone names it compares with
/// (`true` for the pattern's top level, whose type is the error's).
pub(crate) fn comparison(pat: &Pat) -> (Pat, Vec<(Ident, bool)>) {
    let mut v = Unbind {
        values: Vec::new(),
        depth: 0,
    };
    let mut pat = pat.clone();
    v.visit_pat_mut(&mut pat);
    (pat, v.values)
}

/// `matches!(error, &(pattern))` for each pattern, or-ed; and the statements naming each
/// upper-case lone name as a value.
pub(crate) fn matches(e: &Ident, pats: &[Pat], p: &TokenStream) -> (TokenStream, TokenStream) {
    let mut checks = TokenStream::new();
    let tests = pats.iter().map(|pat| {
        let (pat, values) = comparison(pat);
        for (name, top) in values {
            checks.extend(if top {
                quote_spanned!(name.span()=> #p::pattern_value(#e, &#name);)
            } else {
                quote_spanned!(name.span()=> #p::pattern_inner_value(&#name);)
            });
        }
        // Parentheses only where `&` would bind tighter than the pattern (an unneeded pair
        // trips `unused_parens`).
        // A pattern that is a reference already (`&E::Busy`) matches the `&E` as written.
        match pat {
            Pat::Reference(_) => quote!(::core::matches!(#e, #pat)),
            Pat::Or(_) | Pat::Range(_) => quote!(::core::matches!(#e, &(#pat))),
            pat => quote!(::core::matches!(#e, &#pat)),
        }
    });
    let tests: Vec<TokenStream> = tests.collect();
    (quote!(#(#tests)||*), checks)
}

struct Unbind {
    values: Vec<(Ident, bool)>,
    depth: usize,
}

fn is_upper(ident: &Ident) -> bool {
    ident
        .to_string()
        .trim_start_matches("r#")
        .chars()
        .next()
        .is_some_and(char::is_uppercase)
}

/// `_`, at `ident`'s location.
fn wild(ident: &Ident) -> Pat {
    Pat::Wild(syn::PatWild {
        attrs: Vec::new(),
        underscore_token: syn::Token![_](ident.span()),
    })
}

impl VisitMut for Unbind {
    fn visit_pat_mut(&mut self, pat: &mut Pat) {
        if let Pat::Ident(p) = pat {
            let replacement = match p.subpat.take() {
                // `x @ P` compares as `P`.
                Some((_, sub)) => *sub,
                None if p.by_ref.is_none() && p.mutability.is_none() && is_upper(&p.ident) => {
                    // A constant or a unit variant (or, unresolved, a binding: the value check
                    // makes that an error).
                    if p.ident != "None" || self.depth == 0 {
                        self.values.push((p.ident.clone(), self.depth == 0));
                    }
                    return;
                }
                None => wild(&p.ident),
            };
            *pat = replacement;
            // The subpattern stands where the binding stood (same depth).
            self.visit_pat_mut(pat);
            return;
        }
        // Parentheses and or-patterns keep the level; anything else goes one deeper.
        let nested = !matches!(pat, Pat::Paren(_) | Pat::Or(_));
        self.depth += usize::from(nested);
        visit_mut::visit_pat_mut(self, pat);
        self.depth -= usize::from(nested);
    }

    fn visit_field_pat_mut(&mut self, field: &mut syn::FieldPat) {
        // `Http { status, .. }` shorthand: a binding named as the field, written `status: _`.
        if field.colon_token.is_none() {
            field.colon_token = Some(syn::Token![:](proc_macro2::Span::call_site()));
        }
        visit_mut::visit_field_pat_mut(self, field);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compared(pat: TokenStream) -> (String, Vec<(String, bool)>) {
        let pat = Pat::parse_multi
            .parse2(pat)
            .unwrap_or_else(|e| panic!("{e}"));
        let (pat, values) = comparison(&pat);
        (
            quote!(#pat).to_string(),
            values
                .into_iter()
                .map(|(i, t)| (i.to_string(), t))
                .collect(),
        )
    }

    use syn::parse::Parser;

    #[test]
    fn bindings_are_dropped_and_names_kept() {
        assert_eq!(compared(quote!(code @ 500..=599)).0, "500 ..= 599");
        assert_eq!(compared(quote!(E::Io(kind))).0, "E :: Io (_)");
        assert_eq!(
            compared(quote!(E::Http { status, .. })).0,
            "E :: Http { status : _ , .. }"
        );
        assert_eq!(compared(quote!(E::A(ref x, mut y))).0, "E :: A (_ , _)");
        assert_eq!(
            compared(quote!(Busy | E::Wrap(Inner, None))),
            (
                "Busy | E :: Wrap (Inner , None)".to_owned(),
                vec![("Busy".to_owned(), true), ("Inner".to_owned(), false)]
            )
        );
        assert_eq!(
            compared(quote!(e @ BUSY)),
            ("BUSY".to_owned(), vec![("BUSY".to_owned(), true)])
        );
    }
}
