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

/// Patterns of the wrong shape for `retry_on`/`no_retry_on` (`key`), each an error at the
/// pattern that says what patterns match and what to write instead:
/// - a pattern of the `Result` (`Err(E::Busy)`, `Ok(_)`): patterns match the error itself;
/// - a pattern where the error is a struct that patterns cannot look inside (`std::io::Error`,
///   `tonic::Status`, `reqwest::Error`, `anyhow::Error`, a boxed error), or a pattern of
///   what such an error's accessor returns (`ErrorKind::TimedOut`, `Code::Unavailable`): the
///   way is `retry_if` with a method call.
pub(crate) fn shape_errors(key: &str, pats: &[Pat], error: Option<&syn::Type>) -> Vec<syn::Error> {
    let shown_error = error.map(crate::render::render);
    let mut errors = vec![];
    for pat in pats {
        if let Some(message) = wrapped_in_result(key, pat) {
            errors.push(syn::Error::new_spanned(pat, message));
            continue;
        }
        if let Some(message) = opaque_error(key, pat, shown_error.as_deref()) {
            errors.push(syn::Error::new_spanned(pat, message));
            // One is enough: the same advice for every pattern.
            break;
        }
    }
    errors
}

/// The path a pattern names at its top (`E::Busy` of `E::Busy(_)`), if it names one.
fn pattern_path(pat: &Pat) -> Option<&syn::Path> {
    match pat {
        Pat::TupleStruct(p) => Some(&p.path),
        Pat::Struct(p) => Some(&p.path),
        Pat::Path(p) => Some(&p.path),
        Pat::Paren(p) => pattern_path(&p.pat),
        Pat::Reference(r) => pattern_path(&r.pat),
        _ => None,
    }
}

/// `Err(E::Busy)`: the pattern of a `Result`.
fn wrapped_in_result(key: &str, pat: &Pat) -> Option<String> {
    let Pat::TupleStruct(p) = pat else {
        return None;
    };
    let last = p.path.segments.last()?.ident.to_string();
    let inner = p.elems.first().map(crate::render::render);
    match (last.as_str(), inner) {
        ("Err", Some(inner)) if p.elems.len() == 1 => Some(format!(
            "`{key}` patterns match the error itself, not the `Result`: write `{key} = [{inner}]`"
        )),
        ("Ok", _) => Some(format!(
            "`{key}` patterns match the error, never an `Ok`: to retry on an `Ok` value, write \
             `retry_if_ok = |v| matches!(v, …)`"
        )),
        _ => None,
    }
}

/// An error type that is a struct patterns cannot look inside, with the method that reads
/// what such patterns mean to match, if there is one (`kind` of `std::io::Error`).
fn opaque(error: &str) -> Option<(&'static str, Option<&'static str>)> {
    let e = error.replace(' ', "");
    Some(match e.as_str() {
        "std::io::Error" | "io::Error" | "::std::io::Error" => ("`std::io::Error`", Some("kind()")),
        "tonic::Status" | "::tonic::Status" => ("`tonic::Status`", Some("code()")),
        "reqwest::Error" | "::reqwest::Error" => ("`reqwest::Error`", Some("status()")),
        "anyhow::Error" | "::anyhow::Error" | "eyre::Report" => {
            ("a type-erased error", Some("downcast_ref::<YourError>()"))
        }
        _ if e.starts_with("Box<dyn") || e.starts_with("std::boxed::Box<dyn") => {
            ("a boxed error", Some("downcast_ref::<YourError>()"))
        }
        _ => return None,
    })
}

/// What a pattern of an accessor's type means: `ErrorKind::TimedOut` is `kind()`'s.
fn accessor_of(pat_type: &str) -> Option<&'static str> {
    Some(match pat_type {
        "ErrorKind" => "kind()",
        "Code" => "code()",
        "StatusCode" => "status()",
        _ => return None,
    })
}

/// A pattern where patterns cannot match (see [`shape_errors`]).
fn opaque_error(key: &str, pat: &Pat, error: Option<&str>) -> Option<String> {
    // `_` matches any value, a struct's too.
    if matches!(pat, Pat::Wild(_) | Pat::Rest(_)) {
        return None;
    }
    let path = pattern_path(pat);
    // The type the pattern belongs to: `ErrorKind` of `io::ErrorKind::TimedOut`.
    let pat_type = path
        .filter(|p| p.segments.len() >= 2)
        .and_then(|p| p.segments.iter().rev().nth(1))
        .map(|s| s.ident.to_string());
    let error_last = error.map(|e| e.rsplit("::").next().unwrap_or(e).to_owned());
    let shown = error.unwrap_or("E");
    let written = crate::render::render(pat);
    let accessor_type = pat_type.as_deref().filter(|t| accessor_of(t).is_some());
    let Some((what, accessor)) = error.and_then(opaque) else {
        // A pattern of an accessor's type on an error of another type, when both are sure: the
        // error type is written out (not an alias, not `Self`) and the pattern names the
        // accessor's type by its crate (`io::ErrorKind::TimedOut`, `tonic::Code::Unavailable`),
        // so that it cannot be the user's own `ErrorKind` or `Code` (rustc's mismatch says the
        // rest).
        let qualified = path.is_some_and(|p| {
            p.segments.iter().rev().nth(2).is_some_and(|s| {
                matches!(
                    s.ident.to_string().as_str(),
                    "io" | "std" | "tonic" | "http" | "reqwest" | "hyper"
                )
            })
        });
        if !qualified || error.is_none_or(|e| e == "Self") {
            return None;
        }
        let t = accessor_type.filter(|t| error_last.as_deref() != Some(*t))?;
        let accessor = accessor_of(t).unwrap_or_default();
        let read = if accessor == "status()" {
            format!("matches!(e.status(), Some({written}))")
        } else {
            format!("matches!(e.{accessor}, {written})")
        };
        return Some(format!(
            "`{key}` patterns match the error itself, of type `{shown}`, and `{written}` is a \
             pattern of `{t}`: if `{shown}` is an enum, match the variant that holds it; if it \
             is a struct with `{accessor}`, write `retry_if = |e: &{shown}| {read}`"
        ));
    };
    let fix = match (accessor, accessor_type) {
        (Some("status()"), Some(_)) => {
            format!("`retry_if = |e: &{shown}| matches!(e.status(), Some({written}))`")
        }
        (Some(accessor), Some(t)) if accessor_of(t) == Some(accessor) => {
            format!("`retry_if = |e: &{shown}| matches!(e.{accessor}, {written})`")
        }
        (Some(accessor), _) => format!("`retry_if = |e: &{shown}| …` with `e.{accessor}`"),
        (None, _) => format!("`retry_if = |e: &{shown}| …` with a method call on the error"),
    };
    Some(format!(
        "`{key}` patterns match the error itself, and {what} is a struct whose insides patterns \
         cannot reach{}: write {fix}",
        accessor_type.map_or_else(String::new, |t| format!(
            " (`{written}` is a pattern of `{t}`)"
        )),
    ))
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

#[cfg(test)]
mod shape_tests {
    use super::*;
    use syn::parse::Parser;

    fn errors(pats: &str, error: &str) -> Vec<String> {
        let pats: Vec<Pat> = pats
            .split(", ")
            .map(|p| Pat::parse_multi.parse_str(p).unwrap())
            .collect();
        let ty: syn::Type = syn::parse_str(error).unwrap();
        shape_errors("retry_on", &pats, Some(&ty))
            .into_iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn a_pattern_of_the_result_says_to_unwrap_it() {
        let m = errors("Err(PayError::Busy)", "PayError");
        assert_eq!(
            m,
            [
                "`retry_on` patterns match the error itself, not the `Result`: write `retry_on = [PayError::Busy]`"
            ]
        );
        assert!(errors("Ok(_)", "PayError")[0].contains("retry_if_ok"));
    }

    #[test]
    fn a_pattern_on_an_opaque_error_says_retry_if_with_its_accessor() {
        let m = errors("ErrorKind::TimedOut", "std::io::Error");
        assert!(
            m[0].contains(
                "`retry_if = |e: &std::io::Error| matches!(e.kind(), ErrorKind::TimedOut)`"
            ),
            "{m:?}"
        );
        let m = errors(
            "Code::Unavailable | Code::ResourceExhausted",
            "tonic::Status",
        );
        assert!(m[0].contains("e.code()"), "{m:?}");
        let m = errors("StatusCode::SERVICE_UNAVAILABLE", "reqwest::Error");
        assert!(
            m[0].contains("matches!(e.status(), Some(StatusCode::SERVICE_UNAVAILABLE))"),
            "{m:?}"
        );
        assert!(errors("MyError::Busy", "anyhow::Error")[0].contains("downcast_ref"));
        assert!(
            errors("_", "std::io::Error").is_empty(),
            "`_` matches a struct"
        );
    }

    #[test]
    fn an_accessors_pattern_on_an_enum_says_to_match_its_variant() {
        let m = errors("io::ErrorKind::TimedOut", "AppError");
        assert!(
            m[0].contains("a pattern of `ErrorKind`")
                && m[0].contains("if `AppError` is an enum, match the variant"),
            "{m:?}"
        );
        assert!(
            errors("ErrorKind::TimedOut", "ErrorKind").is_empty(),
            "the error is an ErrorKind"
        );
        assert!(errors("AppError::Io(_)", "AppError").is_empty());
        // The user's own `ErrorKind` or `Code`, or a type that cannot be read: rustc decides.
        assert!(errors("ErrorKind::TimedOut", "AppError").is_empty());
        assert!(errors("Code::Unavailable", "GrpcCode").is_empty());
        assert!(errors("io::ErrorKind::TimedOut", "Self").is_empty());
        assert!(
            shape_errors(
                "retry_on",
                &[Pat::parse_multi
                    .parse_str("io::ErrorKind::TimedOut")
                    .unwrap()],
                None
            )
            .is_empty()
        );
    }
}
