#!/usr/bin/env python3
"""Fails when an include runs upward through tensorstream's layers.

    scripts/check_layers.py [ROOT]     (default: the repository this script is in)

Each file under include/tensorstream/ and src/ belongs to the area named by its first directory;
the public headers at the top of include/tensorstream/ (error, log, export) are the base, and no
file sits at the top of src/: each is in a room. An area may include its own headers and those of
the areas below it, never those above:

    base (error, log, byte_size, json_string, blocking_run, ...), async
      batching                      of the base only what tensorstream_batching holds (async,
                                    error, log, export, exception_message): a service that only
                                    batches links neither storage, nor OpenSSL, liburing or
                                    libtorch, and the base's other files are in the core library
      storage
        safetensors, traw           the formats (TRAW shares the safetensors dtypes)
        distributed                 the group a distributed stream broadcasts over
          streaming
            model                   what knows model layouts: configs, partition rules, loading
              transfer              what moves bytes: cp, prefetch, partition, shard, HF cache
                store, bench
                  cli, python               the tool and the Python extension, on top

A public header may include only public headers, since src/ is not installed. Both "..." and
<tensorstream/...> includes count. Prints every offending include as FILE:LINE: what it includes,
and why; exits 1 if there is one.
"""

import pathlib
import re
import sys

RANK = {
    "base": 0, "async": 0,
    "batching": 1, "storage": 1,
    "safetensors": 2, "traw": 2.5, "distributed": 2,
    "streaming": 3,
    "model": 4,
    "transfer": 4.5,
    "store": 5, "bench": 5,
    "cli": 6, "python": 6,
}
INCLUDE = re.compile(r'\s*#\s*include\s+(?:"([^"]+)"|<(tensorstream/[^>]+)>)')
# The base files that tensorstream_batching compiles or that are header-only; the other base
# files are compiled into tensorstream_core, which batching and async do not link.
BATCHING_BASE = {"tensorstream/error.hpp", "tensorstream/log.hpp", "tensorstream/export.hpp",
                 "base/exception_message.hpp"}


def area_of(parts):
    """The area of a path relative to include/tensorstream/ or src/ (the top of src/ is no area:
    check() refuses files there)."""
    return parts[0] if len(parts) > 1 else "base"


def may_include(area, target, included):
    if area in ("batching", "async"):
        return target in ("batching", "async") or included in BATCHING_BASE
    if area == target or target == "base" or target == "async":
        return True
    if target == "batching":
        return False
    return RANK[target] < RANK[area]


def check(root):
    problems = []
    sources = [(path, path.relative_to(root / "include" / "tensorstream").parts, True)
               for path in (root / "include" / "tensorstream").rglob("*.hpp")]
    sources += [(path, path.relative_to(root / "src").parts, False)
                for path in (root / "src").rglob("*") if path.suffix in (".hpp", ".cpp")]
    for path, parts, public in sorted(sources):
        if not public and len(parts) == 1:
            problems.append(f"{path}: a file at the top of src/ (move it into its room, e.g. "
                            "src/base/)")
            continue
        area = area_of(parts)
        if area not in RANK:
            problems.append(f"{path}: unknown area '{area}' (add it to {__file__})")
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            match = INCLUDE.match(line)
            if not match:
                continue
            included = match.group(1) or match.group(2)
            if included.startswith("tensorstream/"):
                target = area_of(pathlib.PurePath(included).parts[1:])
            elif public:
                problems.append(f"{path}:{number}: public header includes private \"{included}\"")
                continue
            else:
                target = area_of(pathlib.PurePath(included).parts)
            if target not in RANK:
                problems.append(f"{path}:{number}: \"{included}\" is in unknown area '{target}'")
            elif not may_include(area, target, included):
                problems.append(f"{path}:{number}: {area} includes \"{included}\" from {target}, "
                                "a layer above it or beside it")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
    # A wrong root would hold no file to check and pass in silence.
    if not (root / "include" / "tensorstream").is_dir() or not (root / "src").is_dir():
        print(f"check_layers.py: error: {root} has no include/tensorstream/ and src/",
              file=sys.stderr)
        return 2
    problems = check(root.resolve())
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} include(s) break the layers", file=sys.stderr)
        return 1
    print("every include runs downward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
