#!/usr/bin/env python3
"""Load-to-first-output: how long a process takes from start to the first output of a model, for an
ahead-of-time package (`kiln run MODEL.kiln`) against the `.pt2` archive compiled in the process
(`kiln run MODEL.pt2 --compile`, with an empty kernel cache and with a warm one), and eager. Whole
process wall times, min/median/max over --runs runs; the package is compiled once first (`kiln
compile`, timed too). Checks that the package's output checksum line equals the compiled run's.

Usage: load_time.py --kiln build/kiln --models tests/models/fixtures build/models [--runs 3] [--out FILE.md]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time


def timed(cmd, env):
    start = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stdout[-1500:]}{r.stderr[-1500:]}")
    return elapsed, r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kiln_load_time_")
    rows = []
    for d in a.models:
        for name in sorted(os.listdir(d)):
            manifest = os.path.join(d, name, "manifest.json")
            if not os.path.exists(manifest):
                continue
            archive = os.path.join(d, json.load(open(manifest))["archives"]["core_aten"])
            inputs = sum([["--input", os.path.join(d, name, i["file"])] for i in json.load(open(manifest))["inputs"]], [])
            package = os.path.join(work, name + ".kiln")
            env = dict(os.environ, KILN_CACHE_DIR=os.path.join(work, "cache_" + name))
            compile_s, _ = timed([a.kiln, "compile", archive, "-o", package], env)
            shutil.rmtree(env["KILN_CACHE_DIR"], ignore_errors=True)
            times = {"package": [], "cold": [], "warm": [], "eager": []}
            checks = {}
            for r in range(a.runs):
                cold_env = dict(env, KILN_CACHE_DIR=os.path.join(work, f"cold_{name}_{r}"))
                t, out = timed([a.kiln, "run", package, *inputs], env)
                times["package"].append(t)
                checks["package"] = re.findall(r"^output_\d+: .*$", out, re.M)
                t, out = timed([a.kiln, "run", archive, *inputs, "--compile"], cold_env)
                times["cold"].append(t)
                checks["compiled"] = re.findall(r"^output_\d+: .*$", out, re.M)
                times["warm"].append(timed([a.kiln, "run", archive, *inputs, "--compile"], cold_env)[0])
                times["eager"].append(timed([a.kiln, "run", archive, *inputs], env)[0])
                shutil.rmtree(cold_env["KILN_CACHE_DIR"], ignore_errors=True)

            def cell(k):
                v = times[k]
                return f"{statistics.median(v) * 1e3:.0f} ({min(v) * 1e3:.0f}–{max(v) * 1e3:.0f})"

            same = "yes" if checks["package"] == checks["compiled"] else "NO"
            ratio = statistics.median(times["cold"]) / statistics.median(times["package"])
            rows.append(f"| {name} | {compile_s:.2f} | {cell('package')} | {cell('cold')} | {cell('warm')} | "
                        f"{cell('eager')} | {ratio:.0f}x | {same} |")
            print(rows[-1], flush=True)
    text = "\n".join([
        "| model | kiln compile (s) | package: load + first output (ms) | .pt2 + compile, cold cache (ms) | "
        ".pt2 + compile, warm cache (ms) | .pt2 eager (ms) | cold / package | same outputs |",
        "|---|---|---|---|---|---|---|---|", *rows, ""])
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
