//! The function under `#[retryable]`, described without being rewritten (see `rewrite`): its
//! signature, how each argument reaches an attempt, and the `Result` it returns.

use proc_macro2::{Span, TokenStream};
use quote::format_ident;
use syn::{Attribute, FnArg, Ident, ItemFn, Pat, PatIdent, ReceiverKind, ReturnType, Type};

/// How one argument reaches each attempt.
pub(crate) enum Param {
    /// `name: T` taken by value: each attempt gets a clone; the original stays for `#[recover]`.
    Owned {
        ident: Ident,
        mutable: bool,
        ty: Type,
        /// The argument's lint attributes (`#[allow(…)]`), repeated on each attempt's binding.
        lints: Vec<Attribute>,
    },
    /// `name: &T` or `name: &mut T`: each attempt gets a copy or a reborrow (so a `mut` binding
    /// re-sliced in the body starts afresh).
    Borrowed {
        ident: Ident,
        mutable: bool,
        unique: bool,
        ty: Type,
        lints: Vec<Attribute>,
    },
    /// A destructuring pattern (`(a, b): (u32, u32)`), or a name starting with one underscore:
    /// renamed in the signature; each attempt destructures a clone (or, for a reference, a copy
    /// or a reborrow) of it.
    Pattern {
        pat: Pat,
        renamed: Ident,
        ty: Type,
        lints: Vec<Attribute>,
    },
    /// `_: T`: nothing reaches the attempt.
    Ignored {
        renamed: Ident,
        ty: Type,
        lints: Vec<Attribute>,
    },
}

impl Param {
    /// The expression that passes the original argument on (to `#[recover]`).
    pub(crate) fn original(&self) -> &Ident {
        match self {
            Param::Owned { ident, .. } | Param::Borrowed { ident, .. } => ident,
            Param::Pattern { renamed, .. } | Param::Ignored { renamed, .. } => renamed,
        }
    }

    /// The argument's lint and `#[cfg]`/`#[cfg_attr]` attributes, repeated on what the
    /// expansion binds from it.
    pub(crate) fn lints(&self) -> &[Attribute] {
        match self {
            Param::Owned { lints, .. }
            | Param::Borrowed { lints, .. }
            | Param::Pattern { lints, .. }
            | Param::Ignored { lints, .. } => lints,
        }
    }

    /// The argument's `#[cfg]`/`#[cfg_attr]` attributes, if any.
    pub(crate) fn cfg(&self) -> Option<&Attribute> {
        self.lints().iter().find(|a| is_cfg(a))
    }

    /// The argument's declared type.
    pub(crate) fn ty(&self) -> &Type {
        match self {
            Param::Owned { ty, .. }
            | Param::Borrowed { ty, .. }
            | Param::Pattern { ty, .. }
            | Param::Ignored { ty, .. } => ty,
        }
    }
}

/// How the receiver reaches each attempt (as `__self`: `self` is renamed in the body).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Receiver {
    /// `&self`: copied.
    Shared,
    /// `&mut self`: reborrowed.
    Unique,
    /// `self`, `mut self`, `self: Box<Self>`…: borrowed mutably (the signature's binding is
    /// made `mut` where it is not), so that the attempt is `Send` whenever `Self` is (a shared
    /// borrow would need `Self: Sync`); not cloned.
    Value { mutable: bool },
    /// `self: Pin<&mut Self>`: each attempt gets `self.as_mut()` (the signature's binding is made
    /// `mut`), so that the body may take the `Pin` by value (`get_mut`, a pin projection).
    Pinned { mutable: bool },
}

/// The function as written, described: its arguments classified, its body and its `Result`. A
/// description only: `rewrite` writes the signature and body the expansion emits.
pub(crate) struct RetryFn {
    /// The function, unchanged, but for its block: its statements are in `body`, as tokens, and
    /// `item.block` is empty (syn parses a body only where it must look into it: async-trait's
    /// boxed future, and `self` to rename in a method, see `rename`).
    pub(crate) item: ItemFn,
    /// The block the attempts run: the function's, or (see `boxed`) the inner async block's.
    pub(crate) body: Body,
    /// The outer attributes of the function (`item.attrs` without the inner ones).
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) params: Vec<Param>,
    pub(crate) receiver: Option<(Receiver, Span)>,
    /// The return type (`()` when none is written, which `valid` refuses).
    pub(crate) output: Type,
    /// Inner attributes of the body (`#![allow(…)]`), which syn reads into `item.attrs`.
    pub(crate) inner_attrs: Vec<Attribute>,
    /// For an `async fn` that `#[async_trait]` rewrote into
    /// `fn … -> Pin<Box<dyn Future<Output = R> + …>> { Box::pin(async move { … }) }`: the boxing
    /// function, which the retry loop is wrapped in again (`body` is then the inner async
    /// block's, and `output` is `R`).
    pub(crate) boxed: Option<syn::Expr>,
}

impl RetryFn {
    pub(crate) fn is_async(&self) -> bool {
        self.item.sig.asyncness.is_some() || self.boxed.is_some()
    }

    pub(crate) fn has_receiver(&self) -> bool {
        self.receiver.is_some()
    }
}

/// A block's contents as written, inner attributes excepted: tokens, not a syntax tree (the
/// expansion only moves them; see `RetryFn::item`).
#[derive(Clone)]
pub(crate) struct Body {
    /// The block's braces.
    pub(crate) brace: syn::token::Brace,
    /// The statements: one stream holding them all (a slice, for `#(#stmts)*`).
    pub(crate) stmts: Vec<TokenStream>,
}

impl Body {
    pub(crate) fn new(brace: syn::token::Brace, stmts: TokenStream) -> Self {
        Body {
            brace,
            stmts: vec![stmts],
        }
    }

    fn of(block: &syn::Block) -> Self {
        let stmts = &block.stmts;
        Body::new(block.brace_token, quote::quote!(#(#stmts)*))
    }
}

impl quote::ToTokens for Body {
    /// The block, braces included.
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let stmts = &self.stmts;
        self.brace
            .surround(tokens, |tokens| tokens.extend(stmts.iter().cloned()));
    }
}

/// The type inside any invisible groups (`macro_rules!` `ty` fragments) and parentheses.
pub(crate) fn ungroup(ty: &Type) -> &Type {
    match ty {
        Type::Group(g) => ungroup(&g.elem),
        Type::Paren(p) => ungroup(&p.elem),
        other => other,
    }
}

/// The error type as written in the return type `Result<T, E>`, if it is written so (not an
/// alias).
pub(crate) fn error_type(output: &Type) -> Option<&Type> {
    if let Type::Path(tp) = ungroup(output)
        && let Some(last) = tp.path.segments.last()
        && last.ident == "Result"
        && let syn::PathArguments::AngleBracketed(args) = &last.arguments
        && args.args.len() == 2
        && let Some(syn::GenericArgument::Type(e)) = args.args.last()
    {
        Some(e)
    } else {
        None
    }
}

pub(crate) fn is_cfg(a: &Attribute) -> bool {
    a.path().is_ident("cfg") || a.path().is_ident("cfg_attr")
}

/// The attributes to repeat on an argument's bindings: lints, and `#[cfg]`/`#[cfg_attr]` (a
/// configured-out argument has no binding either).
fn lint_attrs(attrs: &[Attribute]) -> Vec<Attribute> {
    attrs
        .iter()
        .filter(|a| {
            is_cfg(a)
                || ["allow", "expect", "warn", "deny", "forbid"]
                    .iter()
                    .any(|l| a.path().is_ident(l))
        })
        .cloned()
        .collect()
}

/// Whether `ident` occurs in `tokens` (macro input included, and a format string's captures,
/// `"{ident}"`, `"{ident:?}"`, in any literal).
pub(crate) fn mentions(tokens: TokenStream, ident: &str) -> bool {
    let captures = [format!("{{{ident}}}"), format!("{{{ident}:")];
    mentioned(tokens, ident, &captures)
}

/// `mentions`, with the captures to look for in literals written once.
fn mentioned(tokens: TokenStream, ident: &str, captures: &[String; 2]) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == ident,
        proc_macro2::TokenTree::Group(g) => mentioned(g.stream(), ident, captures),
        proc_macro2::TokenTree::Literal(l) => {
            let text = l.to_string();
            text.contains('{') && captures.iter().any(|c| text.contains(c.as_str()))
        }
        proc_macro2::TokenTree::Punct(_) => false,
    })
}

/// Describes the item under the attribute; fails only if it is not a function with a body (the
/// rest is `valid`'s to check).
pub(crate) fn parse(item: TokenStream) -> syn::Result<RetryFn> {
    let Ok((item, stmts)) = syn::parse::Parser::parse2(parse_fn, item.clone()) else {
        return Err(not_a_function(item));
    };
    let (output, boxed, body) = if let Some((func, output, inner)) = async_trait_body(&item) {
        (output, Some(func), Body::of(&inner))
    } else {
        let output = match &item.sig.output {
            ReturnType::Type(_, ty) => (**ty).clone(),
            ReturnType::Default => syn::parse_quote!(()),
        };
        let body = match stmts {
            Some(stmts) => Body::new(item.block.brace_token, stmts),
            None => Body::of(&item.block),
        };
        (output, None, body)
    };
    // Only async-trait's shape is looked into: the block is the body's now.
    let mut item = item;
    item.block.stmts.clear();
    let (inner_attrs, attrs): (Vec<_>, Vec<_>) = item
        .attrs
        .iter()
        .cloned()
        .partition(|a| matches!(a.style, syn::AttrStyle::Inner(_)));
    let body_tokens = quote::ToTokens::to_token_stream(&body);
    let mut params = Vec::new();
    let mut receiver = None;
    for (i, arg) in item.sig.inputs.iter().enumerate() {
        let typed = match arg {
            FnArg::Receiver(r) => {
                let kind = receiver_kind(r);
                receiver = Some((kind, r.self_token.span));
                continue;
            }
            FnArg::Typed(t) => t,
        };
        let renamed = format_ident!("__reattempt_arg{}", i, span = Span::mixed_site());
        let ty = (*typed.ty).clone();
        let reference = match ungroup(&ty) {
            Type::Reference(r) => Some(r.mutability.is_some()),
            _ => None,
        };
        let lints = lint_attrs(&typed.attrs);
        let param = match &*typed.pat {
            Pat::Ident(PatIdent {
                by_ref: None,
                subpat: None,
                ident,
                mutability,
                ..
            }) if !single_underscore(ident)
                || !mentions(body_tokens.clone(), &ident.to_string()) =>
            {
                // A `_name` the body never names is bound by nothing but the signature (and may
                // be named by the attribute's expressions, as `circuit_breaker = _breaker`).
                // The signature's binding is only copied from, so a `mut` there would be
                // unused; the attempt's own binding carries it instead (see `rewrite`).
                let mutable = mutability.is_some();
                match reference {
                    Some(unique) => Param::Borrowed {
                        ident: ident.clone(),
                        mutable,
                        unique,
                        ty,
                        lints,
                    },
                    None => Param::Owned {
                        ident: ident.clone(),
                        mutable,
                        ty,
                        lints,
                    },
                }
            }
            Pat::Wild(_) => Param::Ignored { renamed, ty, lints },
            pat => Param::Pattern {
                pat: pat.clone(),
                renamed,
                ty,
                lints,
            },
        };
        params.push(param);
    }
    Ok(RetryFn {
        item,
        body,
        attrs,
        params,
        receiver,
        output,
        inner_attrs,
        boxed,
    })
}

/// `ItemFn`'s own parse (syn's, step by step), except that the block's statements are kept as
/// tokens (returned beside an empty block), unless the function may be async-trait's boxed
/// future (which `async_trait_body` looks into): a body is not parsed only to be written out
/// again.
fn parse_fn(input: syn::parse::ParseStream<'_>) -> syn::Result<(ItemFn, Option<TokenStream>)> {
    let mut attrs = input.call(Attribute::parse_outer)?;
    let vis: syn::Visibility = input.parse()?;
    let sig: syn::Signature = input.parse()?;
    let content;
    let brace_token = syn::braced!(content in input);
    attrs.extend(content.call(Attribute::parse_inner)?);
    let boxed_future = sig.asyncness.is_none()
        && matches!(&sig.output, ReturnType::Type(_, ty) if future_output(ty).is_some());
    let (stmts, tokens) = if boxed_future {
        (content.call(syn::Block::parse_within)?, None)
    } else {
        (Vec::new(), Some(content.parse::<TokenStream>()?))
    };
    let item = ItemFn {
        attrs,
        vis,
        modifiers: syn::FnModifiers::default(),
        sig,
        block: Box::new(syn::Block { brace_token, stmts }),
    };
    Ok((item, tokens))
}

fn receiver_kind(r: &syn::Receiver) -> Receiver {
    let by_value = Receiver::Value {
        mutable: r.mutability.is_some(),
    };
    match &r.kind {
        ReceiverKind::Reference(_, _, Some(_)) => Receiver::Unique,
        ReceiverKind::Reference(_, _, None) => Receiver::Shared,
        ReceiverKind::Typed(_, ty) => match ungroup(ty) {
            Type::Reference(t) if t.mutability.is_some() => Receiver::Unique,
            Type::Reference(_) => Receiver::Shared,
            pinned if pin_of_mut(pinned) => Receiver::Pinned {
                mutable: r.mutability.is_some(),
            },
            _ => by_value,
        },
        _ => by_value,
    }
}

/// `Pin<&mut …>` (by the last segment's name).
fn pin_of_mut(ty: &Type) -> bool {
    let Type::Path(p) = ty else {
        return false;
    };
    let Some(last) = p.path.segments.last().filter(|s| s.ident == "Pin") else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    matches!(
        args.args.first(),
        Some(syn::GenericArgument::Type(t))
            if matches!(ungroup(t), Type::Reference(r) if r.mutability.is_some())
    )
}

/// `_name` (but not `__name`): a binding clippy's `used_underscore_binding` says not to use, so
/// the signature's binding is renamed and only the attempt's own binding has the name.
fn single_underscore(ident: &Ident) -> bool {
    let s = ident.to_string();
    s.starts_with('_') && !s.starts_with("__")
}

/// What `#[async_trait]` made of an `async fn` (when it expands before `#[retryable]`, as it does
/// on the `impl`): the boxing function, the async block's output, and its block.
fn async_trait_body(item: &ItemFn) -> Option<(syn::Expr, Type, syn::Block)> {
    if item.sig.asyncness.is_some() || item.block.stmts.len() != 1 {
        return None;
    }
    let syn::Stmt::Expr(syn::Expr::Call(call), None) = &item.block.stmts[0] else {
        return None;
    };
    let syn::Expr::Path(func) = &*call.func else {
        return None;
    };
    if func.path.segments.last().is_none_or(|s| s.ident != "pin") || call.args.len() != 1 {
        return None;
    }
    let syn::Expr::Async(body) = &call.args[0] else {
        return None;
    };
    body.capture?;
    let ReturnType::Type(_, ty) = &item.sig.output else {
        return None;
    };
    let output = future_output(ty)?;
    Some(((*call.func).clone(), output, body.block.clone()))
}

/// `R` in `Pin<Box<dyn Future<Output = R> + …>>`.
fn future_output(ty: &Type) -> Option<Type> {
    fn first_type_arg(ty: &Type, name: &str) -> Option<Type> {
        let Type::Path(p) = ungroup(ty) else {
            return None;
        };
        let last = p.path.segments.last().filter(|s| s.ident == name)?;
        let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
            return None;
        };
        args.args.iter().find_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t.clone()),
            _ => None,
        })
    }
    let boxed = first_type_arg(ty, "Pin")?;
    let object = first_type_arg(&boxed, "Box")?;
    let Type::TraitObject(object) = ungroup(&object) else {
        return None;
    };
    object.bounds.iter().find_map(|b| {
        let syn::TypeParamBound::Trait(t) = b else {
            return None;
        };
        let last = t.path.segments.last().filter(|s| s.ident == "Future")?;
        let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
            return None;
        };
        args.args.iter().find_map(|a| match a {
            syn::GenericArgument::AssocType(at) if at.ident == "Output" => Some(at.ty.clone()),
            _ => None,
        })
    })
}

/// A closure or an async block where the attribute was put (on the expression, or on the `let`
/// that binds it): where it starts, and what it is.
fn closure(item: TokenStream) -> Option<(Span, &'static str)> {
    fn of(e: &syn::Expr) -> Option<&'static str> {
        match e {
            syn::Expr::Closure(_) => Some("closures"),
            syn::Expr::Async(_) => Some("async blocks"),
            _ => None,
        }
    }
    let span = item.clone().into_iter().next()?.span();
    if let Ok(e) = syn::parse2::<syn::Expr>(item.clone()) {
        return of(&e).map(|what| (span, what));
    }
    match syn::parse2::<syn::Stmt>(item).ok()? {
        syn::Stmt::Local(syn::Local {
            init: Some(init), ..
        }) => of(&init.expr).map(|what| (span, what)),
        _ => None,
    }
}

/// The error for an attribute placed on something other than a function with a body.
fn not_a_function(item: TokenStream) -> syn::Error {
    if let Ok(f) = syn::parse2::<syn::TraitItemFn>(item.clone()) {
        return syn::Error::new(
            f.sig.ident.span(),
            "#[retryable] needs a function body: put it on the function in the `impl`, not on the trait's declaration",
        );
    }
    if let Some((span, what)) = closure(item.clone()) {
        return syn::Error::new(
            span,
            format!(
                "#[retryable] applies to functions, not to {what}: to retry a closure, use \
                 `reattempt::RetryPolicy::retry` (`policy.retry(|| async {{ … }}).await`, with \
                 `let policy = RetryPolicy::builder().max_attempts(3).build()?;`), or move the body \
                 into an `async fn` under #[retryable]"
            ),
        );
    }
    if let Some(e) = wrong_item(item.clone()) {
        return e;
    }
    let span = item
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span());
    syn::Error::new(
        span,
        "#[retryable] applies to functions (`async fn` or `fn`) that return `Result`",
    )
}

/// An item that is not a function, told where the attribute goes instead, at its keyword: an
/// `impl` or a `trait` block (on the method inside), a macro call (the attribute sees only the
/// call's tokens), a type, a module or another item (a function).
fn wrong_item(item: TokenStream) -> Option<syn::Error> {
    use syn::spanned::Spanned;
    let fns = "#[retryable] applies to functions (`async fn` or `fn`) that return `Result`";
    let (span, message) = match syn::parse2::<syn::Item>(item).ok()? {
        syn::Item::Impl(i) => (
            i.impl_token.span,
            "#[retryable] goes on a method, not on an `impl` block: put `#[retryable]` on the \
             method inside (each method it retries)"
                .to_owned(),
        ),
        syn::Item::Trait(t) => (
            t.trait_token.span,
            "#[retryable] goes on a method with a body, not on a `trait` block: put \
             `#[retryable]` on the method in the `impl` of the trait (or on a default method's \
             body)"
                .to_owned(),
        ),
        syn::Item::Macro(m) => (
            m.mac.path.span(),
            format!(
                "#[retryable] cannot see inside a macro call (`{}!`): put it on the function the \
                 macro defines, inside the macro's input or its definition, or write the function \
                 by hand",
                crate::render::render(&m.mac.path)
            ),
        ),
        syn::Item::Struct(i) => (i.struct_token.span, format!("{fns}, not to a `struct`")),
        syn::Item::Enum(i) => (i.enum_token.span, format!("{fns}, not to an `enum`")),
        syn::Item::Mod(i) => (
            i.mod_token.span,
            format!("{fns}, not to a module: put it on each function inside that retries"),
        ),
        syn::Item::Const(i) => (i.const_token.span, format!("{fns}, not to a `const`")),
        syn::Item::Static(i) => (i.static_token.span, format!("{fns}, not to a `static`")),
        syn::Item::Type(i) => (i.type_token.span, format!("{fns}, not to a type alias")),
        syn::Item::Use(i) => (i.use_token.span, format!("{fns}, not to a `use`")),
        _ => return None,
    };
    Some(syn::Error::new(span, message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn classifies_arguments() {
        let f = parse(quote!(
            async fn f(&self, mut a: String, b: &str, (x, y): (u8, u8), _: u8) -> Result<(), E> {}
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(f.has_receiver());
        assert!(matches!(f.params[0], Param::Owned { mutable: true, .. }));
        assert!(matches!(f.params[1], Param::Borrowed { .. }));
        assert!(matches!(f.params[2], Param::Pattern { .. }));
        assert!(matches!(f.params[3], Param::Ignored { .. }));
    }

    #[test]
    fn describes_any_function_and_nothing_else() {
        // Whether the return type can be a `Result` is `valid`'s to say.
        assert!(
            parse(quote!(
                fn f() -> (u8, u8) {
                    (1, 2)
                }
            ))
            .is_ok()
        );
        assert!(
            parse(quote!(
                struct S;
            ))
            .is_err()
        );
    }

    #[test]
    fn a_closure_is_pointed_to_the_closure_api() {
        for item in [
            quote!(|| async { fetch().await }),
            quote!(async move || fetch().await),
            quote!(move |x: u32| x + 1),
            quote!(async { fetch().await }),
            quote!(let f = || async { fetch().await };),
        ] {
            let e = parse(item.clone())
                .err()
                .unwrap_or_else(|| panic!("{item}"));
            let m = e.to_string();
            assert!(
                m.contains("not to closures") || m.contains("not to async blocks"),
                "{item}: {m}"
            );
            assert!(m.contains("`reattempt::RetryPolicy::retry`"), "{m}");
        }
        let m = parse(quote!(
            struct S;
        ))
        .err()
        .map(|e| e.to_string());
        assert!(m.is_some_and(|m| !m.contains("RetryPolicy::retry")));
    }

    #[test]
    fn leaves_the_function_as_written() {
        let item = quote!(
            #[inline]
            fn f(mut a: u8, (x, y): (u8, u8), _: u8) -> Result<(), E> {
                #![allow(unused)]
                Ok(())
            }
        );
        let f = parse(item.clone()).unwrap_or_else(|e| panic!("{e}"));
        let mut written: ItemFn = syn::parse2(item).unwrap_or_else(|e| panic!("{e}"));
        let stmts = std::mem::take(&mut written.block.stmts);
        assert_eq!(f.item, written);
        // The statements are the body's, as written.
        let got = &f.body.stmts;
        assert_eq!(quote!(#(#stmts)*).to_string(), quote!(#(#got)*).to_string());
        assert_eq!(f.attrs.len(), 1);
        assert_eq!(f.inner_attrs.len(), 1);
    }

    /// An `impl` or `trait` block, a macro call, a struct or a module is told where the
    /// attribute goes, at its keyword.
    #[test]
    fn the_wrong_item_is_told_where_the_attribute_goes() {
        for (item, says) in [
            (
                quote!(impl Client { async fn get(&self) -> Result<u8, E> { Ok(1) } }),
                "method inside",
            ),
            (
                quote!(
                    impl<T> Api for Client<T> {}
                ),
                "method inside",
            ),
            (
                quote!(
                    trait Api {
                        async fn get(&self) -> Result<u8, E>;
                    }
                ),
                "`impl` of the trait",
            ),
            (
                quote!(endpoint! { get_user }),
                "cannot see inside a macro call (`endpoint!`)",
            ),
            (quote!(api::handlers!(fetch);), "`api::handlers!`"),
            (
                quote!(
                    struct Client {
                        url: String,
                    }
                ),
                "not to a `struct`",
            ),
            (
                quote!(
                    pub mod client {
                        fn f() {}
                    }
                ),
                "not to a module",
            ),
            (
                quote!(
                    enum E {
                        A,
                    }
                ),
                "not to an `enum`",
            ),
        ] {
            let e = not_a_function(item.clone()).to_string();
            assert!(e.contains(says), "{item}: {e}");
        }
    }
}
