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

use crate::item::Body;

/// Renames `self` in `body`; whether there was any. A body that names no `self` is left as it
/// is. One without nested items (where every `self` that is not a module path is the receiver)
/// is renamed token by token; one with a nested item (`fn`, `impl`…, which keep their own
/// `self`) is parsed, to tell them apart.
pub(crate) fn rename_self(body: &mut Body) -> bool {
    if !body
        .stmts
        .iter()
        .any(|s| crate::item::mentions(s.clone(), "self"))
    {
        return false;
    }
    let tokens: TokenStream = body.stmts.drain(..).collect();
    let mut found = false;
    if !has_item(&tokens) {
        body.stmts = vec![self::tokens(tokens, &mut found)];
        return found;
    }
    let Ok(mut stmts) = syn::parse::Parser::parse2(syn::Block::parse_within, tokens.clone()) else {
        // Not Rust: left to rustc to say, with `self` renamed as in a macro's input.
        body.stmts = vec![self::tokens(tokens, &mut found)];
        return found;
    };
    let mut v = RenameSelf { found: false };
    for stmt in &mut stmts {
        v.visit_stmt_mut(stmt);
    }
    body.stmts = vec![quote::quote!(#(#stmts)*)];
    v.found
}

/// Whether the tokens may hold an item: an item's keyword (`fn` before a name; `impl`,
/// `trait`, `use`…), at any depth, macro input included. Some of those words also start other
/// things (`const { … }`, `union` as a name, an item in a macro's input, which is renamed the
/// same either way): those only cost a parse.
fn has_item(tokens: &TokenStream) -> bool {
    let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
    trees.iter().enumerate().any(|(i, tree)| match tree {
        TokenTree::Ident(ident) => {
            let word = ident.to_string();
            match word.as_str() {
                "fn" => matches!(trees.get(i + 1), Some(TokenTree::Ident(_))),
                "impl" | "trait" | "mod" | "use" | "struct" | "enum" | "union" | "extern"
                | "static" | "const" | "type" | "pub" | "macro_rules" => true,
                _ => false,
            }
        }
        TokenTree::Group(g) => has_item(&g.stream()),
        _ => false,
    })
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
        let name = mac.path.segments.last().map(|s| s.ident.to_string());
        mac.tokens = macro_input(
            name.as_deref(),
            std::mem::take(&mut mac.tokens),
            &mut self.found,
        );
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
/// last path segment) is a known formatting macro. Sets `found` if anything was renamed.
fn macro_input(name: Option<&str>, input: TokenStream, found: &mut bool) -> TokenStream {
    let mut trees: Vec<TokenTree> = tokens(input, found).into_iter().collect();
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
    let format = match at {
        FormatString::At(n) => lone.iter().find(|(index, _)| *index == n),
        FormatString::FirstLone => lone.first(),
    };
    if let Some(&(_, i)) = format
        && let TokenTree::Literal(lit) = &trees[i]
    {
        trees[i] = TokenTree::Literal(format_literal(lit, found));
    }
    trees.into_iter().collect()
}

/// `self` in macro input (or in a body without nested items), except before `::`; a nested
/// macro call's input by `macro_input`. Sets `found` if anything was renamed.
fn tokens(input: TokenStream, found: &mut bool) -> TokenStream {
    let trees: Vec<TokenTree> = input.into_iter().collect();
    let mut out = Vec::with_capacity(trees.len());
    for (i, tree) in trees.iter().enumerate() {
        let next_is_path = matches!(
            (trees.get(i + 1), trees.get(i + 2)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && b.as_char() == ':' && a.spacing() == proc_macro2::Spacing::Joint
        );
        out.push(match tree {
            TokenTree::Ident(ident) if !next_is_path => TokenTree::Ident(match renamed(ident) {
                Some(new) => {
                    *found = true;
                    new
                }
                None => ident.clone(),
            }),
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
                    Some(name) => macro_input(Some(&name), g.stream(), found),
                    None => tokens(g.stream(), found),
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

/// A string literal (plain or raw) with `{self}` or `{self:…}` in it, with `__self` instead;
/// sets `found` if so.
fn format_literal(lit: &proc_macro2::Literal, found: &mut bool) -> proc_macro2::Literal {
    let text = lit.to_string();
    let string = text.starts_with('"') || text.starts_with("r\"") || text.starts_with("r#");
    if !string || !(text.contains("{self}") || text.contains("{self:")) {
        return lit.clone();
    }
    let new_text = text
        .replace("{{self", "\u{0}")
        .replace("{self}", "{__self}")
        .replace("{self:", "{__self:")
        .replace('\u{0}', "{{self");
    if new_text == text {
        return lit.clone();
    }
    match new_text.parse::<proc_macro2::Literal>() {
        Ok(mut new) => {
            new.set_span(lit.span());
            *found = true;
            new
        }
        Err(_) => lit.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn body(stmts: TokenStream) -> Body {
        Body::new(syn::token::Brace::default(), stmts)
    }

    #[test]
    fn renames_the_receiver_only() {
        let mut block = body(quote!(
            let a = self.x + self::helper();
            println!("{} {self} {{self}}", self.y);
            fn nested(&self) -> u8 {
                self.z
            }
            m!(self::path, self);
        ));
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
        let mut block = body(quote!(
            let v = vec![self.name, "{self}", "{self:?}"];
            let s = format!("{} {self:?}", "{self}");
            write!(f, "{self}", "{self}");
            assert_eq!("{self}", x, "{self}");
            tracing::info!(target: "{self}", field = "{self}", "{self}", "{self}");
            outer!(inner!(m, "{self}"), format!("{self}"));
            println!(r#"{self}"#);
        ));
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

#[cfg(test)]
mod unparsed_tests {
    use super::*;
    use quote::quote;

    #[test]
    fn a_body_without_self_is_left_as_written() {
        // `self::x` is a module path, and a literal without `{self` has nothing to rename.
        let stmts = quote!(let a = self::helper(x); println!("{a}"););
        let mut body = Body::new(syn::token::Brace::default(), stmts.clone());
        assert!(!rename_self(&mut body));
        let got = &body.stmts;
        assert_eq!(quote!(#(#got)*).to_string(), stmts.to_string());
    }
}

#[cfg(test)]
mod token_path_tests {
    //! A body without nested items is renamed token by token: the same as the parse would.
    use super::*;
    use quote::quote;

    fn by_parse(stmts: &TokenStream) -> (bool, String) {
        let mut parsed = syn::parse::Parser::parse2(syn::Block::parse_within, stmts.clone())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut v = RenameSelf { found: false };
        for stmt in &mut parsed {
            v.visit_stmt_mut(stmt);
        }
        (v.found, quote!(#(#parsed)*).to_string())
    }

    fn by_tokens(stmts: &TokenStream) -> (bool, String) {
        assert!(!has_item(stmts), "{stmts}");
        let mut body = Body::new(syn::token::Brace::default(), stmts.clone());
        let found = rename_self(&mut body);
        let got = &body.stmts;
        (found, quote!(#(#got)*).to_string())
    }

    #[test]
    fn tokens_and_the_parse_agree() {
        for stmts in [
            quote!(let a = self.x + self::helper(); Ok(a)),
            quote!(match self.state {
                s => {
                    let b = &mut *self;
                    b.go(s)
                }
            }),
            quote!(let c = |x: u8| self.f(x); tracing::info!("{self:?}", x = self.y); c(1)),
            quote!(println!("{{self}} {}", 1); Ok(())),
            quote!(if !(self.ok) { return Err(E) } Ok(Self::new(self::X)) ),
            quote!(let v = vec!["{self}"]; write!(f, "{self}")),
        ] {
            assert_eq!(by_tokens(&stmts), by_parse(&stmts), "{stmts}");
        }
    }

    #[test]
    fn nested_items_are_parsed() {
        for stmts in [
            quote!(
                fn g(&self) -> u8 {
                    self.z
                },
                g(self)
            ),
            quote!(impl X { fn h(&self) {} } self.h()),
            quote!(use self::m::{self, n};, self.n()),
            quote!(
                struct S {
                    pub(self) a: u8,
                },
                self.a
            ),
        ] {
            assert!(has_item(&stmts), "{stmts}");
        }
        // `fn(u8)` is a type, not an item.
        assert!(!has_item(&quote!(let f: fn(u8) -> u8 = self.f; f(1))));
        let mut body = Body::new(
            syn::token::Brace::default(),
            quote!(
                fn g(&self) -> u8 {
                    self.z
                },
                g(self)
            ),
        );
        assert!(rename_self(&mut body));
        let got = &body.stmts;
        let text = quote!(#(#got)*).to_string();
        assert!(
            text.contains("self . z") && text.contains("g (__self)"),
            "{text}"
        );
    }
}
