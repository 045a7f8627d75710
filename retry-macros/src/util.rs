//! Helpers every pass uses: joining errors, and emitting them beside the unchanged item.

use proc_macro2::TokenStream;

/// Joins errors into one, keeping each one's span; `None` when there are none.
pub(crate) fn combine(errors: impl IntoIterator<Item = syn::Error>) -> Option<syn::Error> {
    errors.into_iter().reduce(|mut a, e| {
        a.combine(e);
        a
    })
}

/// The unchanged item, then the errors; an expression (the attribute on a closure) stays one
/// expression, a block holding the errors then the item, so that the errors are reported rather
/// than the tokens after the first expression being ignored.
pub(crate) fn with_errors(mut item: TokenStream, e: &syn::Error) -> TokenStream {
    let errors = e.to_compile_error();
    if syn::parse2::<syn::Expr>(item.clone()).is_ok() {
        return quote::quote!({ #errors #item });
    }
    item.extend(errors);
    item
}
