#!/usr/bin/env bash
# The public API of `reattempt`, pinned: every item rustdoc shows (the list of `all.html`, which
# leaves out `#[doc(hidden)]` items such as `__private`), as `kind path`, one a line, against
# docs/public-api.txt. An item added, moved or removed fails CI with the diff; when the change
# is on purpose, `.ci/public-api.sh --update` rewrites the list (see docs/RELEASING.md).
#
# Builds the facade's docs with every feature (after CI's doc build of the workspace, this is a
# quick re-document of one crate), so that a doc build with other features cannot stand in.
# Under each type and trait, its own members (methods, fields, variants, associated items; see
# .ci/public-api-members.py), so that an accidental `pub fn` fails too. Trait impls are not
# listed: `cargo semver-checks` checks those at release.
set -euo pipefail
cd "$(dirname "$0")/.."

list=docs/public-api.txt
# Wherever cargo puts its output (CARGO_TARGET_DIR, a config's build.target-dir, …).
target_dir=$(cargo metadata --no-deps --format-version 1 |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
all="$target_dir/doc/reattempt/all.html"
cargo doc --no-deps -p reattempt --all-features --quiet

# `http/struct.Verdict.html` -> `struct reattempt::http::Verdict` (attr: an attribute macro).
current=$(grep -oE 'href="([a-z0-9_]+/)*(struct|enum|union|trait|traitalias|fn|macro|attr|derive|constant|static|type)\.[A-Za-z0-9_]+\.html"' "$all" |
    sed -E 's/^href="//; s/\.html"$//' |
    sed -E 's#^(([a-z0-9_]+/)*)([a-z]+)\.([A-Za-z0-9_]+)$#\3 reattempt/\1\4#' |
    sed -E 's#/#::#g' |
    LC_ALL=C sort -u -k2,2 -k1,1 |
    python3 .ci/public-api-members.py "$(dirname "$all")")

if [[ -z "$current" ]]; then
    echo "no items found in $all" >&2
    exit 1
fi

if [[ "${1:-}" == "--update" ]]; then
    printf '%s\n' "$current" >"$list"
    echo "wrote $list ($(grep -vc '^ ' "$list") items, $(grep -c '^ ' "$list") members)"
    exit 0
fi

if ! diff -u "$list" <(printf '%s\n' "$current"); then
    echo
    echo "The public API of reattempt changed (above: - pinned, + now). If on purpose, run"
    echo "  .ci/public-api.sh --update"
    echo "and commit docs/public-api.txt with the change (docs/RELEASING.md)."
    exit 1
fi
echo "public API: $(grep -vc '^ ' "$list") items and $(grep -c '^ ' "$list") members, as pinned in $list"
