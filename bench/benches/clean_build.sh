#!/usr/bin/env bash
# Clean build of a one-function user crate: what a newcomer waits for on `cargo build` after
# adding `reattempt` (default features) beside tokio, against the same crate with backon.
#
#   bash bench/benches/clean_build.sh                  (N=5 alternating runs of each, medians)
#   N=3 bash bench/benches/clean_build.sh              (a quick look)
#   TIMINGS=1 bash bench/benches/clean_build.sh        (one more build of each with --timings:
#                                                       cargo's HTML report, the critical path)
#   KEEP=1 bash bench/benches/clean_build.sh           (keep the generated crates, path printed)
#   REATTEMPT="/work/main $PWD" bash bench/benches/clean_build.sh
#                                                      (several checkouts of reattempt, side by
#                                                       side in one run: before and after)
#
# It writes throwaway crates (in a temp dir), each a binary with one async fn making one fallible
# call, retried, and a `#[tokio::main]` calling it; every crate depends on
# `tokio = { version = "1", features = ["rt", "macros", "time"] }` and
#
#   reattempt   `reattempt = { path = CHECKOUT }` (default features), the fn under
#               `#[retryable(max_attempts = 3, delay = "10ms")]` (one crate per CHECKOUT)
#   backon      backon at the version of this repository's Cargo.lock (the benches' 1.6), the
#               call wrapped in `(|| call(x)).retry(ExponentialBuilder::default())`
#
# Each crate has its own copy of its checkout's Cargo.lock (cargo trims what it does not use), so
# the crates they share (tokio, syn, quote...) are the same versions, all from the local registry
# (`--offline`). Each run is `cargo build` (debug) from an empty target dir; the crates alternate
# (A B A B ...) so that a change in the machine's load falls on all of them alike. It prints the
# median seconds of each, its ratio to backon's, and the load (`uptime`) before and after.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
n=${N:-5}
read -r -a checkouts <<<"${REATTEMPT:-$root}"
work=$(mktemp -d "${TMPDIR:-/tmp}/reattempt-clean-build.XXXXXX")
if [[ -z "${KEEP:-}" ]]; then trap 'rm -rf "$work"' EXIT; else echo "crates: $work" >&2; fi
backon=$(grep -A1 '^name = "backon"$' "$root/Cargo.lock" | sed -n 's/^version = "\(.*\)"$/\1/p')

# --- generate -------------------------------------------------------------------------------
# crate NAME LOCKFILE DEPENDENCY-LINE: a standalone package (its own workspace, not this one's).
crate() {
    mkdir -p "$work/$1/src"
    cat >"$work/$1/Cargo.toml" <<EOF
[package]
name = "$1"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
$3
tokio = { version = "1", features = ["rt", "macros", "time"] }

[workspace]
EOF
    cp "$2" "$work/$1/Cargo.lock"
}

error_type='#[derive(Debug)]
enum Error {
    Busy,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'"'"'_>) -> std::fmt::Result {
        f.write_str("busy")
    }
}

/// The remote call: busy on odd numbers.
async fn call(x: u32) -> Result<u32, Error> {
    if x % 2 == 1 { Err(Error::Busy) } else { Ok(x) }
}'

declare -A label
crates=()
i=0
for checkout in "${checkouts[@]}"; do
    checkout=$(cd "$checkout" && pwd)
    name=reattempt_$i
    crates+=("$name")
    crate "$name" "$checkout/Cargo.lock" "reattempt = { path = \"$checkout\" }"
    cat >"$work/$name/src/main.rs" <<EOF
use reattempt::retryable;

$error_type

#[retryable(max_attempts = 3, delay = "10ms")]
async fn fetch(x: u32) -> Result<u32, Error> {
    call(x).await
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("{:?}", fetch(std::env::args().count() as u32 + 1).await);
}
EOF
    label[$name]="reattempt ($checkout)"
    i=$((i + 1))
done

crates+=(backon)
label[backon]="backon $backon"
crate backon "$root/Cargo.lock" "backon = \"=$backon\""
cat >"$work/backon/src/main.rs" <<EOF
use backon::{ExponentialBuilder, Retryable};

$error_type

async fn fetch(x: u32) -> Result<u32, Error> {
    (|| call(x)).retry(ExponentialBuilder::default()).await
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("{:?}", fetch(std::env::args().count() as u32 + 1).await);
}
EOF

# --- measure ----------------------------------------------------------------------------------
log=$work/build.log
: >"$log"
now() { date +%s.%N; }
# build CRATE [ARGS...]: seconds of a debug `cargo build` from an empty target dir.
build() {
    local dir=$work/$1 t0 t1
    rm -rf "$dir/target"
    t0=$(now)
    (cd "$dir" && CARGO_TARGET_DIR="$dir/target" cargo build --offline --quiet "${@:2}") \
        >>"$log" 2>&1 || {
        tail -30 "$log" >&2
        exit 1
    }
    t1=$(now)
    echo "$t1 - $t0" | bc -l
}
median() { # numbers...: the middle one (the mean of the two middle ones for an even count)
    sort -g | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); printf "%.2f", (NR % 2) ? v[m] : (v[m] + v[m + 1]) / 2 }'
}

load_before=$(uptime)
declare -A times
for c in "${crates[@]}"; do build "$c" >/dev/null; done # warm the registry's unpacked sources
for ((r = 0; r < n; r++)); do
    for c in "${crates[@]}"; do
        times[$c]+="$(build "$c") "
    done
done
load_after=$(uptime)

timings=${CARGO_TARGET_DIR:-$root/target}/clean-build-timings
if [[ -n "${TIMINGS:-}" ]]; then
    mkdir -p "$timings"
    for c in "${crates[@]}"; do
        build "$c" --timings >/dev/null
        cp "$work/$c/target/cargo-timings/cargo-timing.html" \
            "$timings/$c.html"
    done
fi

# --- table ------------------------------------------------------------------------------------
echo "clean debug build of a one-function crate (+ tokio rt, macros, time); seconds, median of $n"
echo "load before: ${load_before#*load average}"
echo "load after:  ${load_after#*load average}"
echo
echo '| crate | median | runs | ratio to backon |'
echo '|---|---|---|---|'
base=$(tr ' ' '\n' <<<"${times[backon]}" | grep . | median)
for c in "${crates[@]}"; do
    m=$(tr ' ' '\n' <<<"${times[$c]}" | grep . | median)
    runs=$(for t in ${times[$c]}; do printf '%.1f ' "$t"; done)
    printf '| %s | %s | %s| %.2f× |\n' "${label[$c]}" "$m" "$runs" "$(echo "$m / $base" | bc -l)"
done
if [[ -n "${TIMINGS:-}" ]]; then
    echo
    echo "cargo's timings: $timings/*.html"
fi
