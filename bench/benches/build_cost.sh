#!/usr/bin/env bash
# Build cost of `#[retryable]`: what 200 annotated functions add to a crate's build, beside the
# same functions plain and the same functions wrapped in backon's closure API.
#
#   bash bench/benches/build_cost.sh                 (N=200 functions, REPS=3, best of REPS)
#   N=50 REPS=1 bash bench/benches/build_cost.sh     (a quick look)
#   KEEP=1 bash bench/benches/build_cost.sh          (keep the generated workspace, path printed)
#   ONLY=times|expand|ir bash bench/benches/build_cost.sh   (one of the three measurements)
#   CRATES="plain attr" bash bench/benches/build_cost.sh     (some of the crates; keep `plain` first)
#
# It writes a throwaway workspace (in a temp dir) of five crates, each N `async fn`s making one
# fallible call, path-dependent on this repository's `reattempt`:
#
#   plain        the functions as they are
#   attr         each under `#[retryable(max_attempts = 3, delay = "10ms")]`
#   attr_full    the same plus `timeout = "1s"`, `retry_on = [..]`, `on_retry = log_retry`
#   closure_backon  each body wrapped in backon 1.6's closure API (3 attempts, 10 ms exponential, jitter)
#   closure_backon_full  the same plus a `tokio::time::timeout`, `.when(..)` and `.notify(..)`
#
# and, when named in CRATES, three floors written by hand (no macro, no reattempt code):
#
#   hand_loop    the loop of `bench/benches/subjects.rs::hand_loop` (3 attempts, tokio's sleep)
#   floor        the same loop, each attempt an `async move` block polled through the smallest
#                wrapper that sets a thread-local around each poll (what `context()` needs of
#                any implementation), `#[inline]` as the success path's goal needs
#   floor_out_of_line  the same, the wrapper not `#[inline]`
#
# Every crate also boxes each function's future into a `dyn Future` (so that each future's `poll`
# is compiled into the crate, as when an application calls them). It then measures, per crate:
#
#   expanded     lines of `cargo rustc --profile=check -- -Zunpretty=expanded` (stable rustc,
#                with RUSTC_BOOTSTRAP=1 for the one `-Z` flag), and per function over `plain`
#   LLVM IR      lines of `cargo rustc --release -- --emit=llvm-ir -Ccodegen-units=1`
#   rebuild      seconds of `cargo build [--release] -p CRATE` after `touch src/lib.rs` (the
#                dependencies built; the crate's incremental cache warm), best of REPS; release
#                with `incremental = true` (as the issue measures), debug as cargo's default
#   full         seconds of the same after `cargo clean -p CRATE` (the crate alone from scratch)
#
# Builds go to `$CARGO_TARGET_DIR/build-cost` (default `target/build-cost` here). Times depend on
# the machine and its load: compare the rows of one run, not runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
n=${N:-200}
reps=${REPS:-3}
only=${ONLY:-all}
target=${CARGO_TARGET_DIR:-$root/target}/build-cost
work=$(mktemp -d "${TMPDIR:-/tmp}/reattempt-build-cost.XXXXXX")
if [[ -z "${KEEP:-}" ]]; then trap 'rm -rf "$work"' EXIT; else echo "workspace: $work" >&2; fi
read -r -a crates <<<"${CRATES:-plain attr attr_full closure_backon closure_backon_full}"

# --- generate -------------------------------------------------------------------------------
cat >"$work/Cargo.toml" <<EOF
[workspace]
members = [$(printf '"%s",' "${crates[@]}")]
resolver = "3"

[workspace.dependencies]
reattempt = { path = "$root", default-features = false }
backon = "1.6"
tokio = { version = "1", default-features = false, features = ["time"] }

[profile.release]
incremental = true
EOF
# The repository's lock file: the same versions of every dependency, no network.
cp "$root/Cargo.lock" "$work/Cargo.lock"

prelude() {
    cat <<'EOF'
#![allow(dead_code, unused_imports, clippy::all)]
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

#[derive(Debug)]
pub enum Error { Busy, Bad, Timeout }

impl From<reattempt::Elapsed> for Error {
    fn from(_: reattempt::Elapsed) -> Self { Error::Timeout }
}

/// The remote call: one per function.
#[inline(never)]
pub async fn call(x: u32) -> Result<u32, Error> {
    match x % 7 { 0 => Err(Error::Busy), 1 => Err(Error::Bad), _ => Ok(x) }
}

pub fn log_retry(e: &Error, _: &reattempt::RetryContext, d: Duration) {
    std::hint::black_box((e, d));
}

pub fn log_retry_backon(e: &Error, d: Duration) {
    std::hint::black_box((e, d));
}

pub fn schedule() -> backon::ExponentialBuilder {
    backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(10))
        .with_jitter()
        .with_max_times(2)
}

pub type Fut = Pin<Box<dyn Future<Output = Result<u32, Error>> + Send>>;
EOF
    case $1 in
    floor | floor_out_of_line)
        cat <<'EOF'

std::thread_local! {
    static CURRENT: std::cell::Cell<*const u32> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// The least a wrapper that gives an attempt its context can be: a thread-local set around
/// each poll of the attempt.
pub struct InFrame<'a, F> { state: &'a u32, fut: F }

impl<F: Future> Future for InFrame<'_, F> {
    type Output = F::Output;
EOF
        if [[ $1 == floor ]]; then echo '    #[inline]'; fi
        cat <<'EOF'
    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        // SAFETY: `fut` is never moved out of `self` (structural pinning, no Drop, no Unpin impl).
        let this = unsafe { self.get_unchecked_mut() };
        let parent = CURRENT.replace(this.state);
        let out = unsafe { Pin::new_unchecked(&mut this.fut) }.poll(cx);
        CURRENT.set(parent);
        out
    }
}
EOF
        ;;
    esac
}

function_of() { # crate index
    local i=$2
    case $1 in
    plain) ;;
    attr) echo '#[reattempt::retryable(max_attempts = 3, delay = "10ms")]' ;;
    attr_full)
        echo '#[reattempt::retryable(max_attempts = 3, delay = "10ms", timeout = "1s",'
        echo '    retry_on = [Error::Busy | Error::Timeout], on_retry = log_retry)]'
        ;;
    esac
    echo "pub async fn f$i(x: u32) -> Result<u32, Error> {"
    case $1 in
    plain | attr | attr_full) echo "    call(x + $i).await" ;;
    hand_loop | floor | floor_out_of_line)
        local attempt="call(x + $i).await"
        if [[ $1 != hand_loop ]]; then
            attempt="(InFrame { state: &attempt, fut: async move { call(x + $i).await } }).await"
        fi
        echo "    let mut attempt = 1;"
        echo "    let mut delay = Duration::from_millis(10);"
        echo "    loop {"
        echo "        match $attempt {"
        echo "            Ok(v) => return Ok(v),"
        echo "            Err(_) if attempt < 3 => {"
        echo "                tokio::time::sleep(delay).await;"
        echo "                delay *= 2;"
        echo "                attempt += 1;"
        echo "            }"
        echo "            Err(e) => return Err(e),"
        echo "        }"
        echo "    }"
        ;;
    closure_backon)
        echo "    use backon::Retryable;"
        echo "    (|| call(x + $i)).retry(schedule()).await"
        ;;
    closure_backon_full)
        echo "    use backon::Retryable;"
        echo "    (|| async { tokio::time::timeout(Duration::from_secs(1), call(x + $i)).await"
        echo "        .unwrap_or(Err(Error::Timeout)) })"
        echo "        .retry(schedule())"
        echo "        .when(|e| matches!(e, Error::Busy | Error::Timeout))"
        echo "        .notify(log_retry_backon)"
        echo "        .await"
        ;;
    esac
    echo "}"
}

for c in "${crates[@]}"; do
    mkdir -p "$work/$c/src"
    cat >"$work/$c/Cargo.toml" <<EOF
[package]
name = "$c"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
reattempt.workspace = true
backon.workspace = true
tokio.workspace = true
EOF
    {
        prelude "$c"
        for ((i = 0; i < n; i++)); do function_of "$c" "$i"; done
        echo "pub fn all(x: u32) -> Vec<Fut> {"
        echo "    vec!["
        for ((i = 0; i < n; i++)); do echo "        Box::pin(f$i(x)),"; done
        echo "    ]"
        echo "}"
    } >"$work/$c/src/lib.rs"
done

cd "$work"
export CARGO_TARGET_DIR=$target
log=$target/build-cost.log
mkdir -p "$target"
: >"$log"
# cargo SUBCOMMAND ARGS...: quiet, offline (the lock file's versions are in the local registry
# after one build of this repository), its errors to the log (shown if it fails).
cargo_q() {
    cargo "$1" --quiet --offline "${@:2}" 2>>"$log" || {
        tail -30 "$log" >&2
        exit 1
    }
}

now() { date +%s.%N; }
timed() { # command...: seconds
    local t0 t1
    t0=$(now)
    "$@" >/dev/null
    t1=$(now)
    echo "$t1 - $t0" | bc -l
}
best() { # reps of a command: the least seconds
    local b="" t
    for ((r = 0; r < reps; r++)); do
        t=$(timed "$@")
        if [[ -z "$b" ]] || (($(echo "$t < $b" | bc -l))); then b=$t; fi
    done
    printf '%.2f' "$b"
}
touch_build() { touch "$1/src/lib.rs" && cargo_q build -p "$@"; }
clean_build() { cargo_q clean -p "$1" "${@:2}" && cargo_q build -p "$@"; }

declare -A expanded ir touch_rel touch_dbg full_rel full_dbg

# --- expanded lines ---------------------------------------------------------------------------
if [[ $only == all || $only == expand ]]; then
    for c in "${crates[@]}"; do
        expanded[$c]=$(RUSTC_BOOTSTRAP=1 cargo_q rustc -p "$c" --profile=check -- \
            -Zunpretty=expanded | wc -l)
    done
fi

# --- rebuild times ----------------------------------------------------------------------------
if [[ $only == all || $only == times ]]; then
    for profile in debug release; do
        flag=()
        [[ $profile == release ]] && flag=(--release)
        cargo_q build --workspace "${flag[@]}" # dependencies, and each crate's cache
        for c in "${crates[@]}"; do
            t=$(best touch_build "$c" "${flag[@]}")
            f=$(best clean_build "$c" "${flag[@]}")
            if [[ $profile == release ]]; then touch_rel[$c]=$t full_rel[$c]=$f; else touch_dbg[$c]=$t full_dbg[$c]=$f; fi
        done
    done
fi

# --- LLVM IR lines (last: it rebuilds each crate with other flags) ----------------------------
if [[ $only == all || $only == ir ]]; then
    for c in "${crates[@]}"; do
        rm -f "$target"/release/deps/"$c"-*.ll
        cargo_q rustc -p "$c" --release -- --emit=llvm-ir -Ccodegen-units=1
        ir[$c]=$(cat "$target"/release/deps/"$c"-*.ll | wc -l)
    done
fi

# --- table ------------------------------------------------------------------------------------
delta() { # value base: "value (+delta)"
    [[ -z "$1" ]] && return
    printf '%s (%+g)' "$1" "$(echo "$1 - $2" | bc -l)"
}
per_fn() { # value base: "(value - base) / n", one decimal
    [[ -z "$1" ]] && return
    printf '%.1f' "$(echo "($1 - $2) / $n" | bc -l)"
}
echo "N = $n functions per crate; times in seconds, best of $reps; (+x): over \`plain\`"
echo
echo '| crate | expanded lines | per fn over plain | LLVM IR lines | per fn over plain | rebuild release | rebuild debug | full release | full debug |'
echo '|---|---|---|---|---|---|---|---|---|'
for c in "${crates[@]}"; do
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$c" \
        "${expanded[$c]:-}" "$(per_fn "${expanded[$c]:-}" "${expanded[plain]:-0}")" \
        "${ir[$c]:-}" "$(per_fn "${ir[$c]:-}" "${ir[plain]:-0}")" \
        "$(delta "${touch_rel[$c]:-}" "${touch_rel[plain]:-0}")" \
        "$(delta "${touch_dbg[$c]:-}" "${touch_dbg[plain]:-0}")" \
        "$(delta "${full_rel[$c]:-}" "${full_rel[plain]:-0}")" \
        "$(delta "${full_dbg[$c]:-}" "${full_dbg[plain]:-0}")"
done
