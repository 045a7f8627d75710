#!/usr/bin/env bash
# The MSRV (`rust-version` in the workspace Cargo.toml) against what the dependencies declare.
#
# CI has one toolchain, so it cannot build with the MSRV itself. What it checks instead:
#   - every locked dependency (normal and build, every target platform and so the `cfg(loom)` test
#     build's too, the proc macro's included)
#     of the default build, of `--no-default-features` and of every feature but the ones listed
#     below declares a `rust-version` no newer than ours;
#   - a feature listed below needs no newer Rust than listed, and its doc comment in Cargo.toml
#     says so ("needs Rust X");
#   - nothing turns off clippy's `incompatible_msrv` (on by default, an error under CI's
#     `-D warnings`), which reads `rust-version` and rejects std APIs stabilised after it; clippy
#     itself runs in .ci/run.
# Language features newer than the MSRV are not checked by anything here (see docs/RELEASING.md).
set -euo pipefail
cd "$(dirname "$0")/.."

# Features whose dependencies need a newer Rust than `rust-version`, with the Rust they need.
declare -A needs=([sqlx]=1.94)

# "1.88" → "1.88.0", so that versions compare as sort -V sees them.
norm() {
    local a b c
    IFS=. read -r a b c <<<"$1"
    echo "${a:-0}.${b:-0}.${c:-0}"
}
# Whether $1 is a newer Rust than $2.
newer() {
    local x y
    x=$(norm "$1")
    y=$(norm "$2")
    [[ "$x" != "$y" && "$(printf '%s\n%s\n' "$x" "$y" | sort -V | tail -n 1)" == "$x" ]]
}

meta=$(cargo metadata --format-version 1 --locked)
msrv=$(jq -r '.packages[] | select(.name == "reattempt" and .source == null) | .rust_version' <<<"$meta")
echo "rust-version: ${msrv}"

# The published crates declare the same MSRV.
for crate in reattempt retry-runtime retry-macros retry-rules; do
    declared=$(jq -r --arg c "$crate" '.packages[] | select(.name == $c and .source == null) | .rust_version' <<<"$meta")
    if [[ "$(norm "$declared")" != "$(norm "$msrv")" ]]; then
        echo "${crate} declares rust-version ${declared}, reattempt ${msrv}"
        exit 1
    fi
done

# "name version rust-version" of every dependency in the lock file, our own crates left out
# ("0.0.0" when none is declared; "1.88" written "1.88.0", so that sort -V orders them).
declared=$(jq -r '.packages[] | select(.source != null) | "\(.name) \(.version) \(.rust_version // "0")"' <<<"$meta" |
    awk '{ n = split($3, v, "."); while (n < 3) v[++n] = 0; print $1, $2, v[1] "." v[2] "." v[3] }')

failed=0
# check LIMIT LABEL CARGO-TREE-ARGS…: the dependencies of reattempt built with those features that
# declare a rust-version newer than LIMIT.
check() {
    local limit=$1 label=$2
    shift 2
    local tree top
    tree=$(cargo tree --locked -p reattempt -e normal,build --target all --prefix none --format '{p}' "$@" |
        awk '{ sub(/^v/, "", $2); print $1, $2 }' | sort -u)
    # Each dependency with its rust-version, the newest first.
    top=$(join <(echo "$tree" | awk '{ print $1 "@" $2 }' | sort) \
        <(echo "$declared" | awk '{ print $1 "@" $2, $3 }' | sort) |
        awk '{ print $2, $1 }' | sort -V -r)
    local highest
    highest=$(head -n 1 <<<"$top" | cut -d' ' -f1)
    echo "${label}: $(wc -l <<<"$tree") crates, highest rust-version ${highest} ($(awk -v h="$highest" '$1 == h { printf "%s ", $2 }' <<<"$top"| sed 's/ $//'))"
    while read -r version crate; do
        if newer "$version" "$limit"; then
            echo "  ${crate} needs Rust ${version}, above ${limit}"
            failed=1
        fi
    done <<<"$top"
}

features=$(jq -r '.packages[] | select(.name == "reattempt" and .source == null) | .features | keys[]' <<<"$meta")
ordinary=()
for feature in $features; do
    [[ "$feature" == default || -v "needs[$feature]" ]] || ordinary+=("$feature")
done

check "$msrv" "default features"
check "$msrv" "no default features" --no-default-features
check "$msrv" "every feature but ${!needs[*]}" --features "$(IFS=,; echo "${ordinary[*]}")"

for feature in "${!needs[@]}"; do
    check "${needs[$feature]}" "with ${feature} (needs Rust ${needs[$feature]})" \
        --features "$(IFS=,; echo "${ordinary[*]},${feature}")"
    # The feature's doc comment (the `##` lines above it in [features]) says which Rust it needs.
    doc=$(awk -v f="$feature" '
        /^\[/ { section = $0 }
        section == "[features]" && /^## / { doc = doc $0 "\n"; next }
        section == "[features]" && $1 == f && $2 == "=" { printf "%s", doc; exit }
        { doc = "" }' Cargo.toml)
    if ! grep -q "needs Rust ${needs[$feature]}" <<<"$doc"; then
        echo "the doc comment of feature ${feature} in Cargo.toml does not say \"needs Rust ${needs[$feature]}\""
        failed=1
    fi
done

# clippy's incompatible_msrv reads `rust-version`: nothing may override it or turn the lint off.
if grep -Eq '^\s*msrv\s*=' clippy.toml; then
    echo "clippy.toml sets msrv: clippy would not check against rust-version"
    failed=1
fi
if grep -rnE --exclude-dir=target --exclude-dir=.git \
    -e '(allow|expect)\([^)]*incompatible_msrv' -e 'incompatible_msrv"? *=' -e '-A *clippy::incompatible_msrv' \
    --include='*.rs' --include='*.toml' --include=run .; then
    echo "clippy::incompatible_msrv is turned off above (it must stay on)"
    failed=1
fi

if ((failed)); then
    echo "MSRV check failed: raise rust-version (and say why in Cargo.toml), or list the feature above"
    exit 1
fi
echo "MSRV ${msrv}: no dependency of these builds needs a newer Rust"
