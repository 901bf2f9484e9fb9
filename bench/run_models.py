#!/usr/bin/env python3
"""The model benchmark (`make bench` runs it after the op suites): every model exported by
tests/models/export_models.py, from its `.pt2` archive, under PyTorch eager, torch.compile (Inductor),
kiln eager and kiln compiled, on the CPU, same threads, same inputs, same allocator settings.

For each model and each process p = 1..P, four processes run in turn (their order rotates with p):
  torch eager and torch.compile (bench/torch_models.py: torch.export.load(...).module()),
  kiln eager and kiln compiled (`kiln run MODEL.pt2 [--compile]`).
Each writes its outputs; every output is checked against PyTorch eager's with the model's manifest
tolerance (x10 for compiled code, whose reductions may reorder) before its times count, and a
mismatch fails the run. Each process reports the median of REPS calls after WARMUP calls and its
first call (for the compilers: the cold compile, with an empty cache). The table gives the min /
median / max over processes of those medians, the ratio of medians torch.compile / kiln compiled
(above 1: kiln faster), and the geometric mean of the ratios.

Usage: run_models.py --kiln build/kiln --python .venv/bin/python --models DIR [DIR ...]
                     [--only NAME ...] [--processes P] [--reps N] [--warmup N] [--threads N]
                     [--out bench/results/models_cpu.md] [--report-from RUN.jsonl ...]
Every checked process is appended to the .jsonl beside --out as it finishes; --report-from makes the
table from such files (several runs, e.g. models measured in separate sessions) without running.
Standard library only; the PyTorch side runs under --python.
"""
import argparse
import datetime
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import cpu_model  # noqa: E402

ALLOCATOR = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "100000000000"}  # both sides alike
MODES = ["torch_eager", "torch_compile", "kiln_eager", "kiln_compiled"]


def log(message):
    print(f"[models] {message}", file=sys.stderr, flush=True)


def find_models(dirs, only):
    """(name, archive, input files, manifest) for every NAME/manifest.json with a core_aten archive."""
    found = {}
    for d in dirs:
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            manifest_path = os.path.join(d, name, "manifest.json")
            if not os.path.exists(manifest_path) or (only and name not in only) or name in found:
                continue
            with open(manifest_path) as f:
                manifest = json.load(f)
            archive = os.path.join(d, manifest["archives"]["core_aten"])
            inputs = [os.path.join(d, name, i["file"]) for i in manifest["inputs"]]
            found[name] = (archive, inputs, manifest)
    return found


def run_torch(args, env, archive, inputs, mode, out):
    cmd = [args.python, os.path.join(HERE, "torch_models.py"), archive, "--mode", mode, "--inputs", *inputs,
           "--out", out, "--reps", str(args.reps), "--warmup", str(args.warmup), "--threads", str(args.threads)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_kiln(args, env, archive, inputs, compiled, out):
    env = dict(env, KILN_CACHE_DIR=tempfile.mkdtemp(prefix="kiln_cache_"))  # a cold compile
    cmd = [args.kiln, "run", archive, *sum([["--input", i] for i in inputs], []), "--repeat", str(args.reps),
           "--warmup", str(args.warmup), "--output-dir", out] + (["--compile"] if compiled else [])
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    shutil.rmtree(env["KILN_CACHE_DIR"], ignore_errors=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    m = re.search(r"median ([0-9.]+) ms over \d+ runs? \(min ([0-9.]+), max ([0-9.]+)\)", r.stdout)
    first = re.search(r"compiled \(first run, tracing and compiling\) in ([0-9.]+) ms", r.stdout)
    return {"median_ms": float(m.group(1)), "min_ms": float(m.group(2)), "max_ms": float(m.group(3)),
            "first_ms": float(first.group(1)) if first else None}


def check(args, out, reference, manifest, mode):
    """Every output of `out` against PyTorch eager's in `reference`; raises on a mismatch."""
    tol = manifest["float32_tolerance"]
    scale = 1 if mode == "torch_eager" else 10
    code = (
        "import numpy as np, sys, os\n"
        "out, ref, n, rtol, atol = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])\n"
        "for i in range(n):\n"
        "    a = np.load(os.path.join(out, f'output_{i}.npy')); b = np.load(os.path.join(ref, f'output_{i}.npy'))\n"
        "    assert a.shape == b.shape and a.dtype == b.dtype, (i, a.shape, b.shape, a.dtype, b.dtype)\n"
        "    if a.dtype.kind == 'f':\n"
        "        bad = ~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)\n"
        "        assert not bad.any(), (i, int(bad.sum()), float(np.abs(a - b).max()))\n"
        "    else:\n"
        "        assert (a == b).all(), i\n")
    r = subprocess.run([args.python, "-c", code, out, reference, str(manifest["output_count"]),
                        str(tol["rtol"] * scale), str(tol["atol"] * scale)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{mode} outputs differ from PyTorch eager's: {r.stderr[-1500:]}")


def spread(values):
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out", default=os.path.join(HERE, "results", "models_cpu.md"))
    ap.add_argument("--report-from", nargs="*", default=[],
                    help="JSON-lines files of earlier runs (the .jsonl beside --out): report them, run nothing")
    args = ap.parse_args()
    args.cpu = cpu_model()
    jsonl = os.path.splitext(args.out)[0] + ".jsonl"
    if args.report_from:
        results = {}
        for path in args.report_from:
            with open(path) as f:
                for line in f:
                    d = json.loads(line)
                    results.setdefault(d["model"], {m: [] for m in MODES})[d["mode"]].append(d["result"])
                    args.cpu = d.get("cpu", args.cpu)
        write(args, results)
        return
    models = find_models(args.models, set(args.only))
    if not models:
        sys.exit(f"no models with a manifest under {args.models}")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), **ALLOCATOR)
    results = {}
    work = tempfile.mkdtemp(prefix="kiln_models_bench_")
    for name, (archive, inputs, manifest) in models.items():
        results[name] = {m: [] for m in MODES}
        for p in range(args.processes):
            order = MODES[p % 4:] + MODES[:p % 4]
            outs = {m: os.path.join(work, f"{name}_{p}_{m}") for m in MODES}
            for mode in order:
                if mode.startswith("torch"):
                    r = run_torch(args, env, archive, inputs, "compile" if mode == "torch_compile" else "eager", outs[mode])
                else:
                    r = run_kiln(args, env, archive, inputs, mode == "kiln_compiled", outs[mode])
                results[name][mode].append(r)
            for mode in MODES:
                check(args, outs[mode], outs["torch_eager"], manifest, mode)
            # Each checked process is kept at once: a run cut short still reports what it measured.
            with open(jsonl, "a") as f:
                for mode in MODES:
                    f.write(json.dumps({"model": name, "process": p, "mode": mode, "cpu": cpu_model(),
                                        "result": results[name][mode][-1]}) + "\n")
            log(f"{name} process {p + 1}/{args.processes}: " + ", ".join(
                f"{m} {results[name][m][-1]['median_ms']:.3f} ms" for m in MODES))
    shutil.rmtree(work, ignore_errors=True)
    write(args, results)


def write(args, results):
    rows, ratios = [], []
    for name, r in results.items():
        med = {m: spread([x["median_ms"] for x in r[m]]) for m in MODES}
        ratio = med["torch_compile"]["median"] / med["kiln_compiled"]["median"]
        ratios.append(ratio)
        cold = {m: statistics.median([x["first_ms"] for x in r[m]]) for m in ("torch_compile", "kiln_compiled")}

        def cell(m):
            s = med[m]
            return f"{s['median']:.3f} ({s['min']:.3f}–{s['max']:.3f})"

        rows.append(f"| {name} | {cell('torch_eager')} | {cell('torch_compile')} | {cell('kiln_eager')} | "
                    f"{cell('kiln_compiled')} | **{ratio:.2f}** | {cold['torch_compile'] / 1e3:.2f} | "
                    f"{cold['kiln_compiled'] / 1e3:.2f} | {cold['torch_compile'] / cold['kiln_compiled']:.1f} |")
    geomean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    first = results[next(iter(results))]["torch_eager"][0]
    torch_version, threads = first["torch"], first["threads"]
    text = "\n".join([
        f"# Exported models on the CPU: kiln against PyTorch ({datetime.date.today()})",
        "",
        f"CPU: {args.cpu}, {threads} threads both sides; PyTorch {torch_version}; allocator: glibc without "
        f"mmap for large blocks, both sides; {min(len(r['kiln_compiled']) for r in results.values())} to "
        f"{max(len(r['kiln_compiled']) for r in results.values())} processes per cell, each the median of "
        f"{args.reps} calls after {args.warmup} warm-up calls. Cells: median of the process medians (min–max), in ms. Every "
        "output was checked against PyTorch eager's (manifest tolerance, x10 for compiled code) before counting.",
        "Cold compile: the first call of a process with an empty cache (torch.compile: Inductor's; kiln: "
        "tracing, the compiler's passes and the C++ build), median over processes, in s.",
        "",
        "| model | torch eager | torch.compile | kiln eager | kiln compiled | torch.compile / kiln compiled | "
        "torch.compile cold s | kiln cold s | cold ratio |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Geometric mean of torch.compile / kiln compiled: **{geomean:.2f}** (above 1: kiln faster).",
        "",
    ])
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump({"cpu": args.cpu, "threads": threads, "results": results}, f, indent=1)
    print(text)


if __name__ == "__main__":
    main()
