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
# (A B A B ...) so that a change in the machine's load falls on all of them alike. It prints, for
# each, the median wall seconds and CPU seconds (user + system, of cargo and its rustcs) and their
# ratios to backon's, and the load (`uptime`) before and after; each run's figures go to stderr.
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
# build CRATE [ARGS...]: "WALL CPU" seconds of a debug `cargo build` from an empty target dir (CPU:
# user + system time of cargo and every rustc it ran, which other processes' load changes less
# than the wall time on a shared machine).
build() {
    local dir=$work/$1 t TIMEFORMAT='%R %U %S'
    rm -rf "$dir/target"
    t=$( {
        # The redirection inside the parentheses: on the `time` pipeline, it would take the report.
        time (cd "$dir" && CARGO_TARGET_DIR="$dir/target" cargo build --offline --quiet "${@:2}" \
            >>"$log" 2>&1)
    } 2>&1) || {
        tail -30 "$log" >&2
        exit 1
    }
    awk '{ printf "%.2f %.2f\n", $1, $2 + $3 }' <<<"$t"
}
median() { # numbers...: the middle one (the mean of the two middle ones for an even count)
    sort -g | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); printf "%.2f", (NR % 2) ? v[m] : (v[m] + v[m + 1]) / 2 }'
}

load_before=$(uptime)
declare -A wall cpu
for c in "${crates[@]}"; do build "$c" >/dev/null; done # warm the registry's unpacked sources
for ((r = 1; r <= n; r++)); do
    for c in "${crates[@]}"; do
        read -r w u < <(build "$c")
        wall[$c]+="$w "
        cpu[$c]+="$u "
        echo "run $r/$n: ${label[$c]}: ${w} s wall, ${u} s CPU ($(uptime | sed 's/.*load average/load/'))" >&2
    done
done
load_after=$(uptime)

timings=${CARGO_TARGET_DIR:-$root/target}/clean-build-timings
if [[ -n "${TIMINGS:-}" ]]; then
    mkdir -p "$timings"
    for c in "${crates[@]}"; do
        build "$c" --timings >/dev/null
        cp "$work/$c/target/cargo-timings/cargo-timing.html" "$timings/$c.html"
    done
fi

# --- table ------------------------------------------------------------------------------------
echo "clean debug build of a one-function crate (+ tokio rt, macros, time); seconds, median of $n"
echo "load before: ${load_before#*load average}"
echo "load after:  ${load_after#*load average}"
echo
echo '| crate | wall, median | wall, each run | ratio to backon | CPU (user + sys), median | ratio to backon |'
echo '|---|---|---|---|---|---|'
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
base_wall=$(med "${wall[backon]}")
base_cpu=$(med "${cpu[backon]}")
for c in "${crates[@]}"; do
    w=$(med "${wall[$c]}")
    u=$(med "${cpu[$c]}")
    runs=$(for t in ${wall[$c]}; do printf '%.1f ' "$t"; done)
    printf '| %s | %s | %s| %.2f× | %s | %.2f× |\n' "${label[$c]}" "$w" "$runs" \
        "$(echo "$w / $base_wall" | bc -l)" "$u" "$(echo "$u / $base_cpu" | bc -l)"
done
if [[ -n "${TIMINGS:-}" ]]; then
    echo
    echo "cargo's timings: $timings/*.html"
fi
