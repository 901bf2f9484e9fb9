#!/usr/bin/env python3
"""Compares the op overloads of exported `.pt2` archives with kiln's op table.

Reads every node target of every graph in the given archives (or folders of archives), turns
`torch.ops.aten.add.Tensor` into `aten::add.Tensor`, and reads kiln's table from `kiln ops --format
tsv`. Prints, for the union of targets: how many nodes and which archives use each, whether kiln
has the overload, and where it does, whether kiln's schema differs from PyTorch's (argument names,
types, defaults: what a loader mapping named arguments depends on). Targets that are not ATen
overloads (higher-order ops, `_operator.*`, ...) are listed apart.

Usage: op_coverage.py --kiln build/kiln ARCHIVE_OR_DIR ...   (run with the venv's Python)
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_models import model_ops, op_name  # noqa: E402


def kiln_table(kiln: str) -> dict[str, tuple[str, set[str]]]:
    """op name (`aten::add.Tensor`, `aten::relu` for a default overload) -> (schema, tags)."""
    out = subprocess.run([kiln, "ops", "--format", "tsv"], check=True, capture_output=True, text=True).stdout
    rows = [line.split("\t") for line in out.splitlines()[1:] if line]
    return {row[0]: (row[1], set(row[2].split())) for row in rows}


def torch_overload(name: str):
    """PyTorch's OpOverload for `ns::op.overload`, or None."""
    import torch

    m = re.fullmatch(r"(\w+)::(\w+)\.(\w+)", name)
    if not m:
        return None
    try:
        return getattr(getattr(getattr(torch.ops, m[1]), m[2]), m[3])
    except AttributeError:
        return None


def same_schema(kiln_schema: str, overload) -> bool:
    """Whether kiln's schema text declares what PyTorch's schema does (argument and return names,
    types, defaults, keyword-only marks), compared after parsing both with PyTorch's parser."""
    import torch

    ns = overload._schema.name.split("::")[0]
    try:
        ours = torch._C.parse_schema(f"{ns}::{kiln_schema}")
    except RuntimeError:
        return False
    theirs = overload._schema

    def args(schema):
        return [(a.name, str(a.type), repr(a.default_value), a.kwarg_only) for a in schema.arguments]

    def rets(schema):
        return [str(r.type) for r in schema.returns]

    return args(ours) == args(theirs) and rets(ours) == rets(theirs)


def kiln_name(name: str) -> str:
    """kiln's table names a `.default` overload without a suffix."""
    return name.removesuffix(".default")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kiln", required=True, help="the kiln executable")
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    import torch

    archives = []
    for p in args.paths:
        archives += sorted(p.glob("*.pt2")) if p.is_dir() else [p]
    nodes: collections.Counter = collections.Counter()
    users: dict[str, list[str]] = collections.defaultdict(list)
    for a in archives:
        for target, count in model_ops(a).items():
            name = op_name(target)
            nodes[name] += count
            users[name].append(a.stem)
    table = kiln_table(args.kiln)

    aten = sorted(n for n in nodes if n.startswith("aten::"))
    other = sorted(n for n in nodes if not n.startswith("aten::"))
    missing, differs, not_core = [], [], []
    print(f"{len(aten)} ATen overloads in {len(archives)} archives; kiln's table has {len(table)} ops")
    for name in aten:
        kname = kiln_name(name)
        if kname not in table:
            state = "MISSING"
            missing.append(name)
        else:
            overload = torch_overload(name)
            have, tags = table[kname]
            if overload is not None and not same_schema(have, overload):
                state = "SCHEMA DIFFERS"
                differs.append((name, have, str(overload._schema)))
            else:
                state = "ok"
        overload = torch_overload(name)
        core = overload is not None and torch.Tag.core in overload.tags
        if not core:
            not_core.append(name)
        level = "core" if core else "not core"
        print(f"  {state:15s} {nodes[name]:5d}  {name} [{level}]  ({', '.join(users[name])})")
    for name in other:
        print(f"  {'NOT ATEN':15s} {nodes[name]:5d}  {name}  ({', '.join(users[name])})")
    print(f"\nmissing in kiln ({len(missing)}): {' '.join(missing) or '-'}")
    print(f"not ATen ({len(other)}): {' '.join(other) or '-'}")
    print(f"not tagged core by PyTorch ({len(not_core)}): {' '.join(not_core) or '-'}")
    for name, have, want in differs:
        print(f"schema differs: {name}\n  kiln:    {have}\n  PyTorch: {want}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
