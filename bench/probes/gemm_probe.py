#!/usr/bin/env python3
"""The suite's GEMMs alone (a linear layer each: x @ w^T + bias, gelu on gelu_mlp's first), three
ways in alternating processes: kiln's own sgemm (KILN_GEMM=kiln), oneDNN through kiln (the default), and PyTorch
(torch.nn.functional.linear, MKL on x86); optionally other sides: NumPy's matmul (--numpy: the
OpenBLAS its wheel bundles; the GEMM alone) and any probe command that takes M,N,K,GELU arguments and
prints the same JSON (--side NAME=COMMAND: kiln_blas_probe LIB.so times a CBLAS library's GEMM alone;
bench/probes/onednn3_probe.cpp a oneDNN 3 matmul with bias and gelu). --base picks which of the first three
sides run. Prints min / median / max over rounds of each side's
median time, and TFLOP/s of the medians. Timing only: the kernels' results are checked by the test
suite (sgemm_test.cpp, matmul_test.cpp) and by run_compiled.py's rows that use them.

    bench/probes/gemm_probe.py --bench build/bench/kiln_eager_bench --python .venv/bin/python [--rounds 3]
        [--side "openblas=build/bench/kiln_blas_probe /path/libopenblas.so.0"] [--numpy] [--base "kiln oneDNN,PyTorch"]
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

# (m, n, k, gelu): kiln_eager_bench's gemm_linear rows.
SHAPES = [(2048, 16384, 4096, 1), (2048, 4096, 16384, 0), (256, 16384, 4096, 1), (256, 4096, 16384, 0), (1024, 3072, 1024, 0), (1024, 1024, 1024, 0),
          (1024, 4096, 1024, 1), (1024, 1024, 4096, 0)]

TORCH = r"""
import json, sys, time, torch
import torch.nn.functional as F
out = {}
for m, n, k, gelu in json.loads(sys.argv[1]):
    g = torch.Generator().manual_seed(1)
    x, w, b = torch.randn(m, k, generator=g), torch.randn(n, k, generator=g), torch.randn(n, generator=g)
    f = (lambda: F.gelu(F.linear(x, w, b))) if gelu else (lambda: F.linear(x, w, b))
    for _ in range(2):
        f()
    times = []
    budget = time.perf_counter() + 1.0
    while len(times) < 3 or (time.perf_counter() < budget and len(times) < 50):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    out[f"{m}/{n}/{k}/{gelu}"] = sorted(times)[len(times) // 2]
print(json.dumps(out))
"""

NUMPY = r"""
import json, sys, time
import numpy as np
out = {}
for m, n, k, gelu in json.loads(sys.argv[1]):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((m, k), dtype=np.float32)
    w = (0.02 * rng.standard_normal((n, k))).astype(np.float32)
    y = np.empty((m, n), np.float32)
    f = lambda: np.matmul(x, w.T, out=y)
    f()
    times = []
    budget = time.perf_counter() + 1.0
    while len(times) < 3 or (time.perf_counter() < budget and len(times) < 50):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    i, j = m // 3, n // 2
    ref = float(np.dot(x[i].astype(np.float64), w[j].astype(np.float64)))
    assert abs(y[i, j] - ref) <= 1e-4 * (1 + abs(ref)), (y[i, j], ref)
    out[f"{m}/{n}/{k}/{gelu}"] = sorted(times)[len(times) // 2]
print(json.dumps(out))
"""


def kiln_times(bench, env):
    run = subprocess.run([bench, "--benchmark_filter=gemm_linear", "--benchmark_format=json",
                          "--benchmark_min_time=1"], env=env, capture_output=True, text=True, check=True)
    out = {}
    for b in json.loads(run.stdout)["benchmarks"]:
        args = dict(part.split(":") for part in b["name"].split("/")[1:] if ":" in part)
        out[f"{args['m']}/{args['n']}/{args['k']}/{args['gelu']}"] = b["real_time"] / 1e3  # ms -> s
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", default="build/bench/kiln_eager_bench")
    p.add_argument("--python", default=".venv/bin/python")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--side", action="append", default=[], metavar="NAME=COMMAND")
    p.add_argument("--numpy", action="store_true")
    p.add_argument("--base", default="kiln sgemm,kiln oneDNN,PyTorch")
    a = p.parse_args()
    sides = {name: None for name in a.base.split(",") if name}
    for spec in a.side:
        name, command = spec.split("=", 1)
        sides[name] = shlex.split(command)
    if a.numpy:
        sides["NumPy"] = None
    results = {s: [] for s in sides}
    for r in range(a.rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for side in order:
            env = dict(os.environ)
            if side == "PyTorch":
                run = subprocess.run([a.python, "-c", TORCH, json.dumps(SHAPES)], capture_output=True, text=True,
                                     check=True)
                results[side].append(json.loads(run.stdout))
            elif side == "NumPy":
                run = subprocess.run([a.python, "-c", NUMPY, json.dumps(SHAPES)], capture_output=True, text=True,
                                     check=True)
                results[side].append(json.loads(run.stdout))
            elif sides[side]:
                run = subprocess.run(sides[side] + [",".join(map(str, s)) for s in SHAPES],
                                     capture_output=True, text=True, check=True)
                results[side].append(json.loads(run.stdout))
            else:
                env["KILN_GEMM"] = "onednn" if side == "kiln oneDNN" else "kiln"
                results[side].append(kiln_times(a.bench, env))
            print(f"round {r + 1}: {side} done", file=sys.stderr)
    print(f"| m, n, k (gelu) | GFLOP | " + " | ".join(f"{s} ms (TFLOP/s)" for s in sides) + " |")
    print("|---|---|" + "---|" * len(sides))
    for m, n, k, gelu in SHAPES:
        key = f"{m}/{n}/{k}/{gelu}"
        flop = 2.0 * m * n * k
        cells = []
        for s in sides:
            v = sorted(r[key] for r in results[s])
            mid = statistics.median(v)
            cells.append(f"{v[0] * 1e3:.3g} / **{mid * 1e3:.3g}** / {v[-1] * 1e3:.3g} ({flop / mid / 1e12:.2f})")
        print(f"| {m}, {n}, {k}{' (gelu)' if gelu else ''} | {flop / 1e9:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
