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

/// Each method of `Hooks` (in `hooks`) that `ForwardHooks` or the macro (in `forward`) leaves
/// out, with where it is missing.
fn missing_forwards(hooks: &str, forward: &str) -> Vec<String> {
    let trait_methods = fns_in_block(forward, "pub(crate) trait ForwardHooks<T, E> {");
    let macro_methods = fns_in_block(forward, "macro_rules! forward_hooks {");
    let mut missing = Vec::new();
    for method in fns_in_block(hooks, "pub trait Hooks<T, E> {") {
        if !trait_methods.contains(&method) {
            missing.push(format!("{method} (ForwardHooks)"));
        }
        if !macro_methods.contains(&method) {
            missing.push(format!("{method} (forward_hooks!)"));
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

/// Every `Hooks` impl of the runtime over hooks it holds (an impl generic over `H: Hooks<…>`) goes
/// through this module: a wrapper that forwarded by hand could drop a hook added later.
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
    let mut wrappers = 0;
    for (path, text) in &files {
        // Doc examples and comments aside: only code lines.
        let code = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        // `impl<…> Hooks<…>` headers (possibly over several lines), up to the opening brace.
        for (at, _) in code.match_indices("impl<") {
            let header = &code[at..at + code[at..].find('{').unwrap_or(0)];
            let over_hooks = header.contains(": Hooks<");
            let names_hooks = header.contains("> Hooks<") || header.contains("\n    Hooks<");
            if over_hooks && names_hooks && !header.contains("ForwardHooks<") {
                by_hand.push(format!("{path}: {}", header.lines().next().unwrap_or("")));
            }
        }
        wrappers += code.matches("forward_hooks!(impl[").count();
    }
    assert!(
        by_hand.is_empty(),
        "wrappers that implement Hooks by hand (use ForwardHooks and forward_hooks!): {by_hand:#?}"
    );
    // The macro's own definition and this file's test wrapper aside, the three clients' wrappers.
    assert!(
        wrappers >= 3,
        "found {wrappers} uses of forward_hooks!: is the scan reading the sources?"
    );
}
