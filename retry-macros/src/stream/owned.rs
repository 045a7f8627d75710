//! The keys beside `resume` that read what the stream owns. The open takes a by-value `self` and
//! the by-value arguments (`move`: each open clones them), and the stream outlives the function's
//! frame, so a key the stream keeps for its life (its guards, hooks, policy, `resume` itself)
//! cannot also borrow them: refused at the name read, with the fix. A `&self` receiver or a
//! `&T` argument is a borrow the stream can hold, and a key naming neither is untouched.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Expr, Pat};

use crate::args::RetryArgs;
use crate::item::{self, Param, Receiver, RetryFn};

/// What the stream owns, by name: `self` when taken by value, and each by-value argument.
fn owned_names(f: &RetryFn) -> Vec<String> {
    let receiver = f
        .receiver
        .filter(|(r, _)| matches!(r, Receiver::Value { .. }))
        .map(|_| "self".to_owned());
    let args = f.params.iter().flat_map(|p| match p {
        Param::Owned { ident, .. } => vec![ident.to_string()],
        Param::Pattern { pat, .. } => pat_names(pat),
        Param::Borrowed { .. } | Param::Ignored { .. } => vec![],
    });
    receiver.into_iter().chain(args).collect()
}

/// The names a pattern binds (a closure's parameters shadow the function's arguments).
fn pat_names(pat: &Pat) -> Vec<String> {
    if let Pat::Type(t) = pat {
        return pat_names(&t.pat);
    }
    let mut names = Vec::new();
    let mut previous: Option<TokenTree> = None;
    collect(pat.to_token_stream(), &mut |t| {
        if let TokenTree::Ident(i) = &t
            && !matches!(&previous, Some(TokenTree::Punct(p)) if p.as_char() == ':')
        {
            names.push(i.to_string());
        }
        previous = Some(t);
    });
    names
}

fn collect(tokens: TokenStream, each: &mut dyn FnMut(TokenTree)) {
    for t in tokens {
        if let TokenTree::Group(g) = &t {
            collect(g.stream(), each);
        } else {
            each(t);
        }
    }
}

/// The first of `names` the expression reads, and where: a name not after `.` (a field) or `::`
/// (a path), or a `{name}` capture in a format string.
fn reads(expr: &Expr, names: &[String]) -> Option<(String, Span)> {
    let mut found = None;
    let mut previous: Option<TokenTree> = None;
    collect(expr.to_token_stream(), &mut |t| {
        if found.is_some() {
            return;
        }
        let after_path = matches!(&previous, Some(TokenTree::Punct(p)) if p.as_char() == '.' || p.as_char() == ':');
        match &t {
            TokenTree::Ident(i) if !after_path => {
                found = names.iter().find(|n| i == n).map(|n| (n.clone(), i.span()));
            }
            TokenTree::Literal(l) => {
                let text = l.to_string();
                found = names
                    .iter()
                    .find(|n| {
                        text.contains(&format!("{{{n}}}")) || text.contains(&format!("{{{n}:"))
                    })
                    .map(|n| (n.clone(), l.span()));
            }
            _ => {}
        }
        previous = Some(t);
    });
    found
}

/// Every key that reads what the stream owns, each at the name it reads.
pub(super) fn keys_reading_owned(args: &RetryArgs, f: &RetryFn) -> Vec<syn::Error> {
    let owned = owned_names(f);
    if owned.is_empty() {
        return vec![];
    }
    let body: TokenStream = f.body.stmts.iter().cloned().collect();
    let keys = [
        ("circuit_breaker", &args.circuit_breaker),
        ("budget", &args.budget),
        ("policy", &args.policy),
        ("retry_if", &args.retry_if),
        ("retry_after", &args.retry_after),
        ("delay_for", &args.delay_for),
        ("on_retry", &args.on_retry),
        ("resume", &args.stream.resume),
    ];
    keys.into_iter()
        .filter_map(|(key, expr)| expr.as_ref().map(|e| (key, e)))
        .filter_map(|(key, expr)| {
            let mut names = owned.clone();
            if let Expr::Closure(c) = expr {
                let params: Vec<String> = c.inputs.iter().flat_map(pat_names).collect();
                names.retain(|n| !params.contains(n));
                // A `move` closure owns its copy: it conflicts with the open only over a name
                // the body reads too (the open has taken it first).
                if c.capture.is_some() {
                    names.retain(|n| item::mentions(body.clone(), n));
                }
            }
            let (name, at) = reads(expr, &names)?;
            Some(syn::Error::new(at, message(key, &name)))
        })
        .collect()
}

fn message(key: &str, name: &str) -> String {
    let guard = match key {
        "circuit_breaker" => Some("breaker"),
        "budget" => Some("budget"),
        "policy" => Some("policy"),
        _ => None,
    };
    let (what, fix) = if name == "self" {
        let fix = guard.map_or_else(
            || "take `&self` (the stream then borrows it)".to_owned(),
            |g| format!("take `&self` (the stream then borrows it), or make the {g} a `static`"),
        );
        ("`self`, which this method takes by value".to_owned(), fix)
    } else {
        let fix = guard.map_or_else(
            || format!("read `{name}` in the body, not in `{key}`"),
            |g| {
                format!(
                    "pass `{name}` by reference (`{name}: &T`: the stream then borrows it), or \
                     make the {g} a `static`"
                )
            },
        );
        (format!("`{name}`, an argument taken by value"), fix)
    };
    let owner = if name == "self" {
        "`self`"
    } else {
        "its arguments"
    };
    format!(
        "`{key}` reads {what}: the stream owns {owner} (each open gets a clone) and outlives \
         this call, so `{key}` cannot borrow `{name}` for the stream's life; {fix}"
    )
}
