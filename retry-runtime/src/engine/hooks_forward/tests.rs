use std::cell::Cell;

use super::*;

/// The source of the `Hooks` trait, and of its forwarding (`ForwardHooks` and the macro).
const HOOKS: &str = include_str!("../hooks.rs");
const FORWARD: &str = include_str!("../hooks_forward.rs");

/// The names of the `fn`s inside the block that opens at the first `header` of `source`,
/// comments left out (doc examples hold `fn`s and braces of their own).
fn fns_in_block(source: &str, header: &str) -> Vec<String> {
    let code: String = source
        .lines()
        .map(|line| line.find("//").map_or(line, |i| &line[..i]))
        .collect::<Vec<_>>()
        .join("\n");
    let start = code
        .find(header)
        .unwrap_or_else(|| panic!("no `{header}` in the source"));
    let open = start + code[start..].find('{').expect("a block");
    let mut depth = 0;
    let mut end = open;
    for (i, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            end = open + i;
            break;
        }
    }
    let block = &code[open..end];
    let mut names = Vec::new();
    let mut rest = block;
    while let Some(i) = rest.find("fn ") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + 3..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        names.push(name);
    }
    names
}

/// The body of `fn name` inside the block that opens at the first `header` of `source` (empty
/// when there is none), comments left out.
fn body_of(source: &str, header: &str, name: &str) -> String {
    let code: String = source
        .lines()
        .map(|line| line.find("//").map_or(line, |i| &line[..i]))
        .collect::<Vec<_>>()
        .join("\n");
    let Some(start) = code.find(header) else {
        return String::new();
    };
    let code = &code[start..];
    let Some(at) = code.find(&format!("fn {name}(")) else {
        return String::new();
    };
    let open = at + code[at..].find('{').unwrap_or(0);
    let mut depth = 0;
    for (i, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return code[open..=open + i].to_owned();
        }
    }
    String::new()
}

/// `text` without whitespace (rustfmt breaks long calls over lines).
fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Each method of `Hooks` (in `hooks`) that `ForwardHooks` or the macro (in `forward`) leaves
/// out, or has and does not pass on (`ForwardHooks`'s default must ask the held hooks' method of
/// the same name; the macro's, `ForwardHooks`'s), with where it is missing.
fn missing_forwards(hooks: &str, forward: &str) -> Vec<String> {
    let trait_header = "pub(crate) trait ForwardHooks<T, E> {";
    let macro_header = "macro_rules! forward_hooks {";
    let trait_methods = fns_in_block(forward, trait_header);
    let macro_methods = fns_in_block(forward, macro_header);
    let mut missing = Vec::new();
    for method in fns_in_block(hooks, "pub trait Hooks<T, E> {") {
        if trait_methods.contains(&method) {
            let body = squeezed(&body_of(forward, trait_header, &method));
            let asks = [
                format!("Hooks::{method}(self.inner()"),
                format!("Hooks::{method}(self.inner_ref()"),
            ];
            if !asks.iter().any(|a| body.contains(a.as_str())) {
                missing.push(format!("{method} (ForwardHooks: does not pass on)"));
            }
        } else {
            missing.push(format!("{method} (ForwardHooks)"));
        }
        if !macro_methods.contains(&method) {
            missing.push(format!("{method} (forward_hooks!)"));
        } else if !squeezed(&body_of(forward, macro_header, &method))
            .contains(&format!("ForwardHooks::<$t,$e>::{method}(self"))
        {
            missing.push(format!("{method} (forward_hooks!: does not pass on)"));
        }
    }
    missing
}

#[test]
fn every_hook_is_forwarded() {
    let hooks = fns_in_block(HOOKS, "pub trait Hooks<T, E> {");
    assert_eq!(hooks.len(), 17, "the reader finds the hooks: {hooks:?}");
    let missing = missing_forwards(HOOKS, FORWARD);
    assert!(
        missing.is_empty(),
        "hooks not forwarded by engine/hooks_forward.rs (add each to `ForwardHooks` and to \
         `forward_hooks!`): {missing:?}"
    );
}

/// The check above fails for a hook added to `Hooks` and not to the forwarding, and for one
/// left out of either half of it.
#[test]
fn the_check_finds_a_hook_left_out() {
    let header = "pub trait Hooks<T, E> {";
    // A documented hook, whose doc example holds a `fn` that is no hook.
    let hook = "    /// Doc: fn not_this() {}\n    fn new_hook(&mut self) -> bool { false }\n";
    let added = HOOKS.replacen(header, &format!("{header}\n{hook}"), 1);
    assert_eq!(
        missing_forwards(&added, FORWARD),
        ["new_hook (ForwardHooks)", "new_hook (forward_hooks!)"]
    );
    let (trait_part, macro_part) = FORWARD.split_at(FORWARD.find("macro_rules!").unwrap());
    let without = |part: &str| part.replace("fn on_retry(", "fn renamed(");
    let forward = format!("{}{macro_part}", without(trait_part));
    assert_eq!(
        missing_forwards(HOOKS, &forward),
        ["on_retry (ForwardHooks)"]
    );
    let forward = format!("{trait_part}{}", without(macro_part));
    assert_eq!(
        missing_forwards(HOOKS, &forward),
        ["on_retry (forward_hooks!)"]
    );
    // A default that answers by itself (the trait's default copied in) drops the hook as surely.
    let forwarding = "Hooks::on_retry(self.inner(), error, context, delay);";
    assert!(FORWARD.contains(forwarding));
    let forward = FORWARD.replacen(forwarding, "let _ = (error, context, delay);", 1);
    assert_eq!(
        missing_forwards(HOOKS, &forward),
        ["on_retry (ForwardHooks: does not pass on)"]
    );
    let forwarding = "ForwardHooks::<$t, $e>::class(self, error)";
    assert!(FORWARD.contains(forwarding));
    let forward = FORWARD.replacen(forwarding, "$crate::ErrorClass::default()", 1);
    assert_eq!(
        missing_forwards(HOOKS, &forward),
        ["class (forward_hooks!: does not pass on)"]
    );
}

/// Hooks whose every answer differs from the trait's default.
#[derive(Default)]
struct Answers {
    retries: Cell<u32>,
}

impl Hooks<u8, u16> for Answers {
    fn retry_if(&mut self, _: &u16) -> bool {
        false
    }
    fn retry_if_ok(&mut self, _: &u8) -> bool {
        true
    }
    fn retries_ok(&self) -> bool {
        false
    }
    fn retry_after(&mut self, _: &u16) -> Option<Duration> {
        Some(Duration::from_secs(1))
    }
    fn retry_after_ok(&mut self, _: &u8) -> Option<Duration> {
        Some(Duration::from_secs(2))
    }
    fn delay_for(&mut self, _: &u16, attempt: u32, _: Duration) -> Option<Duration> {
        Some(Duration::from_secs(attempt.into()))
    }
    fn on_retry(&mut self, _: &u16, _: &RetryContext, _: Duration) {
        self.retries.set(self.retries.get() + 1);
    }
    fn is_timeout(&mut self, _: &u16) -> bool {
        true
    }
    fn class(&mut self, _: &u16) -> ErrorClass {
        ErrorClass::Timeout
    }
    fn class_ok(&mut self, _: &u8) -> ErrorClass {
        ErrorClass::Throttling
    }
    fn ok_failed(&mut self, _: &u8) -> bool {
        true
    }
    fn error_failed(&mut self, _: &u16) -> bool {
        true
    }
    fn idempotent(&mut self) -> Option<bool> {
        Some(true)
    }
    fn hedge_allowed(&mut self) -> bool {
        false
    }
    fn delay_for_ok(&mut self, _: &u8, attempt: u32, _: Duration) -> Option<Duration> {
        Some(Duration::from_millis(attempt.into()))
    }
    fn retry_refused(&mut self) -> Option<GiveUpReason> {
        Some(GiveUpReason::NotRetryable)
    }
    fn counts_as_failure(&mut self, _: &u16) -> bool {
        false
    }
}

/// A wrapper that changes one answer (`idempotent`) and passes on the rest.
struct NotIdempotent(Answers);

impl ForwardHooks<u8, u16> for NotIdempotent {
    type Inner = Answers;
    fn inner(&mut self) -> &mut Answers {
        &mut self.0
    }
    fn inner_ref(&self) -> &Answers {
        &self.0
    }
    fn idempotent(&mut self) -> Option<bool> {
        Some(false)
    }
}

forward_hooks!(impl[] Hooks<u8, u16> for NotIdempotent);

#[test]
fn a_wrapper_passes_on_every_answer_it_does_not_change() {
    let mut hooks = NotIdempotent(Answers::default());
    let second = Duration::from_secs(1);
    assert!(
        !hooks.0.retries_ok(),
        "the held hooks differ from the default"
    );
    let h: &mut dyn Hooks<u8, u16> = &mut hooks;
    assert_eq!(h.idempotent(), Some(false), "the answer it changes");
    assert!(!h.retry_if(&503));
    assert!(h.retry_if_ok(&0));
    assert!(!h.retries_ok());
    assert_eq!(h.retry_after(&503), Some(second));
    assert_eq!(h.retry_after_ok(&0), Some(2 * second));
    assert_eq!(h.delay_for(&503, 3, second), Some(3 * second));
    assert!(h.is_timeout(&504));
    assert_eq!(h.class(&504), ErrorClass::Timeout);
    assert_eq!(h.class_ok(&0), ErrorClass::Throttling);
    assert!(h.ok_failed(&0));
    assert!(h.error_failed(&400));
    assert!(!h.hedge_allowed());
    assert_eq!(
        h.delay_for_ok(&0, 7, second),
        Some(Duration::from_millis(7))
    );
    assert_eq!(h.retry_refused(), Some(GiveUpReason::NotRetryable));
    assert!(!h.counts_as_failure(&503));
    let policy = crate::RetryPolicy::builder().build().unwrap();
    let engine = crate::engine::state::Engine::new(&policy);
    h.on_retry(&503, &RetryContext::of(&engine), second);
    assert_eq!(hooks.0.retries.get(), 1);
}

/// The runtime's own `Hooks` impls that hold no hooks of the user's (closures, settings, rules):
/// every other type implementing `Hooks` in `src/` wraps hooks, and must do it through this
/// module (`forward_hooks!`). A new impl of `Hooks` is added here only if it holds no hooks.
const NOT_WRAPPERS: &[&str] = &[
    "FnHooks",           // engine/hooks.rs: the closures a call was given
    "Classify",          // clients/tower/hooks.rs: the layer's closures
    "GrpcHooks",         // clients/grpc/hooks.rs: A6's rules, no user hooks
    "TransientStatuses", // clients/grpc/hooks.rs: the policy's status codes
    "HttpClassify",      // clients/reqwest_middleware.rs: HTTP's rules
    "StreamStatuses",    // clients/grpc/stream.rs: a resumed stream's status codes
];

/// `source` without comments (line and block, nested), string literals (raw ones too:
/// `r"C:\"`, `r#"say "hi""#`) and char literals, whose text could look like code or hide it;
/// each replaced by a space (a line comment keeps its line's end).
fn code_only(source: &str) -> String {
    let c: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        let at = |k: usize| c.get(k).copied();
        match c[i] {
            '/' if at(i + 1) == Some('/') => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == Some('*') => {
                let mut depth = 0;
                while i < c.len() {
                    if c[i] == '/' && at(i + 1) == Some('*') {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && at(i + 1) == Some('/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push(' ');
            }
            // A raw string: `r`, hashes, a quote, up to a quote and as many hashes.
            'r' if (i == 0
                || !ident(c[i - 1])
                || (c[i - 1] == 'b' && (i < 2 || !ident(c[i - 2]))))
                && {
                    let mut k = i + 1;
                    while at(k) == Some('#') {
                        k += 1;
                    }
                    at(k) == Some('"')
                } =>
            {
                let mut k = i + 1;
                let mut hashes = 0;
                while at(k) == Some('#') {
                    hashes += 1;
                    k += 1;
                }
                k += 1; // the opening quote
                while k < c.len() {
                    if c[k] == '"' && (1..=hashes).all(|h| at(k + h) == Some('#')) {
                        k += 1 + hashes;
                        break;
                    }
                    k += 1;
                }
                i = k;
                out.push(' ');
            }
            '"' => {
                i += 1;
                while i < c.len() && c[i] != '"' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push(' ');
            }
            // A char literal (`'x'`, `'\n'`), not a lifetime (`'a`).
            '\'' if at(i + 1) == Some('\\') || at(i + 2) == Some('\'') => {
                i += if at(i + 1) == Some('\\') { 2 } else { 1 };
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push(' ');
            }
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    out
}

/// The types `code` implements `Hooks` for by an `impl` item (not through `forward_hooks!`, whose
/// call reads `impl[`), with the header: any generics, bounds or path before `Hooks<`.
fn hooks_impls(code: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("impl") {
        let before = code[..at].chars().next_back();
        let after = code[at + 4..].chars().next();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            || !matches!(after, Some('<' | ' ' | '\n'))
        {
            continue;
        }
        let end = code[at..].find(['{', ';']).map_or(code.len(), |e| at + e);
        let header = &code[at..end];
        // After `impl` and its generics (balanced `<…>`) comes the trait, then ` for ` and the
        // type, at depth 0.
        let mut rest = header[4..].trim_start();
        if rest.starts_with('<') {
            let mut depth = 0;
            let mut close = rest.len();
            for (i, c) in rest.char_indices() {
                match c {
                    '<' => depth += 1,
                    '>' => {
                        depth -= 1;
                        if depth == 0 {
                            close = i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            rest = rest[close..].trim_start();
        }
        let mut depth = 0;
        let mut for_at = None;
        for (i, c) in rest.char_indices() {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ if depth == 0 && rest[i..].starts_with(" for ") => {
                    for_at = Some(i);
                    break;
                }
                _ if depth == 0
                    && rest[i..].starts_with('\n')
                    && rest[i..].trim_start().starts_with("for ") =>
                {
                    for_at = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let Some(for_at) = for_at else {
            continue;
        };
        let trait_path = rest[..for_at].trim();
        let last = trait_path.rsplit("::").next().unwrap_or(trait_path);
        if !last.starts_with("Hooks<") {
            continue;
        }
        let ty: String = rest[for_at..]
            .trim_start()
            .trim_start_matches("for")
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        found.push((ty, header.split_whitespace().collect::<Vec<_>>().join(" ")));
    }
    found
}

/// Every `Hooks` impl in the runtime's sources is either one of `NOT_WRAPPERS` or written by
/// `forward_hooks!`: a wrapper that forwarded by hand could drop a hook added later.
#[test]
fn every_wrapper_of_hooks_forwards_through_this_module() {
    fn walk(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).expect("readable dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("readable file");
                out.push((path.display().to_string(), text));
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut by_hand = Vec::new();
    let mut impls = 0;
    let mut wrappers = 0;
    for (path, text) in &files {
        // This file's own test hooks are no wrappers of the runtime.
        if path.ends_with("hooks_forward/tests.rs") {
            continue;
        }
        let code = code_only(text);
        for (ty, header) in hooks_impls(&code) {
            if path.ends_with("engine/hooks_forward.rs") && header.contains("for $wrapper") {
                continue; // the impl `forward_hooks!` writes
            }
            impls += 1;
            if !NOT_WRAPPERS.contains(&ty.as_str()) {
                by_hand.push(format!("{path}: {header}"));
            }
        }
        wrappers += code.matches("forward_hooks!(impl[").count();
    }
    assert!(
        by_hand.is_empty(),
        "types that implement Hooks by hand: if one holds hooks, implement ForwardHooks and \
         write its Hooks impl with forward_hooks!; if it holds none, add it to NOT_WRAPPERS: \
         {by_hand:#?}"
    );
    assert_eq!(
        impls,
        NOT_WRAPPERS.len(),
        "the scan finds each impl it allows"
    );
    assert_eq!(
        wrappers, 3,
        "the three clients' wrappers use forward_hooks!"
    );
}

/// The scan sees every way to write a wrapper by hand: not generic (the gRPC layer's
/// `BoxedHooks` over a boxed trait object), with other bounds, with a path to the trait, over
/// a borrowed trait object; and it reads no comment or string as code.
#[test]
fn the_wrapper_scan_sees_every_way_to_write_a_wrapper() {
    let by_hand = [
        (
            "BoxedHooks",
            "impl Hooks<Response<Body>, Status> for BoxedHooks {}",
        ),
        ("W", "impl<H: Send + Hooks<T, E>> Hooks<T, E> for W<H> {}"),
        ("W", "impl<H: Hooks<T, E>> crate::Hooks<T, E> for W<H> {}"),
        ("W", "impl<'a, T, E> Hooks<T, E> for W<'a, T, E> {}"),
        (
            "W",
            "impl<T, E, H>\n    crate::engine::hooks::Hooks<T, E>\n    for W<H>\nwhere H: Hooks<T, E> {}",
        ),
    ];
    for (ty, source) in by_hand {
        let found = hooks_impls(&code_only(source));
        assert_eq!(found.len(), 1, "{source}");
        assert_eq!(found[0].0, ty, "{source}");
    }
    // Text that reads as a string or a comment hides nothing after it.
    let wrapper = "impl<H: Hooks<T, E>> Hooks<T, E> for W<H> {}";
    for before in [
        r#"const DIR: &str = r"C:\";"#,
        "const SAY: &str = r#\"say \"hi\"\"#;",
        r#"/* a "quoted word */"#,
        "/* nested /* \" */ still a comment */",
        "let c = '\"';",
        "fn f<'a>(x: &'a str) -> &'a str { x }",
    ] {
        let source = format!("{before}\n{wrapper}\nconst END: &str = \"\";\n");
        assert_eq!(hooks_impls(&code_only(&source)).len(), 1, "{before}");
    }
    // A macro of the user's own that forwards by hand is no `forward_hooks!`.
    let by_hand_macro = "macro_rules! by_hand { ($wrapper:ty) => {\n\
                         impl<H: Hooks<T, E>> Hooks<T, E> for $wrapper {}\n} }";
    assert_eq!(hooks_impls(&code_only(by_hand_macro)).len(), 1);
    for not_an_impl in [
        "// impl Hooks<T, E> for W {}",
        "let s = \"impl Hooks<T, E> for W {}\";",
        "impl<T, E> ForwardHooks<T, E> for W {}",
        "forward_hooks!(impl[H: Hooks<T, E>] Hooks<T, E> for W<H>);",
        "impl<H: Hooks<T, E> + Clone> ObjectHooks for H {}",
        "fn simple_impl() { let c = 'x'; }",
    ] {
        assert!(
            hooks_impls(&code_only(not_an_impl)).is_empty(),
            "{not_an_impl}"
        );
    }
}
