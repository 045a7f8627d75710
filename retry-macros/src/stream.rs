//! A function that returns a stream, resumed (`resume = |after, item| …`): which argument is its
//! checkpoint, how its items advance it, and the keys a stream takes. The rules of the stream's
//! own settings are `retry_rules::StreamSettings`'s; this module reads the attribute and the
//! function for them, and `expand::stream` writes the call.

use proc_macro2::Span;
use syn::{Expr, Ident, Pat};

use crate::args::RetryArgs;
use crate::item::{Param, Receiver, RetryFn, ungroup};

mod owned;

/// The keys that only a stream takes: without `resume`, each is an error.
const STREAM_ONLY: &[&str] = &["idle_timeout", "progress_resets", "checkpoint"];

/// The keys a stream does not take, each with why: said at the key.
const NOT_FOR_A_STREAM: &[(&str, &str)] = &[
    (
        "retry_if_ok",
        "a stream's items are delivered as they come, and an item handed to the consumer cannot \
         be taken back: only failures (an `Err` item, an open that fails, an idle timeout) are \
         retried; for an item that means \"try again\", yield it as an `Err` and retry that",
    ),
    (
        "throttle",
        "a stream holds its dependency for as long as it is read, and the throttle's count of \
         requests has no meaning for it; use `circuit_breaker` and `budget`, which span the \
         stream's resumes",
    ),
    (
        "throttled_into",
        "it converts the `throttle`'s rejection, and a stream takes no `throttle`",
    ),
    (
        "bulkhead",
        "a slot held for the whole life of a stream (which may be hours) would starve every \
         other call; bound the number of streams where they are started",
    ),
    (
        "bulkhead_full_into",
        "it converts the `bulkhead`'s rejection, and a stream takes no `bulkhead`",
    ),
];

/// The attribute's stream keys against each other (before the function is known): the keys
/// only a stream takes need `resume`; beside it, no key a stream does not take, and the stream's
/// settings held to `retry_rules`' rules against the schedule's.
pub(crate) fn keys(args: &RetryArgs, errors: &mut Vec<syn::Error>) {
    let Some(resume) = &args.stream.resume else {
        for key in STREAM_ONLY {
            if args.key_spans.contains_key(*key) {
                errors.push(syn::Error::new(
                    args.key_span(key),
                    format!(
                        "`{key}` applies to a stream, and this function is not one: a function \
                         returning a stream says so with `resume = |after, item: &T| …` (the \
                         argument it resumes from, and how an item advances it); add `resume`, or \
                         remove `{key}`"
                    ),
                ));
            }
        }
        return;
    };
    for (key, why) in NOT_FOR_A_STREAM {
        if args.key_spans.contains_key(*key) {
            errors.push(syn::Error::new(
                args.key_span(key),
                format!("`{key}` has no meaning for a stream: {why}; remove `{key}`"),
            ));
        }
    }
    if let Err(e) = args.stream.settings.check(&args.schedule.settings) {
        let message = match e {
            retry_rules::StreamError::Hedged => format!(
                "{e}; remove `hedge_after` (a stream's `timeout` bounds each open, and \
                 `idle_timeout` the wait for each item)"
            ),
            retry_rules::StreamError::ZeroIdleTimeout => {
                format!("{e}; write a positive duration such as \"30s\"")
            }
            _ => format!("{e}; shorten `idle_timeout`, or remove it"),
        };
        errors.push(syn::Error::new(args.schedule.span_of(e.field()), message));
    }
    if matches!(resume, Expr::Closure(_)) && args.stream.checkpoint.is_some() {
        errors.push(syn::Error::new(
            args.key_span("checkpoint"),
            "`checkpoint` is for a `resume` path: the closure's first parameter names the \
             argument already; remove `checkpoint`",
        ));
    }
}

/// What a resumed stream is made of: the argument it resumes from, and the function that
/// advances it with each item delivered.
pub(crate) struct Resumed<'a> {
    /// The checkpoint argument's position in `RetryFn::params`.
    pub(crate) index: usize,
    /// The checkpoint argument's name in the signature.
    pub(crate) ident: &'a Ident,
    /// `resume`'s value, as written.
    pub(crate) advance: &'a Expr,
}

/// The resumed stream's parts, when the attribute has `resume`; every mistake of its shape
/// against the function, each at its token, saying how to fix it.
pub(crate) fn resumed<'a>(args: &'a RetryArgs, f: &'a RetryFn) -> syn::Result<Option<Resumed<'a>>> {
    let Some(advance) = &args.stream.resume else {
        return Ok(None);
    };
    let resume_span = args.key_span("resume");
    if !f.is_async() {
        return Err(syn::Error::new(
            resume_span,
            "`resume` needs an `async fn`: a stream is opened and read asynchronously (`async fn \
             f(…) -> Result<impl Stream<Item = Result<T, E>>, E>`); make the function async, or \
             remove `resume`",
        ));
    }
    let (name, at) = checkpoint_name(args, advance)?;
    if name == "self" {
        return Err(syn::Error::new(
            at,
            "the checkpoint cannot be `self`: it is the argument the stream is opened from again \
             (an offset, a token, the last id), owned and `Clone`, and each item advances it; \
             name that argument here",
        ));
    }
    receiver(f)?;
    let Some((index, param)) = f
        .params
        .iter()
        .enumerate()
        .find(|(_, p)| param_name(p).is_some_and(|i| i == name.as_str()))
    else {
        return Err(not_an_argument(f, &name, at));
    };
    if let syn::Type::Reference(r) = ungroup(param.ty()) {
        let owned = match crate::render::render(&r.elem).as_str() {
            "str" => "String".to_owned(),
            "Path" => "PathBuf".to_owned(),
            elem if elem.starts_with('[') && elem.ends_with(']') => {
                format!("Vec<{}>", &elem[1..elem.len() - 1])
            }
            elem => elem.to_owned(),
        };
        return Err(syn::Error::new_spanned(
            param.ty(),
            format!(
                "the checkpoint `{name}` is a reference, and a stream resumes from a value of its \
                 own: each item advances it, and each open gets a clone of it, long after the \
                 caller's borrow; take it by value (`{name}: {owned}`, owned and `Clone`)"
            ),
        ));
    }
    // The signature's binding (a `_name` the body reads is renamed there: see `item`).
    let ident = match param {
        Param::Owned { ident, .. } => ident,
        Param::Pattern {
            pat: Pat::Ident(_),
            renamed,
            ..
        } => renamed,
        _ => return Err(not_an_argument(f, &name, at)),
    };
    if let syn::Type::ImplTrait(t) = ungroup(param.ty()) {
        return Err(syn::Error::new_spanned(
            t,
            format!(
                "the checkpoint `{name}` cannot be of an `impl Trait` type: the stream's open \
                 takes it as a parameter (each open gets a clone of the current checkpoint), \
                 where `impl Trait` cannot be written; write a type for it, owned and `Clone` \
                 (`{name}: u64`, or a generic parameter `C: {bounds}` and `{name}: C`)",
                bounds = crate::render::render(&t.bounds)
            ),
        ));
    }
    if let Some(mutable) = f.params.iter().find_map(unique_ref) {
        return Err(syn::Error::new(
            mutable.span(),
            format!(
                "a stream cannot borrow `{mutable}` mutably: each open needs its own `&mut` for \
                 as long as its stream is read, and the stream may be opened again later; pass it \
                 by shared reference, or by value"
            ),
        ));
    }
    whole_result(f)?;
    if let Some(e) = crate::util::combine(owned::keys_reading_owned(args, f)) {
        return Err(e);
    }
    Ok(Some(Resumed {
        index,
        ident,
        advance,
    }))
}

/// The return type names its `Ok` type (`Result<impl Stream<…>, E>`, `io::Result<BoxStream<…>>`):
/// the opened stream is returned as that type, which an alias of the whole `Result` hides.
fn whole_result(f: &RetryFn) -> syn::Result<()> {
    match ungroup(&f.output) {
        syn::Type::Path(tp)
            if tp.path.segments.last().is_some_and(|s| {
                matches!(&s.arguments, syn::PathArguments::AngleBracketed(a)
                    if a.args.iter().any(|a| matches!(a, syn::GenericArgument::Type(_))))
            }) =>
        {
            Ok(())
        }
        other => Err(syn::Error::new_spanned(
            other,
            format!(
                "`{}` does not show the stream it returns: `resume` returns the stream it opens \
                 as the `Ok` type written in the signature; spell the `Result` out, as in \
                 `Result<impl Stream<Item = Result<T, E>>, E>` or `Result<BoxStream<'static, \
                 Result<T, E>>, E>` (an alias of the stream inside it is fine)",
                crate::render::render(other)
            ),
        )),
    }
}

/// The checkpoint argument's name and where it is written: the closure's first parameter, or
/// `checkpoint`'s value beside a path.
fn checkpoint_name(args: &RetryArgs, advance: &Expr) -> syn::Result<(String, Span)> {
    match advance {
        Expr::Closure(c) => {
            if c.inputs.len() != 2 {
                // At the parameters (at `||` when there are none).
                let at: &dyn quote::ToTokens = if c.inputs.is_empty() {
                    &c.inputs_begin
                } else {
                    &c.inputs
                };
                return Err(syn::Error::new_spanned(
                    at,
                    format!(
                        "`resume` takes a closure of two parameters, the checkpoint argument and \
                         the item delivered, as in `resume = |after, event: &Event| *after = \
                         Some(event.seq)`; this one has {}",
                        c.inputs.len()
                    ),
                ));
            }
            let first = &c.inputs[0];
            let ident = match first {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => &p.ident,
                Pat::Type(t) => match &*t.pat {
                    Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => &p.ident,
                    other => return Err(not_a_name(other)),
                },
                other => return Err(not_a_name(other)),
            };
            Ok((ident.to_string(), ident.span()))
        }
        Expr::Path(_) => match &args.stream.checkpoint {
            Some(Expr::Path(p)) if p.path.get_ident().is_some() => {
                let ident = p.path.get_ident().unwrap_or_else(|| unreachable!());
                Ok((ident.to_string(), ident.span()))
            }
            Some(other) => Err(syn::Error::new_spanned(
                other,
                "`checkpoint` takes the name of the argument the stream resumes from, as in \
                 `checkpoint = after`",
            )),
            None => Err(syn::Error::new(
                args.key_span("resume"),
                format!(
                    "`resume = {}` does not say which argument the stream resumes from: name it \
                     with `checkpoint = after`, or write a closure whose first parameter is that \
                     argument (`resume = |after, item| …`)",
                    crate::render::render(advance)
                ),
            )),
        },
        other => Err(syn::Error::new_spanned(
            other,
            "`resume` takes a closure `|after, item: &T| …` (its first parameter names the \
             argument the stream resumes from) or the path of a `fn(&mut C, &T)` with \
             `checkpoint = after`",
        )),
    }
}

fn not_a_name(pat: &Pat) -> syn::Error {
    syn::Error::new_spanned(
        pat,
        format!(
            "`resume`'s first parameter names the argument the stream resumes from: write its \
             name (`after`, or `after: &mut Option<u64>`), not `{}`",
            crate::render::render(pat)
        ),
    )
}

/// The argument's name, if it is bound by one.
fn param_name(p: &Param) -> Option<String> {
    match p {
        Param::Owned { ident, .. } | Param::Borrowed { ident, .. } => Some(ident.to_string()),
        Param::Pattern {
            pat: Pat::Ident(p), ..
        } => Some(p.ident.to_string()),
        Param::Pattern { .. } | Param::Ignored { .. } => None,
    }
}

/// A `&mut` argument, by name.
fn unique_ref(p: &Param) -> Option<&Ident> {
    match p {
        Param::Borrowed {
            ident,
            unique: true,
            ..
        } => Some(ident),
        _ => None,
    }
}

fn not_an_argument(f: &RetryFn, name: &str, at: Span) -> syn::Error {
    let owned: Vec<String> = f
        .params
        .iter()
        .filter(|p| matches!(p, Param::Owned { .. }))
        .filter_map(param_name)
        .map(|n| format!("`{n}`"))
        .collect();
    let fix = if owned.is_empty() {
        "add the argument the stream resumes from (`after: Option<u64>`, owned and `Clone`)"
            .to_owned()
    } else {
        format!("name one of {}", owned.join(", "))
    };
    syn::Error::new(
        at,
        format!(
            "`{name}` is not an argument of `{}`: `resume`'s first parameter names the argument \
             the stream resumes from; {fix}",
            f.item.sig.ident
        ),
    )
}

/// `&mut self` and `self: Pin<&mut Self>` cannot be lent to every open of a stream.
fn receiver(f: &RetryFn) -> syn::Result<()> {
    match f.receiver {
        Some((Receiver::Unique | Receiver::Pinned { .. }, span)) => Err(syn::Error::new(
            span,
            "a stream cannot borrow `self` mutably: each open needs its own `&mut self` for as \
             long as its stream is read, and the stream may be opened again later; take `&self` \
             (with interior mutability where the method changes `self`), or `self` by value \
             (each open gets a clone)",
        )),
        _ => Ok(()),
    }
}

/// The stream's shape against the function: its first mistake.
pub(crate) fn check(args: &RetryArgs, f: &RetryFn) -> syn::Result<()> {
    resumed(args, f).map(|_| ())
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;

    /// Every error of the attribute alone (parse and `valid::args`).
    fn key_errors(args: TokenStream) -> Vec<String> {
        match crate::args::parse(args).and_then(|parsed| crate::valid::args(&parsed)) {
            Ok(()) => vec![],
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    /// The first mistake of the attribute on the function, or `""`.
    fn shape_error(args: TokenStream, item: TokenStream) -> String {
        let parsed = crate::args::parse(args).unwrap_or_else(|e| panic!("{e}"));
        let f = crate::item::parse(item).unwrap_or_else(|e| panic!("{e}"));
        super::check(&parsed.args, &f)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    fn events(receiver: &TokenStream, args: &TokenStream) -> TokenStream {
        quote!(
            async fn events(#receiver after: Option<u64>, #args) -> Result<impl Stream<Item = Result<Event, E>>, E> {
                Ok(open(after).await?)
            }
        )
    }

    #[test]
    fn the_closures_first_parameter_names_the_checkpoint() {
        let parsed = crate::args::parse(quote!(
            resume = |after: &mut Option<u64>, event: &Event| *after = Some(event.seq),
            idle_timeout = "30s",
            progress_resets = false
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(crate::valid::args(&parsed).is_ok());
        let settings = parsed.args.stream.settings;
        assert_eq!(
            settings.idle_timeout,
            Some(std::time::Duration::from_secs(30))
        );
        assert!(!settings.progress_resets());
        let f = crate::item::parse(events(&quote!(&self,), &quote!(limit: u32)))
            .unwrap_or_else(|e| panic!("{e}"));
        let resumed = super::resumed(&parsed.args, &f)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("a stream"));
        assert_eq!(
            (resumed.index, resumed.ident.to_string()),
            (0, "after".into())
        );
        // A path names it with `checkpoint`.
        let parsed = crate::args::parse(quote!(resume = Self::advance, checkpoint = after))
            .unwrap_or_else(|e| panic!("{e}"));
        let resumed = super::resumed(&parsed.args, &f).unwrap_or_else(|e| panic!("{e}"));
        assert!(resumed.is_some_and(|r| r.ident == "after"));
    }

    #[test]
    fn a_checkpoint_that_is_no_owned_argument_is_told_which_to_name() {
        let f = events(&quote!(&self,), &quote!(limit: u32, tag: &str));
        for (resume, says) in [
            (
                quote!(resume = |since, e: &Event| *since = Some(e.seq)),
                "`since` is not an argument of `events`: `resume`'s first parameter names the \
                 argument the stream resumes from; name one of `after`, `limit`",
            ),
            (
                quote!(resume = |self, e: &Event| ()),
                "the checkpoint cannot be `self`",
            ),
            (
                quote!(resume = |tag, e: &Event| ()),
                "the checkpoint `tag` is a reference, and a stream resumes from a value of its \
                 own: each item advances it, and each open gets a clone of it, long after the \
                 caller's borrow; take it by value (`tag: String`, owned and `Clone`)",
            ),
            (
                quote!(resume = |after| ()),
                "`resume` takes a closure of two parameters",
            ),
            (quote!(resume = |after, e, n| ()), "this one has 3"),
            (
                quote!(resume = |(a, b), e| ()),
                "write its name (`after`, or `after: &mut Option<u64>`), not `(a, b)`",
            ),
            (
                quote!(resume = Self::advance),
                "does not say which argument the stream resumes from: name it with `checkpoint = after`",
            ),
            (
                quote!(resume = Self::advance, checkpoint = self.after),
                "`checkpoint` takes the name of the argument",
            ),
        ] {
            let m = shape_error(resume.clone(), f.clone());
            assert!(m.contains(says), "{resume}: {m}");
        }
    }

    #[test]
    fn a_stream_cannot_borrow_mutably_across_its_opens_nor_be_blocking() {
        let resume = quote!(resume = |after, e: &Event| *after = Some(e.seq));
        for (receiver, args) in [
            (quote!(&mut self,), quote!(n: u32)),
            (quote!(self: Pin<&mut Self>,), quote!(n: u32)),
        ] {
            let m = shape_error(resume.clone(), events(&receiver, &args));
            assert!(m.contains("a stream cannot borrow `self` mutably"), "{m}");
        }
        let m = shape_error(
            resume.clone(),
            events(&quote!(&self,), &quote!(buf: &mut Vec<u8>)),
        );
        assert!(m.contains("a stream cannot borrow `buf` mutably"), "{m}");
        for receiver in [quote!(&self,), quote!(self,), quote!()] {
            let m = shape_error(resume.clone(), events(&receiver, &quote!(n: u32)));
            assert!(m.is_empty(), "{receiver}: {m}");
        }
        let blocking = quote!(
            fn events(after: Option<u64>) -> Result<Lines, E> {
                todo!()
            }
        );
        let m = shape_error(resume, blocking);
        assert!(m.starts_with("`resume` needs an `async fn`"), "{m}");
    }

    /// A key the stream keeps cannot borrow what its opens own (a by-value `self` or
    /// argument); a borrow, a closure's own parameter, a field and a `move` closure of an
    /// argument the body does not read are left alone.
    #[test]
    fn keys_reading_what_the_stream_owns_are_refused_at_the_name() {
        let resume = quote!(resume = |after, e: &Event| *after = Some(e.seq));
        let owned = |receiver: TokenStream, args: TokenStream, key: TokenStream| {
            shape_error(quote!(#resume, #key), events(&receiver, &args))
        };
        for (receiver, args, key, says) in [
            (
                quote!(self,),
                quote!(n: u32),
                quote!(circuit_breaker = self.breaker),
                "`circuit_breaker` reads `self`, which this method takes by value",
            ),
            (
                quote!(self: Arc<Self>,),
                quote!(n: u32),
                quote!(budget = self.budget),
                "make the budget a `static`",
            ),
            (
                quote!(&self,),
                quote!(tag: String),
                quote!(on_retry = |e, ctx, d| log(&tag, e)),
                "read `tag` in the body, not in `on_retry`",
            ),
            (
                quote!(&self,),
                quote!(tag: String),
                quote!(retry_if = |e| e.is(&format!("{tag}"))),
                "`retry_if` reads `tag`",
            ),
            (
                quote!(&self,),
                quote!(client: Client),
                quote!(policy = client.policy),
                "pass `client` by reference",
            ),
        ] {
            let m = owned(receiver, args, key.clone());
            assert!(m.contains(says), "{key}: {m}");
        }
        // A `move` closure of an argument the body reads too: the open has taken it.
        let m = shape_error(
            quote!(#resume, on_retry = move |e, ctx, d| log(&tag, e)),
            quote!(
                async fn events(after: Option<u64>, tag: String) -> Result<S, E> {
                    open(after, &tag).await
                }
            ),
        );
        assert!(m.contains("`on_retry` reads `tag`"), "{m}");
        // The checkpoint is owned too (the resume closure's own parameter shadows it).
        let m = shape_error(
            quote!(resume = |n, e: &Event| *n = Some(e.seq + after)),
            events(&quote!(), &quote!(n: u32)),
        );
        assert!(m.contains("`resume` reads `after`"), "{m}");
        for (receiver, args, key) in [
            (
                quote!(&self,),
                quote!(n: u32),
                quote!(circuit_breaker = self.breaker),
            ),
            (
                quote!(),
                quote!(client: &Client),
                quote!(circuit_breaker = client.breaker),
            ),
            (
                quote!(self,),
                quote!(n: u32),
                quote!(circuit_breaker = BREAKER),
            ),
            (
                quote!(),
                quote!(n: u32),
                quote!(on_retry = |e, n, d| log(n, e.n)),
            ),
            (
                quote!(),
                quote!(n: u32),
                quote!(on_retry = move |e, ctx, d| log(n, e)),
            ),
        ] {
            let m = owned(receiver, args, key.clone());
            assert!(m.is_empty(), "{key}: {m}");
        }
    }

    #[test]
    fn the_keys_only_a_stream_takes_need_resume() {
        let m = key_errors(quote!(idle_timeout = "30s", progress_resets = false));
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(
            m.iter()
                .all(|m| m.contains("applies to a stream") && m.contains("add `resume`")),
            "{m:?}"
        );
        let m = key_errors(quote!(checkpoint = after));
        assert!(
            m[0].starts_with("`checkpoint` applies to a stream"),
            "{m:?}"
        );
    }

    #[test]
    fn keys_without_meaning_for_a_stream_are_refused_with_why() {
        let resume = quote!(resume = |after, e: &Event| *after = Some(e.seq));
        for (key, says) in [
            (
                quote!(retry_if_ok = |v| v.is_empty()),
                "cannot be taken back",
            ),
            (
                quote!(throttle = THROTTLE),
                "`throttle` has no meaning for a stream",
            ),
            (quote!(bulkhead = BULKHEAD), "would starve every other call"),
            (
                quote!(hedge_after = "50ms", idempotent = true),
                "a stream cannot be hedged",
            ),
            (quote!(idle_timeout = "0s"), "must be longer than zero"),
            (
                quote!(idle_timeout = "1m", max_elapsed = "30s"),
                "must be shorter than `max_elapsed`",
            ),
            (
                quote!(checkpoint = after),
                "the closure's first parameter names the argument already",
            ),
        ] {
            let m = key_errors(quote!(#resume, #key));
            assert!(m.len() == 1 && m[0].contains(says), "{key}: {m:?}");
        }
        // Beside a run-time policy, the stream's own settings still stand.
        assert!(
            key_errors(
                quote!(#resume, policy = POLICY, idle_timeout = "30s", progress_resets = false)
            )
            .is_empty()
        );
        assert!(key_errors(quote!(#resume, max_attempts = 5, delay = "100ms", max_elapsed = "1h", timeout = "2s", circuit_breaker = BREAKER, budget = BUDGET, idempotent = false, retry_on = [E::Busy])).is_empty());
    }
}
