#!/usr/bin/env python3
"""Checks that #includes flow down kiln's layer order (DESIGN.md, section "Layers").

Each layer is a folder under src/kiln/ and a CMake library; a layer includes only the layers above
it in DESIGN.md's list. This script reads every source under src/kiln/ and fails, naming file, line
and include, when a file includes a header of a layer below its own (or of a folder that is not a
layer). It also checks that the order of KILN_LAYERS in src/kiln/CMakeLists.txt agrees with LAYERS.

    scripts/check_layers.py [repo root]      (CTest runs it as kiln_layer_check)

Standard library only.
"""

import os
import re
import sys

# DESIGN.md, "Layers": the table's rows in order, top (included by everyone) to bottom. Layers not
# built yet (autograd, aot, import) keep their place so a new folder lands in the right slot.
# python/ (repo root) depends on api/ only and is not under src/kiln/.
LAYERS = [
    "support",
    "core",
    "cuda",
    "ops",
    "kernels",
    "decomp",
    "autograd",
    "graph",
    "trace",
    "aot",
    "compiler",
    "runtime",
    "import",
    "api",
    "tools",
]

# Known exceptions, each a design question rather than a mistake: tests beside a layer that run
# the whole pipeline (trace, compile) and so include layers below it. Keyed by (file, included
# layer). A new upward include anywhere else fails.
KNOWN_EXCEPTIONS = {
    # End-to-end tests of compound kernels: traced and compiled, not unit tests of decomp/.
    ("src/kiln/decomp/nn_test.cpp", "graph"),
    ("src/kiln/decomp/nn_test.cpp", "trace"),
    ("src/kiln/decomp/attention_test.cpp", "graph"),
    ("src/kiln/decomp/attention_test.cpp", "trace"),
    ("src/kiln/decomp/attention_test.cpp", "api"),
    # Compiler and runtime tests that build their input through kiln::compile (api/).
    ("src/kiln/compiler/patterns/attention_test.cpp", "api"),
    ("src/kiln/compiler/patterns/gemm_epilogue_test.cpp", "api"),
    ("src/kiln/runtime/executable_test.cpp", "api"),
}

SOURCE_SUFFIXES = (".h", ".cpp", ".inc", ".def")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]kiln/([^/">]+)/[^">]*[">]')


def cmake_layers(root):
    """The KILN_LAYERS list of src/kiln/CMakeLists.txt, or None when there is none."""
    path = os.path.join(root, "src", "kiln", "CMakeLists.txt")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        m = re.search(r"set\(KILN_LAYERS([^)]*)\)", f.read())
    return m.group(1).split() if m else None


def check(root):
    """Returns the problems found under root ('file:line: message' strings) and the known
    exceptions that no longer occur (the list can shrink)."""
    problems = []
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    base = os.path.join(root, "src", "kiln")
    if not os.path.isdir(base):
        return [f"{base}: no such directory"], []

    built = cmake_layers(root)
    if built is not None:
        unknown = [layer for layer in built if layer not in rank]
        if unknown:
            problems.append(f"src/kiln/CMakeLists.txt: KILN_LAYERS names {unknown}, not layers of DESIGN.md")
        elif built != sorted(built, key=rank.get):
            problems.append(f"src/kiln/CMakeLists.txt: KILN_LAYERS {built} is not in DESIGN.md's order {LAYERS}")

    for folder in sorted(os.listdir(base)):
        if os.path.isdir(os.path.join(base, folder)) and folder not in rank:
            problems.append(f"src/kiln/{folder}/: a folder that is not a layer of DESIGN.md")

    used_exceptions = set()
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        parts = rel_dir.split("/")
        if len(parts) < 3 or parts[2] not in rank:
            continue
        layer = parts[2]
        for name in sorted(filenames):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            rel = f"{rel_dir}/{name}"
            with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = m.group(1)
                    if target not in rank:
                        problems.append(f"{rel}:{lineno}: {line.strip()}: kiln/{target}/ is not a layer")
                    elif rank[target] > rank[layer] and (rel, target) in KNOWN_EXCEPTIONS:
                        used_exceptions.add((rel, target))
                    elif rank[target] > rank[layer]:
                        problems.append(
                            f"{rel}:{lineno}: {line.strip()}: layer {layer}/ includes {target}/, "
                            f"which comes after it in DESIGN.md's layer order"
                        )
    return problems, sorted(KNOWN_EXCEPTIONS - used_exceptions)


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems, stale = check(root)
    for p in problems:
        print(p)
    for rel, target in stale:
        print(f"note: {rel} no longer includes {target}/; remove it from KNOWN_EXCEPTIONS")
    if problems:
        print(f"check_layers: {len(problems)} include(s) against the layer order (DESIGN.md, Layers)")
        return 1
    print("check_layers: every #include flows down the layer order")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
