#!/usr/bin/env python3
"""Fails on a co_await full-expression that GCC 12 may miscompile.

    scripts/check_coroutines.py [ROOT]     (default: the repository this script is in)

GCC 12 (Debian 12's compiler) may destroy the temporaries of a full-expression that contains a
co_await twice, or read them after their destruction (see "Coroutines and GCC 12" in
docs/architecture.md). Three forms have crashed or failed to compile here, and
this check refuses them in src/, include/ and examples/:

  - a braced temporary or list in the expression: `co_await f(Options{.n = 1})`,
    `co_await g({"a", "b"})`;
  - a co_await inside a braced initializer: `co_return Stat{.size = co_await size(key)}`;
  - a conditional expression in it: `co_await f(c ? s : s + "/")`,
    `x = c ? co_await a() : co_await b()`.

Bind the value to a named local first and co_await with the local. Lambda bodies inside the
expression are not part of it (their own statements are checked on their own). Prints each
offence as FILE:LINE: what, and exits 1 if there is one.
"""

import pathlib
import re
import sys

DIRECTORIES = ("src", "include", "examples")
# What may stand before a '{' that opens a block (a lambda's or a statement's body) rather than a
# braced initializer.
BLOCK_OPENERS = {")", "]", ";", "{", "}", ":", "else", "do", "try", "mutable", "noexcept",
                 "const", "override", "final", "requires"}
TOKEN = re.compile(r"co_await|co_return|co_yield|->|::|[A-Za-z_][A-Za-z_0-9]*|\d[\w.']*|\S")


def blank(match):
    """A comment or literal replaced by spaces, keeping its newlines (and so the line numbers)."""
    text = match.group(0)
    if text.startswith(("//", "/*", "#")):
        return re.sub(r"[^\n]", " ", text)
    return text[0] + re.sub(r"[^\n]", " ", text[1:-1]) + text[-1]


LEXICAL = re.compile(
    r'//[^\n]*|/\*.*?\*/|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*|R"([^(\s]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"'
    r"|'(?:\\.|[^'\\\n])*'",
    re.S | re.M)


def tokens_of(text):
    """(token, line) pairs of C++ source without its comments, literals and directives."""
    code = LEXICAL.sub(blank, text)
    result = []
    line = 1
    position = 0
    for match in TOKEN.finditer(code):
        line += code.count("\n", position, match.start())
        position = match.start()
        result.append((match.group(0), line))
    return result


def matching(tokens, index):
    """The index of the bracket that closes the one at `index`."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    opening = tokens[index][0]
    depth = 0
    for i in range(index, len(tokens)):
        if tokens[i][0] == opening:
            depth += 1
        elif tokens[i][0] == pairs[opening]:
            depth -= 1
            if depth == 0:
                return i
    return len(tokens) - 1


def opening_of(tokens, index):
    """The index of the bracket that opens the one closed at `index`."""
    pairs = {")": "(", "]": "[", "}": "{"}
    closing = tokens[index][0]
    depth = 0
    for i in range(index, -1, -1):
        if tokens[i][0] == closing:
            depth += 1
        elif tokens[i][0] == pairs[closing]:
            depth -= 1
            if depth == 0:
                return i
    return 0


def opens_block(tokens, index):
    """Whether the '{' at `index` opens a block rather than a braced initializer or list."""
    if index == 0:
        return True
    before = tokens[index - 1][0]
    if before in BLOCK_OPENERS:
        return True
    # A lambda's trailing return type: `[...](...) -> awaitable<void> {`.
    i = index - 1
    depth = 0
    while i > 0 and (depth > 0 or tokens[i][0] not in (";", "{", "}", "(", ",", "=")):
        if tokens[i][0] == ">":
            depth += 1
        elif tokens[i][0] == "<":
            depth -= 1
        elif tokens[i][0] == "->" and depth == 0:
            return True
        i -= 1
    return False


def full_expression(tokens, index):
    """The first and last token index of the full-expression holding the co_await at `index`, and
    whether the co_await sits inside a braced initializer of it."""
    start = index
    inside_braces = False
    i = index - 1
    while i >= 0:
        token = tokens[i][0]
        if token in (")", "]"):
            i = opening_of(tokens, i) - 1
            continue
        if token == "}":
            opening = opening_of(tokens, i)
            if opens_block(tokens, opening):
                if tokens[opening - 1][0] in (")", "]", "mutable", "noexcept") and i + 1 < index \
                        and tokens[i + 1][0] != ";":
                    # A lambda's body inside this expression.
                    i = opening - 1
                    continue
                break
            i = opening - 1
            continue
        if token == ";":
            break
        if token == "{":
            if opens_block(tokens, i):
                break
            inside_braces = True
        if token == "(":
            # An enclosing call or condition: `if (`, `while (` and `for (` end the expression.
            if i > 0 and tokens[i - 1][0] in ("if", "while", "switch", "for"):
                break
        if token == ":" and i > 0 and tokens[i - 1][0] != "?":
            # A label, a case, or a range-for's colon.
            break
        start = i
        i -= 1
    end = index
    depth = 0
    i = index + 1
    while i < len(tokens):
        token = tokens[i][0]
        if token in ("(", "["):
            depth += 1
        elif token == "{":
            if opens_block(tokens, i) and depth == 0:
                break
            depth += 1
        elif token in (")", "]", "}"):
            depth -= 1
            if depth < 0:
                break
        elif token == ";" and depth <= 0:
            break
        elif token == "," and depth == 0 and tokens[start][0] == "(":
            break
        end = i
        i += 1
    return start, end, inside_braces


def offences(tokens):
    """(line, what) of each co_await full-expression that breaks the rule."""
    found = []
    seen = set()
    for index, (token, line) in enumerate(tokens):
        if token != "co_await":
            continue
        start, end, inside_braces = full_expression(tokens, index)
        if inside_braces:
            found.append((line, "co_await inside a braced initializer"))
        i = start
        while i <= end:
            token = tokens[i][0]
            if token == "{":
                if opens_block(tokens, i):
                    i = matching(tokens, i) + 1
                    continue
                if i > index or not inside_braces:
                    key = (tokens[i][1], "brace")
                    if key not in seen:
                        seen.add(key)
                        found.append((line, "a braced temporary in a co_await expression"))
            elif token == "?":
                key = (tokens[i][1], "conditional")
                if key not in seen:
                    seen.add(key)
                    found.append((line, "a conditional expression in a co_await expression"))
            i += 1
    return sorted(set(found))


def check(root):
    problems = []
    for directory in DIRECTORIES:
        for path in sorted((root / directory).rglob("*")):
            if path.suffix not in (".cpp", ".hpp"):
                continue
            for line, what in offences(tokens_of(path.read_text())):
                problems.append(f"{path}:{line}: {what} (GCC 12 may destroy its temporaries "
                                "twice: bind them to named locals first)")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
    if not (root / "src").is_dir():
        print(f"check_coroutines.py: error: {root} has no src/", file=sys.stderr)
        return 2
    problems = check(root.resolve())
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} co_await expression(s) GCC 12 may miscompile", file=sys.stderr)
        return 1
    print("no co_await expression holds a braced temporary or a conditional")
    return 0


if __name__ == "__main__":
    sys.exit(main())
