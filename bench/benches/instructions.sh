#!/usr/bin/env bash
# Instructions per successful call, each way of calling measured alone: callgrind counts the whole
# program at N calls and at 0 calls (same start-up and warm-up); the difference over N is one
# call's cost. Repeatable run to run, unlike times on a shared machine.
#   bash bench/benches/instructions.sh            (needs valgrind; builds the example in release)
#   bash bench/benches/instructions.sh "hand_loop" "#[retryable]"     (only these rows)
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build -p reattempt-bench --release --example overhead_report --quiet
# A copy, so that another build in a shared target directory cannot replace it mid-run.
bin=$(mktemp)
trap 'rm -f "$bin"' EXIT
cp "${CARGO_TARGET_DIR:-target}/release/examples/overhead_report" "$bin"
chmod +x "$bin"
calls=100000
count() {
    OVERHEAD_ONLY="$1" OVERHEAD_CALLS="$2" valgrind --tool=callgrind \
        --callgrind-out-file=/dev/null "$bin" 2>&1 >/dev/null |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
printf '| way of calling | instructions/call |\n|---|---|\n'
rows=("plain" "hand_loop" "hand_loop timeout" "#[retryable]" "#[retryable] timeout" \
    "#[retryable] breaker" "#[retryable] budget" "closure API" "backon 1.6" "tokio-retry 0.3")
[ "$#" -gt 0 ] && rows=("$@")
for name in "${rows[@]}"; do
    full=$(count "$name" "$calls")
    none=$(count "$name" 0)
    printf '| %s | %s |\n' "$name" "$(( (full - none) / calls ))"
done
