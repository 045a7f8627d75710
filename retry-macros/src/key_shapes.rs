//! Keys written in another syntax than `key = value`, each told the key it stands for before
//! the item is parsed (Rust would read them as something else, or not at all): `key: value` (a
//! struct literal's, YAML's), `max-attempts = 3` (a config file's kebab case), a dotted key
//! (`breaker.failure_threshold = 5`, TOML's and Spring Boot's) and a quoted key (JSON's).

use proc_macro2::TokenStream;
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::{Expr, LitStr, Token};

/// The tokens up to the next `,` at this level (a key's value), consumed.
pub(crate) fn rest_of_item(input: ParseStream<'_>) -> TokenStream {
    let mut tokens = TokenStream::new();
    while !input.is_empty() && !input.peek(Token![,]) {
        match input.parse::<proc_macro2::TokenTree>() {
            Ok(t) => tokens.extend([t]),
            Err(_) => break,
        }
    }
    tokens
}

/// `max_attempts: 3` (as in a struct literal or YAML) instead of `max_attempts = 3`.
pub(crate) fn colon_for_equals(input: ParseStream<'_>) -> syn::Result<()> {
    let fork = input.fork();
    let Ok(key) = fork.call(syn::Ident::parse_any) else {
        return Ok(());
    };
    if !fork.peek(Token![:]) || fork.peek(Token![::]) {
        return Ok(());
    }
    let colon: Token![:] = fork.parse()?;
    let value = rest_of_item(&fork);
    let value = crate::render::render(&value);
    Err(syn::Error::new(
        colon.span,
        format!("#[retryable] takes `key = value`, with `=`: write `{key} = {value}`"),
    ))
}

/// `max-attempts = 3`, `wait-duration = "500ms"`: a property name of a config file (Resilience4j's,
/// Spring Boot's) written as a key, which Rust reads as a subtraction. Told the key, looked up
/// by its normalised spelling as any unknown key is.
pub(crate) fn kebab_case_key(input: ParseStream<'_>) -> syn::Result<()> {
    let fork = input.fork();
    let Ok(first) = fork.call(syn::Ident::parse_any) else {
        return Ok(());
    };
    let mut key = first.to_string();
    while fork.peek(Token![-]) && fork.peek2(syn::Ident) {
        fork.parse::<Token![-]>()?;
        key.push('-');
        key.push_str(&fork.call(syn::Ident::parse_any)?.to_string());
    }
    if !key.contains('-') || !fork.peek(Token![=]) || fork.peek(Token![==]) {
        return Ok(());
    }
    fork.parse::<Token![=]>()?;
    let value = syn::parse2::<Expr>(rest_of_item(&fork)).ok();
    Err(syn::Error::new(
        first.span(),
        crate::known_keys::unknown_key(&key, value.as_ref()),
    ))
}

/// A key as a config file writes it: dotted (`retry.max_attempts = 3`, TOML's dotted keys and
/// Spring Boot's properties, `resilience4j.retry.instances.backend.maxAttempts = 3`) or quoted
/// (`"max_attempts" = 3`, JSON's and YAML's). Rust reads neither as a key. Told the key itself:
/// the last part of a dotted key, looked up as any unknown key is when it is not one.
pub(crate) fn config_file_key(input: ParseStream<'_>) -> syn::Result<()> {
    use crate::known_keys::{KEYS, unknown_key};
    use crate::render::render;
    let fork = input.fork();
    let (span, written, last) = if let Ok(quoted) = fork.parse::<LitStr>() {
        (
            quoted.span(),
            format!("{:?}", quoted.value()),
            quoted.value(),
        )
    } else {
        let Ok(first) = fork.call(syn::Ident::parse_any) else {
            return Ok(());
        };
        let mut parts = vec![first.to_string()];
        while fork.peek(Token![.]) && !fork.peek(Token![..]) {
            fork.parse::<Token![.]>()?;
            parts.push(fork.call(syn::Ident::parse_any)?.to_string());
        }
        if parts.len() < 2 {
            return Ok(());
        }
        let last = parts.last().cloned().unwrap_or_default();
        (first.span(), parts.join("."), last)
    };
    if !fork.peek(Token![=]) || fork.peek(Token![==]) {
        return Ok(());
    }
    fork.parse::<Token![=]>()?;
    let tokens = rest_of_item(&fork);
    let value = syn::parse2::<Expr>(tokens.clone()).ok();
    let shown = render(&tokens);
    let what = if written.starts_with('"') {
        "a quoted key, as JSON or YAML writes it"
    } else {
        "a dotted key of a config file"
    };
    let message = if KEYS.contains(&last.as_str()) {
        format!(
            "`{written}` is {what}; the attribute's key is the name alone: write `{last} = {shown}`"
        )
    } else {
        format!(
            "`{written}` is {what}, not a key of #[retryable]; of its name: {}",
            unknown_key(&last, value.as_ref())
        )
    };
    Err(syn::Error::new(span, message))
}
