//! `retry_on = [..]` and `no_retry_on = [..]`, read by hand (patterns are not expressions),
//! and the split of the attribute's items into those lists and the rest, left for darling.

use darling::ast::NestedMeta;
use proc_macro2::{Span, TokenStream};
use syn::parse::{ParseStream, Parser};
use syn::{Expr, Lit, LitStr, Pat, Token};

use crate::key_shapes::{self, rest_of_item};

const PATTERN_KEYS: [&str; 2] = ["retry_on", "no_retry_on"];

/// The attribute's items, split: pattern lists parsed here, the rest left for darling.
#[derive(Default)]
pub(super) struct Split {
    pub(super) retry_on: Option<Vec<Pat>>,
    pub(super) no_retry_on: Option<Vec<Pat>>,
    /// Where each pattern list's key was written.
    pub(super) key_spans: Vec<(String, Span)>,
    pub(super) rest: Vec<NestedMeta>,
}

pub(super) fn split(args: TokenStream) -> syn::Result<Split> {
    let parser = |input: ParseStream<'_>| {
        let mut out = Split::default();
        while !input.is_empty() {
            key_shapes::colon_for_equals(input)?;
            key_shapes::kebab_case_key(input)?;
            key_shapes::config_file_key(input)?;
            let fork = input.fork();
            let key = fork
                .parse::<syn::Ident>()
                .ok()
                .filter(|k| fork.peek(Token![=]) && PATTERN_KEYS.iter().any(|p| k == p));
            if let Some(key) = key {
                input.parse::<syn::Ident>()?;
                input.parse::<Token![=]>()?;
                if !input.peek(syn::token::Bracket) {
                    return Err(not_bracketed(&key, input));
                }
                let content;
                syn::bracketed!(content in input);
                let mut pats = Vec::new();
                while !content.is_empty() {
                    let pat = Pat::parse_multi(&content)?;
                    if let Some(e) = catch_all(&key, &pat) {
                        return Err(e);
                    }
                    pats.push(pat);
                    if content.peek(Token![if]) {
                        return Err(content.error(format!(
                            "patterns in `{key}` take no `if` guard; for a condition, use `retry_if = |e| …`"
                        )));
                    }
                    if content.is_empty() {
                        break;
                    }
                    content.parse::<Token![,]>()?;
                }
                let slot = if key == "retry_on" {
                    &mut out.retry_on
                } else {
                    &mut out.no_retry_on
                };
                if slot.is_some() {
                    return Err(syn::Error::new(
                        key.span(),
                        format!("duplicate `{key}`: list every pattern in one `{key} = [..]`"),
                    ));
                }
                if pats.is_empty() {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "`{key}` needs at least one pattern, as in `{key} = [MyError::Unavailable]`"
                        ),
                    ));
                }
                *slot = Some(pats);
                out.key_spans.push((key.to_string(), key.span()));
            } else {
                out.rest.push(ungrouped(input.parse::<NestedMeta>()?));
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(out)
    };
    parser.parse2(args)
}

/// The item with its value out of the invisible groups a `macro_rules!` fragment puts around
/// it (`$d:literal`, `$e:expr`, `$r:path` are each one `Group` with `Delimiter::None`). syn reads
/// such a value as `Expr::Group` unless it is a lone literal at the end of the list, and every
/// check here (and darling) looks for an `Expr::Lit` or an `Expr::Path`: without this, the same
/// tokens were the wrong kind of value as soon as another key followed them.
fn ungrouped(item: NestedMeta) -> NestedMeta {
    match item {
        NestedMeta::Meta(syn::Meta::NameValue(mut nv)) => {
            while let Expr::Group(g) = nv.value {
                nv.value = *g.expr;
            }
            NestedMeta::Meta(syn::Meta::NameValue(nv))
        }
        other => other,
    }
}

/// `retry_on = E::A` or `retry_on = "E::A"` or `retry_on = is_transient`: the brackets are
/// missing, or a predicate was meant.
fn not_bracketed(key: &syn::Ident, input: ParseStream<'_>) -> syn::Error {
    let span = input.span();
    let value = rest_of_item(input);
    let text = match syn::parse2::<LitStr>(value.clone()) {
        Ok(s) => s.value(),
        Err(_) => crate::render::render(&value),
    };
    if let Some(message) = crate::value_rules::retry_conditions(&key.to_string(), &text) {
        return syn::Error::new(span, message);
    }
    let fix = match syn::parse2::<Expr>(value) {
        Ok(Expr::Closure(_)) => format!("for a predicate, write `retry_if = {text}`"),
        Ok(Expr::Path(p)) if p.path.get_ident().is_some_and(is_lowercase) => {
            format!("for a predicate fn, write `retry_if = {text}`")
        }
        _ => format!("write `{key} = [{text}]`"),
    };
    syn::Error::new(
        span,
        format!("`{key}` takes a list of patterns in brackets: {fix}"),
    )
}

fn is_lowercase(ident: &syn::Ident) -> bool {
    let name = ident.to_string();
    name.trim_start_matches("r#")
        .chars()
        .next()
        .is_some_and(|c| c.is_lowercase() || c == '_')
}

/// A pattern that matches every error, which in `retry_on`/`no_retry_on` is a mistake: `_`, or
/// a lone lowercase name (`is_transient`, `e`), which Rust reads as a binding, not as a
/// function or a constant, or either under `&` or in a tuple of such. Upper-case names
/// (`Unavailable` after `use PayError::*`, `TIMEOUT`) are left to the compiler, which resolves
/// them as variants or constants; the expansion names them as values too, so that one that
/// resolves to nothing is an error, not a binding (see `patterns`).
fn catch_all(key: &syn::Ident, pat: &Pat) -> Option<syn::Error> {
    let every = if key == "retry_on" {
        "every error is retried by default: remove `retry_on` to retry every error"
    } else {
        "to retry nothing, write `max_attempts = 1`"
    };
    match pat {
        // `retry_on = ["5xx", "reset"]`: Envoy's conditions, not the error's patterns.
        Pat::Lit(syn::PatLit {
            lit: Lit::Str(s), ..
        }) => crate::value_rules::retry_conditions(&key.to_string(), &s.value())
            .map(|m| syn::Error::new(s.span(), m)),
        Pat::Wild(w) => Some(syn::Error::new(
            w.underscore_token.span,
            format!("`_` in `{key}` matches every error; {every}"),
        )),
        Pat::Ident(p) => match &p.subpat {
            Some((_, sub)) => catch_all(key, sub),
            None if p.by_ref.is_some() || p.mutability.is_some() || is_lowercase(&p.ident) => {
                let name = &p.ident;
                let fix = if key == "retry_on" {
                    format!("for a predicate fn, write `retry_if = {name}`")
                } else {
                    format!("for a predicate fn, write `retry_if = |e| !{name}(e)`")
                };
                Some(syn::Error::new(
                    name.span(),
                    format!(
                        "`{name}` in `{key}` is a binding that matches every error, not a function or a constant: \
                         {fix}; for a constant, name it by its path (`Self::{upper}`)",
                        upper = name.to_string().to_uppercase()
                    ),
                ))
            }
            None => None,
        },
        Pat::Or(or) => or.cases.iter().find_map(|p| catch_all(key, p)),
        Pat::Paren(p) => catch_all(key, &p.pat),
        Pat::Reference(r) => catch_all(key, &r.pat),
        Pat::Tuple(t)
            if t.elems
                .iter()
                .all(|p| matches!(p, Pat::Rest(_)) || catch_all(key, p).is_some()) =>
        {
            Some(syn::Error::new(
                t.paren_token.span.join(),
                format!("this tuple pattern in `{key}` matches every error; {every}"),
            ))
        }
        _ => None,
    }
}
