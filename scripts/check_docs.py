#!/usr/bin/env python3
"""Fails when a link in tensorstream's documentation leads nowhere.

    scripts/check_docs.py ROOT

Reads ROOT/README.md and every ROOT/docs/**/*.md. Every markdown link [text](target) or image
![text](target) outside fenced code blocks and inline code whose target is relative (has no
scheme such as https: or mailto:) must name a file or directory that exists, relative to the
linking file (a target starting with / is relative to ROOT); a #anchor on a .md target, or a
#anchor alone (the same file), must be the anchor of one of that file's headings as GitHub makes
them: the heading's text without markup, lowercased, every character but letters, digits, '-',
'_' and spaces dropped, spaces turned into '-'; a heading whose anchor is taken gets '-1', '-2',
... Headings inside fenced code blocks do not count.

Prints every broken link as FILE:LINE: broken link TARGET: why (FILE relative to ROOT) and exits
1 if there is one; prints nothing and exits 0 when every link resolves; exits 2 with one line on
stderr when ROOT is missing or holds no README.md.
"""

import os
import pathlib
import re
import sys
import unicodedata
import urllib.parse

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
# [text](target) or [text](target "title"), also as an image; the text may hold code spans and
# brackets one level deep ([`load_into_module`](#x), [![badge](b.svg)](x)) and run over lines.
LINK = re.compile(r"\[((?:[^\[\]`]|`[^`]*`|\[[^\[\]]*\])*)\]"
                  r"\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
                  r"""(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)""")
# Inline code: a run of backticks, up to the next run as long, within one paragraph.
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.DOTALL)
HTML_ANCHOR = re.compile(r"<[A-Za-z][^>]*\b(?:id|name)=\"([^\"]+)\"")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def prose(text):
    """The text with every line of a fenced code block emptied, so that line numbers stay."""
    lines, fence = [], None
    for line in text.split("\n"):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                line = ""
        else:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and line.strip() == match.group(1):
                fence = None
            line = ""
        lines.append(line)
    return "\n".join(lines)


def slug(heading):
    """GitHub's anchor for a heading's markdown text."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.replace("`", "").lower()
    return "".join(char for char in text
                   if char in " -_" or unicodedata.category(char)[0] in "LMN"
                   or unicodedata.category(char) == "Pc").replace(" ", "-")


def anchors(text):
    """Every heading anchor of a markdown file, with GitHub's suffixes for repeats, and the ids
    and names of HTML elements."""
    seen = set()
    text = prose(text)
    for line in text.split("\n"):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2) or "")
        anchor, count = base, 0
        while anchor in seen:
            count += 1
            anchor = f"{base}-{count}"
        seen.add(anchor)
    return seen | set(HTML_ANCHOR.findall(text))


def links(text):
    """(line number, target) of every link outside code, in order."""
    text = prose(text)
    spans = [match.span() for match in CODE_SPAN.finditer(text)]
    for match in LINK.finditer(text):
        if any(start <= match.start() < end for start, end in spans):
            continue
        target = match.group(2)
        if target.startswith("<") and target.endswith(">"):
            target = target[1:-1]
        yield text.count("\n", 0, match.start()) + 1, target


def check(root):
    files = [root / "README.md"] + sorted((root / "docs").rglob("*.md"))
    cache = {}

    def anchors_of(path):
        if path not in cache:
            cache[path] = anchors(path.read_text(encoding="utf-8"))
        return cache[path]

    problems = []
    for path in files:
        name = path.relative_to(root).as_posix()
        for number, target in links(path.read_text(encoding="utf-8")):
            if not target or SCHEME.match(target):
                continue
            file_part, _, anchor = target.partition("#")
            file_part = urllib.parse.unquote(file_part)
            if not file_part:
                destination = path
            elif file_part.startswith("/"):
                destination = root / file_part.lstrip("/")
            else:
                destination = path.parent / file_part
            if not destination.exists():
                problems.append(f"{name}:{number}: broken link {target}: no such file")
            elif anchor and destination.is_file() and destination.suffix == ".md" \
                    and urllib.parse.unquote(anchor) not in anchors_of(destination.resolve()):
                shown = pathlib.Path(os.path.relpath(destination.resolve(), root)).as_posix()
                problems.append(f"{name}:{number}: broken link {target}: no heading with anchor "
                                f"#{anchor} in {shown}")
    return problems


def main():
    if len(sys.argv) != 2:
        print("check_docs.py: error: usage: check_docs.py ROOT", file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    # A wrong root would hold no page to check and pass in silence.
    if not (root / "README.md").is_file():
        print(f"check_docs.py: error: {root} has no README.md", file=sys.stderr)
        return 2
    problems = check(root.resolve())
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} broken link(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
