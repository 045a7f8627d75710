//! Renames `self` to `__self` in a body, as async-trait does: each attempt binds `__self` to a
//! copy or a reborrow of the receiver, so an `async move` block (ours, or one in the body, or
//! one written by another attribute macro such as `tracing::instrument`) can take it once per
//! attempt. Module paths (`self::x`) and nested items keep their own `self`.
//!
//! Inside a macro's input every `self` token is renamed; string literals are data, and only one
//! is touched: the format string of a known formatting macro (std's `format!`, `print!`,
//! `write!`, `panic!`, `assert!`…, `tracing`'s and `log`'s `info!`…, `anyhow`'s `anyhow!`,
//! `bail!`, `ensure!`), whose inline captures `{self}` and `{self:…}` become `{__self}`. Any
//! other literal (`vec!["{self}"]`, a format argument, another macro's template) is kept as
//! written.

use proc_macro2::{Group, Ident, TokenStream, TokenTree};
use syn::visit_mut::{self, VisitMut};

/// Renames `self` in `block`; whether there was any.
pub(crate) fn rename_self(block: &mut syn::Block) -> bool {
    let mut v = RenameSelf { found: false };
    v.visit_block_mut(block);
    v.found
}

struct RenameSelf {
    found: bool,
}

fn renamed(ident: &Ident) -> Option<Ident> {
    (ident == "self").then(|| Ident::new("__self", ident.span()))
}

impl VisitMut for RenameSelf {
    fn visit_path_mut(&mut self, path: &mut syn::Path) {
        // `self` alone is the receiver; `self::x` is a module path.
        if path.leading_colon.is_none()
            && path.segments.len() == 1
            && let Some(seg) = path.segments.first_mut()
            && let Some(new) = renamed(&seg.ident)
        {
            seg.ident = new;
            self.found = true;
        }
        for seg in &mut path.segments {
            self.visit_path_arguments_mut(&mut seg.arguments);
        }
    }

    fn visit_item_mut(&mut self, item: &mut syn::Item) {
        // A nested item has its own `self` (or none), except a local `macro_rules!`, which may
        // expand to the receiver.
        if let syn::Item::Macro(m) = item
            && m.mac.path.is_ident("macro_rules")
        {
            self.visit_macro_mut(&mut m.mac);
        }
    }

    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        let before = mac.tokens.to_string();
        let name = mac.path.segments.last().map(|s| s.ident.to_string());
        mac.tokens = macro_input(name.as_deref(), std::mem::take(&mut mac.tokens));
        self.found |= mac.tokens.to_string() != before;
        visit_mut::visit_path_mut(self, &mut mac.path);
    }
}

/// Where a known formatting macro's format string is.
enum FormatString {
    /// The comma-separated argument at this index (`format!`: 0, `write!`: 1, `assert_eq!`: 2).
    At(usize),
    /// The first argument that is a lone string literal (`tracing`'s and `log`'s macros, whose
    /// format string follows `target: …`, fields and the level).
    FirstLone,
}

fn format_string(name: &str) -> Option<FormatString> {
    Some(match name {
        "format" | "format_args" | "print" | "println" | "eprint" | "eprintln" | "panic"
        | "unreachable" | "todo" | "unimplemented" | "anyhow" | "bail" | "format_err" | "eyre" => {
            FormatString::At(0)
        }
        "write" | "writeln" | "assert" | "debug_assert" | "ensure" => FormatString::At(1),
        "assert_eq" | "assert_ne" | "debug_assert_eq" | "debug_assert_ne" => FormatString::At(2),
        // `log::log!(level, "…")` and `tracing::event!(Level::INFO, "…")`: the first lone string.
        "trace" | "debug" | "info" | "warn" | "error" | "event" | "log" => FormatString::FirstLone,
        _ => return None,
    })
}

/// A macro's input: `self` renamed, and the format string's captures if the macro (by its
/// last path segment) is a known formatting macro.
fn macro_input(name: Option<&str>, input: TokenStream) -> TokenStream {
    let mut trees: Vec<TokenTree> = tokens(input).into_iter().collect();
    let Some(at) = name.and_then(format_string) else {
        return trees.into_iter().collect();
    };
    // Each top-level argument that is a lone string literal, by its index among the arguments.
    let mut lone = Vec::new();
    let mut index = 0;
    let mut start = 0;
    for i in 0..=trees.len() {
        if i == trees.len() || matches!(&trees[i], TokenTree::Punct(p) if p.as_char() == ',') {
            if i == start + 1 && matches!(&trees[start], TokenTree::Literal(_)) {
                lone.push((index, start));
            }
            index += 1;
            start = i + 1;
        }
    }
    let found = match at {
        FormatString::At(n) => lone.iter().find(|(index, _)| *index == n),
        FormatString::FirstLone => lone.first(),
    };
    if let Some(&(_, i)) = found
        && let TokenTree::Literal(lit) = &trees[i]
    {
        trees[i] = TokenTree::Literal(format_literal(lit));
    }
    trees.into_iter().collect()
}

/// `self` in macro input, except before `::`; a nested macro call's input by `macro_input`.
fn tokens(input: TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = input.into_iter().collect();
    let mut out = Vec::with_capacity(trees.len());
    for (i, tree) in trees.iter().enumerate() {
        let next_is_path = matches!(
            (trees.get(i + 1), trees.get(i + 2)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && b.as_char() == ':' && a.spacing() == proc_macro2::Spacing::Joint
        );
        out.push(match tree {
            TokenTree::Ident(ident) if !next_is_path => {
                TokenTree::Ident(renamed(ident).unwrap_or_else(|| ident.clone()))
            }
            TokenTree::Group(g) => {
                // `name!(…)`: a macro call inside this macro's input.
                let called = match (
                    i.checked_sub(2).map(|j| &trees[j]),
                    i.checked_sub(1).map(|j| &trees[j]),
                ) {
                    (Some(TokenTree::Ident(name)), Some(TokenTree::Punct(bang)))
                        if bang.as_char() == '!' =>
                    {
                        Some(name.to_string())
                    }
                    _ => None,
                };
                let inner = match called {
                    Some(name) => macro_input(Some(&name), g.stream()),
                    None => tokens(g.stream()),
                };
                let mut new = Group::new(g.delimiter(), inner);
                new.set_span(g.span());
                TokenTree::Group(new)
            }
            other => other.clone(),
        });
    }
    out.into_iter().collect()
}

/// A string literal (plain or raw) with `{self}` or `{self:…}` in it, with `__self` instead.
fn format_literal(lit: &proc_macro2::Literal) -> proc_macro2::Literal {
    let text = lit.to_string();
    let string = text.starts_with('"') || text.starts_with("r\"") || text.starts_with("r#");
    if !string || !(text.contains("{self}") || text.contains("{self:")) {
        return lit.clone();
    }
    let text = text
        .replace("{{self", "\u{0}")
        .replace("{self}", "{__self}")
        .replace("{self:", "{__self:")
        .replace('\u{0}', "{{self");
    match text.parse::<proc_macro2::Literal>() {
        Ok(mut new) => {
            new.set_span(lit.span());
            new
        }
        Err(_) => lit.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn renames_the_receiver_only() {
        let mut block: syn::Block = syn::parse_quote!({
            let a = self.x + self::helper();
            println!("{} {self} {{self}}", self.y);
            fn nested(&self) -> u8 {
                self.z
            }
            m!(self::path, self);
        });
        assert!(rename_self(&mut block));
        let text = quote!(#block).to_string();
        assert!(text.contains("__self . x"), "{text}");
        assert!(text.contains("self :: helper"), "{text}");
        assert!(text.contains("__self . y"), "{text}");
        assert!(text.contains("{__self}"), "{text}");
        assert!(text.contains("{{self}}"), "{text}");
        assert!(text.contains("self . z"), "{text}");
        assert!(!text.contains("__self . z"), "{text}");
        assert!(text.contains("m ! (self :: path , __self)"), "{text}");
    }

    #[test]
    fn only_format_strings_of_formatting_macros_are_rewritten() {
        let mut block: syn::Block = syn::parse_quote!({
            let v = vec![self.name, "{self}", "{self:?}"];
            let s = format!("{} {self:?}", "{self}");
            write!(f, "{self}", "{self}");
            assert_eq!("{self}", x, "{self}");
            tracing::info!(target: "{self}", field = "{self}", "{self}", "{self}");
            outer!(inner!(m, "{self}"), format!("{self}"));
            println!(r#"{self}"#);
        });
        assert!(rename_self(&mut block));
        let text = quote!(#block).to_string();
        for expected in [
            r#"vec ! [__self . name , "{self}" , "{self:?}"]"#,
            r#"format ! ("{} {__self:?}" , "{self}")"#,
            r#"write ! (f , "{__self}" , "{self}")"#,
            r#"assert_eq ! ("{self}" , x , "{__self}")"#,
            r#"info ! (target : "{self}" , field = "{self}" , "{__self}" , "{self}")"#,
            r#"outer ! (inner ! (m , "{self}") , format ! ("{__self}"))"#,
            r##"println ! (r#"{__self}"#)"##,
        ] {
            assert!(text.contains(expected), "{expected} in {text}");
        }
    }
}
