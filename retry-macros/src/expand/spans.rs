//! Tokens located at the user's code, so that an error about them is reported there.

use proc_macro2::{Span, TokenStream};

/// The tokens (a path to a runtime item), every one at `span` (hygiene included: such a path
/// is absolute), so that an error about the expression they start is reported at `span`.
pub(super) fn at(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect()
}

/// The tokens, every one located at `span` (hygiene kept), so that an error about the path they
/// form is reported at `span` rather than at the attribute.
pub(super) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            t.set_span(t.span().located_at(span));
            t
        })
        .collect()
}
