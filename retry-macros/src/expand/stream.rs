//! A function that returns a stream, resumed (`resume = …`): its body becomes the stream's open
//! (a closure the runtime calls with a clone of the checkpoint, for the first open and for each
//! resume), and the function returns the runtime's `RetryStream`, opened:
//! `policy.retry_stream(open).resume(after, advance)…opened().await`. Every decision (which
//! failure is retried, when, what a resume costs) is the runtime's.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Type;

use super::bindings::{named_by, per_attempt_binding};
use super::conversions::{conversion, timeout_into};
use super::recover_call::recover_trait;
use super::spans::{at, respan};
use crate::item::{self, Param, Receiver, RetryFn};
use crate::stream::Resumed;

/// What the stream's expansion is written from: the parts every driver shares (see `expand`).
#[derive(Clone, Copy)]
pub(super) struct Parts<'a> {
    pub(super) args: &'a crate::args::RetryArgs,
    pub(super) f: &'a RetryFn,
    /// The runtime's hidden module.
    pub(super) p: &'a TokenStream,
    /// The return type's span.
    pub(super) ret: Span,
    /// The body's statements.
    pub(super) stmts: &'a [TokenStream],
    pub(super) policy_ref: &'a TokenStream,
    /// The event name's expression.
    pub(super) name: &'a TokenStream,
    pub(super) hooks: &'a TokenStream,
    /// The policy's item, the return type's markers and pin.
    pub(super) head: &'a TokenStream,
}

/// The function's contents: the open, then the stream set up, opened and returned.
pub(super) fn stream_contents(
    parts: &Parts<'_>,
    resumed: &Resumed<'_>,
    uses_self: bool,
    body: &TokenStream,
) -> TokenStream {
    let Parts { args, f, p, .. } = *parts;
    let ty = format_ident!("__reattempt_ty", span = Span::mixed_site());
    let err = format_ident!("__reattempt_err", span = Span::mixed_site());
    let open = format_ident!("__reattempt_open", span = Span::mixed_site());
    let opened = format_ident!("__reattempt_opened", span = Span::mixed_site());
    let open_fn = open_closure(parts, resumed, uses_self, body, &err);
    // The argument's own name: a checkpoint that is not `Clone` (`resume`'s bound) is reported
    // at it.
    let checkpoint = resumed.ident;
    let advance = resumed.advance;
    let policy_ref = parts.policy_ref;
    let name = args.name.as_ref().map_or_else(
        || {
            let n = parts.name;
            quote!((#n)())
        },
        |lit| quote!(#lit),
    );
    let hooks = parts.hooks;
    let settings = settings(parts);
    let recover = args
        .recover
        .as_ref()
        .map(|path| recover_setting(path, f, resumed, p));
    let kept = recover.as_ref().map(|(kept, _)| kept);
    let recover = recover.as_ref().map(|(_, setting)| setting);
    let from_result = at(quote!(#p::IsResult::from_result), parts.ret);
    let declared = declared_stream(f, &opened);
    let head = parts.head;
    // Under `#[async_trait]` the body is an async block (boxed), whose output nothing pins
    // before the hooks' closures are checked: the output type, as written, pins it (no `impl
    // Trait` can be written there).
    let boxed_output = f.boxed.as_ref().map(|_| {
        let output = &f.output;
        quote!(let #ty: #p::TypeOf<#output> = #ty;)
    });
    quote! {
        #head
        #boxed_output
        let #err = #p::error_of(#ty);
        #kept
        let #open = #open_fn;
        let #opened = #p::RetryPolicy::retry_stream(#policy_ref, #open)
            .resume(#checkpoint, #advance)
            .hooks(#hooks)
            .name(#name)
            #settings
            #recover
            .opened()
            .await;
        #from_result(#declared)
    }
}

/// The open: a closure of the checkpoint (a clone of the current one, for each open) that binds
/// what the body names, as each attempt does (a copy of `&self`, a clone of a by-value argument
/// or of a by-value `self`), and runs the body in an `async move` block whose error is the
/// function's (so that `?` converts into it).
fn open_closure(
    parts: &Parts<'_>,
    resumed: &Resumed<'_>,
    uses_self: bool,
    body: &TokenStream,
    err: &syn::Ident,
) -> TokenStream {
    let Parts { f, p, stmts, .. } = *parts;
    let checkpoint = &f.params[resumed.index];
    let ty = checkpoint.ty();
    // Not named by the body (an open that ignores where it resumes from): `_`, not an unused
    // binding.
    let param = match checkpoint {
        _ if !named_by(checkpoint, body) => quote!(_: #ty),
        Param::Owned { ident, mutable, .. } => {
            let mutability = mutable.then(|| quote!(mut));
            quote!(#mutability #ident: #ty)
        }
        // `_after` (renamed in the signature), bound by its own name in the open.
        Param::Pattern { pat, .. } => quote!(#pat: #ty),
        _ => unreachable!("reattempt: the checkpoint is owned (`stream::resumed`)"),
    };
    let receiver = f.receiver.filter(|_| uses_self).map(|(r, span)| {
        let this = quote_spanned!(span=> __self);
        let slf = quote_spanned!(span=> self);
        match r {
            // A copy of `&self`: the stream borrows it for its life.
            Receiver::Shared => quote!(let #this = #slf;),
            // Each open gets its own clone (the stream owns `self`), `mut` as the receiver is
            // (the body may change its clone).
            Receiver::Value { mutable: true } => {
                quote_spanned!(span=> let mut #this = #p::clone_arg(&#slf);)
            }
            _ => quote_spanned!(span=> let #this = #p::clone_arg(&#slf);),
        }
    });
    let others = f
        .params
        .iter()
        .enumerate()
        .filter(|(i, a)| *i != resumed.index && named_by(a, body))
        .filter_map(|(_, a)| per_attempt_binding(a, p));
    quote! {
        move |#param| {
            #receiver
            #(#others)*
            async move {
                if #p::NEVER {
                    return ::core::result::Result::Err(#p::ErrorOf::value(#err));
                }
                #(#stmts)*
            }
        }
    }
}

/// The stream's settings beside its hooks and name: the idle timeout, progress, idempotence, the
/// guards and the timeout of each open, each with its conversion into the function's error.
fn settings(parts: &Parts<'_>) -> TokenStream {
    let Parts { args, p, .. } = *parts;
    let mut out = TokenStream::new();
    let duration = |d: std::time::Duration| {
        let (secs, nanos) = (d.as_secs(), d.subsec_nanos());
        quote!(#p::Duration::new(#secs, #nanos))
    };
    let stream = &args.stream.settings;
    if let Some(idle) = stream.idle_timeout {
        let d = duration(idle);
        let into = conversion(
            args.into.timeout.as_ref(),
            quote!(#p::from_stalled),
            args.schedule.span_of("idle_timeout"),
            p,
        );
        out.extend(quote!(.idle_timeout_into(#d, #p::timeout_fn(#into))));
    }
    if let Some(resets) = stream.progress_resets {
        out.extend(quote!(.progress_resets(#resets)));
    }
    if let Some(idempotent) = args.schedule.settings.idempotent {
        out.extend(quote!(.idempotent(#idempotent)));
    }
    if let Some(b) = &args.circuit_breaker {
        let into = conversion(
            args.into.breaker_open.as_ref(),
            quote!(#p::from_breaker_open),
            args.key_span("circuit_breaker"),
            p,
        );
        let breaker = quote_spanned!(syn::spanned::Spanned::span(b)=> #p::breaker_ref(&#b));
        out.extend(quote!(.breaker_open_into(#breaker, #into)));
    }
    if let Some(g) = &args.budget {
        let budget = quote_spanned!(syn::spanned::Spanned::span(g)=> #p::budget_ref(&#g));
        out.extend(quote!(.budget(#budget)));
    }
    // The policy's `timeout` bounds each open (until the open's future resolves); with a
    // conversion, `max_elapsed` ends a stream that is delivering too (with its error), where
    // without one it would only end the sleeps: so a deadline is always given one.
    let deadline = args.schedule.settings.max_elapsed.map(|_| {
        conversion(
            args.into.timeout.as_ref(),
            quote!(#p::from_deadline),
            args.schedule.span_of("max_elapsed"),
            p,
        )
    });
    out.extend(timeout_into(args, p).or(deadline).map_or_else(
        || quote!(.without_timeout()),
        |into| quote!(.timeout_into(#p::timeout_fn(#into))),
    ));
    out
}

/// `recover`: the fallback gets the error, the receiver and the arguments with the checkpoint
/// argument set to the checkpoint of the last item delivered, through the trait `recover_call`
/// declares (its message writes the signatures that fit); its stream continues the consumer's.
/// Gives the statements keeping a copy of what the fallback takes (the open owns the rest), and
/// the setting.
fn recover_setting(
    path: &syn::Path,
    f: &RetryFn,
    resumed: &Resumed<'_>,
    p: &TokenStream,
) -> (TokenStream, TokenStream) {
    let span = syn::spanned::Spanned::span(path);
    let name_span = path.segments.last().map_or(span, |s| s.ident.span());
    let error = syn::Ident::new("__reattempt_error", span.resolved_at(Span::mixed_site()));
    let at_checkpoint = format_ident!("__reattempt_checkpoint", span = Span::mixed_site());
    let mut kept = TokenStream::new();
    let mut passed = Vec::new();
    for (i, a) in f.params.iter().enumerate() {
        if i == resumed.index {
            passed.push(quote!(#at_checkpoint));
            continue;
        }
        let original = a.original();
        let copy = format_ident!("__reattempt_kept{}", i, span = Span::mixed_site());
        let lints = a.lints().iter().filter(|l| item::is_cfg(l));
        // Copied (a shared reference; a `&mut` is refused by `stream::resumed`), else cloned.
        let value = if let Type::Reference(_) = item::ungroup(a.ty()) {
            quote!(#original)
        } else {
            quote_spanned!(syn::spanned::Spanned::span(a.ty())=> #p::clone_arg(&#original))
        };
        kept.extend(quote!(#(#lints)* let #copy = #value;));
        passed.push(quote!(#copy));
    }
    let recv = f.receiver.map(|(r, span)| {
        let slf = quote_spanned!(span=> self);
        let copy = format_ident!("__reattempt_kept_self", span = Span::mixed_site());
        let value = if r == Receiver::Shared {
            quote!(#slf)
        } else {
            quote_spanned!(span=> #p::clone_arg(&#slf))
        };
        kept.extend(quote!(let #copy = #value;));
        quote!(#copy,)
    });
    let tr = format_ident!("__ReattemptRecover");
    let declare = recover_trait(&tr, path, f, p);
    let fallback = syn::Ident::new("__reattempt_fallback", name_span);
    let method = at(quote!(#tr::call), name_span);
    // Its output is the fallback's own (another stream than this function's): inferred.
    let any_result = respan(quote!(#p::result_type()), name_span);
    let checked = at(quote!(#p::stream_fallback), name_span);
    let invoke = quote_spanned!(name_span=>
        #checked(#method(#any_result, (#(#passed,)*), #recv #error, #fallback))
    );
    let setting = quote! {
        .recover(move |#error, #at_checkpoint| {
            let #fallback = #path;
            #declare
            #invoke
        })
    };
    (kept, setting)
}

/// The opened stream as the declared return type's `Ok`: as it is under `impl Stream` (or when
/// the return type is an alias of the whole `Result`), boxed for `Box<dyn Stream …>`, and boxed
/// and pinned for any other type (`Pin<Box<dyn Stream …>>`, `BoxStream`, an alias of one).
fn declared_stream(f: &RetryFn, opened: &syn::Ident) -> TokenStream {
    let declared = declared_ok(&f.output);
    let Some(declared) = declared else {
        return quote!(#opened);
    };
    let wrap = match item::ungroup(declared) {
        // `Box<dyn Stream …>`; any other name is taken for a pinned box (`Pin<Box<dyn Stream
        // …>>`, `BoxStream`, `LocalBoxStream`, a crate's alias of one), coerced to it.
        Type::Path(tp) if tp.path.segments.last().is_some_and(|s| s.ident == "Box") => {
            quote!(::std::boxed::Box::new(__reattempt_s))
        }
        Type::Path(_) => quote!(::std::boxed::Box::pin(__reattempt_s)),
        _ => return quote!(#opened),
    };
    // At the declared type, so that a stream that cannot be it (a `'static` box of a stream
    // that borrows `&self`) is reported there.
    let at = syn::spanned::Spanned::span(declared);
    quote_spanned! {at=>
        ::core::result::Result::map(#opened, |__reattempt_s| -> #declared { #wrap })
    }
}

/// `T` of the return type `Result<T, E>`, as written.
fn declared_ok(output: &Type) -> Option<&Type> {
    if let Type::Path(tp) = item::ungroup(output)
        && let Some(last) = tp.path.segments.last()
        && last.ident == "Result"
        && let syn::PathArguments::AngleBracketed(args) = &last.arguments
        && let Some(syn::GenericArgument::Type(t)) = args.args.first()
    {
        Some(t)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    /// The expansion of `#[retryable(ARGS)]` on `ITEM`, as text.
    fn expansion(args: &str, item: &str) -> String {
        let args = args.parse().unwrap_or_else(|e| panic!("{e}"));
        let item = item.parse().unwrap_or_else(|e| panic!("{e}"));
        super::super::retryable(args, item).to_string()
    }

    const RESUME: &str = "resume = |after, e: &Event| *after = Some(e.seq)";
    const EVENTS: &str = "async fn events(&self, after: Option<u64>, tag: String) \
        -> Result<impl Stream<Item = Result<Event, E>>, E> { open(&self.url, after, &tag).await }";

    #[test]
    fn the_body_becomes_the_open_of_a_resumed_stream() {
        let out = expansion(RESUME, EVENTS);
        assert!(!out.contains("compile_error"), "{out}");
        assert!(
            out.contains(":: reattempt :: __private :: RetryPolicy :: retry_stream (& __REATTEMPT_POLICY , __reattempt_open)"),
            "{out}"
        );
        // The checkpoint is the open's parameter; the other argument is cloned for each open.
        assert!(out.contains("move | after : Option < u64 > |"), "{out}");
        assert!(
            out.contains("let tag = :: reattempt :: __private :: clone_arg (& tag) ;"),
            "{out}"
        );
        assert!(
            out.contains(". resume (after , | after , e : & Event | * after = Some (e . seq))"),
            "{out}"
        );
        assert!(out.contains("stream_hooks"), "{out}");
        assert!(out.contains(". opened () . await"), "{out}");
        // Moved into the open, not consumed after a loop; no timeout, no conversion needed.
        assert!(!out.contains("consume"), "{out}");
        assert!(out.contains(". without_timeout ()"), "{out}");
        assert!(!out.contains("Box :: pin"), "{out}");
    }

    /// Each conversion is asked only where a failure can need it: `timeout` (each open), the
    /// idle timeout, and `max_elapsed`, which ends a stream still delivering with it.
    #[test]
    fn an_elapsed_is_converted_where_one_can_happen() {
        for (args, says) in [
            (
                "timeout = \"1s\"",
                ". timeout_into (:: reattempt :: __private :: timeout_fn",
            ),
            (
                "max_elapsed = \"1m\"",
                ". timeout_into (:: reattempt :: __private :: timeout_fn",
            ),
            (
                "idle_timeout = \"30s\"",
                ". idle_timeout_into (:: reattempt :: __private :: Duration :: new (30u64 , 0u32)",
            ),
            ("progress_resets = false", ". progress_resets (false)"),
            ("idempotent = false", ". idempotent (false)"),
            (
                "budget = BUDGET",
                ". budget (:: reattempt :: __private :: budget_ref (& BUDGET))",
            ),
            (
                "circuit_breaker = BREAKER",
                ". breaker_open_into (:: reattempt :: __private :: breaker_ref (& BREAKER) , :: reattempt :: __private :: from_breaker_open)",
            ),
        ] {
            let out = expansion(&format!("{RESUME}, {args}"), EVENTS);
            assert!(out.contains(says), "{args}: {out}");
        }
    }

    #[test]
    fn a_declared_box_is_boxed_and_an_unread_checkpoint_unbound() {
        let out = expansion(
            RESUME,
            "async fn events(after: Option<u64>) -> Result<BoxStream<'static, Result<Event, E>>, E> { open().await }",
        );
        assert!(out.contains("-> BoxStream < 'static , Result < Event , E > > { :: std :: boxed :: Box :: pin (__reattempt_s) }"), "{out}");
        assert!(out.contains("move | _ : Option < u64 > |"), "{out}");
    }

    #[test]
    fn a_by_value_self_is_cloned_for_each_open_and_the_fallback() {
        let out = expansion(
            &format!("{RESUME}, recover = Self::fallback"),
            "async fn events(self, after: Option<u64>) -> Result<impl Stream<Item = Result<Event, E>>, E> { self.open(after).await }",
        );
        assert!(
            out.contains("let __self = :: reattempt :: __private :: clone_arg (& self) ;"),
            "{out}"
        );
        assert!(
            out.contains(
                "let __reattempt_kept_self = :: reattempt :: __private :: clone_arg (& self) ;"
            ),
            "{out}"
        );
        assert!(
            out.contains("async fn events (self ,"),
            "the signature's `self` stays: {out}"
        );
        assert!(
            out.contains(". recover (move | __reattempt_error , __reattempt_checkpoint |"),
            "{out}"
        );
    }

    /// `_after` read by the body is renamed in the signature (see `item`): the open binds it by
    /// its own name, and the stream starts from the renamed argument.
    #[test]
    fn an_underscored_checkpoint_is_bound_by_its_own_name_in_the_open() {
        let out = expansion(
            "resume = |_after, e: &Event| *_after = Some(e.seq)",
            "async fn events(_after: Option<u64>) -> Result<impl Stream<Item = Result<Event, E>>, E> { open(_after).await }",
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("move | _after : Option < u64 > |"), "{out}");
        assert!(out.contains(". resume (__reattempt_arg0 ,"), "{out}");
    }
}
