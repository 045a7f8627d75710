"""The members of each public item, from the facade's rustdoc pages: inherent methods and
associated items, fields, variants, and a trait's own methods. Trait implementations are left
out (blanket and auto-trait impls follow other crates' versions); `cargo semver-checks` covers
them at release. Reads `kind path` lines on stdin, prints `  member path::name` lines after each."""
import re
import sys

doc_root = sys.argv[1]
# Sections that are not the item's own surface: implementations of traits (explicit, auto,
# blanket) on a type's page, and the implementors on a trait's page.
OTHERS = re.compile(r'id="(trait-implementations|synthetic-implementations|blanket-implementations|implementors|foreign-impls)"')
# A struct-like variant's fields are `variant.Name.field.name`.
MEMBER = re.compile(
    r'id="(method|tymethod|structfield|variant|associatedconstant|associatedtype)'
    r'\.([A-Za-z0-9_]+(?:\.field\.[A-Za-z0-9_]+)?)"'
)
for line in sys.stdin:
    line = line.rstrip("\n")
    print(line)
    kind, path = line.split(" ", 1)
    if kind not in ("struct", "enum", "union", "trait"):
        continue
    parts = path.split("::")[1:]
    page = "/".join(parts[:-1] + [f"{kind}.{parts[-1]}.html"])
    html = open(f"{doc_root}/{page}", encoding="utf-8").read()
    cut = OTHERS.search(html)
    own = html[: cut.start()] if cut else html
    members = sorted({(m.group(1), m.group(2)) for m in MEMBER.finditer(own)})
    for member, name in members:
        print(f"  {member} {path}::{name}")
