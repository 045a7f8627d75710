//! Helpers every pass uses: joining errors, and emitting them beside the unchanged item.

use proc_macro2::TokenStream;

/// Joins errors into one, keeping each one's span; `None` when there are none.
pub(crate) fn combine(errors: impl IntoIterator<Item = syn::Error>) -> Option<syn::Error> {
    errors.into_iter().reduce(|mut a, e| {
        a.combine(e);
        a
    })
}

/// The unchanged item, then the errors.
pub(crate) fn with_errors(mut item: TokenStream, e: &syn::Error) -> TokenStream {
    item.extend(e.to_compile_error());
    item
}
