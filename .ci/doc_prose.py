"""The rendered rustdoc, as a reader sees it: no literal `[Name]` brackets (an intra-doc link
rustdoc could not resolve, or could resolve but not link) and no internal crate names
(`retry-runtime`, `retry-macros`, `retry-rules`: users depend on `reattempt` alone) in the prose
of the crate's own docs. Sections that copy other crates' docs (trait and blanket
implementations of foreign traits) are not ours and are skipped.

Usage: python3 .ci/doc_prose.py TARGET/doc/reattempt (after `cargo doc`; CI runs it on the
docs.rs-style build)."""
import pathlib, re, sys

FOREIGN = re.compile(r'<h2 id="(trait-implementations|blanket-implementations|synthetic-implementations|deref-methods[^"]*)"')
SECTION = re.compile(r"<h2 ")
DOCBLOCK_START = re.compile(r"<div class=[\"']docblock[^>]*>")
DIV = re.compile(r"<div\b|</div>")


def docblocks(page):
    """The docblocks' inner HTML (divs nest inside them: examples, notes)."""
    for start in DOCBLOCK_START.finditer(page):
        depth, at = 1, start.end()
        for tag in DIV.finditer(page, at):
            depth += 1 if tag.group(0) == "<div" else -1
            if depth == 0:
                yield page[at:tag.start()]
                break
CODE_LINK = re.compile(r"\[<code>[^<\]]+</code>\](?![(\[])")
PLAIN_LINK = re.compile(r"\[[A-Za-z_][\w:]*\](?![(\[])")
CODE = re.compile(r"<code>.*?</code>", re.S)
INTERNAL = re.compile(r"retry[-_](?:runtime|macros|rules)|Documented in")
TAG = re.compile(r"<[^>]+>")

def own_sections(page):
    parts = SECTION.split(page)
    out = [parts[0]]
    for part in parts[1:]:
        if not FOREIGN.match("<h2 " + part):
            out.append(part)
    return "".join(out)

def prose(block):
    # Code blocks are code: a slice `&[u8]` or an array `[T; 4]` is not a link.
    block = re.sub(r"<pre.*?</pre>", " ", block, flags=re.S)
    return block

root = pathlib.Path(sys.argv[1])
findings = []
for page in sorted(root.rglob("*.html")):
    name = str(page.relative_to(root))
    if name.startswith("src/") or page.name in ("all.html", "search.html", "settings.html", "help.html"):
        continue
    text = own_sections(page.read_text(errors="replace"))
    for block in docblocks(text):
        block = prose(block)
        outside_code = CODE.sub(" ", block)
        for pattern, what, where in (
            (CODE_LINK, "a link that did not resolve", block),
            (PLAIN_LINK, "a link that did not resolve", outside_code),
            (INTERNAL, "an internal crate name", outside_code),
        ):
            for m in pattern.finditer(where):
                plain = TAG.sub("", block)
                shown = TAG.sub("", m.group(0))
                at = plain.find(shown)
                context = " ".join(plain[max(0, at - 60): at + len(shown) + 30].split())
                findings.append(f"{name}: {what}: {shown!r} in “…{context}…”")
for f in sorted(set(findings)):
    print(f)
print(f"{len(set(findings))} finding(s)", file=sys.stderr)
sys.exit(1 if findings else 0)
