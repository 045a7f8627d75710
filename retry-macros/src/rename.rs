//! Renames `self` to `__self` in a body, as async-trait does: each attempt binds `__self` to a
//! copy or a reborrow of the receiver, so an `async move` block (ours, or one in the body, or
//! one written by another attribute macro such as `tracing::instrument`) can take it once per
//! attempt. Module paths (`self::x`) and nested items keep their own `self`.

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
        mac.tokens = tokens(std::mem::take(&mut mac.tokens));
        self.found |= mac.tokens.to_string() != before;
        visit_mut::visit_path_mut(self, &mut mac.path);
    }
}

/// `self` in macro input, except before `::`, and inside string literals of format macros
/// (`"{self}"`, `"{self:?}"`).
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
                let mut new = Group::new(g.delimiter(), tokens(g.stream()));
                new.set_span(g.span());
                TokenTree::Group(new)
            }
            TokenTree::Literal(lit) => TokenTree::Literal(format_literal(lit)),
            other => other.clone(),
        });
    }
    out.into_iter().collect()
}

/// A plain string literal with `{self}` or `{self:…}` in it, with `__self` instead.
fn format_literal(lit: &proc_macro2::Literal) -> proc_macro2::Literal {
    let text = lit.to_string();
    if !text.starts_with('"') || !(text.contains("{self}") || text.contains("{self:")) {
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
}
